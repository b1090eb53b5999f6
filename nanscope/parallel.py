"""Several inputs read at once in worker processes, merged into exactly the sequential answer.

Each worker parses whole files (a parser's state never crosses files); a free worker takes the
largest file not yet taken, so the workers finish together. A worker writes each file's events,
as it makes them, to a spill file in a private temporary folder (length-prefixed pickled messages
of about BATCH events or rows; step and vLLM stats lines travel as columns), and says when
it starts a file. The parent feeds the files to streams and engine strictly in input order, so
the report is byte-identical to a sequential run; it reads a file's messages as they are written,
so the last file of a run (often the slowest: an HF/vLLM log) is fed while it is still being
read, not after. Workers never wait for the parent, so they keep every core busy meanwhile.
Memory stays one message per process; the spill of a file is deleted as soon as it has been read.

A large file is read in pieces (nanscope.pieces): a worker takes a piece as it takes a file, reads
on past its end into a second spill (the overrun) until its parser state meets the state the next
piece's worker recorded at a sync point (small state files beside the spills), and the parent
stitches the parts (pieces.stitch). When the one input is read in pieces, the parent reads its
first, smaller piece itself, straight into streams and engine.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import pickle
import queue as queue_mod
import shutil
import struct
import tempfile
import traceback
from typing import Callable, Iterator, Optional, Sequence

from nanscope.errors import InputError, NanscopeError
from nanscope.ingest.reader import Source
from nanscope import pieces
from nanscope.ingest.reader import MAX_LINE_BYTES
from nanscope.model import Event, InputInfo
from nanscope.pipeline import ScanOptions, ScanResult, in_order, io_diagnostics, note_unreadable, scan_source
from nanscope.parsers.registry import select

BATCH = 1024  # events (or step rows of StepBatches) per message
AUTO_MIN_BYTES = 8 << 20  # with jobs unset, smaller inputs are read in this process
# One input in pieces: the parent reads the first piece itself and runs streams and engine for the
# whole file, while each worker reads its piece and pickles what it read to the parent. Measured on
# the 200 MB and 50 MB replays (CPU after the start, which comes before any worker): the engine
# costs the parent about ENGINE_COST of a scan's CPU per byte, the pickling a worker PICKLE_COST.
ENGINE_COST = 0.25
PICKLE_COST = 0.15


def first_share(jobs: int) -> float:
    """The first piece's size relative to a worker's, so that the parent and the N - 1 workers end
    together: parent s + E = worker w (1 + p), s + (N - 1) w = 1. With two jobs 0.72 (0.4 before
    session 14 left the one worker a quarter of the run alone, 4.2 s of CPU against the parent's
    3.3 s after its start, on the 200 MB replay); with more jobs the parent's engine weighs more."""
    return max(0.1, (1 + PICKLE_COST) - ENGINE_COST * (jobs + PICKLE_COST) / (1 + ENGINE_COST))


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def should_parallelize(sources: Sequence[Source], jobs: Optional[int]) -> int:
    """How many workers to use (0: read in this process)."""
    return plan_work(sources, jobs)[0]


def plan_work(sources: Sequence[Source], jobs: Optional[int], max_line: int = MAX_LINE_BYTES) -> tuple[int, dict]:
    """(how many workers, {input index: pieces.Plan} for the files read in pieces). A file is
    split when it is large (pieces.SPLIT_MIN_BYTES with --jobs N, AUTO_SPLIT_BYTES by default)
    and a piece of the work of all inputs together is smaller than it."""
    files = [s for s in sources if s.path is not None and s.data is None and s.stream is None]
    if len(files) != len(sources) or not files:
        return 0, {}  # stdin or in-memory data
    n = default_jobs() if jobs is None else jobs
    if n < 2:
        return 0, {}
    sizes = []
    for s in files:
        try:
            sizes.append(os.path.getsize(s.path))  # type: ignore[arg-type]
        except OSError:
            sizes.append(0)
    total = sum(sizes)
    plans = pieces.split_plans(sources, sizes, n, pieces.SPLIT_MIN_BYTES if jobs is not None else pieces.AUTO_SPLIT_BYTES,
                               max_line, first_share(n) if len(sources) == 1 else 1.0)
    units = len(files) - len(plans) + sum(len(p.starts) for p in plans.values())
    if units < 2:
        return 0, {}
    if jobs is None and not plans and total < AUTO_MIN_BYTES:
        return 0, {}  # starting processes costs more than it saves
    return min(n, units), plans


