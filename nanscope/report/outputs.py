"""Several reports from one read: `--output FORMAT[:PATH]`, repeatable.

    --output sarif:nanscope.sarif --output junit:junit.xml --output github \
    --output markdown:$GITHUB_STEP_SUMMARY

Each value is `FORMAT:PATH` (that format into that file), `FORMAT` alone (that format on stdout),
or a plain `PATH` / `-` (the `--format` report there, as `-o report.json` always meant). The
`--format` report goes to stdout unless a plain PATH took it or another output claims stdout; at
most one output may write to stdout. The logs are diagnosed once and every report is rendered from
that one Report. Files are written atomically; the file named by $GITHUB_STEP_SUMMARY is appended
to, as GitHub asks of every step that writes the job summary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Callable, Mapping, Optional, Sequence

from nanscope.errors import NanscopeError
from nanscope.model import Report


@dataclass(frozen=True)
class OutputSpec:
    fmt: str
    path: Optional[str]  # None: stdout

    def __str__(self) -> str:
        return f"{self.fmt}:{self.path}" if self.path else f"{self.fmt} (stdout)"


def parse_output(value: str, default_fmt: str, formats: Sequence[str]) -> OutputSpec:
    """One --output value: FORMAT:PATH, FORMAT, PATH or '-'."""
    return _parse(value, default_fmt, formats)[0]


def _parse(value: str, default_fmt: str, formats: Sequence[str]) -> tuple[OutputSpec, bool]:
    """The spec, and whether it was a plain PATH or '-' (which takes the --format report)."""
    if value in ("", "-"):
        return OutputSpec(default_fmt, None), True
    if value in formats:
        return OutputSpec(value, None), False
    head, sep, tail = value.partition(":")
    if sep and head in formats:
        if not tail:
            raise NanscopeError(f"--output {value}: give a file after '{head}:', or just '{head}' for stdout")
        return OutputSpec(head, None if tail == "-" else tail), False
    if sep and len(head) > 1 and head.isidentifier():
        raise NanscopeError(f"--output {value}: unknown format '{head}'; known: {', '.join(formats)} "
                            f"(for a file whose name has a colon, write ./{value})")
    return OutputSpec(default_fmt, value), True


def plan(default_fmt: str, values: Sequence[str], formats: Sequence[str], stdout: bool = True) -> list[OutputSpec]:
    """The outputs of one run. `stdout=False` (--quiet) drops whatever would go to stdout."""
    parsed = [_parse(v, default_fmt, formats) for v in values]
    specs = [spec for spec, _plain in parsed]
    if not any(plain for _spec, plain in parsed) and not any(s.path is None for s in specs):
        specs.insert(0, OutputSpec(default_fmt, None))
    to_stdout = [s for s in specs if s.path is None]
    if len(to_stdout) > 1:
        raise NanscopeError("--output: only one report can go to stdout, got " + ", ".join(s.fmt for s in to_stdout)
                            + "; give the others a file (FORMAT:PATH)")
    seen: dict[str, OutputSpec] = {}
    for s in specs:
        if s.path is None:
            continue
        key = os.path.abspath(s.path)
        if key in seen:
            raise NanscopeError(f"--output: {s.path} is named twice ({seen[key].fmt} and {s.fmt})")
        seen[key] = s
    return [s for s in specs if stdout or s.path is not None]


def is_step_summary(path: str, env: Optional[Mapping[str, str]] = None) -> bool:
    env = os.environ if env is None else env
    summary = env.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return False
    if os.path.abspath(summary) == os.path.abspath(path):
        return True
    try:
        return os.path.samefile(summary, path)
    except OSError:
        return False


def write_all(report: Report, specs: Sequence[OutputSpec],
              render: Callable[[str, Report, IO[str], bool], None]) -> None:
    """Render the one Report into every output. render(fmt, report, stream, is_stdout)."""
    from nanscope.output import open_output

    # files first: a reader of stdout that goes away early (`| head`) stops the run at stdout
    for spec in sorted(specs, key=lambda s: s.path is None):
        if spec.path is not None and is_step_summary(spec.path):
            with open(spec.path, "a", encoding="utf-8", newline="\n") as f:
                render(spec.fmt, report, f, False)
            continue
        with open_output(spec.path) as out:
            render(spec.fmt, report, out, spec.path is None)
