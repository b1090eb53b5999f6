"""The command line: flags -> Options, call nanscope.api, pick a reporter, return an exit code.

EXIT STATUS: 0 nothing at or above --fail-on, every input read in full; 1 findings at or above
--fail-on; 2 usage error, an input not read in full (unreadable, damaged, truncated) with no such
findings, bad signature file or internal error; 3 findings, all of them retryable infrastructure
faults (CI can retry); 130 interrupted. A closed stdout (`| head`) exits 0.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import List, Optional

import typer

from nanscope import __version__
from nanscope.errors import ExitCode, NanscopeError

EXIT_HELP = ("Exit status: 0 nothing at or above --fail-on and every input read in full; 1 findings; "
             "2 usage or internal error, or an input not read in full and no findings; "
             "3 all findings are retryable infrastructure faults; 130 interrupted.")

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    add_completion=True, no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False,
    context_settings=HELP_OPTIONS,
    help="Why did my training job go bad, on which rank did it start, and what do I do now? " + EXIT_HELP
    + "\n\n\b\nExamples:\n  nanscope diagnose train.log\n  nanscope diagnose logs/ --output json:nanscope.json"
    "\n  nanscope explain nan-rank-local\n  nanscope config",
)
sig_app = typer.Typer(no_args_is_help=True, context_settings=HELP_OPTIONS,
                      help="List, show, test and lint signature files.\n\n\b\nExamples:\n  nanscope signatures list"
                      "\n  nanscope signatures test my-pack/\n  nanscope signatures lint my-pack/")
app.add_typer(sig_app, name="signatures")


class FailOn(str, Enum):
    info = "info"
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"
    never = "never"


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


def _split(values: Optional[List[str]]) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def use_color(choice: Color, no_color: bool, stream=None) -> bool:
    """Flag > NO_COLOR > FORCE_COLOR/CLICOLOR_FORCE > TERM=dumb > isatty."""
    if no_color or choice == Color.never:
        return False
    if choice == Color.always:
        return True
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR") or os.environ.get("CLICOLOR_FORCE"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty()


def use_unicode(stream=None) -> bool:
    """Block characters in the sparklines: not with NO_COLOR or TERM=dumb, nor on a stream that
    cannot encode them (a terminal that is not UTF-8)."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return _utf8(stream or sys.stdout)


def _utf8(stream) -> bool:
    enc = getattr(stream, "encoding", None) or "ascii"
    return enc.lower().replace("-", "").replace("_", "") in ("utf8", "utf8sig")


def _version(value: bool) -> None:
    if value:
        print(f"nanscope {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of internal errors."),
) -> None:
    pass


