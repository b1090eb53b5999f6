"""From sources to ordered events: read -> candidate lines -> prefixes -> parsers -> streams.

Everything here is a generator; nothing holds more than one chunk of one input.
"""

from __future__ import annotations

import os

from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

from nanscope.errors import InputError
from nanscope.ingest.prefixes import Base, RecordContinuation, SrunAgents, node_rank, origin_from_path, peel, strip_ansi, with_topology
from nanscope.lazynp import np

from nanscope import columns
from nanscope.ingest.ahead import Ahead
from nanscope.ingest.claimable import Claimable
from nanscope.ingest.native import NativeLane
from nanscope.ingest.reader import CHUNK_BYTES, MAX_LINE_BYTES, Claimed, HFRun, ReadAhead, RecordLine, Source, SyncMark, open_binary, scan_candidates
from nanscope.ingest.topology import HEAD_BYTES, learn, local_ranks
from nanscope.metricsrows import MetricsRows
from nanscope.ingest.timestamps import parse_ts
from nanscope.model import Diagnostic, Event, InputInfo, Loc, Origin, Record, StepEvent
from nanscope.parsers.base import Parser
from nanscope.parsers.registry import keyword_regex, select
from nanscope import stepbatch
from nanscope.stepbatch import Lines, StepBatch
from nanscope.keys import stream_key


NATIVE = True  # the native lane for step lines (tests switch it off to compare both lanes)
READ_AHEAD = True  # the reader on a thread of its own when a core is spare (ingest/ahead.py; tests compare both)


@dataclass
class ScanOptions:
    parsers: Optional[Sequence[str]] = None  # --parser: force these
    max_line_bytes: int = MAX_LINE_BYTES
    jobs: Optional[int] = None  # worker processes for several files or pieces of one; None: one per core for large inputs
    engine: Optional[str] = None  # None/"local": this machine; "dask" or "dask:ADDRESS" (nanscope.dask_scan)
    native: bool = True  # the native lane (off when every event is wanted as an object anyway)
    ahead: frozenset = frozenset()  # event kinds no signature reads with steps (see in_order)
    progress: Optional[Callable[[int, int], None]] = field(default=None, repr=False, compare=False)
    note: Optional[Callable[[str], None]] = field(default=None, repr=False, compare=False)  # how inputs were read (--verbose)


@dataclass
class ScanResult:
    inputs: list = field(default_factory=list)
    diagnostics: list = field(default_factory=list)


class Dispatch:
    """Which parsers and rules to try for a line, from the keywords the prefilter found in it.

    Equivalent to trying every parser in priority order (a rule is tried only when one of its
    keywords is in the line), without testing every keyword of every parser on every line. A
    parser that overrides Parser.parse() is always called, as before."""

    def __init__(self, parsers: Sequence[Parser]):
        self.parsers = tuple(parsers)
        self.prefilter = keyword_regex(self.parsers)
        self.custom = _custom(self.parsers)
        # (a parser with a parse() of its own may claim lines none of its rules match)
        self.claimable = Claimable(self.parsers, self.plan) if Claimable.usable(self.parsers) and not any(self.custom) else None
        self.all = tuple((i, p, None) for i, p in enumerate(self.parsers))
        self._plans: dict = {}

    def plan(self, found: tuple) -> tuple:
        got = self._plans.get(found)
        if got is None:
            words = self.prefilter.possible(found)
            if words is None:
                got = self.all
            else:
                steps = []
                for i, p in enumerate(self.parsers):
                    if self.custom[i]:
                        steps.append((i, p, None))
                        continue
                    rules = tuple(r for r in p.rules if any(k in words for k in r.keywords))
                    if rules:
                        steps.append((i, p, rules))
                got = tuple(steps)
            self._plans[found] = got
        return got


_DISPATCH: dict = {}


