"""--format github: GitHub Actions workflow commands, safe against log text.

- Annotations (`::error file=F,line=L,title=T::message`, `::warning`, `::notice`) for the most
  severe findings, within GitHub's per-step limits (10 errors + 10 warnings; actions/toolkit
  PR #734), then one `::notice::` "N more". Values are escaped exactly as actions/toolkit
  packages/core/src/command.ts does (sanitize.gh_data / gh_property). `file=` is given only for
  logs inside the workspace, relative to $GITHUB_WORKSPACE when it is set (the runner resolves
  `file=` against the repository root, not the step's working-directory), else to the current
  directory, as annotations can only point at repository files.
- The full report (with every echoed log line) follows inside a `::stop-commands::<token>` ...
  `::<token>::` block with a fresh uuid4 token, so no log line can act as a runner command (the
  runner trims leading whitespace before matching `::`, so indentation is no defence). The legacy
  `##[` form, which the runner matches anywhere in a line, is also broken inside the block.
"""

from __future__ import annotations

import io
import uuid
from typing import IO

from nanscope.model import Report
from nanscope.report.base import report_record, workspace_path
from nanscope.report.sanitize import gh_data, gh_defuse, gh_property, terminal

MAX_ERRORS = 10
MAX_WARNINGS = 10
MAX_NOTICES = 10  # including the final "N more" notice
_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "notice", "info": "notice"}


def _annotation(level: str, f: dict) -> str:
    props = []
    ev = f["evidence"][0] if f["evidence"] else None
    rel = workspace_path(ev["source"]) if ev else None
    if rel is not None:
        props += [f"file={gh_property(rel)}", f"line={int(ev['line'])}"]
    title = terminal(f"nanscope {f['id']}: {f['title']}", 300)
    props.append(f"title={gh_property(title)}")
    where = []
    if f["initiating_rank"] is not None:
        where.append(f"initiating rank {f['initiating_rank']}")
    if f["first_step"] is not None:
        where.append(f"first step {f['first_step']}")
    msg = f["summary"] + (f" ({', '.join(where)})" if where else "") + f"\nFix: {f['fix']}"
    return f"::{level} {','.join(props)}::{gh_data(gh_defuse(terminal(msg, 4000)))}"


def annotations(rec: dict) -> list[str]:
    budget = {"error": MAX_ERRORS, "warning": MAX_WARNINGS, "notice": MAX_NOTICES - 1}
    lines, left = [], 0
    for f in rec["findings"]:  # already most severe first
        level = _LEVEL.get(f["severity"], "notice")
        if budget[level] > 0:
            budget[level] -= 1
            lines.append(_annotation(level, f))
        else:
            left += 1
    if left:
        lines.append(f"::notice title=nanscope::{gh_data(f'{left} more finding(s): see the job summary or the JSON report artifact')}")
    return lines


def render(report: Report, out: IO[str], options: object = None) -> None:
    from nanscope.report import RenderOptions
    from nanscope.report import text as text_report

    redact = getattr(options, "redact", True)
    rec = report_record(report, redact)
    for line in annotations(rec):
        out.write(line + "\n")
    body = io.StringIO()
    text_report.render(report, body, RenderOptions(color=False, redact=redact, width=getattr(options, "width", 100)))
    token = uuid.uuid4().hex
    out.write(f"::stop-commands::{token}\n")
    for line in body.getvalue().rstrip("\n").split("\n"):
        out.write(gh_defuse(terminal(line, len(line) + 1)) + "\n")
    out.write(f"::{token}::\n")
