"""The library surface: everything the CLI does is callable from here.

    from nanscope.api import diagnose, events, Options
    report = diagnose(["train.log"])
    for f in report.findings: print(f.id, f.initiating_rank, f.summary)
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, Sequence

from nanscope import __version__
from nanscope.attribution import SEVERITY_ORDER, attribute
from nanscope.errors import ExitCode, NanscopeError
from nanscope.ingest.reader import MAX_LINE_BYTES, Source, expand_sources
from nanscope.model import Event, Finding, LifecycleEvent, Report
from nanscope.pipeline import STEP_READERS, ScanOptions, ScanResult
from nanscope.scan import scan_all
from nanscope.signatures.engine import Engine, build_finding
from nanscope.signatures.loader import load_or_raise
from nanscope.signatures.schema import SEVERITIES, Signature
from nanscope.series import SeriesRecorder
from nanscope.streams import Streams

if TYPE_CHECKING:  # evaluate, baseline and fleet are imported where they are used: a diagnosis needs none
    from nanscope.evaluate import EvalResult

__all__ = ["Options", "diagnose", "diagnose_sources", "evaluate", "events", "exit_code", "fleet", "follow",
           "load_signatures", "with_baseline", "write_reports", "Report", "Finding"]


@dataclass
class Options:
    signatures: Sequence[str] = ()  # extra signature folders
    select: Sequence[str] = ()  # only these ids or categories
    ignore: Sequence[str] = ()  # not these ids or categories
    parsers: Optional[Sequence[str]] = None  # force these parsers
    max_line_bytes: int = MAX_LINE_BYTES
    bundled_signatures: Optional[Sequence[Signature]] = field(default=None, repr=False)  # preloaded
    jobs: Optional[int] = None  # worker processes for several input files (None: one per core when it pays)
    engine: Optional[str] = None  # "local" (default), "dask" (a LocalCluster) or "dask:ADDRESS"
    progress: Optional[Callable[[int, int], None]] = field(default=None, repr=False, compare=False)  # (bytes, lines) read
    note: Optional[Callable[[str], None]] = field(default=None, repr=False, compare=False)  # how the inputs were read


def load_signatures(options: Options) -> list[Signature]:
    sigs = list(options.bundled_signatures) if options.bundled_signatures is not None else load_or_raise(options.signatures)
    known = {s.id for s in sigs} | {s.category for s in sigs}
    for name in list(options.select) + list(options.ignore):
        if name not in known:
            raise NanscopeError(f"--select/--ignore: no signature or category named '{name}'")
    if options.select:
        sigs = [s for s in sigs if s.id in options.select or s.category in options.select]
    if options.ignore:
        sigs = [s for s in sigs if s.id not in options.ignore and s.category not in options.ignore]
    return sigs


def events(paths: Iterable[str], options: Optional[Options] = None, result: Optional[ScanResult] = None) -> Iterator[Event]:
    """The normalized events of the inputs (with derived scale events), in input order."""
    options = options or Options()
    result = result if result is not None else ScanResult()
    streams = Streams()
    # every event is wanted as an object: the per-line path makes them directly
    scan_opts = dataclasses.replace(_scan_options(options), native=False)
    for ev in scan_all(expand_sources(list(paths)), scan_opts, result):
        for e in streams.process(ev):
            if e.kind in ("steps", "metrics_rows"):
                yield from e.events()  # type: ignore[attr-defined]
            else:
                yield e


def _scan_options(options: Options) -> ScanOptions:
    if options.engine is not None:
        from nanscope.dask_scan import parse_engine

        parse_engine(options.engine)  # an unknown engine fails before anything is read
    return ScanOptions(parsers=options.parsers, max_line_bytes=options.max_line_bytes, jobs=options.jobs,
                       engine=options.engine, progress=options.progress, note=options.note)


def diagnose(paths: Iterable[str], options: Optional[Options] = None) -> Report:
    """Read the inputs (files, folders, '-' for stdin), match every signature, attribute ranks."""
    return diagnose_sources(expand_sources(list(paths)), options)


def diagnose_sources(sources: Sequence[Source], options: Optional[Options] = None) -> Report:
    run = _Run(options or Options())
    run.feed(scan_all(sources, run.scan_opts, run.result))
    return run.report()


class _Run:
    """One diagnosis: signatures, streams, engine and the curves, fed events, then a Report."""

    def __init__(self, options: Options, **scan: Any):
        self.t0 = time.monotonic()
        self.sigs = load_signatures(options)
        self.engine = Engine(self.sigs)
        self.streams = Streams()
        self.result = ScanResult()
        self.curves = SeriesRecorder()
        self.job_ranks: set = set()
        self.tracebacks: list = []  # `[rankN]: Traceback` headers (the excepthook's), for attribution
        self.scan_opts = dataclasses.replace(_scan_options(options), ahead=self.engine.apart_from_steps(STEP_READERS),
                                             **scan)

    def feed(self, evs: Iterable[Event]) -> None:
        process, engine, curves, ranks = self.streams.process, self.engine, self.curves, self.job_ranks
        tracebacks = self.tracebacks
        for ev in evs:
            for e in process(ev):
                if e.rank is not None:
                    ranks.add(e.rank)
                    if e.__class__ is LifecycleEvent and e.action == "traceback" and len(tracebacks) < 4096:
                        tracebacks.append(e)
                curves.feed(e)
                engine.feed(e)

    def decided(self) -> list[Finding]:
        """The findings the machines have decided so far (live mode), attributed as far as the
        evidence read so far allows; the engine's held steps are fed first."""
        self.engine.flush()
        aggs = {**self.engine.peek(), **self.engine.aggregates}
        also = {sid: [other for other in agg.sig.supersedes
                      if other in aggs and (aggs[other].streams & agg.streams or not aggs[other].ranks)]
                for sid, agg in aggs.items()}
        gone = {other for others in also.values() for other in others}
        found = []
        for sid, agg in list(aggs.items()):
            if sid not in gone:
                f = build_finding(agg)
                f.also_matched = f.also_matched + [o for o in also[sid] if o not in f.also_matched]
                found.append(f)
        return attribute(found, self.job_ranks, self.streams.last_steps(), self.tracebacks)

    def report(self) -> Report:
        findings = self.engine.finish()
        summaries = self.streams.summaries()
        top = attribute(findings, self.job_ranks, self.streams.last_steps(), self.tracebacks)
        return Report(
            tool_version=__version__, inputs=self.result.inputs, ranks=summaries, findings=top,
            diagnostics=self.result.diagnostics + self.engine.diagnostics, verdict=verdict(top, self.result.inputs),
            signatures_loaded=len(self.sigs), elapsed_s=time.monotonic() - self.t0, signatures=self.sigs,
            series=self.curves.series(),
        )