def _custom(parsers: tuple) -> tuple:
    """Parsers whose parse() is not Parser.parse (a subclass or an instance attribute)."""
    return tuple(type(p).parse is not Parser.parse or "parse" in vars(p) for p in parsers)


def dispatch_for(parsers: tuple) -> Dispatch:
    """One Dispatch per parser selection (parsers are unhashable dataclasses: keyed by identity)."""
    key = tuple(id(p) for p in parsers)
    d = _DISPATCH.get(key)
    if d is None or d.parsers != parsers or d.custom != _custom(parsers):
        d = _DISPATCH[key] = Dispatch(parsers)
    return d


def scan_source(source: Source, parsers: Sequence[Parser], info: InputInfo, result: ScanResult,
                max_line: int = MAX_LINE_BYTES, progress: Optional[Callable[[int, int], None]] = None,
                native_lane: bool = True) -> Iterator[Event]:
    """Events of one input, in line order, and Hold items with the natively read rows (in_order
    puts those in place)."""
    raw_stream, size = open_binary(source)
    info.size = size
    stream = ReadAhead(raw_stream, HEAD_BYTES)
    encoding = getattr(raw_stream, "encoding", None)
    if encoding is not None:
        result.diagnostics.append(Diagnostic(
            "NS-IO-ENCODING", f"read as {_ENCODING_NAMES.get(encoding, encoding)} (not UTF-8); line numbers are the text's", source.name))
    scan = FileScan(source, parsers, info, stream, stream.head, stream.whole, max_line, progress, native_lane)
    try:
        yield from scan.items()
        yield from scan.finish()
    finally:
        if not source.is_stdin:
            try:
                stream.close()
            except OSError:
                pass
    io_diagnostics(source, info, scan.marks, max_line, size, result)


class Sync:
    """An item of FileScan.items() at a sync point of a read in pieces (nanscope/pieces.py): every
    line before file offset `offset` has been read and parsed; line `line` starts there."""

    __slots__ = ("offset", "line")
    kind = "sync"

    def __init__(self, offset: int, line: int):
        self.offset = offset
        self.line = line


RECORD_KEY = ("", "record")  # FileScan.states' slot of the open logged record (not a parser's)


