"""Reporters: one module per --format, each with render(report, out, options).

The CLI looks formats up here; adding a format means adding a module and a line to FORMATS.
Reporters never compute anything: they render the Report they are given.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import IO

from nanscope.model import Report


@dataclass
class RenderOptions:
    color: bool = False
    redact: bool = True
    width: int = 100
    begun: bool = False  # jsonl: the begin message was written before reading (the CLI, to stdout)
    unicode: bool = True  # sparkline blocks; False: plain ASCII (no UTF-8 terminal, NO_COLOR, TERM=dumb)


# name -> (module, description)
FORMATS: dict[str, tuple[str, str]] = {
    "text": ("nanscope.report.text", "the terminal report (default)"),
    "json": ("nanscope.report.json", "versioned JSON envelope (see `nanscope schema`)"),
    "jsonl": ("nanscope.report.jsonl", "JSON Lines messages: begin, finding..., summary, end"),
    "markdown": ("nanscope.report.markdown", "GitHub Markdown for PR comments and $GITHUB_STEP_SUMMARY"),
    "github": ("nanscope.report.github", "GitHub Actions annotations + the report in a stop-commands block"),
    "junit": ("nanscope.report.junit", "JUnit XML: one testcase per signature (GitLab test reports)"),
    "sarif": ("nanscope.report.sarif", "SARIF 2.1.0 for code scanning"),
    "gitlab": ("nanscope.report.gitlab", "GitLab Code Quality JSON (artifacts:reports:codequality)"),
    "html": ("nanscope.report.html", "one self-contained HTML page with loss / grad norm / scale plots (no script)"),
}


def render(fmt: str, report: Report, out: IO[str], options: RenderOptions) -> None:
    if fmt not in FORMATS:
        from nanscope.errors import NanscopeError

        raise NanscopeError(f"unknown format '{fmt}'; known: {', '.join(FORMATS)}")
    importlib.import_module(FORMATS[fmt][0]).render(report, out, options)