def scan_parallel(sources: Sequence[Source], options: ScanOptions, result: ScanResult, jobs: int,
                  progress: Optional[Callable[[int, int], None]] = None,
                  plans: Optional[dict] = None) -> Iterator[Event]:
    """The events of scan_all(sources), read by `jobs` worker processes; the files of `plans`
    (input index -> pieces.Plan) in pieces, stitched by pieces.stitch."""
    select(options.parsers)  # unknown --parser names fail here, before any process starts
    note = options.note
    options = dataclasses.replace(options, progress=None, note=None)  # the parent reports progress
    plans = plans or {}
    here = len(sources) == 1 and 0 in plans  # the parent reads the first piece itself (and is one of the jobs)
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    spill = tempfile.mkdtemp(prefix="nanscope-")
    announced: queue_mod.Queue = ctx.Queue()
    todo: queue_mod.Queue = ctx.Queue()
    for unit in largest_first(sources, plans):
        if not (here and unit == (0, 0)):
            todo.put(unit)
    n_workers = max(1, jobs - 1) if here else jobs
    for _ in range(n_workers):
        todo.put(None)
    workers = [
        ctx.Process(target=_worker, args=(todo, list(sources), options, spill, announced, plans), daemon=True)
        for _ in range(n_workers)
    ]
    for p in workers:
        p.start()
    started: dict = {}  # unit (input index, or (index, piece[, "over"])) -> its spill file, once begun

    def take(msg: tuple) -> None:
        if msg[0] == "crash":
            i = msg[1][0] if isinstance(msg[1], tuple) else msg[1]
            name = sources[i].name if 0 <= i < len(sources) else "the inputs"
            raise NanscopeError(f"reading {name} failed: {msg[2]}")
        started[msg[1]] = msg[2]

    def wait() -> None:
        """Nothing new in the spill being read yet: note other news, fail on a crash."""
        try:
            take(announced.get(timeout=0.002))
        except queue_mod.Empty:
            _check(workers)

    def spilled(unit) -> Iterator[tuple]:
        while unit not in started:
            take(_get(announced, workers))
        path = started.pop(unit)
        yield from _messages(path, wait)
        os.unlink(path)

    try:
        for i, src in enumerate(sources):
            plan = plans.get(i)
            if plan is None:
                yield from in_order(_spilled(spilled(i), result, progress), options.ahead)
                continue
            done = pieces.Stitched(InputInfo(path=src.name, size=plan.size), {}, [])
            first = _piece_messages(i, 0, src, plan, options, spill) if here else None
            try:
                spec = (lambda p: _until_switch(first) if p == 0 else spilled((i, p))) if first else \
                    (lambda p: spilled((i, p)))
                over = (lambda p: first if p == 0 else spilled((i, p, "over"))) if first else \
                    (lambda p: spilled((i, p, "over")))
                yield from in_order(pieces.stitch(plan, spec, over, done, progress), options.ahead)
            finally:
                if first is not None:
                    first.close()
            result.inputs.append(done.info)
            io_diagnostics(src, done.info, done.marks, options.max_line_bytes, plan.size, result)
            if note is not None:
                note(pieces.describe(src.name, plan, done, f"by this process and {n_workers} worker process(es)"
                                     if here else f"by {jobs} worker processes"))
    finally:
        for p in workers:
            if p.is_alive():
                p.terminate()
        for p in workers:
            p.join(timeout=5)
        announced.close()
        announced.cancel_join_thread()
        todo.close()
        todo.cancel_join_thread()
        shutil.rmtree(spill, ignore_errors=True)


