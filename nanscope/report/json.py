"""--format json: the versioned envelope, strict JSON (no bare NaN), validated by the shipped schema."""

from __future__ import annotations

import json
from typing import IO, Optional

from nanscope.model import Report
from nanscope.report.base import report_record
from nanscope.report.sanitize import json_text


def dumps(report: Report, redact: bool = True) -> str:
    return json_text(json.dumps(report_record(report, redact), indent=2, allow_nan=False, ensure_ascii=False)) + "\n"


def render(report: Report, out: IO[str], options: Optional[object] = None) -> None:
    out.write(dumps(report, getattr(options, "redact", True)))
