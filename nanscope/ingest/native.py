"""The native lane: step lines read in RE2 over a whole chunk, never one by one in Python.

Most lines of a training log that carry a keyword are step lines (`step=12, loss=2.31, ...`,
Megatron's `iteration 12/ 100 | ... | lm loss: 2.31E+00 | ...`, DeepSpeed's `step=12,
skipped=0, ...`) and a log repeats a handful of line shapes. For each shape (the line with its
digits aside) the lane learns a reader from the parsers themselves, on a sample line:

- the sample goes through the ordinary per-line path (every parser, in order) with parser state
  that records any use: a line whose outcome depends on state (a traceback in progress, an HF
  log dict waiting for its step) is never read natively, nor is one that does not give exactly
  one StepEvent or MetricsEvent (vLLM's stats lines; their parser may write a note into its
  state, which the pipeline then makes where the lines are, see nanscope/metricsrows.py);
- every number of the message is then replaced, once by zeros and once by other digits, and the
  sample parsed again: a number that shows up unchanged in one event field (or printed pair) is
  read into that column; one that changes nothing is free; one that changes anything else (which
  rule claims the line, a flag, the rank) must stay as printed;
- the reader is one RE2 regex: the sample's launcher prefixes with their digits free (each
  distinct prefix checked once against `peel`, which gives its origin; the prefixes are what
  `peel` peels off the sample, kubectl's stamp told apart), then the message's text
  literally, with every number matched by its own shape (digits may vary, dots and exponents may
  not). So a line it reads has the sample's keywords and text, and only numbers the parsers were
  seen to pass through differ.

Step rows become StepBatch columns. Metrics rows become MetricsRows columns, delivered in line
order among the per-line candidates (a run of rows between two of them is one item); a row
becomes the sample's event with the row's numbers, text, origin and timestamp (what the per-line
path would make, without parsing) only when a machine needs it.

Lines with control bytes or non-ASCII text (ANSI escapes, \\r redraws, invalid UTF-8) are never
read natively. Every other line goes down the per-line path as before; tests/test_native.py
checks that both lanes give the same report on every sample log and on the benchmark's mix.
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional, Sequence

from nanscope.lazynp import np

from nanscope.ingest.native_hf import HFLane, floats, nocap
from nanscope.ingest.prefixes import peel
from nanscope.columns import sliced
from nanscope.ingest.reader import DIGIT0, _arrow, plain
from nanscope.ingest.timestamps import DAYS_BEFORE, TS_PATTERN, parse_ts
from nanscope.model import Loc, MetricsEvent, Origin, Record, StepEvent
from nanscope.parsers.base import Parser
from nanscope.parsers.numbers import to_float, to_int
from nanscope.metricsrows import MetricsRows
from nanscope.stepbatch import INTS, NUMERIC, Lines, StepBatch
from nanscope.keys import stream_key

_HOT_LAYOUTS = 12
# kubectl logs --timestamps' stamp, as peel's prefix regex reads it (ingest/prefixes.py `rfc`): a
# prefix that holds one is told apart by the rest (the stamp goes to the rows' timestamps)
_STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)"
_STAMP_PY = re.compile(_STAMP.encode())
_TOKEN = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_DIGITS = re.compile(r"\d+")
_DIGITS_B = re.compile(rb"[0-9]+")
_MAX_EXACT_INT = 2 ** 53
_MAX_SLOTS = 40


class NativeLane:
    """Per input: claims the step lines of each chunk (see the module docstring)."""

    def __init__(self, parsers: Sequence[Parser], source: str, base: Origin, max_line: int):
        self.parsers = tuple(parsers)
        self.names = tuple(p.name for p in parsers)
        self.ok = bool(parsers) and not any(k == "" for p in parsers for k in p.keywords)
        self.source = source
        self.base = base
        self.max_line = max_line
        self._prefixes: dict[tuple, Optional[tuple]] = {}  # (prefix without stamps, stamped, wrapped) -> _prefix's answer
        topo = getattr(base, "topo", None)
        self._wrapper = topo.wrapper if topo is not None else None  # a collector's stamp (ingest/wrapper.py)
        self._layouts: dict[tuple, Optional[_Layout]] = {}  # (prefix, message) shape -> its reader, or None
        self._readers: dict[tuple, _Layout] = {}  # each distinct reader once
        self.hf = HFLane(parsers, source, base)
        self._hot: list[_Layout] = []  # the readers tried first, most used first
        self._seen: dict[bytes, Optional[_Layout]] = {}  # a line's shape -> its reader, or None

    def has_readers(self) -> bool:
        return bool(self._hot)

    def read(self, cand, at: np.ndarray, found: list) -> np.ndarray:
        """Read cand[at] with the readers learned so far (what they read goes to `found` as
        (rows, captures, layout)); returns the rows none of them reads.

        The most used reader first (most lines are its), then each other one on the rows left.
        A reader is anchored, so a line of another shape fails at its first differing byte; one
        DFA pass over their union first, to spare the others the lines none reads, cost more:
        RE2 builds the DFA of a union of several readers afresh on every call. Readers match
        printable ASCII only."""
        rest = at
        for layout in self._hot:
            if len(rest) == 0:
                break
            rest = _read(cand, rest, layout, found)
        return rest

    def learn(self, cand, rows: np.ndarray, lines: list, found: list) -> np.ndarray:
        """Learn readers for the shapes among cand[rows] (plain lines some rule could claim, that
        no known reader read; `lines` are their bytes) and read those rows with them; returns the
        indices into `rows` that were read."""
        groups: dict[int, list[int]] = {}
        layouts: dict[int, _Layout] = {}
        hot = {id(x) for x in self._hot}  # tried on these rows already
        for i, line in enumerate(lines):
            key = line.translate(DIGIT0)  # cheaper than collapsing digit runs; a few more keys
            layout = self._seen.get(key, False)
            if layout is False:
                if len(self._seen) > 4096:
                    self._seen.clear()
                n = _prefix_len(line, self.base)
                shape = (_DIGITS_B.sub(b"0", line[:n]), _DIGITS_B.sub(b"0", line[n:]))
                layout = self._seen[key] = self._layout(shape, line, n)
            if layout is None or id(layout) in hot:
                continue
            groups.setdefault(id(layout), []).append(i)
            layouts[id(layout)] = layout
        read: list = []
        learned = False
        for k, at in groups.items():
            layout = layouts[k]
            at_np = np.array(at, dtype=np.int64)
            rest = _read(cand, rows[at_np], layout, found)
            if len(rest) < len(at_np):
                read.append(at_np[~np.isin(rows[at_np], rest)])
            if layout not in self._hot:
                self._hot.append(layout)
                learned = True
        if learned:
            self._hot.sort(key=lambda x: -x.hits)
            del self._hot[_HOT_LAYOUTS:]
        return np.sort(np.concatenate(read)) if read else np.zeros(0, dtype=np.int64)

    def columns(self, cand, cand_lines: np.ndarray, found: list) -> tuple[np.ndarray, list[StepBatch], dict, list]:
        """What the readers read: the positions in cand taken, StepBatches (one per stream, in
        line order), their lines per parser, and the metrics readers' rows (MetricsRows, one per
        reader and stream)."""
        made: list = []
        taken: list = []
        steps = []
        formats: dict = {}
        for item in found:
            if item[2].template is None:
                steps.append(item)
                continue
            taken.append(self._metrics_rows(cand, cand_lines, *item, made))  # (counted as they are delivered)
        claimed, batches, step_formats = self._step_columns(cand, cand_lines, steps) if steps else (
            np.zeros(0, dtype=np.int64), [], {})
        for k, v in step_formats.items():
            formats[k] = formats.get(k, 0) + v
        if taken:
            claimed = np.sort(np.concatenate([claimed] + taken))
        return claimed, batches, formats, made

    def _metrics_rows(self, cand, cand_lines: np.ndarray, idx: np.ndarray, got: Any, layout: "_Layout",
                      made: list) -> np.ndarray:
        """A metrics reader's rows as MetricsRows (one per stream: the numbers as columns, each
        row's origin and timestamp); returns the rows taken (those whose prefix peel reads as the
        reader's sample)."""
        t = layout.template
        which, prefixes, stamped = self._origins(got.field("pre"), cand, idx)
        groups: dict = {}  # (state key, stream) -> [its number, rank, the origins its prefixes give]
        prefix_group = np.full(len(prefixes), -1, dtype=np.int64)
        prefix_origin = np.zeros(len(prefixes), dtype=np.int64)
        for k, s in enumerate(prefixes):
            if s is None or s[3]:
                continue
            origin, key = s[0], s[1]
            rank = layout.rank if layout.rank is not None else origin.rank
            stream = key if rank == origin.rank else ("rank", origin.node, rank)
            g = groups.setdefault((key, stream), [len(groups), rank, []])
            prefix_group[k] = g[0]
            prefix_origin[k] = len(g[2])
            g[2].append(origin)
        group = prefix_group[which]
        ok = group >= 0
        if not ok.any():
            return idx[:0]
        rows = _take(cand, idx)
        secs, has_ts = _timestamps(rows, layout.regex)
        # the message's own time, else the prefix's stamp (as _place gives a metrics event its ts)
        ts = np.where(has_ts, secs, _stamps(got.field("pre")) if stamped and not has_ts.all() else np.nan)
        cols = {}
        for name, j in layout.slots.items():
            value = t.fields[name[len("fields."):]] if name.startswith("fields.") else getattr(t, name)
            cols[name] = (floats(got.field(f"v{j}")), type(value) is int)
        lines = cand_lines[idx]
        for (key, stream), (g, rank, origins) in groups.items():
            at = np.flatnonzero(group == g)
            made.append(MetricsRows(
                self.source, t, layout.parser, key, layout.writes, stream, rank, lines[at], Lines(cand, idx[at]),
                origins, prefix_origin[which[at]], ts[at], {name: (v[at], is_int) for name, (v, is_int) in cols.items()}))
        return idx[ok]

    def _step_columns(self, cand, cand_lines: np.ndarray, found: list) -> tuple[np.ndarray, list[StepBatch], dict]:
        pa, pc, pool = _arrow()
        n = len(cand)
        accept = np.zeros(n, dtype=bool)
        stream_of = np.full(n, -1, dtype=np.int64)
        keys: dict = {}
        origins: dict = {}
        frameworks: dict = {}
        read_by: dict = {}  # stream -> the columns its readers read (the others are absent on its rows)
        stamped: set = set()  # streams whose rows' origins differ in their stamps: the batch has none
        parsers_of = np.full(n, -1, dtype=np.int64)
        cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # Fields that every reader here reads from the same capture (loss and raw_fields.loss)
        # share one column: cast once, sliced once per stream, pickled once for --jobs.
        reads: dict[str, list] = {}
        for k, (_, _, layout) in enumerate(found):
            for name, j in layout.slots.items():
                reads.setdefault(name, []).append((k, "v", j))
            for name, value in layout.consts.items():
                reads.setdefault(name, []).append((k, "c", value))
        owner: dict[tuple, str] = {}
        alias = {name: owner.setdefault(tuple(how), name) for name, how in reads.items()}

        def column(name: str) -> Optional[tuple[np.ndarray, np.ndarray]]:
            if alias[name] != name:
                return None  # filled through the field it shares a column with
            got = cols.get(name)
            if got is None:
                got = cols[name] = (np.full(n, np.nan), np.zeros(n, dtype=bool))
            return got

        for idx, got, layout in found:
            pre_ids, prefixes, _ = self._origins(got.field("pre"), cand, idx)
            sid = np.full(len(prefixes), -1, dtype=np.int64)
            for u, s in enumerate(prefixes):
                if s is None:
                    continue
                origin = s[0]
                key = s[1] if layout.rank is None else ("rank", origin.node, layout.rank)
                sid[u] = keys.setdefault(key, len(keys))
                if s[2]:  # a stamp in the prefix (kubectl --timestamps, a CI runner's): rows differ in time
                    stamped.add(key)
                origins.setdefault(key, set()).add(origin)
                frameworks.setdefault(key, set()).add(layout.framework)
                read_by.setdefault(key, set()).update(layout.slots, layout.consts)
            stream_of[idx] = sid[pre_ids]
            accept[idx] = True
            parsers_of[idx] = self.names.index(layout.parser)
            for name, j in layout.slots.items():
                col = column(name)
                if col is not None:
                    col[0][idx] = floats(got.field(f"v{j}"))
                    col[1][idx] = True
            for name, value in layout.consts.items():
                col = column(name)
                if col is not None:
                    col[0][idx] = value
                    col[1][idx] = True
        for name, first in alias.items():
            cols[name] = cols[first]
        accept &= stream_of >= 0
        step_v, step_p = cols.pop("step", (np.full(n, np.nan), np.zeros(n, dtype=bool)))
        with np.errstate(invalid="ignore"):
            exact = step_p & np.isfinite(step_v) & (np.abs(step_v) < _MAX_EXACT_INT) & (step_v == np.floor(step_v))
            for name in INTS:  # an int field printed as a fraction: the per-line path says None
                if name in cols:
                    v, p = cols[name]
                    exact &= ~p | (np.isfinite(v) & (v == np.floor(v)))
        accept &= exact  # a missing or fractional step: the per-line path fills it in
        if not accept.any():
            return np.zeros(0, dtype=np.int64), [], {}
        lines = cand_lines
        steps = np.where(accept, step_v, 0).astype(np.int64)
        batches: list[StepBatch] = []
        for key, k in keys.items():
            idx = np.nonzero((stream_of == k) & accept)[0]
            if len(idx) == 0:
                continue
            os_, fs = origins[key], frameworks[key]
            cut: dict[int, tuple] = {}
            mine = read_by[key]
            sub = {name: cut.get(id(col)) or cut.setdefault(id(col), (col[0][idx], col[1][idx]))
                   for name, col in cols.items() if name in mine}
            unset = frozenset(name for name in INTS + ("skipped",) if name not in sub or not sub[name][1].any())
            batches.append(StepBatch(
                self.source, key, next(iter(os_)) if len(os_) == 1 and key not in stamped else None,
                next(iter(fs)) if len(fs) == 1 else None,
                lines[idx], steps[idx], np.ones(len(idx), dtype=bool), sub, Lines(cand, idx), self.names,
                self.base, unset=unset))
        batches.sort(key=lambda b: int(b.lines[0]))
        claimed = np.nonzero(accept)[0]
        counts = np.bincount(parsers_of[claimed], minlength=len(self.names))
        formats = {self.names[i]: int(c) for i, c in enumerate(counts.tolist()) if c}
        return claimed, batches, formats

    # --- learning a reader ------------------------------------------------------------------

    def _layout(self, shape: tuple, row: bytes, pre_len: int) -> Optional["_Layout"]:
        """The reader for lines of this shape (prefixes, message; digits aside), learned on `row`
        (cached; None: per line)."""
        got = self._layouts.get(shape, False)
        if got is not False:
            return got  # type: ignore[return-value]
        out = self._learn(row, pre_len)
        if out is not None:  # shapes that differ in padding only learn the same reader: keep one
            out = self._readers.setdefault(out.key(), out)
        self._layouts[shape] = out
        return out

    def _learn(self, row: bytes, pre_len: int) -> Optional["_Layout"]:
        if not plain(row):
            return None
        text = row.decode("ascii")
        got = self._parse(text)
        if got is None:
            return None
        ev, parser, writes = got
        metrics = isinstance(ev, MetricsEvent)
        msg = text[pre_len:]
        toks = list(_TOKEN.finditer(msg))
        if len(toks) > _MAX_SLOTS:
            return None
        slot_of: dict[str, int] = {}
        fixed: set[int] = set()
        for j, t in enumerate(toks):
            effect = None
            for probe in _probes(t.group()):
                if probe == t.group():
                    continue
                other = self._parse(text[: pre_len + t.start()] + probe + text[pre_len + t.end():])
                same = other is not None and other[1] == parser and other[2] == writes
                d = _effect(ev, other[0] if same else None, t.group(), probe)
                if d is None or (effect is not None and d != effect):
                    fixed.add(j)
                    break
                effect = d
            if j in fixed or not effect:
                continue
            for name in effect:
                if name in slot_of:  # two numbers feed one field: keep both as printed
                    fixed.update((j, slot_of[name]))
                slot_of[name] = j
        slots = {name: j for name, j in slot_of.items() if j not in fixed}
        if not metrics and "step" not in slots:
            return None  # a line without its own step number gets one from the stream: per line
        parts = []
        at = 0
        for j, t in enumerate(toks):
            lit = msg[at:t.start()]
            pad = len(lit) - len(lit.rstrip(" "))
            if pad >= 2 and self._any_padding(ev, parser, writes, text, pre_len + t.start() - pad, pad):
                parts.append(_literal(lit[:-pad]) + r"\x20+")  # right-aligned numbers (Megatron)
            else:
                parts.append(_literal(lit))
            if j in fixed:
                parts.append(_literal(t.group()))
            elif j in slots.values():
                parts.append(f"(?P<v{j}>{_shape(t.group())})")
            else:
                parts.append(_shape(t.group()))
            at = t.end()
        parts.append(_literal(msg[at:]))
        origin = peel(text, self.base)[1]
        rank = ev.rank if ev.rank != origin.rank else None
        # The sample's own prefixes, digits aside: one way through the regex at every byte (RE2
        # captures with its fast one-pass engine; the generic prefix loop made it backtrack).
        regex = f"^(?P<pre>{_shape(text[:pre_len])})" + "".join(parts) + "$"
        if metrics:
            return _Layout(regex, slots, {}, parser, ev.framework, rank, template=ev, writes=writes)
        consts = {}
        for name in NUMERIC + INTS + ("skipped",):
            v = getattr(ev, name)
            if name not in slots and v is not None:
                consts[name] = float(v)
        for key, v in (ev.raw_fields or {}).items():
            name = f"raw_fields.{key}"
            if name not in slots:
                f = v if isinstance(v, (int, float)) and not isinstance(v, bool) else (
                    to_float(v) if isinstance(v, str) else None)
                if f is not None:
                    consts[name] = float(f)
        return _Layout(regex, slots, consts, parser, ev.framework, rank)

    def _any_padding(self, ev: Any, parser: str, writes: Optional[dict], text: str, at: int, pad: int) -> bool:
        """Is the run of `pad` spaces at `at` (before a number) only padding: does the line read
        the same with one space there, and with three more? Then a reader takes any run there
        (Megatron right-aligns its numbers, so the run shrinks as they grow: one reader instead of
        one per width)."""
        for n in (1, pad + 3):
            other = self._parse(text[:at] + " " * n + text[at + pad:])
            if other is None or other[1] != parser or other[2] != writes or _effect(ev, other[0], "", "") != frozenset():
                return False
        return True

    def _parse(self, text: str) -> Optional[tuple[Any, str, Optional[dict]]]:
        """The per-line path on one line with watched parser state: (its one event, the parser
        that gave it, what that parser wrote into its state), or None (another outcome, or one
        that depends on state). A StepEvent's parser may not touch its state; a MetricsEvent's
        may only write to it (vLLM notes that the stream printed vLLM lines), which the
        pipeline repeats for each run of lines read (see MetricsRows)."""
        msg, origin = peel(text, self.base)
        rec = Record(Loc(self.source, 1), msg, origin, text)
        for p in self.parsers:
            st = _Watch()
            events = p.parse(rec, st)
            if events is None:
                if st.used:
                    return None
                continue
            if len(events) != 1:
                return None
            ev = events[0]
            if isinstance(ev, StepEvent):
                if st.used:
                    return None
                writes = None
            elif isinstance(ev, MetricsEvent):
                if st.read:
                    return None
                writes = dict(st) or None
            else:
                return None
            if ev.rank is None:
                ev.rank = origin.rank
            return ev, p.name, writes
        return None

    def _origins(self, pre, cand, idx: np.ndarray) -> tuple[np.ndarray, list, bool]:
        """A reader's rows by their prefixes (`pre`, the captures of rows cand[idx]): each row's
        index into the list of its prefixes' (origin, stream key, stamped) as peel reads them (None
        where peel reads the line otherwise), and whether any holds kubectl's --timestamps stamp
        (their seconds: _stamps). A prefix is known by what it says without its stamp, so a pod's
        lines have one origin (its time aside), not one per line."""
        pa, pc, pool = _arrow()
        key, wrap = pre, self._wrapper
        if wrap is not None:  # a collector's stamp before everything (ingest/wrapper.py): known without it
            # (cut from each distinct prefix in Python: an RE2 replace over every row cost a fifth of the
            # run; stamps with fractions of a second make nearly every prefix distinct: then RE2)
            enc0 = pc.dictionary_encode(pre, memory_pool=pool)
            if len(enc0.dictionary) * 2 < len(pre):
                cut = []
                for v in enc0.dictionary.to_pylist():
                    m = wrap.match(v.decode("ascii", "replace"))
                    cut.append(v if m is None else v[m.end():])
                key = pc.take(pa.array(cut, pa.binary()), enc0.indices, memory_pool=pool)
            else:
                key = pc.replace_substring_regex(pre, "^" + wrap.pattern, b"", max_replacements=1, memory_pool=pool)
        stamped = bool(pc.any(sliced(pc.match_substring_regex, key, _STAMP, memory_pool=pool)).as_py())
        if stamped:
            key = pc.replace_substring_regex(key, _STAMP, b"", memory_pool=pool)  # (a CI runner's over kubectl's: both)
        stamped = stamped or wrap is not None
        enc = pc.dictionary_encode(key, memory_pool=pool)
        which = _np_int(enc.indices)
        first = np.full(len(enc.dictionary), -1, dtype=np.int64)
        first[which[::-1]] = np.arange(len(which) - 1, -1, -1)  # each prefix's first row
        out = []
        for k, known in enumerate(enc.dictionary.to_pylist()):
            i = int(first[k])
            raw = pre[i].as_py()
            ts, wrapped = None, None
            if wrap is not None:
                wrapped = wrap.match(raw.decode("ascii"))
                if wrapped is not None:
                    ts, raw_rest = wrap.seconds(wrapped), raw[wrapped.end():]
            stamps = _STAMP_PY.findall(raw if wrapped is None else raw_rest) if stamped else []
            if stamps:
                ts = parse_ts(stamps[-1].decode())  # peel keeps the last stamp's time
            out.append(self._prefix(known, cand[int(idx[i])].as_py(), len(raw), ts, bool(stamps) or wrapped is not None,
                                    wrapped is not None))
        return which, out, stamped

    def _prefix(self, known: bytes, line: bytes, n: int, ts: Optional[float], stamped: bool,
                wrapped: bool = False) -> Optional[tuple]:
        """(origin, stream key, stamped, wrapped) of a line's first n bytes, a prefix, as peel
        reads them; None when peel reads the line otherwise. `known` is the prefix without its
        stamps, whose seconds are `ts` (the origin is kept without them: each row has its own);
        `wrapped`: a collector's stamp is among them (a metrics row's time would be that stamp's,
        which _stamps does not read: such rows go the per-line way)."""
        got = self._prefixes.get((known, stamped, wrapped), False)
        if got is not False:
            return got  # type: ignore[return-value]
        text = line.decode("ascii")
        msg, origin = peel(text, self.base)
        out = None
        if msg == text[n:] and origin.ts == ts:
            if stamped:
                origin = Origin(origin.rank, origin.local_rank, origin.node, None, origin.proc)
            out = (origin, stream_key(origin, self.source), stamped, wrapped)
        self._prefixes[(known, stamped, wrapped)] = out
        return out


