"""One large file read in pieces by several workers, stitched into exactly the sequential read.

The parsers carry state from line to line (a traceback in progress, an HF dict waiting for its
step, the errors a stream reported lately, srun labels seen over torchrun), so a piece read from
a fresh state may read its first lines differently from the sequential run. The design:

- **Boundaries the reader already has.** The reader cuts the input into regions at the last
  newline before each read of CHUNK_BYTES (the first MiB, read ahead for the topology, counts as
  a read): `grid_next` gives where each read of the whole file ends. A piece starts at such a
  region boundary (`plan_split` checks that it is one whatever the reads before: a newline in
  that read, no over-long line around it), so every piece's reader has exactly the regions of
  the sequential run (lines two ranks' writes split are rejoined within a region, as before), and
  line numbers and byte offsets are the file's (the newlines before the piece are counted).
- **File-level context** comes from the file's head, read by every piece: the topology, the
  per-node layout, whether the head is the whole input.
- **Speculation, then a stitch.** Each piece is read from a fresh parser state. At sync points
  (region boundaries: every SYNC_BYTES of reads, and the first DENSE regions of every piece) a
  piece's read releases what the native lane holds and records its state: the parsers' non-empty
  per-stream states and the srun flag (`FileScan.state`). The worker of piece p reads on past its
  end (the overrun, with the true state once the stitch before it holds) until, at a sync point,
  its state equals the state the owner of that point recorded there: from there on both reads
  are the same computation on the same bytes, so the rest is taken from the owner. A construct
  that straddles a boundary (a traceback, an HF dict before its bar, a torchrun failure block) is
  read by the overrun with the state it needs; a state that never agrees (a stream's memory of an
  early failure) makes the overrun read to the end of the file: slower, never wrong.
- **The merge** (`stitch`) takes, in file order, piece 0, its overrun up to the point where it met
  a later piece's state, that piece from there, and so on; the counts of each part (lines read,
  events, formats, invalid bytes, NUL bytes, the first long line and NUL) are summed per segment
  between sync points, so nothing is counted twice. The held parser events at the end of the
  file come out in line order (FileScan.finish). Streams and engine then see exactly the
  sequential events.

`nanscope.parallel` runs the pieces in worker processes (the first piece in the parent when it
is the one input), `nanscope.dask_scan` as Dask tasks (where the overrun is a task of its own,
given the piece's end state); both call `stitch`.
"""

from __future__ import annotations

import bisect
import os
import pickle
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from nanscope.ingest import reader
from nanscope.ingest.reader import CLAIM_BYTES, Source, utf16_encoding
from nanscope.ingest.topology import HEAD_BYTES
from nanscope.model import InputInfo
from nanscope.parsers.registry import select
from nanscope.pipeline import FileScan, ScanOptions

SPLIT_MIN_BYTES = 16 << 20  # with --jobs N: a file smaller than this is read by one worker
AUTO_SPLIT_BYTES = 32 << 20  # with jobs unset: ... (a second process pays from here; bench/README)
PIECE_BYTES: Optional[int] = None  # a forced piece size (tests: a few KiB, so boundaries fall in tracebacks)
REGION_BYTES: Optional[int] = None  # a forced read size for pieces (tests); None: the reader's CHUNK_BYTES
SYNC_BYTES = CLAIM_BYTES  # sync points this far apart (the native lane's batches are not cut more often)
DENSE = 4  # ... and at each of the first DENSE regions of a piece, where an overrun usually meets it
BATCH = 1024  # items (or rows) per message