@app.command()
def diagnose(
    ctx: typer.Context,
    paths: List[str] = typer.Argument(None, help="Log files, folders of per-rank files, .gz, or - for stdin (default)."),
    fmt: str = typer.Option("text", "--format", "-f", help="Report format on stdout: text, json, ... (see `nanscope formats`)."),
    output: Optional[List[str]] = typer.Option(None, "--output", "-o", metavar="FORMAT[:PATH]",
                                               help="Also write FORMAT into PATH (FORMAT alone: stdout; a PATH alone: the "
                                                    "--format report, atomically). Repeatable; the logs are read once."),
    fail_on: FailOn = typer.Option(FailOn.medium, "--fail-on", help="Lowest severity that makes the exit status non-zero."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even with findings (errors and inputs not read in full still exit 2)."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these signature ids or categories (comma separated)."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these signature ids or categories."),
    signatures: Optional[List[str]] = typer.Option(None, "--signatures", help="Extra folder of signature TOML files."),
    parser: Optional[List[str]] = typer.Option(None, "--parser", help="Force these parsers instead of all of them."),
    color: Color = typer.Option(Color.auto, "--color", help="Colour the text report."),
    no_color: bool = typer.Option(False, "--no-color", help="Same as --color never."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on stdout (files given with --output are still written)."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not mask tokens and keys in evidence lines."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes for several input files or pieces of a large one (default: one per core when the input is large)."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="A known-good run (JSON report or log): report what is new or worse; only new findings affect the exit status."),
    engine: Optional[str] = typer.Option(None, "--engine", help="Where files are scanned: local (default), dask (a local Dask cluster) or dask:ADDRESS (needs nanscope[dask])."),
    config_file: Optional[str] = typer.Option(None, "--config", help="Use this config file instead of searching for nanscope.toml / pyproject.toml."),
    follow: bool = typer.Option(False, "--follow", help="Live: read FILE (or - for a pipe) as it grows, print each finding when it is decided; ends at the end of a pipe, when --pid exits, or on Ctrl-C, then prints the report."),
    pid: Optional[int] = typer.Option(None, "--pid", help="With --follow: stop when this process exits."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Say on stderr how the inputs were read (worker processes, a large file's pieces and where they were stitched)."),
) -> None:
    """Diagnose a job's logs: the root cause, the initiating rank, the fix.

    Settings come from flags, then NANSCOPE_* variables, then the nearest nanscope.toml or
    pyproject.toml [tool.nanscope] (see `nanscope config`).

    \b
    Examples:
      nanscope diagnose train.log
      cat train.log | nanscope diagnose
      nanscope diagnose logs/ --fail-on high --baseline good-run.json
      nanscope diagnose logs/ --output sarif:nanscope.sarif --output junit:junit.xml \\
          --output github --output markdown:$GITHUB_STEP_SUMMARY
    """
    from nanscope import api
    from nanscope import report as reporters
    from nanscope.report.outputs import plan

    cfg = _settings(ctx, config_file)
    if cfg["format"] not in reporters.FORMATS:
        raise typer.BadParameter(f"unknown format '{cfg['format']}'; known: {', '.join(reporters.FORMATS)}", param_hint="--format")
    specs = plan(cfg["format"], cfg["output"], list(reporters.FORMATS), stdout=not quiet)  # a bad --output fails before the logs are read
    options = api.Options(signatures=cfg["signatures"], select=cfg["select"], ignore=cfg["ignore"],
                          parsers=cfg["parser"] or None)
    from nanscope.ingest.reader import expand_sources
    from nanscope.progress import progress_for

    told: Optional[set] = None
    streaming = False
    if follow or pid is not None:
        if not follow or len(paths or ["-"]) != 1:
            raise typer.BadParameter("--follow takes one FILE or - (and --pid needs --follow)", param_hint="--follow")
        from nanscope.live import follow_cli

        options.engine = None
        report, told = follow_cli((paths or ["-"])[0], options, cfg["format"], pid,
                                  live_to_stdout=any(sp.path is None for sp in specs), quiet=quiet,
                                  do_redact=cfg["redact"])
    else:
        sources = expand_sources(paths or ["-"])
        _say_if_waiting(paths, quiet)
        options.jobs = cfg["jobs"]
        options.engine = cfg["engine"]
        options.progress = progress_for(sources, quiet=quiet)
        if verbose:
            options.note = _say
        streaming = any(sp.path is None and sp.fmt == "jsonl" for sp in specs)  # begin goes out before reading
        if streaming:
            from nanscope.ingest.reader import source_sizes
            from nanscope.output import StdoutWatch, open_output
            from nanscope.report import jsonl

            with open_output(None) as out:
                jsonl.write(jsonl.begin(source_sizes(sources)), out)
            if StdoutWatch.usable():
                options.progress = StdoutWatch(options.progress)
        try:
            report = api.diagnose_sources(sources, options)
        finally:
            if options.progress is not None:
                options.progress.close()
                options.progress = None
    if cfg["baseline"]:
        api.with_baseline(report, cfg["baseline"], options)
    choice = Color.never if no_color else Color(cfg["color"])
    if not quiet and not _utf8(sys.stdout) and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")  # a character the terminal cannot show is a '?', not a crash
    api.write_reports(report, cfg["output"], cfg["format"], redact=cfg["redact"], stdout=not quiet,
                      color=lambda stream: use_color(choice, False, stream), begun=streaming, told=told,
                      unicode=use_unicode)
    code = api.exit_code(report, cfg["fail-on"])
    raise typer.Exit(ExitCode.CLEAN if cfg["exit-zero"] and code != ExitCode.ERROR else code)

def _choice(v) -> str:
    """An Enum option's value as ctx.params holds it: the member (typer >= 0.28) or the string given."""
    return v.value if isinstance(v, Enum) else str(v)


# diagnose's parameters that are settings: parameter name -> (config key, value as given -> setting)
_SETTING_PARAMS = {
    "fmt": ("format", lambda v: v),
    "output": ("output", lambda v: list(v or [])),
    "fail_on": ("fail-on", _choice),
    "exit_zero": ("exit-zero", bool),
    "select": ("select", _split),
    "ignore": ("ignore", _split),
    "signatures": ("signatures", _split),
    "parser": ("parser", _split),
    "color": ("color", _choice),
    "jobs": ("jobs", lambda v: v),
    "engine": ("engine", lambda v: v),
    "baseline": ("baseline", lambda v: v),
    "no_redact": ("redact", lambda v: not v),
}


def _settings(ctx: typer.Context, config_file: Optional[str]):
    """Flags given on the command line, over NANSCOPE_* variables, over the config file."""
    from nanscope.config import resolve

    given = {}
    for param, (key, convert) in _SETTING_PARAMS.items():
        source = ctx.get_parameter_source(param)  # typer bundles its own click: compare by name
        if source is not None and source.name == "COMMANDLINE":
            given[key] = convert(ctx.params[param])
    return resolve(given, config_file=config_file)


def _packs(flag: Optional[List[str]]) -> list[str]:
    """--signatures, else the packs the settings name (a config file's `signatures`, NANSCOPE_SIGNATURES)."""
    from nanscope.config import resolve

    return _split(flag) if flag else list(resolve({})["signatures"])


def _say(line: str) -> None:
    """A --verbose line on stderr (file names come from the command line, never from a log)."""
    print(f"nanscope: {line}", file=sys.stderr, flush=True)


def _say_if_waiting(paths: Optional[List[str]], quiet: bool) -> None:
    """A terminal on stdin and no file: say what nanscope waits for, instead of hanging silently."""
    if quiet or (paths and "-" not in paths):
        return
    try:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        interactive = False
    if interactive:
        sys.stderr.write("nanscope: waiting for a log on stdin (paste it, then press Ctrl-D), "
                         "or give a file: nanscope diagnose train.log\n")
        sys.stderr.flush()


@app.command("config")
def config_cmd(config_file: Optional[str] = typer.Option(None, "--config", help="Read this file instead of searching for one.")) -> None:
    """Print the settings `nanscope diagnose` would use here, and where each came from (a flag,
    a NANSCOPE_* variable, the config file and line, or the default).

    The config file is the nearest .nanscope.toml, nanscope.toml, or pyproject.toml with a
    [tool.nanscope] table, from the working directory up (as ruff finds its own).

    \b
    Examples:
      nanscope config
      NANSCOPE_FAIL_ON=high nanscope config
      nanscope config --config ci/nanscope.toml
    """
    from nanscope.config import describe, resolve

    sys.stdout.write(describe(resolve({}, config_file=config_file)))


@app.command()
def events(
    paths: List[str] = typer.Argument(None, help="Log files, folders, .gz, or - for stdin."),
    output: Optional[str] = typer.Option(None, "--output", "-o",
                                         help="events.jsonl, events.parquet or events.arrow (default: JSON Lines on stdout)."),
    partition_by: Optional[str] = typer.Option(None, "--partition-by",
                                               help="'rank': write -o as a hive-style folder of Parquet files, rank=R/part-<hash>.parquet."),
    parser: Optional[List[str]] = typer.Option(None, "--parser", help="Force these parsers."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not mask tokens and keys in the text column."),
) -> None:
    """Print or export the normalized events nanscope extracted (JSON Lines, Parquet, Arrow).

    \b
    Examples:
      nanscope events train.log | jq -c 'select(.kind == "error")'
      nanscope events logs/ -o events.parquet
      nanscope events logs/ -o events/ --partition-by rank
    """
    from nanscope import api
    from nanscope.export import table_format, write_jsonl, write_partitioned, write_table
    from nanscope.output import open_output

    inputs = paths or ["-"]
    _say_if_waiting(paths, False)
    if partition_by is not None:
        if partition_by != "rank":
            raise typer.BadParameter("only 'rank' is supported", param_hint="--partition-by")
        if not output or output == "-" or table_format(output) == "arrow" or output.endswith((".jsonl", ".json", ".ndjson")):
            raise typer.BadParameter("needs -o FOLDER (a Parquet dataset folder)", param_hint="--partition-by")
        evs = api.events(inputs, api.Options(parsers=_split(parser) or None))
        write_partitioned(evs, output, inputs, redact_text=not no_redact)
        raise typer.Exit(0)
    fmt = table_format(output) if output and output != "-" else None
    if output and output != "-" and fmt is None and not output.endswith((".jsonl", ".json", ".ndjson")):
        raise NanscopeError(f"cannot write {output}: use a .jsonl, .parquet or .arrow file name (or - for stdout)")
    evs = api.events(inputs, api.Options(parsers=_split(parser) or None))
    if fmt is not None:
        write_table(evs, output, fmt, redact_text=not no_redact)
        raise typer.Exit(0)
    with open_output(output) as out:
        write_jsonl(evs, out, redact_text=not no_redact)
    raise typer.Exit(0)


@app.command("eval")
def eval_(
    folder: str = typer.Argument(..., metavar="DIR", help="A labelled folder: MANIFEST.toml files with [[log]] cases."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the result here instead of stdout."),
    signatures: Optional[List[str]] = typer.Option(None, "--signatures", help="Extra folder of signature TOML files."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these signature ids or categories."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these signature ids or categories."),
    misses: bool = typer.Option(True, "--misses/--no-misses", help="List the cases it got wrong, with what it said."),
    min_detected: Optional[float] = typer.Option(None, "--min-detected", help="Exit 1 when fewer than this % of failures are named."),
    min_first: Optional[float] = typer.Option(None, "--min-first", help="Exit 1 when fewer than this % are the first finding."),
    min_rank: Optional[float] = typer.Option(None, "--min-rank", help="Exit 1 when fewer than this % of labelled ranks are right."),
    max_false_alarms: Optional[int] = typer.Option(None, "--max-false-alarms", help="Exit 1 on more false alarms on healthy traps."),
) -> None:
    """Score nanscope (with your --signatures packs) against a labelled folder of logs: detected,
    first finding, initiating rank and false alarms, per framework and per failure class.

    The manifest format (MANIFEST.toml, paths relative to its folder) is in docs/eval.md:
    [[log]] path, framework, healthy, expect = [id, ...], accept, initiating_rank, first_bad_step.
    Exit status: 0, or 1 when a --min-*/--max-* floor is not met; 2 on a bad manifest.

    \b
    Examples:
      nanscope eval sample_logs/public
      nanscope eval incidents/ --signatures team-pack/ --min-detected 90
    """
    from nanscope import api
    from nanscope.output import open_output
    from nanscope.report.evaluation import render_json, render_text

    if fmt not in ("text", "json"):
        raise typer.BadParameter("eval writes text or json", param_hint="--format")
    result = api.evaluate(folder, api.Options(signatures=_split(signatures), select=_split(select), ignore=_split(ignore)))
    with open_output(output) as out:
        if fmt == "json":
            render_json(result, out)
        else:
            render_text(result, out, show_misses=misses)
    rates = result.total.rates()
    below = [name for name, floor, got in (("detected", min_detected, rates["detected_pct"]),
                                           ("first", min_first, rates["first_pct"]),
                                           ("rank", min_rank, rates["rank_pct"]))
             if floor is not None and got is not None and got < floor]
    if max_false_alarms is not None and rates["false_alarms"] > max_false_alarms:
        below.append("false alarms")
    if below:
        sys.stderr.write(f"nanscope eval: below the floor: {', '.join(below)}\n")
    raise typer.Exit(1 if below else 0)


@app.command()
def fleet(
    root: str = typer.Argument(..., help="A folder of jobs: each sub-folder (or each file) is one job."),
    pattern: Optional[str] = typer.Option(None, "--pattern", help="Each file matching this glob (relative to ROOT, ** allowed) is a job."),
    table: Optional[str] = typer.Option(None, "--table", help="Write the findings across jobs here as Parquet."),
    fmt: str = typer.Option("text", "--format", "-f", help="Summary format: text or json."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the summary here instead of stdout."),
    engine: Optional[str] = typer.Option(None, "--engine", help="local (default: --jobs processes), dask (a LocalCluster of --jobs workers) or dask:ADDRESS."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes with the local engine (default: one per core)."),
    min_jobs: int = typer.Option(2, "--min-jobs", min=2, help="Jobs a host must share before it is a suspect."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these signature ids or categories."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these signature ids or categories."),
    signatures: Optional[List[str]] = typer.Option(None, "--signatures", help="Extra folder of signature TOML files."),
) -> None:
    """Diagnose every job of a cluster: a table of findings across jobs, the failure classes that
    dominate, suspect hosts (the same host behind hardware failures of several jobs) and classes
    present in every job since some time (a rollout).

    Exit status: 0 (the summary is information, not a verdict), 2 on bad input."""
    from nanscope import api
    from nanscope.output import open_output
    from nanscope.report.fleet import render_json, render_text

    if fmt not in ("text", "json"):
        raise typer.BadParameter("fleet writes text or json", param_hint="--format")
    options = api.Options(signatures=_split(signatures), select=_split(select), ignore=_split(ignore))
    results, summary = api.fleet(root, pattern=pattern, options=options, engine=engine, jobs=jobs,
                                 table=table, min_recurrence=min_jobs)
    with open_output(output) as out:
        (render_json if fmt == "json" else render_text)(summary, out)
    raise typer.Exit(0)


@app.command()
def explain(sig_id: str = typer.Argument(..., metavar="ID", help="A signature id, e.g. nan-skip-recover."),
            signatures: Optional[List[str]] = typer.Option(None, "--signatures", help="Also look in this folder of signature TOML files.")) -> None:
    """The encyclopedia entry of a signature, offline.

    \b
    Examples:
      nanscope explain nan-rank-local
      nanscope explain --signatures team-pack/ team-dataloader-stall
    """
    from nanscope.signatures.explain import explain_text
    from nanscope.signatures.loader import load_or_raise

    sigs = {s.id: s for s in load_or_raise(_packs(signatures))}
    if sig_id not in sigs:
        raise NanscopeError(f"no signature '{sig_id}'; see `nanscope signatures list`")
    sys.stdout.write(explain_text(sigs[sig_id]))


@app.command()
def formats() -> None:
    """List the report formats of `diagnose --format` and `--output FORMAT:PATH`.

    \b
    Example:
      nanscope formats
    """
    from nanscope.report import FORMATS

    for name, (_mod, desc) in FORMATS.items():
        print(f"{name:<10} {desc}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the --format json report.

    \b
    Example:
      nanscope schema > nanscope-report.schema.json
    """
    import json

    from nanscope.schema import report_schema

    sys.stdout.write(json.dumps(report_schema(), indent=2) + "\n")


@sig_app.command("list")
def sig_list(signatures: Optional[List[str]] = typer.Option(None, "--signatures", help="Extra signature folder.")) -> None:
    """One line per signature: id, severity, category, title.

    \b
    Examples:
      nanscope signatures list
      nanscope signatures list --signatures team-pack/
    """
    from nanscope.signatures.loader import load_or_raise

    for s in sorted(load_or_raise(_packs(signatures)), key=lambda s: (s.category, s.id)):
        print(f"{s.id:<34} {s.severity:<8} {s.category:<12} {s.title}")


@sig_app.command("show")
def sig_show(sig_id: str = typer.Argument(..., metavar="ID"),
             signatures: Optional[List[str]] = typer.Option(None, "--signatures")) -> None:
    """Print a signature's TOML file.

    \b
    Example:
      nanscope signatures show nan-rank-local
    """
    from nanscope.signatures.loader import load_or_raise

    sigs = {s.id: s for s in load_or_raise(_packs(signatures))}
    if sig_id not in sigs:
        raise NanscopeError(f"no signature '{sig_id}'")
    with open(sigs[sig_id].path, encoding="utf-8") as f:
        sys.stdout.write(f.read())


@sig_app.command("test")
def sig_test(dirs: List[str] = typer.Argument(None, help="Signature folders (default: the bundled library).")) -> None:
    """Run every [[examples]] entry: a match must match, a no-match must not.

    Each example is diagnosed with the bundled library loaded too, so it also proves that no other
    signature steals its match. A folder that is the bundled library (signatures/ in a nanscope
    checkout) is tested as that library, in place of the installed copy.

    \b
    Examples:
      nanscope signatures test
      nanscope signatures test team-pack/
      nanscope signatures test signatures/      # in a nanscope checkout
    """
    from nanscope.signatures.selftest import run_examples

    failures, total = run_examples(dirs or [])
    for line in failures:
        print(line)
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


@sig_app.command("lint")
def sig_lint(dirs: List[str] = typer.Argument(None, help="Signature folders (default: the bundled library).")) -> None:
    """Check signature files; every problem is printed with file and line.

    \b
    Examples:
      nanscope signatures lint team-pack/
      nanscope signatures lint
    """
    from nanscope.signatures.selftest import lint

    problems = lint(dirs or [])
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)")
    raise typer.Exit(1 if problems else 0)


def _own_process() -> None:
    """The CLI owns its process, so it may choose how memory is returned: Arrow's default pool
    (mimalloc) keeps freed chunks resident, which made peak RSS creep with the input; the system
    allocator returns them. (glibc's mmap threshold is left alone: fixed at 256 KiB, it made every
    chunk's arrays fresh mappings, and the page faults cost a third of the run.)"""
    from nanscope import columns

    columns.OWN_PROCESS = True


class Terminated(BaseException):
    """SIGTERM, raised where the main thread is, so that every `finally` runs (temporary files of
    -o and of event exports are removed) before the process exits 143."""


_MAIN_PID = [0]


def _on_sigterm(signum, frame) -> None:
    if os.getpid() != _MAIN_PID[0]:  # a forked --jobs worker, ended by its parent: die as before
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise Terminated()


def _catch_sigterm() -> None:
    import signal

    _MAIN_PID[0] = os.getpid()
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (main() called from a library's thread): leave it
        pass


def _fewer_collections() -> None:
    """The CLI process makes few reference cycles but many young objects (imports, events): the
    default threshold (700) runs ~150 young collections before a small log's diagnosis starts,
    about a tenth of its time. 20,000 runs a few. Only the CLI's own process: a library caller's
    collector is left as it is."""
    import gc

    if gc.get_threshold()[0] < _GC_YOUNG:
        gc.set_threshold(_GC_YOUNG, 20, 20)


_GC_YOUNG = 20_000


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point with one error funnel: never a traceback, never exit 1 for an internal error."""
    from nanscope.output import OutputClosed

    args = list(sys.argv[1:] if argv is None else argv)
    _fewer_collections()
    debug = "--debug" in args or bool(os.environ.get("NANSCOPE_DEBUG"))
    _own_process()
    _catch_sigterm()
    command = typer.main.get_command(app)
    try:
        command.main(args=args, prog_name="nanscope")
        code = 0
    except SystemExit as e:  # typer/click: usage errors (2), typer.Exit(code)
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else ExitCode.ERROR)
    except NanscopeError as e:
        sys.stderr.write(f"nanscope: error: {e}\n")
        code = ExitCode.ERROR
    except KeyboardInterrupt:
        sys.stderr.write("nanscope: interrupted\n")
        code = ExitCode.INTERRUPTED
    except Terminated:
        sys.stderr.write("nanscope: terminated\n")
        code = ExitCode.TERMINATED
    except (OutputClosed, BrokenPipeError):
        _silence_stdout()
        code = ExitCode.CLEAN
    except Exception as e:  # noqa: BLE001 - the funnel: anything else is an internal error, exit 2
        if debug:
            raise
        sys.stderr.write(f"nanscope: internal error: {type(e).__name__}: {e} (run with --debug for the traceback)\n")
        code = ExitCode.ERROR
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()
    return int(code)


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
