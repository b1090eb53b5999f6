"""--format json: the versioned envelope, strict JSON (no bare NaN), validated by the shipped schema."""

from __future__ import annotations

import json

from nanscope.model import Report
from nanscope.report.base import report_record


def render(report: Report, redact: bool = True) -> str:
    return json.dumps(report_record(report, redact), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
