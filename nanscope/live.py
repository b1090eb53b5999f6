"""`diagnose --follow` for the command line: where live messages go, Ctrl-C, and what was told.

Live messages go to stdout when the report does (a text line, or with --format jsonl one JSON
message, per finding, each flushed), else to stderr as text lines; the report follows at the end.
Ctrl-C ends the read (the report of what was read is still printed); a second one interrupts.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, Optional

from nanscope import api
from nanscope.model import Report


def follow_cli(path: str, options: api.Options, fmt: str, pid: Optional[int], live_to_stdout: bool, quiet: bool,
               do_redact: bool) -> tuple[Report, set]:
    from nanscope.output import OutputClosed
    from nanscope.report import jsonl
    from nanscope.report.text import live_line

    stop = threading.Event()
    told: set = set()
    as_json = fmt == "jsonl" and live_to_stdout
    out = sys.stdout if live_to_stdout else sys.stderr

    def write(text: str) -> None:
        try:
            out.write(text)
            out.flush()
        except BrokenPipeError:
            raise OutputClosed() from None

    def on_finding(f: Any) -> None:
        told.add(f.id)
        if not quiet:
            write(jsonl.line(jsonl.finding(f, do_redact)) if as_json else live_line(f, do_redact))

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    def on_start() -> None:  # ready: the begin message says so
        if as_json and not quiet:
            write(jsonl.line(jsonl.begin([("<stdin>" if path == "-" else path, None)])))

    previous = signal.signal(signal.SIGINT, on_sigint) if threading.current_thread() is threading.main_thread() else None
    try:
        report = api.follow(path, options, on_finding=on_finding, pid=pid, stop=stop, on_start=on_start)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return report, (told if as_json else set())
