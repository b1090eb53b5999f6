"""--format jsonl: one JSON message per line, typed like ripgrep's `--json`.

    {"type": "begin",   "v": 1, "data": {tool, schema_version, inputs}}
    {"type": "finding", "v": 1, "data": <one finding, as in --format json>}   (one per finding)
    {"type": "summary", "v": 1, "data": {verdict, ranks, diagnostics, summary}}
    {"type": "end",     "v": 1, "data": {verdict, findings}}

Strict JSON (no bare NaN/Infinity); every line parses on its own, so `| head -n1` or `jq -c`
work on a stream. The field names are those of the JSON report (report/base.py).
"""

from __future__ import annotations

import json
from typing import IO, Iterator

from nanscope.model import Report
from nanscope.report.base import report_record
from nanscope.report.sanitize import json_text

VERSION = 1


def messages(report: Report, redact: bool = True) -> Iterator[dict]:
    rec = report_record(report, redact)
    yield {"type": "begin", "v": VERSION,
           "data": {"tool": rec["tool"], "schema_version": rec["schema_version"], "inputs": rec["inputs"]}}
    for f in rec["findings"]:
        yield {"type": "finding", "v": VERSION, "data": f}
    yield {"type": "summary", "v": VERSION,
           "data": {"verdict": rec["verdict"], "ranks_seen": rec["ranks_seen"], "ranks": rec["ranks"],
                    "diagnostics": rec["diagnostics"], "summary": rec["summary"]}}
    yield {"type": "end", "v": VERSION, "data": {"verdict": rec["verdict"], "findings": len(rec["findings"])}}


def render(report: Report, out: IO[str], options: object = None) -> None:
    for msg in messages(report, getattr(options, "redact", True)):
        line = json_text(json.dumps(msg, allow_nan=False, ensure_ascii=False, separators=(",", ":")))
        # Characters that str.splitlines() and some JSONL readers take for line breaks stay escaped.
        line = line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")
        out.write(line + "\n")