def largest_first(sources: Sequence[Source], plans: Optional[dict] = None) -> list:
    """The order workers take files (and pieces: (index, piece)) in: the largest first, so that no
    big file starts last and keeps one core busy alone at the end. Workers take the next file
    when they are free (files of equal size can cost very different times: HF and vLLM lines
    cost more than step lines). A file's pieces go one after the other, in file order, so that
    a piece's overrun meets the next piece's states."""
    def size(s: Source) -> int:
        try:
            return os.path.getsize(s.path)  # type: ignore[arg-type]
        except (OSError, TypeError):
            return 0

    plans = plans or {}
    units: list = []
    for i, s in enumerate(sources):
        plan = plans.get(i)
        if plan is None:
            units.append((size(s), i, 0, i))
        else:
            units.extend((plan.end(p) - plan.starts[p], i, p, (i, p)) for p in range(len(plan.starts)))
    units.sort(key=lambda u: (-u[0], u[1], u[2]))
    if plans:  # a file's pieces together, at the place of its largest
        first: dict = {}
        for u in units:
            first.setdefault(u[1], u)
        units.sort(key=lambda u: (-first[u[1]][0], u[1], u[2]))
    return [u[3] for u in units]


_HEAD = struct.Struct("<Q")  # a message's length, before it
_FRESH = pieces.state_bytes(lambda: ({}, False))  # the state a piece's read starts from


def _put(out, msg: tuple) -> None:
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEAD.pack(len(data)) + data)
    out.flush()  # the parent may be reading this file already


def _messages(path: str, wait: Callable[[], None]) -> Iterator[tuple]:
    """A spill file's messages as its worker writes them, until its "end" message (`wait` is
    called while the next message is not complete yet)."""
    with open(path, "rb") as f:
        while True:
            msg = pickle.loads(_read_exact(f, _HEAD.unpack(_read_exact(f, _HEAD.size, wait))[0], wait))
            if msg[0] == "end":
                return
            yield msg


def _spilled(messages: Iterator[tuple], result: ScanResult, progress: Optional[Callable[[int, int], None]]) -> Iterator:
    """A whole file's items from its spill's messages; its InputInfo and diagnostics at "done"."""
    for kind, *rest in messages:
        if kind == "events":
            events, nbytes, nlines = rest
            if progress is not None and (nbytes or nlines):
                progress(nbytes, nlines)
            yield from events
        else:  # "done"
            info, diagnostics = rest
            result.inputs.append(info)
            result.diagnostics.extend(diagnostics)


def _read_exact(f, n: int, wait: Callable[[], None]) -> bytes:
    parts = []
    while n:
        got = f.read(n)
        if not got:
            wait()
            continue
        parts.append(got)
        n -= len(got)
    return b"".join(parts)


def _get(q, procs) -> tuple:
    while True:
        try:
            return q.get(timeout=1.0)
        except queue_mod.Empty:
            _check(procs)


def _check(procs) -> None:
    dead = [p for p in procs if not p.is_alive() and p.exitcode not in (0, None)]
    if dead:
        raise NanscopeError(f"a reader process ended unexpectedly (exit code {dead[0].exitcode})") from None


