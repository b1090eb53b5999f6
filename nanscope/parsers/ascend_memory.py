"""Out-of-memory reports of MindSpore (GPU / Ascend / CPU) and of Huawei's CANN runtime on Ascend NPUs.

MindSpore (mindspore-ai/mindspore, mindspore/ccsrc; MS_LOG's prefix `[ERROR] <MODULE>(pid,tid,python):<time>
[<file>:<line>] <function>] ` before the message):
- backend/common/mem_reuse/mem_dynamic_allocator.cc, DynamicMemPoolBestFit::AddMemBlockAndMemBufByEagerFree (1.8+):
  `TotalUsedMemStatistics : N plus alloc size : S is more than total mem size : T.`, 2.3+ `TotalUsedMemStatistics :
  N plus TotalUsedByEventMemStatistics : E and plus alloc size : S is more than total mem size : T.` (bytes): the
  device's memory pool cannot grow by the allocation.
- runtime/graph_scheduler/actor/*.cc, memory_manager_actor.cc (1.3+): `Device(id:N) memory isn't enough and alloc
  failed, kernel name: K, alloc size: SB.` (`... in output actor, ...`), older `Device memory isn't enough and alloc
  failed, alloc size:S` / `..., actor name: A, alloc size: S`; on the CPU device `Memory isn't enough and alloc
  failed, kernel name: ...` (the host's memory).
- plugin/device/gpu/hal/device/cuda_driver.cc CudaDriver::AllocHostPinnedMem: `cudaHostAlloc failed, ret[N], <cuda
  error string>` (MindData's arena and the device queue use pinned host memory: `out of memory` there is the host's
  page-locked memory, not the GPU's).
CANN (Ascend's runtime; torch_npu, MindSpore, vllm-ascend and MindIE all print it), the error code EL0004:
  `Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by <GE|APP|HCCL|RUNTIME> module.` then
  `Possible Cause: Available memory is insufficient.` and the runtime's own lines, `Call rtMalloc fail, purpose: ...,
  size:N, device_id:D` (device memory) or `rtsMallocHost execution failed, reason=driver error:out of memory`
  (`aclrtMallocHostWithCfg`: host pinned memory); at device set-up (aclrtSetDevice) the line has no module,
  `Memory_Allocation_Failure(EL0004): Failed to allocate memory.` then `allocate device memory failed.`. The
  RUNTIME module's failure is the host's when a MallocHost line follows it; the other modules' are the device's.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time

_HOST_SPAN = 8


def _gib(n: int) -> str:
    g = n / 2 ** 30
    return f"{g:.2f} GiB" if g >= 1 else f"{n / 2 ** 20:.1f} MiB"


def _event(m, rec, kind: str, framework: str, detail: str, fields: dict) -> ErrorEvent:
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=framework, error=kind, message=m.group(0).strip()[:400],
                      fields={"framework": framework, "detail": detail, **fields})


def _release(state: dict) -> list:
    held = state.pop("pending", None)
    return [held] if held is not None else []


@rule("mindspore-pool-full", ("is more than total mem size",),
      r"TotalUsedMemStatistics : (?P<used>\d+)(?: plus TotalUsedByEventMemStatistics : (?P<event>\d+) and)? plus "
      r"alloc size : (?P<size>\d+) is more than total mem size : (?P<total>\d+)")
def _pool_full(m, rec, state):
    out = _release(state)
    if not first_time(state, ("mindspore_pool",), rec.loc.line):
        return out
    used, size, total = int(m.group("used")), int(m.group("size")), int(m.group("total"))
    detail = (f"MindSpore's device memory pool could not add {_gib(size)} with {_gib(used)} of its {_gib(total)} in use")
    return out + [_event(m, rec, "cuda_oom", "mindspore", detail, {"tried_gib": round(size / 2 ** 30, 6),
                                                                 "total_gib": round(total / 2 ** 30, 6)})]


@rule("mindspore-alloc-failed", ("memory isn't enough and alloc failed", "Memory isn't enough and alloc failed"),
      r"(?:Device(?:\(id:(?P<dev>\d+)\))? memory|(?P<cpu>Memory)) isn't enough and alloc failed"
      r"(?:[^,]*, (?:kernel|actor) name: (?P<name>[^,]{1,200}))?, alloc size: ?(?P<size>\d+)")
def _alloc_failed(m, rec, state):
    out = _release(state)
    host = m.group("cpu") is not None
    if not first_time(state, ("mindspore_alloc", host), rec.loc.line):
        return out
    size = int(m.group("size"))
    where = "host memory (the CPU device)" if host else (f"device {m.group('dev')}" if m.group("dev") else "the device")
    detail = f"MindSpore could not allocate {_gib(size)} on {where}" + (f" for {m.group('name')}" if m.group("name") else "")
    return out + [_event(m, rec, "host_oom" if host else "cuda_oom", "mindspore", detail,
                         {"tried_gib": round(size / 2 ** 30, 6)})]


@rule("mindspore-pinned-host", ("cudaHostAlloc failed, ret[",), r"cudaHostAlloc failed, ret\[(?P<ret>\d+)\], out of memory")
def _pinned_host(m, rec, state):
    out = _release(state)
    if not first_time(state, ("pinned_host",), rec.loc.line):
        return out
    detail = "cudaHostAlloc could not allocate page-locked (pinned) host memory: out of memory"
    return out + [_event(m, rec, "host_oom", "mindspore", detail, {"pinned": True})]


@rule("cann-el0004", ("Memory_Allocation_Failure(EL0004)",),
      r"Memory_Allocation_Failure\(EL0004\): Failed to allocate memory(?: requested by (?P<module>\w+) module)?")
def _el0004(m, rec, state):
    out = _release(state)
    module = m.group("module")
    if not first_time(state, ("el0004", module), rec.loc.line):
        return out
    ev = _event(m, rec, "cuda_oom", "ascend", "the Ascend runtime (CANN) could not allocate NPU memory"
                + (f" for its {module} module" if module else ""),
                {"device": "npu", "module": module})
    if module == "RUNTIME":
        state["pending"] = ev  # device or host memory: a MallocHost line after it says the host's
        return out
    return out + [ev]


@rule("cann-malloc-host", ("MallocHost",),
      r"(?:rtsMallocHost execution failed, reason=driver error:out of memory|aclrtMallocHost\w*, error code is \d+)")
def _malloc_host(m, rec, state):
    held = state.pop("pending", None)
    if held is not None and rec.loc.line - held.loc.line <= _HOST_SPAN:
        held.error = "host_oom"
        held.fields["detail"] = "the Ascend runtime (CANN) could not allocate page-locked (pinned) host memory"
        held.fields["pinned"] = True
        held.message = f"{held.message} (rtsMallocHost: pinned host memory)"
        return [held]
    out = [held] if held is not None else []
    if not first_time(state, ("cann_host",), rec.loc.line):
        return out
    return out + [_event(m, rec, "host_oom", "ascend", "the Ascend runtime (CANN) could not allocate page-locked (pinned) "
                         "host memory", {"device": "npu", "pinned": True})]


PARSER = Parser(
    name="ascend_memory",
    framework="mindspore",
    priority=55,  # before the generic exception parser (python, 80)
    description="MindSpore's memory pool / allocation failures and CANN's EL0004 memory allocation failure (Ascend NPUs)",
    rules=[_pool_full, _alloc_failed, _pinned_host, _el0004, _malloc_host],
)
