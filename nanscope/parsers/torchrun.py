"""torchrun / torch.distributed.elastic: the agent's failure lines and the ChildFailedError block.

torch/distributed/elastic/multiprocessing/api.py (old and new logging):
  ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 123) of binary: /usr/bin/python
  E1105 12:00:00.123000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 4 (pid: 99) of binary: ...
  W1105 12:00:00.123000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 99 closing signal SIGTERM
torch/distributed/elastic/multiprocessing/errors/__init__.py (ChildFailedError.format_msg):
  Root Cause (first observed failure):
  [0]:
    time      : 2024-11-29_19:37:42
    host      : node-0
    rank      : 1 (local_rank: 1)
    exitcode  : 1 (pid: 123)
    error_file: <N/A>
    traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html

The block's rank is the rank the failure is about (the agent prints it). Without an error file
(`error_file: <N/A>`) the "Root Cause" is only the first exit the agent noticed, not evidence.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent, LifecycleEvent
from nanscope.parsers.base import Parser, rule, signal_of
from nanscope.parsers.numbers import to_int


@rule(
    "agent-failed",
    ("exitcode:",),
    r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<lr>\d+) \(pid: (?P<pid>\d+)\)",
)
def _agent_failed(m, rec, state):
    code = int(m.group("code"))
    # The agent names a local rank. An agent line with no prefix and no per-node file is one
    # node's agent talking about its own workers: there the local rank is the global rank.
    o = rec.origin
    single_node = o.node is None and o.rank is None and o.local_rank is None
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error="worker_failed", message=rec.text,
        exitcode=code, signal=signal_of(code), rank=int(m.group("lr")) if single_node else None,
        fields={"local_rank": int(m.group("lr")), "pid": int(m.group("pid"))},
    )


@rule("closing-signal", ("closing signal",), r"Sending process (?P<pid>\d+) closing signal (?P<sig>SIG\w+)")
def _closing(m, rec, state):
    return LifecycleEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", action="teardown",
        fields={"pid": int(m.group("pid")), "signal": m.group("sig")},
    )


@rule("block-section", ("Root Cause", "Failures:"), r"^\s*(?P<sec>Root Cause \(first observed failure\)|Failures):", match_start=True)
def _section(m, rec, state):
    state["cf_section"] = "root" if m.group("sec").startswith("Root") else "other"
    state.pop("cf_entry", None)
    return []


@rule("block-rank", ("local_rank:",), r"^\s*rank\s*:\s*(?P<rank>-?\d+) \(local_rank: (?P<lr>-?\d+)\)", match_start=True)
def _block_rank(m, rec, state):
    if "cf_section" not in state:
        return None
    state["cf_entry"] = {"rank": int(m.group("rank")), "local_rank": int(m.group("lr")), "line": rec.loc.line}
    return []


@rule("block-exitcode", ("exitcode",), r"^\s*exitcode\s*:\s*(?P<code>-?\d+)(?: \((?P<sig>SIG\w+)\))?(?: \(pid: (?P<pid>\d+)\))?", match_start=True)
def _block_exitcode(m, rec, state):
    entry = state.get("cf_entry")
    if entry is None:
        return None
    entry["exitcode"] = to_int(m.group("code"))
    entry["pid"] = to_int(m.group("pid"))
    return []


@rule("block-error-file", ("error_file",), r"^\s*error_file\s*:\s*(?P<f>.*)$", match_start=True)
def _block_error_file(m, rec, state):
    entry = state.get("cf_entry")
    if entry is None:
        return None
    f = m.group("f").strip()
    entry["error_file"] = None if f in ("<N/A>", "") else f
    return []


@rule("block-traceback", ("traceback",), r"^\s*traceback\s*:\s*(?P<tb>.*)$", match_start=True)
def _block_traceback(m, rec, state):
    entry = state.pop("cf_entry", None)
    if entry is None:
        return None
    code = entry.get("exitcode")
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error="child_failed",
        message=m.group("tb").strip(), exitcode=code, signal=signal_of(code), rank=entry["rank"],
        fields={
            "root_cause": state.get("cf_section") == "root",
            "error_file": entry.get("error_file"),
            "local_rank": entry["local_rank"],
            "block_line": entry["line"],
        },
    )


PARSER = Parser(
    name="torchrun",
    framework="torchrun",
    priority=10,
    description="torchrun / torch.distributed.elastic agent lines and ChildFailedError blocks",
    rules=[_agent_failed, _closing, _section, _block_rank, _block_exitcode, _block_error_file, _block_traceback],
)
