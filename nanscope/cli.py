"""The command line: flags -> Options, call nanscope.api, pick a reporter, return an exit code.

EXIT STATUS: 0 nothing at or above --fail-on; 1 findings at or above --fail-on; 2 usage error,
unreadable input, bad signature file or internal error; 3 findings, all of them retryable
infrastructure faults (CI can retry); 130 interrupted. A closed stdout (`| head`) exits 0.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import List, Optional

import typer

from nanscope import __version__
from nanscope.errors import ExitCode, NanscopeError

EXIT_HELP = ("Exit status: 0 nothing at or above --fail-on; 1 findings; 2 usage, input or internal error; "
             "3 all findings are retryable infrastructure faults; 130 interrupted.")

app = typer.Typer(
    add_completion=False, no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False,
    help="Why did my training job go bad, on which rank did it start, and what do I do now? " + EXIT_HELP,
)
sig_app = typer.Typer(no_args_is_help=True, help="List, show, test and lint signature files.")
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
    paths: List[str] = typer.Argument(None, help="Log files, folders of per-rank files, .gz, or - for stdin (default)."),
    fmt: str = typer.Option("text", "--format", "-f", help="Report format: text, json, ... (see `nanscope formats`)."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write the report here (atomically) instead of stdout."),
    fail_on: FailOn = typer.Option(FailOn.medium, "--fail-on", help="Lowest severity that makes the exit status non-zero."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even with findings (errors still exit 2)."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Only these signature ids or categories (comma separated)."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Skip these signature ids or categories."),
    signatures: Optional[List[str]] = typer.Option(None, "--signatures", help="Extra folder of signature TOML files."),
    parser: Optional[List[str]] = typer.Option(None, "--parser", help="Force these parsers instead of all of them."),
    color: Color = typer.Option(Color.auto, "--color", help="Colour the text report."),
    no_color: bool = typer.Option(False, "--no-color", help="Same as --color never."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing; only the exit status tells."),
    no_redact: bool = typer.Option(False, "--no-redact", help="Do not mask tokens and keys in evidence lines."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes for several input files (default: one per core when the input is large)."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="A known-good run (JSON report or log): report what is new or worse; only new findings affect the exit status."),
    follow: bool = typer.Option(False, "--follow", help="Live: read FILE (or - for a pipe) as it grows, print each finding when it is decided; ends at the end of a pipe, when --pid exits, or on Ctrl-C, then prints the report."),
    pid: Optional[int] = typer.Option(None, "--pid", help="With --follow: stop when this process exits."),
) -> None:
    """Diagnose a job's logs: the root cause, the initiating rank, the fix. """
    from nanscope import api
    from nanscope.output import open_output

    options = api.Options(signatures=_split(signatures), select=_split(select), ignore=_split(ignore),
                          parsers=_split(parser) or None)
    from nanscope import report as reporters

    if fmt not in reporters.FORMATS:
        raise typer.BadParameter(f"unknown format '{fmt}'; known: {', '.join(reporters.FORMATS)}", param_hint="--format")
    from nanscope.ingest.reader import expand_sources
    from nanscope.progress import progress_for

    told: Optional[set] = None
    if follow or pid is not None:
        if not follow or len(paths or ["-"]) != 1:
            raise typer.BadParameter("--follow takes one FILE or - (and --pid needs --follow)", param_hint="--follow")
        from nanscope.live import follow_cli

        report, told = follow_cli((paths or ["-"])[0], options, fmt, pid, live_to_stdout=output is None and not quiet,
                                  quiet=quiet, do_redact=not no_redact)
    else:
        sources = expand_sources(paths or ["-"])
        options.jobs = jobs
        options.progress = progress_for(sources, quiet=quiet)
        try:
            report = api.diagnose_sources(sources, options)
        finally:
            if options.progress is not None:
                options.progress.close()
                options.progress = None
    if baseline:
        api.with_baseline(report, baseline, options)
    if not quiet:
        with open_output(output) as out:
            color_on = use_color(color, no_color, out) and output is None
            if out is sys.stdout and not _utf8(out) and hasattr(out, "reconfigure"):
                out.reconfigure(errors="replace")  # a character the terminal cannot show is a '?', not a crash
            render_opts = reporters.RenderOptions(color=color_on, redact=not no_redact, unicode=use_unicode(out))
            if told is not None and fmt == "jsonl" and output is None:
                from nanscope.report.jsonl import render as render_jsonl

                render_jsonl(report, out, render_opts, told=told)  # begin and the told findings went out live
            else:
                reporters.render(fmt, report, out, render_opts)
    code = api.exit_code(report, fail_on.value)
    raise typer.Exit(ExitCode.CLEAN if exit_zero else code)


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
    """Print or export the normalized events nanscope extracted (JSON Lines, Parquet, Arrow)."""
    from nanscope import api
    from nanscope.export import table_format, write_jsonl, write_partitioned, write_table
    from nanscope.output import open_output

    inputs = paths or ["-"]
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
def explain(sig_id: str = typer.Argument(..., metavar="ID", help="A signature id, e.g. nan-skip-recover.")) -> None:
    """The encyclopedia entry of a signature, offline."""
    from nanscope.signatures.explain import explain_text
    from nanscope.signatures.loader import load_or_raise

    sigs = {s.id: s for s in load_or_raise()}
    if sig_id not in sigs:
        raise NanscopeError(f"no signature '{sig_id}'; see `nanscope signatures list`")
    sys.stdout.write(explain_text(sigs[sig_id]))