def follow(path: str, options: Optional[Options] = None, on_finding: Optional[Callable[[Finding], None]] = None,
           pid: Optional[int] = None, stop: Optional[threading.Event] = None, poll_s: float = 0.05,
           stream: Optional[Any] = None, on_start: Optional[Callable[[], None]] = None) -> Report:
    """Live mode: read `path` ('-' for stdin) as it grows and call on_finding(f) once per finding
    as soon as the machines decide it. Ends at the end of a pipe, when process `pid` exits, or
    when `stop` is set; returns the final report of everything read. `stream`: a file object to
    read instead (its `idle` attribute is set to the callback that looks for findings); on_start()
    is called once everything is ready and reading begins."""
    from nanscope.follow import FollowStream

    run = _Run(options or Options(), native=False, jobs=None)
    told: set = set()

    def idle() -> None:
        if on_finding is None:
            return
        run.engine.flush()
        if not (run.engine.aggregates.keys() | run.engine.peek().keys()) - told:
            return
        for f in run.decided():
            if f.id not in told:
                told.add(f.id)
                on_finding(f)

    if stream is not None:
        stream.idle = idle
    elif path == "-":
        stream = FollowStream(fd=sys.stdin.fileno(), pid=pid, stop=stop, idle=idle, poll_s=poll_s)
    else:
        try:
            stream = FollowStream(path=path, pid=pid, stop=stop, idle=idle, poll_s=poll_s)
        except OSError as e:
            raise NanscopeError(f"cannot follow {path}: {e.strerror or e}") from None
    from nanscope.parsers.registry import select
    from nanscope.pipeline import dispatch_for

    dispatch_for(select(run.scan_opts.parsers))  # the parsers' keyword search is built before the first line
    if on_start is not None:
        on_start()
    run.feed(scan_all([Source(name="<stdin>" if path == "-" else path, path=None, stream=stream)],
                      run.scan_opts, run.result))
    idle()
    return run.report()


def verdict(findings: list[Finding], inputs: Sequence = ()) -> str:
    """clean: nothing; benign: only benign, info or low findings; retryable: every serious finding
    is an infrastructure fault; actionable: otherwise. incomplete: an input could not be read, or
    only in part (a damaged or truncated archive, a file nanscope may not open), and nothing
    serious was found in what was read: never `clean` or `benign` for what was not seen."""
    serious = [f for f in findings if not f.benign and SEVERITY_ORDER[f.severity] >= SEVERITY_ORDER["medium"]]
    if not serious and any(not i.complete for i in inputs):
        return "incomplete"
    if not findings:
        return "clean"
    if not serious:
        return "benign"
    if all(f.retryable for f in serious):
        return "retryable"
    return "actionable"


