"""What every reporter shares: the report as plain records (one place that decides field names)."""

from __future__ import annotations

import math
import os
from typing import Any, Mapping, Optional

from nanscope.model import Finding, Report
from nanscope.redact import redact
from nanscope.report.sanitize import terminal

SCHEMA_VERSION = "1.0"
SCHEMA_ID = "https://github.com/nanscope/nanscope/blob/main/nanscope/schema/report.v1.schema.json"


def number(v: Optional[float]) -> Any:
    """Strict JSON has no NaN/Infinity: non-finite floats become the strings jq and DuckDB keep."""
    if v is None or isinstance(v, bool) or not isinstance(v, float):
        return v
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def workspace_root(env: Optional[Mapping[str, str]] = None) -> str:
    """The folder CI shows paths relative to: $GITHUB_WORKSPACE (GitHub Actions), $CI_PROJECT_DIR
    (GitLab CI), else the working directory."""
    env = os.environ if env is None else env
    return env.get("GITHUB_WORKSPACE") or env.get("CI_PROJECT_DIR") or os.getcwd()


def workspace_path(path: str, root: Optional[str] = None) -> Optional[str]:
    """The path relative to the CI workspace (POSIX separators), or None if it is not inside it."""
    if not path or path == "-" or path.startswith("<"):
        return None
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root or workspace_root()))
    except ValueError:  # another drive on Windows
        return None
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def evidence_text(text: str, do_redact: bool) -> str:
    return terminal(redact(text) if do_redact else text, max_len=2000)


def finding_record(f: Finding, do_redact: bool = True) -> dict:
    return {
        "id": f.id,
        "revision": f.revision,
        "severity": f.severity,
        "category": f.category,
        "title": f.title,
        "summary": redact(f.summary) if do_redact else f.summary,
        "initiating_rank": f.initiating_rank,
        "confidence": f.confidence,
        "decided_by": f.decided_by,
        "ranks": list(f.ranks),
        "collateral_ranks": list(f.collateral_ranks),
        "first_step": f.first_step,
        "occurrences": f.occurrences,
        "retryable": f.retryable,
        "benign": f.benign,
        "evidence": [
            {"source": e.source, "line": e.line, "rank": e.rank, "text": evidence_text(e.text, do_redact)}
            for e in f.evidence
        ],
        "root_cause": f.root_cause,
        "benign_when": f.benign_when,
        "fix": f.fix,
        "verify": f.verify,
        "references": list(f.references),
        "related": list(f.related),
        "also_matched": list(f.also_matched),
        "collateral": [finding_record(c, do_redact) for c in f.collateral],
        **({"baseline_status": f.baseline_status} if f.baseline_status else {}),
    }


def report_record(r: Report, do_redact: bool = True) -> dict:
    sev: dict[str, int] = {}
    for f in r.findings:
        sev[f.severity] = sev.get(f.severity, 0) + 1
    return {
        "$schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "nanscope", "version": r.tool_version},
        "verdict": r.verdict,
        "inputs": [
            {
                "path": i.path, "size": i.size, "lines": i.lines, "event_lines": i.event_lines,
                "formats": dict(i.formats),
                "recognised_share": round(min(1.0, sum(i.formats.values()) / i.lines), 4) if i.lines else 0.0,
                "complete": i.complete, "error": i.error,
                "replaced_bytes": i.replaced_bytes, "long_lines": i.long_lines, "nul_bytes": i.nul_bytes,
                **({"topology": i.topology} if i.topology else {}),
            }
            for i in r.inputs
        ],
        "ranks_seen": sorted({s.rank for s in r.ranks if s.rank is not None}),
        "ranks": [
            {
                "rank": s.rank, "node": s.node, "label": s.label, "steps": s.steps,
                "first_step": s.first_step, "last_step": s.last_step, "nonfinite_steps": s.nonfinite_steps,
                "skipped_steps": s.skipped_steps, "loss_scale_min": number(s.loss_scale_min),
                "loss_scale_max": number(s.loss_scale_max), "last_loss": number(s.last_loss),
            }
            for s in r.ranks
        ],
        "findings": [finding_record(f, do_redact) for f in r.findings],
        "diagnostics": [
            {"code": d.code, "message": d.message, "source": d.source, "line": d.line} for d in r.diagnostics
        ],
        **({"baseline": r.baseline} if r.baseline is not None else {}),
        "summary": {
            "findings": len(r.findings),
            "by_severity": sev,
            "signatures_loaded": r.signatures_loaded,
            "lines_read": sum(i.lines for i in r.inputs),
        },
    }