def _prefix_len(line: bytes, base: Origin) -> int:
    """How many bytes of a line are launcher prefixes, as peel reads them (a reader matches its
    sample's prefixes by their shape, digits free, and the message literally)."""
    if not plain(line):
        return 0  # (never read natively)
    text = line.decode("ascii")
    return len(text) - len(peel(text, base)[0])


class _Layout:
    """One message shape's reader: an RE2 regex, which capture feeds which column, the values
    that are the same on every line it reads, and who claims those lines."""

    __slots__ = ("regex", "nocap", "passes", "slots", "consts", "parser", "framework", "rank", "hits", "template", "writes")

    def __init__(self, regex: str, slots: dict, consts: dict, parser: str, framework: str, rank: Optional[int],
                 template: Any = None, writes: Optional[dict] = None):
        self.regex = regex
        self.nocap = nocap(regex)
        self.passes = _passes(regex)
        self.slots = slots  # column -> capture index
        self.consts = consts  # column -> value on every line
        self.parser = parser
        self.framework = framework
        self.rank = rank  # a rank the line names itself (not its prefix's)
        self.hits = 0
        self.template = template  # a MetricsEvent reader: the sample's event, the rest as on it
        self.writes = writes  # what its parser writes into its state per line

    def key(self) -> tuple:
        """What makes two readers the same (a metrics reader's template is per sample: its own)."""
        return (self.regex, tuple(sorted(self.slots.items())), tuple(sorted(self.consts.items())), self.parser,
                self.framework, self.rank, id(self.template) if self.template is not None else None)


