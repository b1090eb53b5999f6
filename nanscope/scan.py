"""Where the inputs are read: in this process, in worker processes (nanscope.parallel) or on a
Dask cluster (nanscope.dask_scan); the same events in the same order from each. The one place
that chooses, above the lanes it chooses between."""

from __future__ import annotations

from typing import Iterator, Sequence

from nanscope import columns
from nanscope.columns import threads_for
from nanscope.errors import InputError
from nanscope.ingest.reader import Source
from nanscope.model import Diagnostic, Event, InputInfo
from nanscope import pieces
from nanscope.parallel import AUTO_MIN_BYTES, plan_work, scan_parallel
from nanscope.parsers.registry import select
from nanscope.pipeline import ScanOptions, ScanResult, in_order, note_unreadable, scan_source


def scan_all(sources: Sequence[Source], options: ScanOptions, result: ScanResult) -> Iterator[Event]:
    """Events of every input, one input after the other. Unreadable inputs are reported and skipped.
    Several files, or pieces of a large one (nanscope.pieces), are read by worker processes
    (nanscope.parallel), or by Dask tasks with options.engine (nanscope.dask_scan), with the
    same result."""
    parsers = select(options.parsers)
    for src in sources:
        if src.skip is not None:  # a FIFO, socket or device inside a folder (reader.expand_sources)
            result.diagnostics.append(Diagnostic("NS-IO-SKIPPED", src.skip, src.name))
    sources = [s for s in sources if s.skip is None]
    if options.engine not in (None, "local"):
        from nanscope.dask_scan import parse_engine, scan_dask  # the optional extra: only when chosen

        yield from scan_dask(sources, options, result, parse_engine(options.engine)[1], options.progress)
        return
    jobs, plans = plan_work(sources, options.jobs, options.max_line_bytes)
    columns.THREADS = threads_for(jobs or 1)  # (each worker process forks with it)
    if jobs:
        if options.note is not None:
            options.note(f"{len(sources)} input(s) read with --jobs {jobs}"
                         + (f", {len(plans)} of them in pieces" if plans else " worker processes"))
        yield from scan_parallel(sources, options, result, jobs, options.progress, plans)
        return
    if options.note is not None:
        options.note(f"{len(sources)} input(s) read in this process ({_why_one(options.jobs, sources)})")
    for src in sources:
        info = InputInfo(path=src.name, size=None)
        result.inputs.append(info)
        try:
            yield from in_order(scan_source(src, parsers, info, result, options.max_line_bytes, options.progress,
                                            options.native), options.ahead)
        except (InputError, OSError) as e:
            note_unreadable(info, result, src.name, e)


def _why_one(jobs, sources: Sequence[Source]) -> str:
    if jobs == 1:
        return "--jobs 1"
    if any(s.path is None or s.data is not None or s.stream is not None for s in sources):
        return "standard input and in-memory data are read here"
    least = pieces.SPLIT_MIN_BYTES if jobs else pieces.AUTO_SPLIT_BYTES
    return (f"small input: several files go to worker processes from {AUTO_MIN_BYTES >> 20} MiB in all"
            f"{'' if jobs else ' with jobs unset'}, one file is cut in pieces from {least >> 20} MiB; "
            "a compressed file is read whole")