class FileScan:
    """The scan of one input: the per-input context (base origin, topology from the head read
    ahead), the parsers' per-stream state, and the loop over the reader's candidates.

    scan_source reads a whole input with it. A piece of a file (nanscope/pieces.py) is read with a
    stream that starts at a line start `offset` (line `lineno`), the head of the file for the
    topology, optionally the parser state (`states`, `nodes`) of the lines before, and the `sync`
    offsets at which items() yields a Sync; `state()` is what decides the rest of the read."""

    def __init__(self, source: Source, parsers: Sequence[Parser], info: InputInfo, stream, head: bytes, whole: bool,
                 max_line: int = MAX_LINE_BYTES, progress: Optional[Callable[[int, int], None]] = None,
                 native_lane: bool = True, lineno: int = 1, offset: int = 0, chunk_bytes: Optional[int] = None,
                 sync: Optional[frozenset] = None, states: Optional[dict] = None, nodes: bool = False):
        self.source, self.info, self.stream, self.max_line, self.progress = source, info, stream, max_line, progress
        self.parsers = parsers = tuple(parsers)
        self.native_lane = native_lane
        self.start = (lineno, offset, chunk_bytes, sync)
        base = origin_from_path(None if source.is_stdin else source.name, source.layout_rank)
        self.topo = topo = learn(head, whole)
        if source.layout_rank is not None and base.rank == source.layout_rank and base.node is None \
                and len(local_ranks(head)) >= 2:
            # `job-1.out` among siblings that print several torchrun local ranks each: one file per
            # node (Slurm's %n / %t with one torchrun agent per node), so its number is the node's
            base = Origin(node=f"node{source.layout_rank}")
        self.base = with_topology(base, topo)
        self.srun_agents = SrunAgents()
        self.srun_agents.nodes = nodes
        self.states: dict = states if states is not None else {}
        # (not a parser's: a logged record's continuation lines, ingest/prefixes.RecordContinuation)
        self.records = RecordContinuation(self.states.setdefault(RECORD_KEY, {}))
        self.marks: dict = {}
        self.held_any = False

    def state(self) -> tuple:
        """What the rest of the read depends on besides the bytes: the parsers' non-empty states
        (an empty one reads as a missing one) and whether srun labels were seen over torchrun."""
        return {k: v for k, v in self.states.items() if v}, self.srun_agents.nodes

    def items(self) -> Iterator:
        source, info, parsers, base, states = self.source, self.info, self.parsers, self.base, self.states
        dispatch = dispatch_for(parsers)
        srun_agents = self.srun_agents
        records = self.records
        made: dict = {}  # stream key -> index of the last parser whose state exists (creation order as before)
        name = source.name
        plan = dispatch.plan
        everything = dispatch.all
        formats = info.formats
        max_line = self.max_line
        parser_at = {p.name: i for i, p in enumerate(parsers)}

        def reach(key: tuple, upto: int) -> None:
            """Parser states exist for this stream up to parser `upto`, made in parser order as the
            per-line path makes them."""
            have = made.get(key, -1)
            if upto > have:
                for j in range(have + 1, upto + 1):
                    states.setdefault((parsers[j].name, key), {})
                made[key] = upto

        lane = NativeLane(parsers, name, base, max_line) if NATIVE and self.native_lane else None
        native = lane if lane is not None and lane.ok else None
        lineno, offset, chunk_bytes, sync = self.start
        def make(count_into: InputInfo) -> Iterator:
            return scan_candidates(self.stream, dispatch.prefilter, count_into, chunk_bytes=chunk_bytes or CHUNK_BYTES,
                                   max_line=max_line, progress=self.progress, marks=self.marks, native=native,
                                   claimable=dispatch.claimable if NATIVE else None, lineno=lineno, offset=offset,
                                   sync=sync)

        ahead = READ_AHEAD and sync is None and source.path is not None and source.stream is None and columns.THREADS > 1
        items = Ahead(make, info, (Claimed, MetricsRows, HFRun)) if ahead else make(info)
        for lineno, raw, found in items:
            if found.__class__ is RecordLine:  # a line the lane took out, for the open record alone
                if records.slot:
                    text = raw.decode("utf-8", "replace")
                    if "\x1b" in text:
                        text = strip_ansi(text)
                    msg, origin = peel(text, base)
                    records.fix(msg, text, srun_agents.fix(text, origin, base), base, lineno)
                continue
            if found.__class__ is Claimed:
                batches, counts, hf = found.payload  # (its rows end a record at their own lines: RecordLine)
                if not srun_agents.nodes:
                    for b in batches:
                        srun_agents.see(b.origin, base)
                n = sum(len(b) for b in batches)
                info.candidate_lines += n
                info.event_lines += n
                for pname, c in counts.items():
                    formats[pname] = formats.get(pname, 0) + c
                if hf is not None:
                    key = stream_key(hf[3] or base, name)
                    reach(key, parser_at["hf"])
                    batches = batches + _hf_progress(hf, states[("hf", key)], key, name, base, info,
                                                     tuple(p.name for p in parsers))
                self.held_any = True
                yield Hold(batches)
                continue
            if found.__class__ is MetricsRows:  # a metrics reader's run of lines: their events, in columns
                records.end()
                key = found.key
                reach(key, parser_at[found.parser])
                if found.writes:  # (the same write at each line of the run, with nothing between)
                    states[(found.parser, key)].update(found.writes)
                n = len(found)
                info.candidate_lines += n
                info.event_lines += n
                formats[found.parser] = formats.get(found.parser, 0) + n
                yield found
                continue
            if found.__class__ is HFRun:  # HF lines read natively after one the lane left per line (RecordLine: the record)
                key = stream_key(found.hf[3] or base, name)
                reach(key, parser_at["hf"])
                self.held_any = True
                yield Hold(_hf_progress(found.hf, states[("hf", key)], key, name, base, info,
                                        tuple(p.name for p in parsers)))
                continue
            if found.__class__ is SyncMark:
                yield Sync(found.offset, lineno)
                continue
            text = raw.decode("utf-8", "replace")  # (invalid sequences are counted by the reader, on every line)
            if "\x1b" in text:
                text = strip_ansi(text)
                steps = everything  # an escape sequence may have split a keyword in the raw bytes
            else:
                steps = plan(found)
            msg, origin = peel(text, base)
            origin = srun_agents.fix(text, origin, base)
            origin = records.fix(msg, text, origin, base, lineno)
            rec = Record(Loc(name, lineno), msg, origin, text)
            key = stream_key(origin, name)
            have = made.get(key, -1)
            events = None
            for i, p, rules in steps:
                if i > have:
                    reach(key, i)
                    have = i
                st = states[(p.name, key)]
                events = p.parse(rec, st) if rules is None else p.parse_rules(rec, st, rules)
                pending = st.get("pending")
                if pending is not None and pending.stream is None:
                    _place(pending, text, msg, origin, key, base)
                if events is not None:
                    formats[p.name] = formats.get(p.name, 0) + 1
                    break
            if events is None:
                reach(key, len(parsers) - 1)
                continue
            if events:
                info.event_lines += 1
            for ev in events:
                if ev.stream is None:
                    _place(ev, text, msg, origin, key, base)
                yield ev

    def finish(self, hold: Optional[bool] = None) -> Iterator[Event]:
        """At the end of the input: every natively read row before what the parsers still hold,
        which comes out in line order (the order of its lines, whatever order the streams'
        states were made in). hold: deliver the held rows first (default: if any were held)."""
        if self.held_any if hold is None else hold:
            yield Hold([])
        by_name = {p.name: p for p in self.parsers}
        held = [ev for (pname, _key), st in self.states.items() if pname in by_name for ev in by_name[pname].flush(st)]
        held.sort(key=lambda ev: ev.loc.line)
        yield from held
        self.info.topology = self.topo.evidence()