@app.command()
def formats() -> None:
    """List the report formats of `diagnose --format`."""
    from nanscope.report import FORMATS

    for name, (_mod, desc) in FORMATS.items():
        print(f"{name:<10} {desc}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the --format json report."""
    import json

    from nanscope.schema import report_schema

    sys.stdout.write(json.dumps(report_schema(), indent=2) + "\n")


@sig_app.command("list")
def sig_list(signatures: Optional[List[str]] = typer.Option(None, "--signatures", help="Extra signature folder.")) -> None:
    """One line per signature: id, severity, category, title."""
    from nanscope.signatures.loader import load_or_raise

    for s in sorted(load_or_raise(_split(signatures)), key=lambda s: (s.category, s.id)):
        print(f"{s.id:<34} {s.severity:<8} {s.category:<12} {s.title}")


@sig_app.command("show")
def sig_show(sig_id: str = typer.Argument(..., metavar="ID"),
             signatures: Optional[List[str]] = typer.Option(None, "--signatures")) -> None:
    """Print a signature's TOML file."""
    from nanscope.signatures.loader import load_or_raise

    sigs = {s.id: s for s in load_or_raise(_split(signatures))}
    if sig_id not in sigs:
        raise NanscopeError(f"no signature '{sig_id}'")
    with open(sigs[sig_id].path, encoding="utf-8") as f:
        sys.stdout.write(f.read())


@sig_app.command("test")
def sig_test(dirs: List[str] = typer.Argument(None, help="Signature folders (default: the bundled library).")) -> None:
    """Run every [[examples]] entry: a match must match, a no-match must not."""
    from nanscope.signatures.selftest import run_examples

    failures, total = run_examples(dirs or [])
    for line in failures:
        print(line)
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


@sig_app.command("lint")
def sig_lint(dirs: List[str] = typer.Argument(None, help="Signature folders (default: the bundled library).")) -> None:
    """Check signature files; every problem is printed with file and line."""
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
    from nanscope.ingest import reader

    reader.OWN_PROCESS = True


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point with one error funnel: never a traceback, never exit 1 for an internal error."""
    from nanscope.output import OutputClosed

    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or bool(os.environ.get("NANSCOPE_DEBUG"))
    _own_process()
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
