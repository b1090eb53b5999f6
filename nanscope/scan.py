"""Where the inputs are read: in this process, in worker processes (nanscope.parallel) or on a
Dask cluster (nanscope.dask_scan); the same events in the same order from each. The one place
that chooses, above the lanes it chooses between."""

from __future__ import annotations

from typing import Iterator, Sequence

from nanscope.errors import InputError
from nanscope.ingest.reader import Source
from nanscope.model import Diagnostic, Event, InputInfo
from nanscope.parallel import plan_work, scan_parallel
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
    if jobs:
        yield from scan_parallel(sources, options, result, jobs, options.progress, plans)
        return
    for src in sources:
        info = InputInfo(path=src.name, size=None)
        result.inputs.append(info)
        try:
            yield from in_order(scan_source(src, parsers, info, result, options.max_line_bytes, options.progress,
                                            options.native), options.ahead)
        except (InputError, OSError) as e:
            note_unreadable(info, result, src.name, e)