def io_diagnostics(source: Source, info: InputInfo, marks: dict, max_line: int, size: Optional[int],
                   result: ScanResult) -> None:
    """What the reading of an input noticed about its bytes, as diagnostics."""
    name = source.name
    if info.long_lines:
        result.diagnostics.append(Diagnostic(
            "NS-IO-LONG-LINE", f"{info.long_lines} line(s) longer than {max_line} bytes were cut to that length", name,
            marks.get("long")))
    if info.nul_bytes:
        nul_line, nul_offset = marks.get("nul", (None, None))
        where = f" (the first at line {nul_line}, byte offset {nul_offset})" if nul_line is not None else ""
        result.diagnostics.append(Diagnostic(
            "NS-IO-BINARY-REGION", f"{info.nul_bytes} NUL byte(s) in the input (a crashed writer or a binary file); they were read as line breaks{where}",
            name, nul_line))
    if info.replaced_bytes:
        result.diagnostics.append(Diagnostic(
            "NS-IO-INVALID-UTF8", f"{info.replaced_bytes} invalid UTF-8 sequence(s) in the input; read as U+FFFD", name))
    if not info.complete:
        result.diagnostics.append(Diagnostic("NS-IO-INCOMPLETE", info.error or "input ends early", name))
    if source.path is not None and size is not None:
        try:
            now = os.stat(source.path).st_size
        except OSError:
            now = None
        if now is None or now < size:
            result.diagnostics.append(Diagnostic(
                "NS-IO-CHANGED", f"the file shrank while it was read ({size} -> {now if now is not None else 'gone'} bytes): "
                "it was truncated or rotated; what was read is diagnosed", name))