@dataclass(frozen=True)
class Plan:
    """Where a file is cut: piece p is [starts[p], starts[p+1]) (the last one to the end)."""

    path: str
    size: int
    starts: tuple
    region: int
    head: int
    sync: frozenset  # read ends after which a region boundary is a sync point

    def end(self, p: int) -> int:
        return self.starts[p + 1] if p + 1 < len(self.starts) else self.size

    def owner(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1


def split_plans(sources: list, sizes: list, workers: int, least: int, max_line: int, first: float = 1.0) -> dict:
    """{input index: Plan} for the inputs worth reading in pieces by `workers` workers: at least
    `least` bytes, in about as many pieces as their share of all the bytes gives them workers
    (each piece at least least / 2); every plain file with a forced PIECE_BYTES."""
    total = sum(sizes) or 1
    plans: dict = {}
    for i, (src, size) in enumerate(zip(sources, sizes)):
        if PIECE_BYTES:
            k = 0
        elif size >= least:
            k = min(workers, max(1, round(size * workers / total)), size // max(1, least // 2))
            if k < 2:
                continue
        else:
            continue
        plan = plan_split(src, k, max_line, PIECE_BYTES, first)
        if plan is not None:
            plans[i] = plan
    return plans


def grid_next(pos: int, region: int, head: int) -> int:
    """Where the whole file's read that covers offset `pos` ends: the reader reads `region` bytes
    at a time from the read-ahead head of `head` bytes, then from the file."""
    if pos < head:
        return min((pos // region + 1) * region, head)
    return head + ((pos - head) // region + 1) * region


def plan_split(source: Source, pieces: int, max_line: int, piece_bytes: Optional[int] = None,
               first: float = 1.0) -> Optional[Plan]:
    """A Plan for reading `source` in about `pieces` pieces (or pieces of piece_bytes), or None when
    it cannot be split: not a plain file (stdin, compressed, UTF-16), too small, or no region
    boundary where a cut should go. `first`: the first piece's size relative to the others' (the
    parent, which also runs streams and engine, reads a smaller one)."""
    if source.path is None or source.data is not None or source.stream is not None or source.skip is not None:
        return None
    region = REGION_BYTES or reader.CHUNK_BYTES
    head = HEAD_BYTES
    try:
        with open(source.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            magic = f.read(64)
            if magic.startswith((b"\x1f\x8b", b"\x28\xb5\x2f\xfd")) or utf16_encoding(magic) is not None:
                return None
            if piece_bytes:
                pieces = -(-size // piece_bytes)
            if pieces < 2 or size < 2 * region:
                return None
            points = []
            pos = 0
            while True:
                pos = grid_next(pos, region, head)
                if pos >= size:
                    break
                points.append(pos)
            starts = [0]
            at = 0
            weight = first + pieces - 1 if not piece_bytes else pieces
            for k in range(1, pieces):
                want = int(size * ((first if not piece_bytes else 1) + k - 1) / weight)
                near = bisect.bisect_left(points, want)
                if near and (near == len(points) or want - points[near - 1] < points[near] - want):
                    near -= 1  # the grid point nearest the wanted cut
                at = max(at, near)
                while at < len(points):
                    s = _boundary(f, points[at - 1] if at else 0, points[at], max_line)
                    at += 1
                    if s is not None and s > starts[-1]:
                        starts.append(s)
                        break
            if len(starts) < 2:
                return None
    except OSError:
        return None
    every = max(1, SYNC_BYTES // region)
    sync = {g for j, g in enumerate(points) if (j + 1) % every == 0}
    for s in starts[1:]:
        j = bisect.bisect_left(points, s)  # the read whose end gives this boundary
        sync.update(points[j:j + DENSE + 1])
    return Plan(source.path, size, tuple(starts), region, head, frozenset(sync))


def _boundary(f, lo: int, hi: int, max_line: int) -> Optional[int]:
    """The region boundary of the read [lo, hi): the line start after its last newline, if that
    is one in every read of the file (a newline in this read, no over-long line after it)."""
    span = min(hi - lo, max_line + 1)
    f.seek(hi - span)
    q = f.read(span).rfind(b"\n")
    return None if q < 0 else hi - span + q + 1


class Window:
    """A file read from a line start `start` to `stop` (None: its end) in the whole file's reads:
    each read ends where the sequential run's does, so the reader makes the same regions."""

    def __init__(self, f, start: int, stop: Optional[int], region: int, head: int):
        self.f, self.pos, self.stop, self.region, self.head = f, start, stop, region, head
        f.seek(start)

    def read(self, n: int) -> bytes:  # noqa: ARG002 - the grid decides
        end = grid_next(self.pos, self.region, self.head)
        if self.stop is not None:
            end = min(end, self.stop)
        if end <= self.pos:
            return b""
        data = self.f.read(end - self.pos)
        self.pos += len(data)
        return data

    def close(self) -> None:
        self.f.close()


def _newlines_before(f, offset: int) -> int:
    f.seek(0)
    n = 0
    left = offset
    while left:
        data = f.read(min(left, 4 << 20))
        if not data:
            break
        n += data.count(b"\n")
        left -= len(data)
    return n


_COUNTS = ("candidate_lines", "event_lines", "replaced_bytes", "long_lines", "nul_bytes")


def _counts(info: InputInfo) -> tuple:
    return tuple(getattr(info, k) for k in _COUNTS) + (dict(info.formats), info.error if not info.complete else None)


def _delta(now: tuple, before: tuple) -> tuple:
    n = len(_COUNTS)
    formats = {k: v - before[n].get(k, 0) for k, v in now[n].items() if v != before[n].get(k, 0)}
    return tuple(a - b for a, b in zip(now[:n], before[:n])) + (formats, now[n + 1] if before[n + 1] is None else None)


def run(source: Source, options: ScanOptions, plan: Plan, start: int, stop: Optional[int] = None,
        states: Optional[dict] = None, nodes: bool = False,
        at_sync: Optional[Callable[[int, Callable[[], tuple]], bool]] = None) -> Iterator[tuple]:
    """The messages of one read of the file from `start` (a piece start) to `stop` (None: the end):

    ("items", items, bytes, newlines)   what scan_source yields, BATCH at a time
    ("sync", offset, line, counts, marks)  a sync point, with the counts of the segment before it
    ("converged", offset)               at_sync(offset, state) said the rest is another read's
    ("eof", line count)                  the end of the file (after its held events)

    `states`/`nodes`: the state of the lines before `start` (an overrun run as a task of its own).
    at_sync is called at `start` and at every sync point after the "sync" message."""
    parsers = select(options.parsers)
    f = open(plan.path, "rb")
    head = f.read(plan.head)
    whole = len(head) < plan.head
    lineno = 1 + (head.count(b"\n", 0, start) if start <= len(head) else _newlines_before(f, start))
    stream = Window(f, start, stop, plan.region, plan.head)
    info = InputInfo(path=source.name, size=plan.size)
    read = [0, 0]

    def tick(nbytes: int, nlines: int) -> None:
        read[0] += nbytes
        read[1] += nlines

    scan = FileScan(source, parsers, info, stream, head, whole, options.max_line_bytes, tick, options.native,
                    lineno=lineno, offset=start, chunk_bytes=plan.region, sync=plan.sync, states=states, nodes=nodes)
    last = _counts(info)
    try:
        yield ("sync", start, lineno, _delta(last, last), {})
        if at_sync is not None and at_sync(start, scan.state):
            yield ("converged", start)
            return
        batch: list = []
        rows = 0
        for it in scan.items():
            kind = it.kind
            if kind == "sync":
                if batch or read[0]:
                    yield ("items", batch, read[0], read[1])
                    batch, rows, read[0], read[1] = [], 0, 0, 0
                now = _counts(info)
                yield ("sync", it.offset, it.line, _delta(now, last), _segment_marks(scan))
                last = now
                if at_sync is not None and at_sync(it.offset, scan.state):
                    yield ("converged", it.offset)
                    return
                continue
            batch.append(it)
            rows += (sum(len(b) for b in it.batches) if kind == "hold"  # type: ignore[attr-defined]
                     else len(it) if kind == "metrics_rows" else 1)  # type: ignore[arg-type]
            if rows >= BATCH:
                yield ("items", batch, read[0], read[1])
                batch, rows, read[0], read[1] = [], 0, 0, 0
        if stop is None:
            batch.extend(scan.finish(hold=True))
        yield ("items", batch, read[0], read[1])
        yield ("sync", stream.pos, info.lines + 1, _delta(_counts(info), last), _segment_marks(scan))
        if stop is None:
            yield ("eof", info.lines)
        elif at_sync is not None:
            at_sync(stream.pos, scan.state)
    finally:
        stream.close()


def _segment_marks(scan: FileScan) -> dict:
    """Where the segment read since the last sync point has its first NUL and long line, and the
    topology evidence it used; cleared, so that each segment says its own."""
    marks = dict(scan.marks)
    scan.marks.clear()
    topo = scan.topo
    if topo.used:
        marks["topology"] = list(topo.used)
        topo.used.clear()
    return marks


def same_state(mine: tuple, theirs: bytes) -> bool:
    """Whether a read's state (FileScan.state()) is the one recorded (state_bytes): compared as
    pickled bytes, in one order, so that an event's NaN or its topology (compared by identity)
    is the same when it is the same; when in doubt, different (the read goes on)."""
    return state_bytes(lambda: mine) == theirs


@dataclass
class Stitched:
    """What stitch learnt besides the items: the file's InputInfo and marks, and how it went."""

    info: InputInfo
    marks: dict
    taken: list  # (piece, first offset taken from its own read, where its overrun met the next)


def stitch(plan: Plan, spec: Callable[[int], Iterator[tuple]], over: Callable[[int], Iterator[tuple]],
           done: Stitched, progress: Optional[Callable[[int, int], None]] = None) -> Iterator:
    """The items of the whole file, from each piece's read (`spec(p)`: piece p's messages up to
    its end) and each piece's overrun (`over(p)`: its messages after its end), in file order:
    exactly those of one read of the file (see the module docstring)."""
    info, marks = done.info, done.marks
    used: list = []  # the topology's evidence, in the order the file first used it
    p, frm = 0, 0

    def add(counts: tuple, seg_marks: dict) -> None:
        n = len(_COUNTS)
        for k, v in zip(_COUNTS, counts[:n]):
            setattr(info, k, getattr(info, k) + v)
        for k, v in counts[n].items():
            info.formats[k] = info.formats.get(k, 0) + v
        if counts[n + 1] is not None and info.complete:
            info.complete, info.error = False, counts[n + 1]
        for k, v in seg_marks.items():
            if k == "topology":
                used.extend(why for why in v if why not in used)
            else:
                marks.setdefault(k, v)

    while True:
        use = False
        for msg in spec(p):
            kind = msg[0]
            if kind == "items":
                if progress is not None and (msg[2] or msg[3]):
                    progress(msg[2], msg[3])
                if use:
                    yield from msg[1]
            elif kind == "sync":
                if use:
                    add(msg[3], msg[4])
                if msg[1] == frm:
                    use = True
            elif kind == "eof":
                info.lines = msg[1]
                done.taken.append((p, frm, None))
                info.topology = "; ".join(used) or None
                return
        for msg in over(p):
            kind = msg[0]
            if kind == "items":
                yield from msg[1]
            elif kind == "sync":
                add(msg[3], msg[4])
            elif kind == "converged":
                done.taken.append((p, frm, msg[1]))
                frm = msg[1]
                p = plan.owner(frm)
                break
            elif kind == "eof":
                info.lines = msg[1]
                done.taken.append((p, frm, None))
                info.topology = "; ".join(used) or None
                return


def describe(name: str, plan: Plan, done: Stitched, workers: str) -> str:
    """A line for --verbose: how a file was read in pieces and where the reads were stitched."""
    n = len(plan.starts)
    parts = []
    for p, _frm, met in done.taken:
        if met is None:
            if p + 1 < n:
                parts.append(f"piece {p + 1} read on to the end (its state never met a later piece's)")
        elif met == plan.end(p):
            parts.append(f"piece {p + 1} met piece {p + 2} at its start")
        else:
            parts.append(f"piece {p + 1} read on {met - plan.end(p):,} bytes and met piece {plan.owner(met) + 1} "
                         f"at byte {met:,}")
    cuts = ", ".join(f"{s:,}" for s in plan.starts[1:])
    return f"{name}: {plan.size:,} bytes read in {n} pieces (cut at bytes {cuts}) {workers}; " + "; ".join(parts)


def state_bytes(state: Callable[[], tuple]) -> bytes:
    """A read's state (FileScan.state) as bytes, the streams' states in one order."""
    states, nodes = state()
    ordered = sorted((repr(k), sorted(v.items())) for k, v in states.items())
    return pickle.dumps((ordered, nodes), protocol=pickle.HIGHEST_PROTOCOL)


@dataclass
class PieceRead:
    """A piece read as a task of its own (dask_scan): its messages up to its end, and its state
    at each of its sync points (the end's is where its overrun starts)."""

    index: int  # the input's
    piece: int
    messages: list
    states: dict  # sync offset -> state (state_bytes)
    end: Optional[bytes] = None  # the state at its end, to start its overrun from (pickled FileScan.state())


def piece_task(index: int, source: Source, options: ScanOptions, plan: Plan, p: int) -> PieceRead:
    """Read piece p of the file from a fresh state (runs on a worker)."""
    states: dict = {}
    last = p + 1 == len(plan.starts)
    end = plan.end(p)
    ended: list = []

    def at_sync(x: int, state: Callable[[], tuple]) -> bool:
        states[x] = state_bytes(state)
        if x == end and not last:
            ended.append(pickle.dumps(state(), protocol=pickle.HIGHEST_PROTOCOL))
        return False

    messages = list(run(source, options, plan, plan.starts[p], None if last else end, at_sync=at_sync))
    return PieceRead(index, p, messages, states, ended[0] if ended else None)


def piece_states(read: PieceRead) -> dict:
    """The small part of a PieceRead that an overrun needs (so that the items stay where they are)."""
    return read.states


def end_state(read: PieceRead, plan: Plan) -> bytes:
    """The state piece `read` ended in: where its overrun starts."""
    assert read.end is not None, "the last piece has no overrun"
    return read.end


def overrun_task(source: Source, options: ScanOptions, plan: Plan, p: int, start: bytes, later: list) -> list:
    """Piece p's overrun as a task: from piece p's end with the state it ended in (`start`, from
    end_state), until its state meets one a later piece recorded at the same sync point (`later`:
    piece_states of pieces p+1, ...), or to the end of the file. Its messages, as stitch reads them."""
    targets: dict = {}
    for d in later:
        targets.update(d)
    states, nodes = pickle.loads(start)

    def at_sync(x: int, state: Callable[[], tuple]) -> bool:
        theirs = targets.get(x)
        return theirs is not None and same_state(state(), theirs)

    return list(run(source, options, plan, plan.end(p), None, states=states, nodes=nodes, at_sync=at_sync))
