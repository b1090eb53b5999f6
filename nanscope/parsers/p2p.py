"""GPUs that cannot access each other's memory directly (CUDA peer-to-peer), wherever it is reported.

cudaErrorPeerAccessUnsupported (217), whose runtime string is "peer access is not supported between
these two devices", reaches a log as:
  RuntimeError: CUDA error: peer access is not supported between these two devices      (torch's C10_CUDA_CHECK)
  CUDA error 217 at ggml-cuda.cu:6292: peer access is not supported between these two devices     (ggml)
  transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not supported ...   (NCCL)
  NCCL WARN Cuda failure 'peer access is not supported between these two devices'          (NCCL CUDACHECK)
Consumer GPUs (GeForce 30xx / 40xx) and hosts with PCIe ACS or an IOMMU in the path have no working
P2P; NCCL_P2P_DISABLE=1 makes NCCL use shared memory instead. A debugger's `cudaDeviceEnablePeerAccess
returned (0x2c0)` (704, already enabled) while NCCL probes is harmless and not matched.
Before the cuda (30) and nccl (35) parsers, whose generic CUDA-error rules would claim these lines.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule


@rule("peer-access-unsupported", ("peer access is not supported between these two devices",),
      r"(?P<ipc>failed to open CUDA IPC handle : )?(?:217 )?peer access is not supported between these two devices")
def _peer_access(m, rec, state):
    if not first_time(state, ("p2p",), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="cuda", error="gpu_p2p_unsupported", message=rec.text.strip(),
                      fields={"code": 217, "where": "nccl-ipc" if m.group("ipc") else None})


PARSER = Parser(
    name="p2p",
    framework="cuda",
    priority=29,
    description="CUDA peer-to-peer access between GPUs unsupported (error 217), from torch, ggml or NCCL",
    rules=[_peer_access],
)