_ENCODING_NAMES = {"utf-16": "UTF-16 (byte-order mark)", "utf-16-le": "UTF-16LE (no byte-order mark)",
                   "utf-16-be": "UTF-16BE (no byte-order mark)"}


class Hold:
    """An item of scan_source: a region's natively read rows (StepBatches), to be delivered in
    line order among the events that follow (see in_order); everything held before goes first."""

    __slots__ = ("batches",)
    kind = "hold"

    def __init__(self, batches: list):
        self.batches = batches


def in_order(items: Iterator, ahead: frozenset = frozenset()) -> Iterator:
    """scan_source's items with the held rows delivered where the per-line path would have
    made them: before any event of the same stream that comes after them. Applied after
    transport (parallel workers send whole batches, not the many pieces this cuts them into).

    `ahead`: kinds of events that may go before the held rows of their stream (see
    Pending.flush_before), because no signature reads them together with steps."""
    held = Pending(ahead)
    for it in items:
        if it.__class__ is Hold:
            yield from held.flush_all()
            held.add(it.batches)
            continue
        if held:
            if it.__class__ is MetricsRows:
                if held.rows_ahead(it):
                    yield it
                    continue
                for ev in it.events():  # rows one by one, as the per-line path has them
                    yield from held.flush_before(ev)
                    yield ev
                continue
            yield from held.flush_before(it)
        yield it
    yield from held.flush_all()


# Events that streams.Streams only reads the step of (it gives a step-less one the step after its
# stream's last): they may pass held rows once they have that step.
STEP_READERS = frozenset({"metrics", "lifecycle", "warning"})


class Pending:
    """The native lane's step rows of the current region, per stream, until a per-line event of
    the same stream (or the next region) needs them delivered first: within a stream, rows and
    events reach streams and engine in line order, as on the per-line path."""

    def __init__(self, ahead: frozenset = frozenset()) -> None:
        self.by_stream: dict = {}
        self.ahead = ahead & STEP_READERS

    def __bool__(self) -> bool:
        return bool(self.by_stream)

    def add(self, batches: list) -> int:
        n = 0
        for b in batches:
            self.by_stream.setdefault(b.stream, []).append(b)
            n += len(b)
        for key, got in self.by_stream.items():
            if len(got) > 1:
                self.by_stream[key] = by_order(got)
        return n

    def rows_ahead(self, rows: MetricsRows) -> bool:
        """flush_before for every row of a MetricsRows at once, when every row may go ahead of the
        held rows (each then has the step _step_ahead gives it); False: nothing is changed, and
        the caller takes the rows one by one."""
        got = self.by_stream.get(rows.stream)
        if rows.local():
            return False
        if not got:
            return True  # (rows of other streams are not cut for it)
        if "metrics" not in self.ahead or rows.step_set.any():
            return False
        n = len(rows)
        has = np.zeros(n, dtype=bool)
        last_step = np.zeros(n, dtype=np.int64)
        last_set = np.zeros(n, dtype=bool)
        for b in got:  # the last held row before each line (batches go in list order)
            cut = b.order.searchsorted(rows.lines, "right")
            some = cut > 0
            at = cut[some] - 1
            has[some] = True
            last_step[some] = b.step[at]
            last_set[some] = b.step_set[at]
        if (has & ~last_set).any():
            return False
        rows.step[has] = last_step[has] + 1
        rows.step_set[has] = True
        return True

    def flush_before(self, ev: Event):
        keys = [ev.stream]
        o = ev.origin
        local = o is not None and o.local_rank is not None and ev.stream is not None and ev.stream[0] == "rank"
        if local:
            keys.append(("local", ev.stream[1], o.local_rank))  # streams may read that stream's step
        line = ev.loc.line
        if ev.kind in self.ahead and not local and self._step_ahead(ev, line):
            return  # (a stream of interleaved vLLM stats and trainer steps is not cut at every line)
        for key in keys:
            got = self.by_stream.get(key)
            if not got:
                continue
            keep = []
            for b in got:
                cut = int(b.order.searchsorted(line, "right"))
                if cut:
                    yield b.slice(0, cut) if cut < len(b) else b
                if cut < len(b):
                    keep.append(b.slice(cut, len(b)) if cut else b)
            if keep:
                self.by_stream[key] = keep
            else:
                del self.by_stream[key]

    def _step_ahead(self, ev: Event, line: int) -> bool:
        """Give a step-less event the step streams would give it after the held rows before it
        (the last one's, plus one) so it can go first; False if it cannot go first."""
        got = self.by_stream.get(ev.stream)
        if not got:
            return True
        if ev.step is not None:
            return False
        last = None
        for b in got:
            cut = int(b.order.searchsorted(line, "right"))
            if cut:
                last = (b, cut - 1)
        if last is None:
            return True  # nothing held before it: the stream's own step is the right one
        b, i = last  # the last row streams would have processed (batches go in list order)
        if not b.step_set[i]:
            return False
        ev.step = int(b.step[i]) + 1
        return True

    def flush_all(self):
        if not self.by_stream:
            return
        batches = sorted((b for bs in self.by_stream.values() for b in bs), key=lambda b: int(b.order[0]))
        self.by_stream = {}
        yield from batches


