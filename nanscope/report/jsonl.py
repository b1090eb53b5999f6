"""--format jsonl: one JSON message per line, typed like ripgrep's `--json`.

    {"type": "begin",   "v": 1, "data": {tool, schema_version, inputs}}
    {"type": "finding", "v": 1, "data": <one finding, as in --format json>}   (one per finding)
    {"type": "summary", "v": 1, "data": {verdict, ranks, diagnostics, summary}}
    {"type": "end",     "v": 1, "data": {verdict, findings}}

Strict JSON (no bare NaN/Infinity); every line parses on its own, so `| head -n1` or `jq -c`
work on a stream. The field names are those of the JSON report (report/base.py).

Live mode (`diagnose --follow`) writes begin at once and each finding when it is decided, each
line flushed; at the end the findings not told yet, summary and end (every finding once).
"""

from __future__ import annotations

import json
from typing import IO, Iterator, Optional

from nanscope import __version__
from nanscope.model import Finding, Report
from nanscope.report.base import SCHEMA_VERSION, finding_record, report_record
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


def line(msg: dict) -> str:
    """One message as one line of strict JSON."""
    text = json_text(json.dumps(msg, allow_nan=False, ensure_ascii=False, separators=(",", ":")))
    # Characters that str.splitlines() and some JSONL readers take for line breaks stay escaped.
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n"


def render(report: Report, out: IO[str], options: object = None, told: Optional[set] = None) -> None:
    """The messages; with `told` (live mode: begin and those findings were written already as
    they were decided), only the rest: the findings not told yet, summary and end."""
    for msg in messages(report, getattr(options, "redact", True)):
        if told is not None and (msg["type"] == "begin" or msg["type"] == "finding" and msg["data"]["id"] in told):
            continue
        out.write(line(msg))


def begin(inputs: list) -> dict:
    """The begin message of a live run (the inputs as far as known before reading)."""
    return {"type": "begin", "v": VERSION, "data": {"tool": {"name": "nanscope", "version": __version__},
                                                     "schema_version": SCHEMA_VERSION, "inputs": inputs}}


def finding(f: Finding, redact: bool = True) -> dict:
    return {"type": "finding", "v": VERSION, "data": finding_record(f, redact)}