def _worker(todo, sources: list, options: ScanOptions, spill: str, announced, plans: Optional[dict] = None) -> None:
    """A worker takes files (or pieces) from `todo` until it gets None, each file's messages into
    its own spill file, saying ('start', unit, path) as it begins one; ('crash', unit, text) if
    something inside goes wrong."""
    i = -1
    try:
        parsers = select(options.parsers)
        while True:
            i = todo.get()
            if i is None:
                break
            if isinstance(i, tuple):
                _piece(i[0], i[1], sources[i[0]], (plans or {})[i[0]], options, spill, announced)
                continue
            src = sources[i]
            info = InputInfo(path=src.name, size=None)
            result = ScanResult()
            read = [0, 0]

            def tick(nbytes: int, nlines: int) -> None:
                read[0] += nbytes
                read[1] += nlines

            path = os.path.join(spill, f"{i}.pickle")
            with open(path, "wb") as out:
                announced.put(("start", i, path))
                batch: list = []
                rows = 0
                try:
                    for ev in scan_source(src, parsers, info, result, options.max_line_bytes, progress=tick,
                                          native_lane=options.native):
                        batch.append(ev)
                        kind = ev.kind
                        rows += (sum(len(b) for b in ev.batches) if kind == "hold"  # type: ignore[attr-defined]
                                 else len(ev) if kind == "metrics_rows" else 1)  # type: ignore[arg-type]
                        if rows >= BATCH:
                            _put(out, ("events", batch, read[0], read[1]))
                            batch = []
                            rows = 0
                            read[0] = read[1] = 0
                except (InputError, OSError) as e:
                    note_unreadable(info, result, src.name, e)
                _put(out, ("events", batch, read[0], read[1]))
                _put(out, ("done", info, result.diagnostics))
                _put(out, ("end",))
    except KeyboardInterrupt:
        pass
    except BaseException as e:  # noqa: BLE001 - reported by the parent as an internal error
        tb = traceback.format_exc(limit=3)
        try:
            announced.put(("crash", i, f"{type(e).__name__}: {e}\n{tb}"))
        except Exception:  # noqa: BLE001
            pass
    finally:
        announced.close()
        announced.join_thread()


def _piece_messages(i: int, p: int, src: Source, plan, options: ScanOptions, spill: str) -> Iterator[tuple]:
    """Piece p of input i read on past its end (pieces.run's messages, with ("switch",) after the
    sync point at its end): it records its state at every sync point of its own (for the overrun
    of the piece before), and after its end stops where its state meets the one a later piece
    recorded at a sync point (pieces.py)."""
    end = plan.end(p)
    last = p + 1 == len(plan.starts)

    def snapshot_path(x: int) -> str:
        return os.path.join(spill, f"{i}.state.{x}")

    def at_sync(x: int, state) -> bool:
        if last or x < end:
            if p:  # the state the overrun of piece p-1 looks for here
                tmp = snapshot_path(x) + f".{os.getpid()}"
                with open(tmp, "wb") as f:
                    f.write(pieces.state_bytes(state))
                os.replace(tmp, snapshot_path(x))
            return False
        if x in plan.starts:
            return pieces.same_state(state(), _FRESH)  # a piece starts from a fresh state
        try:
            with open(snapshot_path(x), "rb") as f:
                theirs = f.read()
        except OSError:
            return False  # that piece has not come this far yet: read on
        return pieces.same_state(state(), theirs)

    for msg in pieces.run(src, options, plan, plan.starts[p], None, at_sync=at_sync):
        yield msg
        if msg[0] == "sync" and msg[1] == end and not last:
            yield ("switch",)


def _until_switch(messages: Iterator[tuple]) -> Iterator[tuple]:
    for msg in messages:
        if msg[0] == "switch":
            return
        yield msg


def _piece(i: int, p: int, src: Source, plan, options: ScanOptions, spill: str, announced) -> None:
    """Piece p of input i in a worker: its read into spill (i, p), its overrun into spill
    (i, p, "over")."""
    path = os.path.join(spill, f"{i}.{p}.pickle")
    out = open(path, "wb")
    announced.put(("start", (i, p), path))
    try:
        for msg in _piece_messages(i, p, src, plan, options, spill):
            if msg[0] == "switch":
                _put(out, ("end",))
                out.close()
                path = os.path.join(spill, f"{i}.{p}.over.pickle")
                out = open(path, "wb")
                announced.put(("start", (i, p, "over"), path))
                continue
            _put(out, msg)
        _put(out, ("end",))
    finally:
        out.close()
