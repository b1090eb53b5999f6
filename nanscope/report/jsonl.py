"""--format jsonl: one JSON message per line, typed like ripgrep's `--json`.

    {"type": "begin",   "v": 2, "data": {tool, schema_version, inputs: [{path, size}]}}
    {"type": "finding", "v": 2, "data": <one finding, as in --format json>}   (one per finding)
    {"type": "summary", "v": 2, "data": {verdict, inputs, ranks, diagnostics, summary}}
    {"type": "end",     "v": 2, "data": {verdict, findings}}

Strict JSON (no bare NaN/Infinity); every line parses on its own, so `| head -n1` or `jq -c`
work on a stream. The field names are those of the JSON report (report/base.py).

`begin` is written before any input is read (to stdout, the CLI writes it at once), so it names
the inputs and their sizes only; what reading them found (lines, formats, complete) is in
`summary`. v1 had the full inputs in `begin`, which kept `begin` back until the end of the input.

Live mode (`diagnose --follow`) writes begin at once and each finding when it is decided, each
line flushed; at the end the findings not told yet, summary and end (every finding once).
"""

from __future__ import annotations

import json
from typing import IO, Iterator, Optional, Sequence

from nanscope import __version__
from nanscope.model import Finding, Report
from nanscope.report.base import SCHEMA_VERSION, finding_record, report_record
from nanscope.report.sanitize import json_text

VERSION = 2


def begin(inputs: Sequence[tuple[str, Optional[int]]]) -> dict:
    """The first message, from what is known before reading: (name, size or None) per input."""
    return {"type": "begin", "v": VERSION,
            "data": {"tool": {"name": "nanscope", "version": __version__}, "schema_version": SCHEMA_VERSION,
                     "inputs": [{"path": p, "size": s} for p, s in inputs]}}


def line(msg: dict) -> str:
    """One message as one line of strict JSON."""
    text = json_text(json.dumps(msg, allow_nan=False, ensure_ascii=False, separators=(",", ":")))
    # Characters that str.splitlines() and some JSONL readers take for line breaks stay escaped.
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n"


def write(msg: dict, out: IO[str]) -> None:
    out.write(line(msg))


def messages(report: Report, redact: bool = True, begun: bool = False) -> Iterator[dict]:
    """The report's messages; begun: the begin message was written already (the CLI, at start)."""
    rec = report_record(report, redact)
    if not begun:
        yield begin([(i["path"], i["size"]) for i in rec["inputs"]])
    for f in rec["findings"]:
        yield {"type": "finding", "v": VERSION, "data": f}
    yield {"type": "summary", "v": VERSION,
           "data": {"verdict": rec["verdict"], "inputs": rec["inputs"], "ranks_seen": rec["ranks_seen"], "ranks": rec["ranks"],
                    "diagnostics": rec["diagnostics"], "summary": rec["summary"]}}
    yield {"type": "end", "v": VERSION, "data": {"verdict": rec["verdict"], "findings": len(rec["findings"])}}


def render(report: Report, out: IO[str], options: object = None, told: Optional[set] = None) -> None:
    """The messages; with `told` (live mode: begin and those findings were written already as
    they were decided), only the rest: the findings not told yet, summary and end."""
    begun = told is not None or getattr(options, "begun", False)
    for msg in messages(report, getattr(options, "redact", True), begun):
        if told is not None and msg["type"] == "finding" and msg["data"]["id"] in told:
            continue
        write(msg, out)


def finding(f: Finding, redact: bool = True) -> dict:
    return {"type": "finding", "v": VERSION, "data": finding_record(f, redact)}
