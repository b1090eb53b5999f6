"""--format gitlab: a GitLab Code Quality report (`artifacts:reports:codequality`).

GitLab reads a JSON array of Code Climate issues, of which it uses `description`, `check_name`,
`fingerprint`, `severity` (info, minor, major, critical, blocker) and `location.path` +
`location.lines.begin` (docs.gitlab.com/ci/testing/code_quality, "Code Quality report format";
each entry is validated against gitlab app/validators/json_schemas/codeclimate.json, vendored in
tests/data/gitlab/). One issue per finding, at its first evidence line; the path is relative to
$CI_PROJECT_DIR (else the working directory), so the merge request widget can link the log when
it is committed or kept as an artifact. The fingerprint comes from (signature, initiating rank,
first step, log path), never from the line number, so GitLab sees the same issue across runs.
"""

from __future__ import annotations

import hashlib
import json
from typing import IO

from nanscope.model import Report
from nanscope.report.base import report_record, workspace_path
from nanscope.report.sanitize import terminal

SEVERITY = {"info": "info", "low": "minor", "medium": "major", "high": "critical", "critical": "blocker"}


def _issue(f: dict) -> dict:
    ev = f["evidence"][0] if f["evidence"] else None
    source = ev["source"] if ev else ""
    path = workspace_path(source) or (terminal(source, 500) if source and not source.startswith("<") else "stdin")
    where = []
    if f["initiating_rank"] is not None:
        where.append(f"initiating rank {f['initiating_rank']}")
    if f["first_step"] is not None:
        where.append(f"first step {f['first_step']}")
    description = f"{f['title']}: {f['summary']}" + (f" ({', '.join(where)})" if where else "")
    fp = hashlib.sha256(f"{f['id']}\0{f['initiating_rank']}\0{f['first_step']}\0{path}".encode()).hexdigest()
    return {
        "type": "issue",
        "check_name": f"nanscope/{f['id']}",
        "description": terminal(" ".join(description.split()), 4000),
        "content": {"body": terminal(f"Fix: {f['fix']}\n\nVerify: {f['verify']}\n\nnanscope explain {f['id']}", 8000)},
        "categories": ["Bug Risk"],
        "fingerprint": fp,
        "severity": SEVERITY.get(f["severity"], "info"),
        "location": {"path": path, "lines": {"begin": max(1, int(ev["line"])) if ev and ev["line"] else 1}},
    }


def render(report: Report, out: IO[str], options: object = None) -> None:
    rec = report_record(report, getattr(options, "redact", True))
    issues = [_issue(f) for f in rec["findings"]]
    out.write(json.dumps(issues, indent=2, ensure_ascii=True, allow_nan=False) + "\n")
