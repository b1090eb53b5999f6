"""--format sarif: SARIF 2.1.0 (OASIS), in the subset GitHub code scanning ingests.

One run; tool.driver "nanscope" with its semanticVersion and one rule per loaded signature (id,
shortDescription = title, fullDescription <= 1024 characters, help text + markdown). One result
per finding: ruleId, level (critical/high -> error, medium -> warning, low/info -> note), message,
and a physical location at the first evidence line (URI relative to $GITHUB_WORKSPACE, else the
working directory, when the log is inside it). partialFingerprints come from (rule, initiating rank, first step), never from
the line number, so an alert survives log lines moving. `security-severity` is never set: these
are not security findings (GitHub docs, "SARIF support for code scanning").

Caveat: code scanning only places alerts on committed files, and training logs rarely are.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import IO

from nanscope.model import Report
from nanscope.report.base import report_record, workspace_path
from nanscope.report.sanitize import json_text, terminal

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/nanscope/nanscope"
MAX_RESULTS = 1000
_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}
_PROBLEM = {"error": "error", "warning": "warning", "note": "recommendation"}


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def uri(path: str) -> str:
    """A URI for the log: relative (POSIX separators) when inside the workspace ($GITHUB_WORKSPACE,
    where code scanning resolves it, else the working directory)."""
    if path == "-" or path.startswith("<"):
        return "stdin"
    rel = workspace_path(path)
    if rel is not None:
        return rel
    return Path(os.path.abspath(path)).as_uri()


def fingerprint(rule: str, rank: object, step: object) -> str:
    return hashlib.sha256(f"{rule}\0{rank}\0{step}".encode()).hexdigest()


def _rule(sig) -> dict:
    level = _LEVEL.get(sig.severity, "note")
    full = _clip(sig.description or sig.root_cause, 1024)
    help_text = f"{_clip(sig.root_cause, 4000)}\n\nFix: {_clip(sig.fix, 4000)}\n\nVerify: {_clip(sig.verify, 4000)}"
    help_md = (f"{_clip(sig.root_cause, 4000)}\n\n**Fix:** {_clip(sig.fix, 4000)}\n\n"
               f"**Verify:** {_clip(sig.verify, 4000)}\n\nRun `nanscope explain {sig.id}` for the full entry.")
    return {
        "id": sig.id,
        "name": "".join(w.capitalize() for w in sig.id.split("-")),
        "shortDescription": {"text": _clip(sig.title, 1024)},
        "fullDescription": {"text": full},
        "help": {"text": help_text, "markdown": help_md},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": [sig.category], "problem.severity": _PROBLEM[level], "precision": "high",
                       "nanscope.severity": sig.severity, "nanscope.retryable": sig.retryable},
    }


def _result(f: dict, index: dict) -> dict:
    level = _LEVEL.get(f["severity"], "note")
    where = []
    if f["initiating_rank"] is not None:
        where.append(f"initiating rank {f['initiating_rank']}")
    if f["first_step"] is not None:
        where.append(f"first step {f['first_step']}")
    text = terminal(f["summary"], 2000) + (f" ({', '.join(where)})" if where else "")
    res: dict = {"ruleId": f["id"], "level": level, "message": {"text": text}}
    if f["id"] in index:
        res["ruleIndex"] = index[f["id"]]
    locs = [{"physicalLocation": {"artifactLocation": {"uri": uri(e["source"])},
                                  "region": {"startLine": max(1, int(e["line"])), "snippet": {"text": e["text"]}}}}
            for e in f["evidence"]]
    if locs:
        res["locations"] = locs[:1]
        if len(locs) > 1:
            res["relatedLocations"] = [dict(loc, id=i) for i, loc in enumerate(locs[1:1000], 1)]
    fp = fingerprint(f["id"], f["initiating_rank"], f["first_step"])
    res["partialFingerprints"] = {"nanscope/v1": fp, "primaryLocationLineHash": f"{fp[:16]}:1"}
    res["properties"] = {"severity": f["severity"], "initiating_rank": f["initiating_rank"],
                         "first_step": f["first_step"], "ranks": f["ranks"],
                         "collateral_ranks": f["collateral_ranks"], "retryable": f["retryable"],
                         "benign": f["benign"], "confidence": f["confidence"]}
    return res


def document(report: Report, redact: bool = True) -> dict:
    from nanscope.signatures.loader import load_or_raise

    rec = report_record(report, redact)
    sigs = getattr(report, "signatures", None)
    sigs = sorted(sigs if sigs is not None else load_or_raise(), key=lambda s: s.id)
    rules = [_rule(s) for s in sigs]
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = [_result(f, index) for f in rec["findings"][:MAX_RESULTS]]
    run: dict = {
        "tool": {"driver": {"name": "nanscope", "semanticVersion": rec["tool"]["version"],
                            "informationUri": INFORMATION_URI, "rules": rules}},
        "automationDetails": {"id": "nanscope/"},
        "results": results,
        "invocations": [{
            "executionSuccessful": True,
            "toolExecutionNotifications": [
                {"descriptor": {"id": d["code"]}, "level": "warning", "message": {"text": terminal(d["message"], 2000)},
                 **({"locations": [{"physicalLocation": {"artifactLocation": {"uri": uri(d["source"])},
                                                         **({"region": {"startLine": d["line"]}} if d["line"] else {})}}]}
                    if d["source"] else {})}
                for d in rec["diagnostics"]],
        }],
        "properties": {"verdict": rec["verdict"], "findings": len(rec["findings"]),
                       "truncated": max(0, len(rec["findings"]) - MAX_RESULTS)},
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render(report: Report, out: IO[str], options: object = None) -> None:
    doc = document(report, getattr(options, "redact", True))
    out.write(json_text(json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False)) + "\n")