def evaluate(root: str, options: Optional[Options] = None) -> EvalResult:
    """Score the diagnosis (with options' signature packs) against a labelled folder: every case
    of every MANIFEST.toml under root (format: nanscope.evaluate)."""
    from nanscope.evaluate import evaluate as run_eval

    options = options or Options()
    sigs = load_signatures(options)
    opts = dataclasses.replace(options, bundled_signatures=sigs, select=(), ignore=(), progress=None)
    return run_eval(Path(root), lambda path: diagnose([str(path)], opts), {s.id for s in sigs})


def with_baseline(report: Report, baseline_path: str, options: Optional[Options] = None) -> Report:
    """Mark the report's findings new/known against a known-good run (a JSON report or a log)."""
    from nanscope import baseline

    base = baseline.load(baseline_path, lambda path: diagnose([path], options))
    report.baseline = baseline.compare(report, base, baseline_path)
    # the verdict of what is new: what the text report's header and the exit status speak of
    report.baseline["verdict"] = verdict([f for f in report.findings if f.baseline_status != "known"])
    return report


def fleet(root: str, pattern: Optional[str] = None, options: Optional[Options] = None, engine: Optional[str] = None,
          jobs: Optional[int] = None, table: Optional[str] = None, min_recurrence: int = 2) -> tuple[list, dict]:
    """Diagnose every job under root (nanscope.fleet): the per-job results (sorted by time) and the
    summary across jobs; with `table`, the findings across jobs are written there as Parquet."""
    from nanscope import fleet as fleet_mod

    results = fleet_mod.run(root, pattern, options or Options(), engine, jobs, diagnose, load_signatures)
    if table:
        fleet_mod.write_table(results, table)
    return results, fleet_mod.summarize(results, min_recurrence=min_recurrence)


def write_reports(report: Report, outputs: Sequence[str] = (), default_format: str = "text", redact: bool = True,
                  stdout: bool = True, color: Callable[[object], bool] = lambda stream: False,
                  begun: bool = False, told: Optional[set] = None,
                  unicode: Callable[[object], bool] = lambda stream: True) -> None:
    """Render one Report into several outputs: each `FORMAT:PATH` (a file, atomically), `FORMAT`
    (stdout) or a plain PATH (the default_format report there); see nanscope.report.outputs.
    `color(stream)` / `unicode(stream)` say whether the stdout report may be coloured / use block
    characters; `begun`: a jsonl report to stdout had its begin message written before the logs were
    read; `told`: live mode wrote begin and these findings to stdout already."""
    from nanscope import report as reporters
    from nanscope.report.outputs import plan, write_all

    specs = plan(default_format, list(outputs), list(reporters.FORMATS), stdout=stdout)

    def render(fmt: str, rep: Report, out, is_stdout: bool) -> None:
        opts = reporters.RenderOptions(color=is_stdout and color(out), redact=redact, begun=begun and is_stdout,
                                       unicode=unicode(out) if is_stdout else True)
        if is_stdout and told is not None and fmt == "jsonl":
            from nanscope.report.jsonl import render as render_jsonl

            render_jsonl(rep, out, opts, told=told)  # begin and the told findings went out live
        else:
            reporters.render(fmt, rep, out, opts)

    write_all(report, specs, render)


def incomplete_inputs(report: Report) -> list:
    """The inputs that could not be read, or only in part."""
    return [i for i in report.inputs if not i.complete]


def exit_code(report: Report, fail_on: str = "medium") -> ExitCode:
    """1: findings at or above fail_on; 3: all of those are retryable infrastructure faults;
    else 2 when an input could not be read completely (nothing can be said of what was not read);
    else 0. Findings go first: what was read shows the job failed either way. With a baseline,
    only new findings (and regressions) count; fail_on 'never' counts no finding, but an input
    not read still gives 2."""
    if fail_on != "never" and fail_on not in SEVERITIES:
        raise NanscopeError(f"--fail-on takes one of {', '.join(SEVERITIES)}, never")
    level = SEVERITY_ORDER.get(fail_on, len(SEVERITY_ORDER) + 1)
    hits = [f for f in report.findings if SEVERITY_ORDER[f.severity] >= level and f.baseline_status != "known"]
    if not hits:
        return ExitCode.ERROR if incomplete_inputs(report) else ExitCode.CLEAN
    if all(f.retryable for f in hits):
        return ExitCode.RETRYABLE
    return ExitCode.FINDINGS
