"""--baseline: what is new or worse than in a known-good run.

The baseline is a JSON report written by `nanscope diagnose --format json`, or a log (diagnosed on
the fly). Findings are compared by fingerprint (signature id + the first evidence line with its
numbers masked), so the same failure at another step or time is "known", and per-rank ledgers are
compared for more skipped / non-finite steps and a lower loss-scale floor.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Optional

from nanscope.errors import InputError
from nanscope.model import Finding, Report
from nanscope.report.base import evidence_text, report_record

_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_PREFIX = re.compile(r"^(?:\s*\[[^\]]*\]:?)+\s*")


def fingerprint(finding_id: str, evidence_text: Optional[str]) -> str:
    text = _PREFIX.sub("", evidence_text or "")
    return f"{finding_id}|{_NUMBERS.sub('#', text)[:200]}"


def _record_fingerprints(findings: list[dict]) -> set[str]:
    out = set()
    for f in findings:
        ev = f.get("evidence") or [{}]
        out.add(fingerprint(f["id"], ev[0].get("text")))
        out |= _record_fingerprints(f.get("collateral", []))
    return out


def load(path: str, diagnose_log: Callable[[str], Report]) -> dict:
    """A baseline as a report record: a JSON report as it is, or a log diagnosed now (by
    `diagnose_log`, the caller's diagnosis with its options: this floor does not run one)."""
    if path.endswith(".json"):
        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read().decode("utf-8"))
        except OSError as e:
            raise InputError(e.strerror or str(e), path) from None
        except UnicodeDecodeError as e:
            raise InputError(f"not a nanscope JSON report: invalid UTF-8 at byte {e.start}", path) from None
        except json.JSONDecodeError as e:
            raise InputError(f"not a nanscope JSON report: {e}", path) from None
        if not isinstance(data, dict) or "findings" not in data or "schema_version" not in data:
            raise InputError("not a nanscope JSON report (no schema_version / findings)", path)
        return data
    return report_record(diagnose_log(path), False)


def _num(v: Any) -> Optional[float]:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


def compare(report: Report, base: dict, source: str) -> dict:
    """Mark each finding new/known and list what got worse; returns the report's `baseline` section."""
    known = _record_fingerprints(base.get("findings", []))
    base_ids = {f["id"] for f in base.get("findings", [])}
    new_ids: list[str] = []

    def mark(f: Finding) -> None:
        fp = fingerprint(f.id, evidence_text(f.evidence[0].text, True) if f.evidence else None)
        f.baseline_status = "known" if fp in known else "new"
        if f.baseline_status == "new" and f.id not in new_ids:
            new_ids.append(f.id)
        for c in f.collateral:
            mark(c)

    for f in report.findings:
        mark(f)
    now_ids = {f.id for f in report.findings} | {c.id for f in report.findings for c in f.collateral}
    worse = []
    base_ranks = {(r.get("rank"), r.get("label") if r.get("rank") is None else None): r for r in base.get("ranks", [])}
    base_all = list(base.get("ranks", []))
    for s in report.ranks:
        b = base_ranks.get((s.rank, s.label if s.rank is None else None))
        if b is None and s.rank is None and len(base_all) == 1 and len(report.ranks) == 1:
            b = base_all[0]  # two single-process logs: compare them with each other
        if b is None:
            continue
        for key, now, then, worse_if in (
            ("skipped_steps", s.skipped_steps, b.get("skipped_steps"), "more"),
            ("nonfinite_steps", s.nonfinite_steps, b.get("nonfinite_steps"), "more"),
            ("loss_scale_min", s.loss_scale_min, b.get("loss_scale_min"), "less"),
        ):
            n, t = _num(now), _num(then)
            if n is None or t is None:
                continue
            if (worse_if == "more" and n > t) or (worse_if == "less" and n < t):
                worse.append({"rank": s.rank, "label": s.label, "field": key, "baseline": then, "now": now})
    return {
        "source": source,
        "new_findings": new_ids,
        "resolved_findings": sorted(base_ids - now_ids),
        "worse": worse,
    }
