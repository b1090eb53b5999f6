"""The native lane: step lines read in RE2 over a whole chunk, never one by one in Python.

Most lines of a training log that carry a keyword are step prints (`step=12, loss=2.31, ...`).
For a chunk's candidate lines (an Arrow array), this module claims the ones the per-line path
would give to the pytorch step rule, and reads their numbers into StepBatch columns:

- the line holds one of the rule's keywords and none of the keywords of any rule tried before it
  (so no other parser could have claimed it first), and is not over-long;
- its launcher prefixes are the common ones ([default3]:, [rank3]:, srun's `3: `, Open MPI's
  `[1,3]<stdout>:`), each distinct prefix checked once against `peel` (which gives its origin);
- its message has the shape of a message already read by the Python rule: one reader (RE2) per
  shape, built from PAIR.finditer on a sample, matches the text between the numbers literally
  (printable ASCII only: no escape sequence, no \\r, no invalid UTF-8 to count), and
  `pairs.classify` of its keys says it is a step line with a step number.

Every other line goes down the per-line path as before. tests/test_native.py checks that both
lanes give the same report on every sample log.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

import numpy as np

from nanscope.ingest.prefixes import peel
from nanscope.ingest.reader import _arrow, _re2_escape
from nanscope.model import Origin
from nanscope.parsers.base import Parser
from nanscope.parsers.pairs import MAX_PAIRS, NUM, PAIR, classify, norm_key
from nanscope.stepbatch import StepBatch
from nanscope.streams import stream_key

_PREFIX_ALT = r"\[[A-Za-z_]+\d+\]:[ \t]?|\[\d+\]:[ \t]?|\d{1,5}:[ \t]+|\[\d+,\d+\]<std(?:out|err)>:[ \t]?"
_PREFIXES = rf"^(?P<pre>(?:[ \t]*(?:{_PREFIX_ALT}))*)"
_SPLIT = _PREFIXES + r"(?P<msg>(?s:.*))$"
_HOT_LAYOUTS = 8
_NOT_PLAIN = re.compile(rb"[^\x20-\x7e\t]")
_MAX_EXACT_INT = 2 ** 53
_RULE = ("pytorch", "step-line")


class NativeLane:
    """Per input: claims the step lines of each chunk (see the module docstring)."""

    def __init__(self, parsers: Sequence[Parser], source: str, base: Origin, max_line: int):
        self.ok = False
        names = [p.name for p in parsers]
        if _RULE[0] not in names:
            return
        earlier: list[str] = []
        rule = None
        for p in parsers:
            for r in p.rules:
                if (p.name, r.name) == _RULE:
                    rule = r
                    break
                earlier.extend(r.keywords)
            if rule is not None:
                break
        if rule is None or any(k == "" for k in earlier):
            return
        self.ok = True
        self.framework = next(p.framework for p in parsers if p.name == _RULE[0])
        self.keywords = "|".join(_re2_escape(k.encode()) for k in rule.keywords)
        self.earlier = "|".join(_re2_escape(k.encode()) for k in sorted(set(earlier))) or None
        self.source = source
        self.base = base
        self.max_line = max_line
        self.parsers = tuple(names)
        self._prefixes: dict[bytes, Optional[tuple]] = {}  # prefix -> (origin, stream) or None
        self._layouts: dict[bytes, Optional[_Layout]] = {}  # line shape -> its reader, or None
        self._hot: list[_Layout] = []  # the readers tried first, most used first

    def claim(self, cand, cand_lines: np.ndarray) -> tuple[np.ndarray, list[StepBatch]]:
        """Positions in `cand` this lane claims, and their StepBatches (one per stream).

        The readers learned on earlier chunks are tried first (a log repeats a handful of line
        shapes); only the lines none of them reads are split into prefix and message and grouped
        by shape (digits aside) to learn new ones."""
        pa, pc, pool = _arrow()
        none = (np.zeros(0, dtype=np.int64), [])
        pos = np.nonzero(_np_bool(pc.match_substring_regex(cand, self.keywords, memory_pool=pool)))[0]
        if len(pos) == 0:
            return none
        rows = cand.take(pa.array(pos))
        bad = pc.greater(pc.binary_length(rows), self.max_line)
        if self.earlier:
            bad = pc.or_(bad, pc.match_substring_regex(rows, self.earlier, memory_pool=pool))
        keep = np.nonzero(~_np_bool(bad))[0]
        if len(keep) == 0:
            return none
        if len(keep) != len(pos):
            pos, rows = pos[keep], rows.take(pa.array(keep))
        n = len(pos)
        found: list = []  # (row indices, extracted struct, layout)
        rest = np.arange(n)
        tried = set()
        for layout in list(self._hot):
            tried.add(id(layout))
            rest = self._read(rows, rest, layout, found)
            if len(rest) == 0:
                break
        if len(rest):
            sub = rows.take(pa.array(rest))
            msg = pc.extract_regex(sub, _SPLIT, memory_pool=pool).field("msg")
            shape = pc.dictionary_encode(pc.replace_substring_regex(msg, "[0-9]+", "0", memory_pool=pool))
            shape_ids = _np_int(shape.indices)
            uniq, first = np.unique(shape_ids, return_index=True)
            for u, f in zip(uniq.tolist(), first.tolist()):
                layout = self._layout(shape.dictionary[u].as_py(), msg[f].as_py())
                if layout is None or id(layout) in tried:
                    continue
                self._read(rows, rest[shape_ids == u], layout, found)
                self._hot.append(layout)
            self._hot.sort(key=lambda x: -x.hits)
            del self._hot[_HOT_LAYOUTS:]
        if not found:
            return none
        accept = np.zeros(n, dtype=bool)
        stream_of = np.full(n, -1, dtype=np.int64)
        keys: dict = {}
        origin_of: dict = {}
        cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for idx, got, layout in found:
            pre = pc.dictionary_encode(got.field("pre"))
            pre_ids = _np_int(pre.indices)
            uniq, first = np.unique(pre_ids, return_index=True)
            sid = np.full(len(pre.dictionary), -1, dtype=np.int64)
            for u, f in zip(uniq.tolist(), first.tolist()):
                s = self._prefix(pre.dictionary[u].as_py(), rows[int(idx[f])].as_py())
                if s is not None:
                    sid[u] = keys.setdefault(s[1], len(keys))
                    origin_of[s[1]] = s[0]
            stream_of[idx] = sid[pre_ids]
            accept[idx] = True
            for name, j in layout.slots.items():
                v, present = cols.get(name) or cols.setdefault(name, (np.full(n, np.nan), np.zeros(n, dtype=bool)))
                v[idx] = pc.cast(pc.cast(got.field(f"v{j}"), pa.string()), pa.float64()).to_numpy(zero_copy_only=False)
                present[idx] = True
        accept &= stream_of >= 0
        step_v, step_p = cols.pop("step", (np.full(n, np.nan), np.zeros(n, dtype=bool)))
        with np.errstate(invalid="ignore"):
            exact = step_p & np.isfinite(step_v) & (np.abs(step_v) < _MAX_EXACT_INT) & (step_v == np.floor(step_v))
        accept &= exact  # a missing or fractional step: the per-line path fills it in
        if not accept.any():
            return none
        lines = cand_lines[pos]
        steps = np.where(accept, step_v, 0).astype(np.int64)
        batches: list[StepBatch] = []
        for key, k in keys.items():
            idx = np.nonzero((stream_of == k) & accept)[0]
            if len(idx) == 0:
                continue
            batches.append(StepBatch(
                self.source, key, origin_of[key], self.framework, lines[idx], steps[idx], np.ones(len(idx), dtype=bool),
                {f: (v[idx], p[idx]) for f, (v, p) in cols.items()}, rows.take(pa.array(idx)), self.parsers, self.base))
        batches.sort(key=lambda b: int(b.lines[0]))
        return pos[np.nonzero(accept)[0]], batches

    @staticmethod
    def _read(rows, at: np.ndarray, layout: "_Layout", found: list) -> np.ndarray:
        """Read rows[at] with one layout; what it reads goes to `found`; returns the rest."""
        pa, pc, pool = _arrow()
        sub = rows if len(at) == len(rows) else rows.take(pa.array(at))
        got = pc.extract_regex(sub, layout.regex, memory_pool=pool)
        ok = _np_bool(pc.is_valid(got))
        hits = int(ok.sum())
        if hits:
            layout.hits += hits
            found.append((at[ok], got.filter(pa.array(ok)) if hits != len(at) else got, layout))
        return at[~ok]

    def _layout(self, shape: bytes, msg: bytes) -> Optional["_Layout"]:
        """For lines shaped like `msg` (its digits aside): an RE2 regex that reads their numbers,
        and which capture feeds which column; None when such a line is not a step line.

        The regex is built from PAIR.finditer on `msg` itself: the text between the numbers is
        matched literally, so a line it matches is read into the same pairs by the Python rule
        (every attempt of PAIR starts and fails on the same literal text; only the numbers,
        each a whole NUM token followed by the same character, differ)."""
        got = self._layouts.get(shape, False)
        if got is not False:
            return got  # type: ignore[return-value]
        if _NOT_PLAIN.search(msg):
            # control bytes (\r pieces, escapes), non-ASCII (decoding, \w): per line. A reader
            # is plain text, so no line it reads can hold them either.
            self._layouts[shape] = None
            return None
        text = msg.decode("ascii")
        parts: list[str] = []
        at = 0
        first: dict[str, int] = {}
        for i, m in enumerate(PAIR.finditer(text)):
            if i >= MAX_PAIRS:
                break
            parts.append(_re2_literal(text[at:m.start("val")]))
            parts.append(f"(?P<v{i}>(?i:{NUM}))")
            at = m.end("val")
            first.setdefault(norm_key(m.group("key")), i)
        out = None
        where = classify(list(first))
        if where is not None and "step" in where and i < MAX_PAIRS:
            parts.append(_re2_literal(text[at:]))
            slots = [first[k] for k in first]
            mapping = {f: slots[j] for f, j in where.items()}
            for k, j in first.items():
                mapping.setdefault(f"raw_fields.{k}", j)
            out = _Layout(_PREFIXES + "".join(parts) + "$", mapping)
        self._layouts[shape] = out
        return out

    def _prefix(self, prefix: bytes, line: bytes) -> Optional[tuple]:
        """(origin, stream key) of a prefix, as peel reads it; None when peel reads the line otherwise."""
        got = self._prefixes.get(prefix, False)
        if got is not False:
            return got  # type: ignore[return-value]
        text = line.decode("ascii")
        msg, origin = peel(text, self.base)
        out = None
        if msg == text[len(prefix):] and origin.ts is None:
            out = (origin, stream_key(origin, self.source))
        self._prefixes[prefix] = out
        return out


class _Layout:
    """One line shape's reader: an RE2 regex (launcher prefixes, then the message's text with
    every number captured) and which capture feeds which column."""

    __slots__ = ("regex", "slots", "hits")

    def __init__(self, regex: str, slots: dict):
        self.regex = regex
        self.slots = slots
        self.hits = 0


def _np_bool(arr) -> np.ndarray:
    return arr.fill_null(False).to_numpy(zero_copy_only=False)


def _np_int(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _re2_literal(s: str) -> str:
    return "".join(c if c.isalnum() else f"\\x{ord(c):02x}" for c in s)