class _Watch(dict):
    """Parser state that notices being read or written."""

    used = False  # read or written
    read = False

    def _use(self) -> None:
        self.used = self.read = True

    def __getitem__(self, k: Any) -> Any:
        self._use()
        return super().__getitem__(k)

    def __setitem__(self, k: Any, v: Any) -> None:
        self.used = True
        super().__setitem__(k, v)

    def __contains__(self, k: Any) -> bool:
        self._use()
        return super().__contains__(k)

    def get(self, *a: Any) -> Any:
        self._use()
        return super().get(*a)

    def pop(self, *a: Any) -> Any:
        self._use()
        return super().pop(*a)

    def setdefault(self, *a: Any) -> Any:
        self._use()
        return super().setdefault(*a)


def _read(cand, at: np.ndarray, layout: _Layout, found: list) -> np.ndarray:
    """Read cand[at] with one layout; what it reads goes to `found`; returns the rest.

    A reader captured in two passes (see _passes) runs its numbers' pass first, over every row:
    that regex is the whole reader without the prefix group, one-pass, so a line of another
    shape fails at its first differing byte and the captures are the match (a separate match
    pass cost a DFA walk over every line it then captured again)."""
    pa, pc, pool = _arrow()
    sub = cand if len(at) == len(cand) else _take(cand, at)
    nums = None
    if len(layout.passes) == 2:
        nums = sliced(pc.extract_regex, sub, layout.passes[1], memory_pool=pool)
        ok = _np_bool(pc.is_valid(nums, memory_pool=pool))
    else:
        ok = _np_bool(sliced(pc.match_substring_regex, sub, layout.nocap, memory_pool=pool))
    hits = int(ok.sum())
    if hits:
        layout.hits += hits
        mask = None if hits == len(at) else pa.array(ok)
        if nums is not None:
            # the prefix alone: a short walk over every row, then the rows kept (copying the rows
            # out first cost more than the walk over the others)
            got = sliced(pc.extract_regex, sub, layout.passes[0], memory_pool=pool)
            both = pa.StructArray.from_arrays([part.field(f.name) for part in (got, nums) for f in part.type],
                                              names=[f.name for part in (got, nums) for f in part.type], memory_pool=pool)
            got = both if mask is None else pc.filter(both, mask, memory_pool=pool)
        else:
            mine = sub if mask is None else pc.filter(sub, mask, memory_pool=pool)
            got = sliced(pc.extract_regex, mine, layout.passes[0], memory_pool=pool)
        found.append((at[ok], got, layout))
    return at[~ok]


