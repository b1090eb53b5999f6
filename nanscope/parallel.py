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
from nanscope.model import Event, InputInfo
from nanscope.pipeline import ScanOptions, ScanResult, in_order, note_unreadable, scan_source
from nanscope.parsers.registry import select

BATCH = 1024  # events (or step rows of StepBatches) per message
AUTO_MIN_BYTES = 8 << 20  # with jobs unset, smaller inputs are read in this process


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def should_parallelize(sources: Sequence[Source], jobs: Optional[int]) -> int:
    """How many workers to use (0: read in this process)."""
    files = [s for s in sources if s.path is not None and s.data is None]
    if len(files) != len(sources) or len(files) < 2:
        return 0  # stdin or in-memory data, or a single input
    n = default_jobs() if jobs is None else jobs
    if n < 2:
        return 0
    if jobs is None:
        total = 0
        for s in files:
            try:
                total += os.path.getsize(s.path)  # type: ignore[arg-type]
            except OSError:
                pass
        if total < AUTO_MIN_BYTES:
            return 0  # starting processes costs more than it saves
    return min(n, len(files))


def scan_parallel(sources: Sequence[Source], options: ScanOptions, result: ScanResult, jobs: int,
                  progress: Optional[Callable[[int, int], None]] = None) -> Iterator[Event]:
    """The events of scan_all(sources), read by `jobs` worker processes."""
    select(options.parsers)  # unknown --parser names fail here, before any process starts
    options = dataclasses.replace(options, progress=None)  # the parent reports progress
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    spill = tempfile.mkdtemp(prefix="nanscope-")
    announced: queue_mod.Queue = ctx.Queue()
    todo: queue_mod.Queue = ctx.Queue()
    for i in largest_first(sources):
        todo.put(i)
    for _ in range(jobs):
        todo.put(None)
    workers = [
        ctx.Process(target=_worker, args=(todo, list(sources), options, spill, announced), daemon=True)
        for _ in range(jobs)
    ]
    for p in workers:
        p.start()
    started: dict[int, str] = {}  # input index -> its spill file, once a worker has begun it

    def take(msg: tuple) -> None:
        if msg[0] == "crash":
            name = sources[msg[1]].name if 0 <= msg[1] < len(sources) else "the inputs"
            raise NanscopeError(f"reading {name} failed: {msg[2]}")
        started[msg[1]] = msg[2]

    def wait() -> None:
        """Nothing new in the spill being read yet: note other news, fail on a crash."""
        try:
            take(announced.get(timeout=0.002))
        except queue_mod.Empty:
            _check(workers)

    try:
        for i, src in enumerate(sources):
            while i not in started:
                take(_get(announced, workers))
            path = started.pop(i)
            yield from in_order(_spilled(path, result, progress, wait), options.ahead)
            os.unlink(path)
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


def largest_first(sources: Sequence[Source]) -> list[int]:
    """The order workers take files in: the largest first, so that no big file starts last and
    keeps one core busy alone at the end. Workers take the next file when they are free (files
    of equal size can cost very different times: HF and vLLM lines cost more than step lines)."""
    def size(s: Source) -> int:
        try:
            return os.path.getsize(s.path)  # type: ignore[arg-type]
        except (OSError, TypeError):
            return 0

    return sorted(range(len(sources)), key=lambda k: -size(sources[k]))


_HEAD = struct.Struct("<Q")  # a message's length, before it


def _put(out, msg: tuple) -> None:
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEAD.pack(len(data)) + data)
    out.flush()  # the parent may be reading this file already


def _spilled(path: str, result: ScanResult, progress: Optional[Callable[[int, int], None]],
             wait: Callable[[], None]) -> Iterator:
    """A file's items as its worker writes them, until its "done" message (`wait` is called
    while the next message is not complete yet)."""
    with open(path, "rb") as f:
        while True:
            kind, *rest = pickle.loads(_read_exact(f, _HEAD.unpack(_read_exact(f, _HEAD.size, wait))[0], wait))
            if kind == "events":
                events, nbytes, nlines = rest
                if progress is not None and (nbytes or nlines):
                    progress(nbytes, nlines)
                yield from events
            else:  # "done"
                info, diagnostics = rest
                result.inputs.append(info)
                result.diagnostics.extend(diagnostics)
                return


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


def _worker(todo, sources: list, options: ScanOptions, spill: str, announced) -> None:
    """A worker takes files from `todo` until it gets None, each file's messages into its own
    spill file, saying ('start', i, path) as it begins one; ('crash', i, text) if something
    inside goes wrong."""
    i = -1
    try:
        parsers = select(options.parsers)
        while True:
            i = todo.get()
            if i is None:
                break
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