def by_order(batches: list) -> list:
    """One stream's batches as slices whose rows come one after the other in `order` (where the
    per-line path makes each row's event). An HF batch's rows come out at the next bar's line, so
    a batch of other step prints in the same stream (a script's own `step=N, loss=...` between
    the trainer's bars) can fall between two of its rows: both are cut there."""
    if all(int(a.order[-1]) <= int(b.order[0]) for a, b in zip(batches, batches[1:])):
        return batches
    which = np.concatenate([np.full(len(b), k, dtype=np.int64) for k, b in enumerate(batches)])
    pos = np.concatenate([np.arange(len(b)) for b in batches])
    o = np.argsort(np.concatenate([b.order for b in batches]), kind="stable")
    which, pos = which[o], pos[o]
    starts = np.flatnonzero(np.concatenate([[True], which[1:] != which[:-1]]))
    ends = np.append(starts[1:], len(which))
    return [batches[k].slice(int(pos[a]), int(pos[e - 1]) + 1) for k, a, e in
            zip(which[starts].tolist(), starts.tolist(), ends.tolist())]


def _hf_progress(hf: tuple, st: dict, key: tuple, name: str, base, info: InputInfo, parser_names: tuple) -> list:
    """HF progress lines read natively (ingest/native_hf.py), as the hf parser would have handled
    them line by line: each line releases the dict held from the line before, with its first
    bar's count as the step (none on a line without a bar: streams give it one); a line that
    ends in a dict holds it (the last one stays held in the parser's state), a line of bars
    alone holds none."""
    lines, cols, texts, origin = hf
    origin = origin or base  # the lines' stream: a prefix's (`[default0]:{...}`), or the input's own
    m = len(lines)
    bars = cols["bar"]  # the line has a bar (its first bar's count is cols["n"])
    steps = np.where(bars, cols["n"], 0).astype(np.int64)
    claims = int(cols["claims"].sum())
    dicts = cols["dict"]
    present_of = {k[len("present."):]: v for k, v in cols.items() if k.startswith("present.")}  # optional pairs
    cols = {k: v for k, v in cols.items() if k not in ("n", "claims", "dict", "bar") and not k.startswith("present.")}
    out = []
    prev = st.pop("pending", None)
    if prev is not None:
        prev.step = int(steps[0]) if bars[0] else None
        one = StepBatch.from_events([prev])
        one.order = lines[:1]
        out.append(one)
    rows = np.flatnonzero(dicts[:-1])  # released by the next line (its first bar gives the step)
    if len(rows):
        present = np.ones(len(rows), dtype=bool)
        out.append(StepBatch(name, key, origin, "hf", lines[rows], steps[rows + 1], bars[rows + 1],
                             {k: (v[rows], present_of[k][rows] if k in present_of else present.copy())
                              for k, v in cols.items()},
                             Lines(texts.arr, rows), parser_names, base, order=lines[rows + 1]))
    if dicts[-1]:
        last = StepBatch(name, key, origin, "hf", lines[-1:], steps[-1:], np.zeros(1, dtype=bool), {},
                         texts.slice(m - 1, 1), parser_names, base).event(0)
        last.step = None
        st["pending"] = last
    info.candidate_lines += claims
    info.formats["hf"] = info.formats.get("hf", 0) + claims
    info.event_lines += len(rows) + (prev is not None)
    return out


