"""HCCL, the collective library of Ascend NPUs (the NCCL of CANN), failing: communicator set-up and HCCL calls.

- HCCL's own log (CANN, `[ERROR] HCCL(pid,process):<time> [op_base.cc:N][tid][Init][CommRootInfoConfig]errNo[0x...]
  HcclCommInitRootInfo failed.`): the communicator of the ranks could not be initialised.
- Ascend Transformer Boost (ATB / atb_speed, used by MindIE), hccl_runner.cpp: `HcclCommInitRootInfo fail, error:<ret>,
  rank:<r>, rankSize:<n>` (ATB_LOG / ATB_SPEED_LOG_ERROR), the rank whose set-up failed; then `get hccl comm fail by
  rank:<r>` and `hcclComm is null`.
- torch_npu (HCCLUtils.hpp HCCL_CHECK_ERROR): `HCCL function error: <call>(...), error code is <N>`; ProcessGroupHCCL:
  `[ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:<line>`.
One failure is logged over several lines: the first of them is the event, with the rank a later line names.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time

_SPAN = 10


def _ev(m, rec, detail: str, fields: dict) -> ErrorEvent:
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="hccl", error="nccl_error", message=m.group(0).strip()[:400],
                      fields={"backend": "hccl", "detail": detail, **fields})


@rule("hccl-init-failed", ("HcclCommInitRootInfo",),
      r"HcclCommInitRootInfo(?:Config)? fail(?:ed)?(?:, error:(?P<err>\d+), rank:(?P<rank>\d+), rankSize:(?P<size>\d+))?")
def _init_failed(m, rec, state):
    held = state.get("pending")
    if m.group("rank") is not None:
        rank, size = int(m.group("rank")), int(m.group("size"))
        if held is not None and rec.loc.line - held.loc.line <= _SPAN and held.rank is None:
            state.pop("pending")  # HCCL's own line came first: this one names its rank
            held.rank = rank
            held.fields.update(rank_size=size, hccl_error=int(m.group("err")))
            return [held]
        if not first_time(state, ("hccl_init", rank), rec.loc.line):
            return []
        return _release(state) + [_ev(m, rec, f"HCCL could not set up the communicator on rank {rank} of {size} "
                                       f"(HcclCommInitRootInfo error {m.group('err')})",
                                       {"rank_size": size, "hccl_error": int(m.group("err"))})]
    if not first_time(state, ("hccl_init",), rec.loc.line):
        return []
    out = _release(state)
    ev = _ev(m, rec, "HCCL could not set up the communicator (HcclCommInitRootInfo failed)", {})
    state["pending"] = ev  # the runner's line with the rank may follow
    return out


@rule("hccl-function-error", ("HCCL function error: ",),
      r"HCCL function error: (?P<call>\w+)\(.*?\),? error code is (?P<code>\d+)")
def _function_error(m, rec, state):
    if not first_time(state, ("hccl_call", m.group("call")), rec.loc.line):
        return []
    return _release(state) + [_ev(m, rec, f"the HCCL call {m.group('call')} failed with error code {m.group('code')}",
                                  {"call": m.group("call"), "hccl_error": int(m.group("code"))})]


@rule("hccl-error-in", ("HCCL error in: ",), r"HCCL error in: (?P<where>\S+)")
def _error_in(m, rec, state):
    if not first_time(state, ("hccl_error_in",), rec.loc.line):
        return []
    return _release(state) + [_ev(m, rec, f"torch_npu's ProcessGroupHCCL reports an HCCL error ({m.group('where')})", {})]


def _release(state: dict) -> list:
    held = state.pop("pending", None)
    return [held] if held is not None else []


PARSER = Parser(
    name="hccl",
    framework="hccl",
    priority=50,  # before the generic exception parser (python, 80): torch_npu's RuntimeError lines carry HCCL's text
    description="HCCL (Ascend NPUs' collective library): communicator set-up failures and failed HCCL calls",
    rules=[_init_failed, _function_error, _error_in],
)