_ONE_PASS_GROUPS = 4  # RE2 captures with its one-pass engine up to $1..$4 (kMaxOnePassCapture)


def _passes(regex: str) -> tuple[str, ...]:
    """The extract_regex calls that capture a reader's groups. One, unless the prefix group is
    the only one over RE2's one-pass limit: then the prefix alone (a short walk, the regex cut
    after it) and the numbers in one one-pass run. RE2 otherwise captures with a backtracker,
    which cost 1.7x the two runs on PyTorch's step lines (pre + 4 numbers); with more numbers
    than four, several one-pass runs over the whole line cost more than the backtracker."""
    groups = len(re.findall(r"\(\?P<", regex))
    if groups != _ONE_PASS_GROUPS + 1 or not regex.startswith("^(?P<pre>"):
        return (regex,)
    i = _prefix_group(regex)
    if regex[:i].endswith(("\\d+", "*", "?")):
        return (regex,)  # the prefix alone could match more than within the line's whole match
    return (regex[: i + 1], "^(?:" + regex[len("^(?P<pre>"):])


def _prefix_group(regex: str) -> int:
    """Where a reader's `^(?P<pre>...)` group ends (the index of its closing parenthesis)."""
    depth, i = 0, 1
    while True:
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        depth += c == "("
        depth -= c == ")"
        if depth == 0:
            return i
        i += 1