_LINE_DISPATCH: dict = {}  # parser names -> (their selection, its Dispatch): parse_line runs once per row


def parse_line(raw: bytes, lineno: int, name: str, base, parser_names: tuple, held: bool = False) -> list:
    """One line through the per-line path with fresh parser state (for a stateless line this is
    exactly what the scan gives; StepBatch.event uses it to turn a native row into an event).
    held: an event the parser parks until a later line (an HF dict) counts as the line's."""
    parsers = select(parser_names)
    got = _LINE_DISPATCH.get(parser_names)
    if got is None or got[0] is not parsers:
        got = _LINE_DISPATCH[parser_names] = (parsers, dispatch_for(parsers))
    d = got[1]
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = strip_ansi(text)
        steps = d.all  # an escape sequence may have split a keyword in the raw bytes
    else:
        steps = d.plan(d.prefilter.found_in(raw))  # as FileScan.items: only the rules whose keywords the line holds
    msg, origin = peel(text, base)
    rec = Record(Loc(name, lineno), msg, origin, text)
    key = stream_key(origin, name)
    for _, p, rules in steps:
        st: dict = {}
        events = p.parse(rec, st) if rules is None else p.parse_rules(rec, st, rules)
        if events is not None:
            if held and not events and st.get("pending") is not None:
                events = [st["pending"]]
            for ev in events:
                if ev.stream is None:
                    _place(ev, text, msg, origin, key, base)
            return events
    return []


def _place(ev: Event, text: str, msg: str, origin, key: tuple, base=None) -> None:
    """Give an event its line as printed, its origin, its rank and its stream (once). A local
    rank the message names (torchrun's agent: `failed (exitcode: 1) local_rank: 3`) on a known
    node is a global rank when the input's topology says how (ingest/topology.py)."""
    ev.text = text  # evidence shows the line as printed, prefixes included
    ev.origin = origin
    if ev.rank is None:
        ev.rank = origin.rank
        if ev.rank is None and base.__class__ is Base and origin.local_rank is None and origin.node is not None:
            fields = getattr(ev, "fields", None)  # a StepEvent has none
            lr = fields.get("local_rank") if isinstance(fields, dict) else None
            if isinstance(lr, int) and not isinstance(lr, bool):
                ev.rank = node_rank(origin.node, lr, base.topo)
    ev.stream = key if ev.rank == origin.rank else ("rank", origin.node, ev.rank)
    if not isinstance(ev, StepEvent):
        ts = parse_ts(msg)
        if ts is not None:
            ev.origin = Origin(rank=origin.rank, local_rank=origin.local_rank, node=origin.node, ts=ts, proc=origin.proc)


stepbatch.REPARSE = parse_line  # a native row made into an event later reads its line this way


def note_unreadable(info: InputInfo, result: ScanResult, name: str, e: Exception) -> None:
    """An input that cannot be read is reported and skipped; the rest is still diagnosed."""
    message = e.message if isinstance(e, InputError) else (getattr(e, "strerror", None) or str(e))
    info.complete = False
    info.error = message
    result.diagnostics.append(Diagnostic("NS-IO-UNREADABLE", message, name))
