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

# A logger's own prefix before the exception text: vLLM's `ERROR 01-11 03:46:48 [core.py:936] `
# (older: `core.py:936] ` without brackets) and Python logging's default `ERROR:name:`.
LOGGER_PREFIX = (r"(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)[ ]+\d\d-\d\d[ ]\d\d:\d\d:\d\d(?:\.\d+)?[ ]+"
                 r"\[?[\w./-]+:\d+\]?[ ]+|(?:ERROR|WARNING|CRITICAL):[\w.]+:)?")

EXC_LINE = re.compile(
    LOGGER_PREFIX + r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure|Exited))"
    r"(?::[ \t]*(?P<msg>.*))?$"
)

# Exceptions whose message says what kind of failure it is (message regex -> error kind).
_CLASSIFY = [
    (re.compile(r"DefaultCPUAllocator: can't allocate memory|Cannot allocate memory|MemoryError"), "host_oom"),
    # gloo's and NCCL's own wordings are the nccl parser's; these are Python's socket errors.
    (re.compile(r"ConnectionResetError|Connection reset by peer|Broken pipe|ECONNRESET"), "peer_connection_lost"),
    (re.compile(r"Function '(?P<op>\w+)' returned nan values in its (?P<i>\d+)\w* output"), "nan_op"),
]


# An exception raised inside torch's checkpoint loader is a corrupt (empty, truncated) file, whatever
# its type: torch.load of an empty file ends in a bare `EOFError` from pickle.
_CHECKPOINT_FRAMES = re.compile(r"torch/serialization\.py|torch/_weights_only_unpickler\.py|safetensors/torch\.py")


def classify(exc_type: str, message: str, frame: str = "") -> str:
    for rx, kind in _CLASSIFY:
        if rx.search(message) or rx.search(exc_type):
            return kind
    if frame and _CHECKPOINT_FRAMES.search(frame) and exc_type.rsplit(".", 1)[-1] in (
            "EOFError", "UnpicklingError", "RuntimeError", "OSError", "ValueError"):
        return "checkpoint_corrupt"
    if exc_type.endswith("KeyboardInterrupt"):
        return "interrupted"
    if exc_type.endswith("ChildFailedError"):
        return "launcher_failed"  # torchrun's summary exception: the block after it says more
    return "exception"


@rule("traceback", ("Traceback",), LOGGER_PREFIX + r"Traceback \(most recent call last\):", match_start=True)
def _traceback(m, rec, state):
    state["traceback_line"] = rec.loc.line
    return []


# A traceback whose exception line another parser claimed (a CUDA OOM, an NCCL error) must not be
# attached to a later, unrelated exception: beyond this many lines it is stale.
_TRACEBACK_SPAN = 400


@rule("frame", ('File "',), r'^\s*File "(?P<path>[^"]+)", line \d+', match_start=True)
def _frame(m, rec, state):
    # Only inside a traceback: remember whether the exception passed through a checkpoint loader.
    if "traceback_line" not in state:
        return None
    if _CHECKPOINT_FRAMES.search(m.group("path")):
        state["frame"] = m.group("path")
    return []


@rule("exception", ("Error", "Exception", "Interrupt", "Exit", "Failure"), EXC_LINE.pattern, match_start=True)
def _exception(m, rec, state):
    exc_type = m.group("type")
    msg = (m.group("msg") or "").strip()
    tb = state.pop("traceback_line", None)
    frame = state.pop("frame", "")
    if tb is not None and rec.loc.line - tb > _TRACEBACK_SPAN:
        tb, frame = None, ""
    if tb is None and not msg:
        return None  # a bare word like "ValueError" on its own line is not an exception report
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="python", error=classify(exc_type, msg, frame), message=msg,
        exc_type=exc_type, fields={"traceback_line": tb, "raised_in": frame or None} if tb else None,
    )


PARSER = Parser(
    name="python",
    framework="python",
    priority=80,
    description="Python tracebacks and exception lines",
    rules=[_traceback, _frame, _exception],
)
