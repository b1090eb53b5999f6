"""The native lane: step lines read in RE2 over a whole chunk, never one by one in Python.

Most lines of a training log that carry a keyword are step prints (`step=12, loss=2.31, ...`).
For a chunk's candidate lines (an Arrow array), this module claims the ones the per-line path
would give to the pytorch step rule, and reads their numbers into StepBatch columns:

- the line holds one of the rule's keywords and none of the keywords of any rule tried before it
  (so no other parser could have claimed it first); it is printable ASCII (no escape sequence,
  no \\r, no invalid UTF-8 to count) and not over-long;
- its launcher prefixes are the common ones ([default3]:, [rank3]:, srun's `3: `, Open MPI's
  `[1,3]<stdout>:`), each distinct prefix checked once against `peel` (which gives its origin);
- the message after them is nothing but key/value pairs (pairs.grammar), and `pairs.classify`
  of its keys says it is a step line with a step number.

Every other line goes down the per-line path as before. tests/test_native.py checks that both
lanes give the same report on every sample log.
"""

from __future__ import annotations

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
_SPLIT = rf"^(?P<pre>(?:[ \t]*(?:{_PREFIX_ALT}))*)(?P<msg>(?s:.*))$"
_NOT_PLAIN = r"[^\x20-\x7e\t]"  # control bytes, DEL, anything non-ASCII
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
        self._layouts: dict[bytes, Optional[tuple]] = {}  # line shape -> (regex, column -> capture) or None

    def claim(self, cand, cand_lines: np.ndarray) -> tuple[np.ndarray, list[StepBatch]]:
        """Positions in `cand` this lane claims, and their StepBatches (one per stream)."""
        pa, pc, pool = _arrow()
        none = (np.zeros(0, dtype=np.int64), [])
        pos = np.nonzero(_np_bool(pc.match_substring_regex(cand, self.keywords, memory_pool=pool)))[0]
        if len(pos) == 0:
            return none
        rows = cand.take(pa.array(pos))
        bad = pc.match_substring_regex(rows, _NOT_PLAIN, memory_pool=pool)
        if self.earlier:
            bad = pc.or_(bad, pc.match_substring_regex(rows, self.earlier, memory_pool=pool))
        bad = pc.or_(bad, pc.greater(pc.binary_length(rows), self.max_line))
        keep = np.nonzero(~_np_bool(bad))[0]
        if len(keep) == 0:
            return none
        if len(keep) != len(pos):
            pos, rows = pos[keep], rows.take(pa.array(keep))
        split = pc.extract_regex(rows, _SPLIT, memory_pool=pool)
        pre, msg = split.field("pre"), split.field("msg")
        pre_enc = pc.dictionary_encode(pre)
        pre_ids = _np_int(pre_enc.indices)
        uniq, first = np.unique(pre_ids, return_index=True)
        streams: list = [None] * len(pre_enc.dictionary)
        for u, f in zip(uniq.tolist(), first.tolist()):
            streams[u] = self._prefix(pre_enc.dictionary[u].as_py(), rows[f].as_py())
        shape = pc.dictionary_encode(pc.replace_substring_regex(msg, "[0-9]+", "0", memory_pool=pool))
        shape_ids = _np_int(shape.indices)
        n = len(pos)
        accept = np.zeros(n, dtype=bool)
        cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        uniq, first = np.unique(shape_ids, return_index=True)
        for u, f in zip(uniq.tolist(), first.tolist()):
            layout = self._layout(shape.dictionary[u].as_py(), msg[f].as_py())
            if layout is None:
                continue
            regex, slots = layout
            idx = np.nonzero(shape_ids == u)[0]
            got = pc.extract_regex(msg.take(pa.array(idx)), regex, memory_pool=pool)
            ok = _np_bool(pc.is_valid(got))
            if not ok.all():
                idx, got = idx[ok], got.filter(pa.array(ok))
            if len(idx) == 0:
                continue
            accept[idx] = True
            for name, j in slots.items():
                v, p = cols.get(name) or cols.setdefault(name, (np.full(n, np.nan), np.zeros(n, dtype=bool)))
                v[idx] = pc.cast(pc.cast(got.field(f"v{j}"), pa.string()), pa.float64()).to_numpy(zero_copy_only=False)
                p[idx] = True
        good_pre = np.array([s is not None for s in streams], dtype=bool)
        accept &= good_pre[pre_ids]
        step_v, step_p = cols.get("step", (np.full(n, np.nan), np.zeros(n, dtype=bool)))
        with np.errstate(invalid="ignore"):
            exact = step_p & np.isfinite(step_v) & (np.abs(step_v) < _MAX_EXACT_INT) & (step_v == np.floor(step_v))
        accept &= exact  # a missing or fractional step: the per-line path fills it in
        if not accept.any():
            return none
        cols.pop("step", None)
        stream_keys: dict = {}
        row_stream = np.full(n, -1, dtype=np.int64)
        for p_i, s in enumerate(streams):
            if s is not None:
                k = stream_keys.setdefault(s[1], len(stream_keys))
                row_stream[(pre_ids == p_i) & accept] = k
        lines = cand_lines[pos]
        step_all = np.where(accept, step_v, 0).astype(np.int64)
        origin_of = {s[1]: s[0] for s in streams if s is not None}
        batches: list[StepBatch] = []
        for key, k in stream_keys.items():
            idx = np.nonzero(row_stream == k)[0]
            if len(idx) == 0:
                continue
            batches.append(StepBatch(
                self.source, key, origin_of[key], self.framework, lines[idx], step_all[idx], np.ones(len(idx), dtype=bool),
                {f: (v[idx], p[idx]) for f, (v, p) in cols.items()}, rows.take(pa.array(idx)), self.parsers, self.base))
        batches.sort(key=lambda b: int(b.lines[0]))
        return pos[np.nonzero(accept)[0]], batches

    def _layout(self, shape: bytes, msg: bytes) -> Optional[tuple]:
        """For lines shaped like `msg` (its digits aside): an RE2 regex that reads their numbers,
        and which capture feeds which column; None when such a line is not a step line.

        The regex is built from PAIR.finditer on `msg` itself: the text between the numbers is
        matched literally, so a line it matches is read into the same pairs by the Python rule
        (every attempt of PAIR starts and fails on the same literal text; only the numbers,
        each a whole NUM token followed by the same character, differ)."""
        got = self._layouts.get(shape, False)
        if got is not False:
            return got  # type: ignore[return-value]
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
            out = ("^" + "".join(parts) + "$", mapping)
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


def _np_bool(arr) -> np.ndarray:
    return arr.fill_null(False).to_numpy(zero_copy_only=False)


def _np_int(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _re2_literal(s: str) -> str:
    return "".join(c if c.isalnum() else f"\\x{ord(c):02x}" for c in s)