def _timestamps(rows, regex: str) -> tuple[np.ndarray, np.ndarray]:
    """parse_ts of each row's message (the text after the reader's prefix), in one RE2 pass and
    array arithmetic: (seconds, whether the row has them); what _secs does per line (no
    timestamp, or a month out of range: not set)."""
    return _seconds(rows, "^(?:" + regex[len("^(?P<pre>"): _prefix_group(regex)] + ")" + TS_PATTERN)


def _stamps(pre) -> np.ndarray:
    """The seconds of kubectl's stamp in each prefix (NaN where none; of two, the last), as peel's
    parse_ts reads it."""
    pa, pc, pool = _arrow()
    stamp = pc.extract_regex(pre, f"^.*(?P<s>{_STAMP})", memory_pool=pool).flatten(memory_pool=pool)[0]  # (the last)
    secs, has = _seconds(pc.fill_null(stamp, b""), "^" + TS_PATTERN)
    return np.where(has, secs, np.nan)


def _seconds(rows, rx: str) -> tuple[np.ndarray, np.ndarray]:
    """parse_ts's seconds of the TS_PATTERN groups that `rx` captures in each row, and whether
    the row has them."""
    pa, pc, pool = _arrow()
    got = sliced(pc.extract_regex, rows, rx, memory_pool=pool)
    if got.null_count == len(rows):
        return np.zeros(len(rows)), np.zeros(len(rows), dtype=bool)

    fields = dict(zip([f.name for f in got.type], got.flatten(memory_pool=pool)))  # (null where no match)

    def pick(*names: str):  # the first alternative's field that took part (others are empty)
        out = fields[names[-1]]
        for name in reversed(names[:-1]):
            f = fields[name]
            out = pc.if_else(pc.greater(pc.binary_length(f), 0), f, out)
        return out

    def ints(*names: str) -> np.ndarray:
        return pc.cast(pc.fill_null(pick(*names), b"0"), pa.int64()).to_numpy(zero_copy_only=False)

    mo, day, h, mi = ints("gm", "m", "vm"), ints("gd", "d", "vd"), ints("gh", "h", "vh"), ints("gi", "i", "vi")
    sec = pc.cast(pc.replace_substring(pc.fill_null(pick("gs", "s", "vs"), b"0"), b",", b"."), pa.float64())
    ok = _np_bool(pc.is_valid(got)) & (mo >= 1) & (mo <= 12)
    days = np.asarray(DAYS_BEFORE, dtype=np.int64)[np.clip(mo - 1, 0, 11)]
    secs = ((days + day - 1) * 24 + h) * 3600 + mi * 60 + sec.to_numpy(zero_copy_only=False)
    return secs, ok


