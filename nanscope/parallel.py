"""Several inputs read at once in worker processes, merged into exactly the sequential answer.

Each worker parses whole files (a parser's state never crosses files) and sends its events back
in small batches through its own bounded queue; file i goes to worker i % jobs, and the parent
reads the files strictly in input order, so the events reach streams and engine in the same order
as `scan_all` gives them and the report is byte-identical. The queues are bounded, so a worker
that runs ahead waits: memory stays a few batches per worker, whatever the file sizes.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import queue as queue_mod
import traceback
from typing import Callable, Iterator, Optional, Sequence

from nanscope.errors import InputError, NanscopeError
from nanscope.ingest.reader import Source
from nanscope.model import Event, InputInfo
from nanscope.pipeline import ScanOptions, ScanResult, note_unreadable, scan_source
from nanscope.parsers.registry import select

BATCH = 1024  # events (or step rows of StepBatches) per message
QUEUE_BATCHES = 4  # messages buffered per worker
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
    queues = [ctx.Queue(QUEUE_BATCHES) for _ in range(jobs)]
    workers = [
        ctx.Process(target=_worker, args=(w, jobs, list(sources), options, queues[w]), daemon=True)
        for w in range(jobs)
    ]
    for p in workers:
        p.start()
    try:
        for i, src in enumerate(sources):
            q = queues[i % jobs]
            while True:
                msg = _get(q, workers[i % jobs])
                kind = msg[0]
                if kind == "events":
                    if progress is not None and (msg[2] or msg[3]):
                        progress(msg[2], msg[3])
                    yield from msg[1]
                elif kind == "done":
                    _, info, diagnostics = msg
                    result.inputs.append(info)
                    result.diagnostics.extend(diagnostics)
                    break
                else:  # "crash": an internal error in the worker
                    raise NanscopeError(f"reading {src.name} failed: {msg[1]}")
    finally:
        for p in workers:
            if p.is_alive():
                p.terminate()
        for p in workers:
            p.join(timeout=5)
        for q in queues:
            q.close()
            q.cancel_join_thread()


def _get(q, proc) -> tuple:
    while True:
        try:
            return q.get(timeout=1.0)
        except queue_mod.Empty:
            if not proc.is_alive():
                raise NanscopeError(f"a reader process ended unexpectedly (exit code {proc.exitcode})") from None


def _worker(w: int, jobs: int, sources: list, options: ScanOptions, q) -> None:
    """Worker w: files w, w + jobs, ... in order; per file, event batches then ('done', info, diagnostics)."""
    try:
        parsers = select(options.parsers)
        for i in range(w, len(sources), jobs):
            src = sources[i]
            info = InputInfo(path=src.name, size=None)
            result = ScanResult()
            read = [0, 0]

            def tick(nbytes: int, nlines: int) -> None:
                read[0] += nbytes
                read[1] += nlines

            batch: list = []
            rows = 0
            try:
                for ev in scan_source(src, parsers, info, result, options.max_line_bytes, progress=tick,
                                      native_lane=options.native):
                    batch.append(ev)
                    rows += len(ev) if ev.kind == "steps" else 1  # type: ignore[arg-type]
                    if rows >= BATCH:
                        q.put(("events", batch, read[0], read[1]))
                        batch = []
                        rows = 0
                        read[0] = read[1] = 0
            except (InputError, OSError) as e:
                note_unreadable(info, result, src.name, e)
            q.put(("events", batch, read[0], read[1]))
            q.put(("done", info, result.diagnostics))
    except KeyboardInterrupt:
        pass
    except BaseException as e:  # noqa: BLE001 - reported by the parent as an internal error
        tb = traceback.format_exc(limit=3)
        try:
            q.put(("crash", f"{type(e).__name__}: {e}\n{tb}"))
        except Exception:  # noqa: BLE001
            pass
    finally:
        q.close()
        q.join_thread()
