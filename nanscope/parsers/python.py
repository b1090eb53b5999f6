"""Python exceptions: `Traceback (most recent call last):` ... `SomeError: message`.

Tracebacks are folded per stream: the traceback's first line is remembered, and the exception
line that ends it becomes one ErrorEvent pointing back at it. Frames in between are never read
(they are not candidates for the prefilter), which keeps the hot path cheap. Other parsers with
a lower priority number classify specific exceptions first (CUDA OOM, NCCL, ...).
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule

EXC_LINE = re.compile(
    r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure|Exited))"
    r"(?::[ \t]*(?P<msg>.*))?$"
)

# Exceptions whose message says what kind of failure it is (message regex -> error kind).
_CLASSIFY = [
    (re.compile(r"DefaultCPUAllocator: can't allocate memory|Cannot allocate memory|MemoryError"), "host_oom"),
    (re.compile(r"Connection closed by peer|Connection reset by peer|Broken pipe|ECONNRESET"), "peer_connection_lost"),
    (re.compile(r"Timed out waiting \d+ms for (?:recv|send) operation to complete|[Ww]atchdog caught collective operation timeout"), "collective_timeout"),
    (re.compile(r"Function '(?P<op>\w+)' returned nan values in its (?P<i>\d+)\w* output"), "nan_op"),
]


def classify(exc_type: str, message: str) -> str:
    for rx, kind in _CLASSIFY:
        if rx.search(message) or rx.search(exc_type):
            return kind
    if exc_type.endswith("KeyboardInterrupt"):
        return "interrupted"
    if exc_type.endswith("ChildFailedError"):
        return "launcher_failed"  # torchrun's summary exception: the block after it says more
    return "exception"


@rule("traceback", ("Traceback",), r"^Traceback \(most recent call last\):", match_start=True)
def _traceback(m, rec, state):
    state["traceback_line"] = rec.loc.line
    return []


@rule("exception", ("Error", "Exception", "Interrupt", "Exit", "Failure"), EXC_LINE.pattern, match_start=True)
def _exception(m, rec, state):
    exc_type = m.group("type")
    msg = (m.group("msg") or "").strip()
    tb = state.pop("traceback_line", None)
    if tb is None and not msg:
        return None  # a bare word like "ValueError" on its own line is not an exception report
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="python", error=classify(exc_type, msg), message=msg,
        exc_type=exc_type, fields={"traceback_line": tb} if tb else None,
    )


PARSER = Parser(
    name="python",
    framework="python",
    priority=80,
    description="Python tracebacks and exception lines",
    rules=[_traceback, _exception],
)