def _take(arr, idx: np.ndarray):
    pa, pc, pool = _arrow()
    return pc.take(arr, pa.array(idx, type=pa.int64(), memory_pool=pool), memory_pool=pool)


def _probes(tok: str) -> tuple[str, str]:
    """The same number with zeros, and with other non-zero digits (same shape)."""
    zeros = _DIGITS.sub(lambda m: "0" * len(m.group()), tok)
    other = _DIGITS.sub(lambda m: "".join(str((int(c) + 4) % 9 + 1) for c in m.group()), tok)
    return zeros, other


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


_METRIC_INTS = ("running", "waiting", "swapped", "preemptions")
METRICS = _METRIC_INTS + ("kv_cache_usage", "prompt_tps", "generation_tps")


def _effect(ev: Any, other: Optional[Any], tok: str, probe: str) -> Optional[frozenset]:
    """Which columns follow the number (tok -> probe) unchanged; None: it changed something else."""
    if other is None or type(other) is not type(ev):
        return None
    if isinstance(ev, StepEvent):
        numeric, ints, fixed, extra = NUMERIC + INTS + ("step",), INTS + ("step",), ("skipped", "rank", "framework"), "raw_fields"
    else:
        numeric, ints, fixed, extra = METRICS, _METRIC_INTS, ("rank", "framework", "step"), "fields"
    out = set()
    for name in numeric + fixed:
        a, b = getattr(ev, name), getattr(other, name)
        if _same(a, b):
            continue
        if name in fixed:
            return None
        conv = to_int if name in ints else to_float
        if _same(a, conv(tok)) and _same(b, conv(probe)) and a is not None:
            out.add(name)
            continue
        return None
    ra, rb = getattr(ev, extra) or {}, getattr(other, extra) or {}
    if ra.keys() != rb.keys():
        return None
    for key in ra:
        a, b = ra[key], rb[key]
        if _same(a, b):
            continue
        if ((a == tok and b == probe) or (isinstance(a, float) and _same(a, to_float(tok)) and _same(b, to_float(probe)))
                or (extra == "fields" and type(a) is int and a == to_int(tok) and b == to_int(probe))):
            out.add(f"{extra}.{key}")
            continue
        return None
    return frozenset(out)


def _shape(tok: str) -> str:
    """RE2 for numbers shaped like tok: any digits where it has digits, its other characters as is."""
    return "".join(r"\d+" if piece.isdigit() else _literal(piece) for piece in re.split(r"(\d+)", tok) if piece)


def _literal(s: str) -> str:
    return "".join(c if c.isalnum() else f"\\x{ord(c):02x}" for c in s)


def _np_bool(arr) -> np.ndarray:
    return arr.fill_null(False).to_numpy(zero_copy_only=False)


def _np_int(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
