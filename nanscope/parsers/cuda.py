"""CUDA failures as PyTorch, cuBLAS, device asserts and the NVIDIA driver print them.

pytorch c10/cuda/CUDACachingAllocator.cpp, the OOM message in every release (§3.1 of the research notes):
  <= 2.0  CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; 781.59 MiB already
          allocated; 3.03 GiB free; [X allowed; ]1.24 GiB reserved in total by PyTorch)   (<= 1.4: "... cached)")
  2.1     ... Tried to allocate 32.00 MiB. GPU 0 has a total capacty of 4.00 GiB of which 41.56 MiB is free.
          [Including non-PyTorch memory, this process has 3.44 GiB memory in use. ]Of the allocated memory 2.58 GiB
          is allocated by PyTorch, and 1.90 MiB is reserved by PyTorch but unallocated. ...       ("capacty" sic)
  2.2+    "capacity"; the hint names PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; 2.6+ may add
          "with X allocated in private pools (e.g., CUDA Graphs), "; newest main may drop the "CUDA ".
  Exception type: RuntimeError (<= 1.12), torch.cuda.OutOfMemoryError (1.13-2.4), torch.OutOfMemoryError (2.5+).
  Sizes come from format_size: "N bytes", "X KiB", "X MiB", "X GiB"; fields here are all GiB.
c10/cuda/CUDAException: `CUDA error: <cudaGetErrorString>` (+ boilerplate lines that are not events);
  1.x THC: `cuda runtime error (39) : uncorrectable ECC error encountered at ...`.
  `CUDA error: uncorrectable NVLink error detected during the execution` (cudaErrorNvlinkUncorrectable) is its own
  kind (nvlink_error); in `terminate called after throwing an instance of 'c10::Error'` / `what():  CUDA error: X`
  the head's type becomes the exception type of the what() line (the process aborted on it).
aten/src/ATen/cuda/CublasHandlePool.cpp: `CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)``.
Device-side assert, printed by the kernel once per failing thread (kept once per kernel site per stream):
  ../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [109,0,0], thread: [124,0,0] Assertion `...` failed.
  (the CUDA runtime's device-side assert: "%s:%d: %s: block: [%d,%d,%d], thread: [%d,%d,%d] Assertion `%s` failed.",
  the function being __PRETTY_FUNCTION__ in THC-era builds, `void indexSelectLargeIndex(TensorInfo<T, IndexType>, ...)
  [with T = float, ...]`; a terminal that wrapped that long line leaves `block: ... Assertion ... failed.` without the
  file, which still is the assert.)
cuDNN (aten/src/ATen/cuda/Exceptions.h AT_CUDNN_CHECK), cuBLAS (TORCH_CUDABLAS_CHECK, THC's THCublasCheck) and the
  MPS backend's missing kernels (aten/src/ATen/mps/MPSFallback.mm) each have their own rule below.
NVIDIA driver (dmesg / journalctl): `NVRM: Xid (PCI:0000:3b:00): 79, pid=1582259, name=nvc:[driver], GPU has
  fallen off the bus.` (older drivers: no pid/name; oldest: `NVRM: Xid (0000:03:00): 14, Channel 00000001`).
NVIDIA/open-gpu-kernel-modules src/nvidia/arch/nvalloc/unix/src/osapi.c (rm_is_supported_device), no Xid:
  nv_printf(NV_DBG_ERRORS, "NVRM: The NVIDIA GPU %04x:%02x:%02x.%x\n" "NVRM: (PCI ID: %04x:%04x) installed in
  this system has\n" "NVRM: fallen off the bus and is not responding to commands.\n", ...): three dmesg lines
  (the continuations indented); older drivers print it as one line. The GPU's address comes from the first.

The c10d watchdog surfaces a CUDA error it found on its own rank's stream (torch/csrc/distributed/c10d/
ProcessGroupNCCL.cpp, ncclCommWatchdog / Watchdog::run):
  <= 2.2   c10::str("[Rank ", rank_, "] NCCL watchdog thread terminated with exception: ", e.what())
  2.3+     c10::str(logPrefix(), "Process group watchdog thread terminated with exception: ", e.what())
           with logPrefix `[PG 1 Rank 1] ` (2.3/2.4) or `[PG ID 0 PG GUID 0(default_pg) Rank 2] ` (2.5+)
  The rank it names is that process group's rank (fields['pg_rank']); it is the event's rank when no
  launcher prefix gives one and the group is the default one (fields['watchdog'] marks the line). Such a line is the rank's own fault, not a wait on a peer.

An OOM inside a traceback that passed through a serving engine's start-up (vLLM's worker profiling,
KV-cache sizing, model loading or CUDA-graph capture: gpu_worker.py / gpu_model_runner.py
determine_available_memory, profile_run, capture_model, compile_or_warm_up_model, load_model ...; V0
worker.py determine_num_available_blocks / initialize_cache; torch/cuda/graphs.py capture_begin /
capture_end, which only run while a graph is captured) says so in fields['phase'] = 'startup': the
memory budget set at start-up is wrong, not a batch seen while serving.

A CUDA error is usually printed several times on one rank (the exception, `what():`, the watchdog that
surfaced it): a repeat of the same error on the same stream within a few hundred lines gives no second event.
"""

from __future__ import annotations

import re
from typing import Optional

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.nccl import _pg as process_group
from nanscope.parsers.python import EXC_LINE

FW = "cuda"

_SIZE = r"(?P<{0}>\d+(?:\.\d+)?) ?(?P<{0}_u>bytes|[KMGT]iB|[KMGT]B|B)"
_UNIT_GIB = {"bytes": 1 / 2**30, "B": 1 / 2**30, "KiB": 1 / 2**20, "MiB": 1 / 2**10, "GiB": 1.0, "TiB": 2**10,
             "KB": 1e3 / 2**30, "MB": 1e6 / 2**30, "GB": 1e9 / 2**30, "TB": 1e12 / 2**30}


def _size(name: str) -> str:
    return _SIZE.format(name)


def _gib(m: "re.Match[str]", name: str) -> Optional[float]:
    if m is None or m.group(name) is None:
        return None
    return round(float(m.group(name)) * _UNIT_GIB[m.group(name + "_u")], 6)


_OLD_DETAIL = LazyPattern(
    r"\(GPU (?P<gpu>\d+); " + _size("total") + r" total capacity; " + _size("alloc") + r" already allocated; "
    + _size("free") + r" free; (?:" + _size("allowed") + r" allowed; )?(?:" + _size("reserved")
    + r" reserved in total by PyTorch|" + _size("cached") + r" cached)\)"
)
_NEW_DETAIL = LazyPattern(
    r"GPU (?P<gpu>\d+) has a total capac(?:i)?ty of " + _size("total") + r" of which " + _size("free") + r" is free\."
)
_NEW_ALLOC = LazyPattern(
    r"Of the allocated memory " + _size("alloc") + r" is allocated by PyTorch, (?:with " + _size("private")
    + r" allocated in private pools \(e\.g\., CUDA Graphs\), )?and " + _size("unalloc") + r" is reserved by PyTorch but unallocated"
)
_PROC = LazyPattern(r"this process has " + _size("proc") + r" memory in use")


def _exc_split(text: str) -> tuple[Optional[str], str]:
    m = EXC_LINE.match(text)
    if m is not None and m.group("msg") is not None:
        return m.group("type"), m.group("msg").strip()
    return None, text.strip()


_WATCHDOG = LazyPattern(
    r"(?:\[Rank (?P<r>\d+)\] NCCL|\[PG [^\]]*?Rank (?P<pr>\d+)\] Process group) watchdog thread terminated with exception: "
)


def _watchdog_rank(rec) -> tuple[bool, Optional[int], Optional[int]]:
    """(a c10d watchdog line, the rank it names when the line has no launcher rank and the group
    is the default one, the group's rank it names). The rank in `[PG 1 Rank 1]` is the rank within
    process group 1 (nanscope/parsers/nccl.py), the global rank only in the default group."""
    if "watchdog thread terminated" not in rec.text:
        return False, None, None
    m = _WATCHDOG.search(rec.text)
    if m is None:
        return True, None, None
    if m.group("r") is not None:  # <= 2.2: `[Rank r] NCCL watchdog ...`, no group named
        pg_rank, default = int(m.group("r")), True
    else:
        _, pg_rank, default = process_group(rec.text)
    return True, (pg_rank if rec.origin.rank is None and default else None), pg_rank


def _error(rec, error: str, fields: dict) -> ErrorEvent:
    exc_type, message = _exc_split(rec.text)
    watchdog, rank, pg_rank = _watchdog_rank(rec)
    if watchdog:
        fields = dict(fields, watchdog=True, own_failure=True, pg_rank=pg_rank)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error=error, message=message, exc_type=exc_type,
                      fields=fields, rank=rank)


def _key(rec, *key) -> tuple:
    """A repeat key that keeps apart the ranks an unprefixed paste's watchdog lines name."""
    return key + (_watchdog_rank(rec)[2],)


# The frames of a start-up the OOM happened in (see the module docstring); `File "` lines are the
# python parser's too, so the rule only notes the frame and leaves the line to it.
_STARTUP_FRAME = LazyPattern(
    r'File "[^"]*?/(?:vllm/[^"]*", line \d+, in (?P<fn>capture_model|compile_or_warm_up_model|profile_run'
    r'|determine_available_memory|determine_num_available_blocks|initialize_cache|_initialize_kv_caches'
    r'|initialize_from_config|load_model|init_device|_dummy_sampler_run|_dummy_pooler_run)'
    r'|torch/cuda/graphs\.py", line \d+, in (?P<graph>capture_begin|capture_end))\b'
)
_STARTUP_SPAN = 300  # lines: a start-up frame further back than this belongs to another traceback


@rule("startup-frame", ('File "',), _STARTUP_FRAME.pattern)
def _startup_frame(m, rec, state):
    state["startup_frame"] = (rec.loc.line, m.group("fn") or m.group("graph"))
    return None


def _phase(state: dict, line: int) -> dict:
    at = state.get("startup_frame")
    if at is None or not 0 < line - at[0] <= _STARTUP_SPAN:
        return {}
    return {"phase": "startup", "during": at[1]}


@rule(
    "cuda-oom",
    ("out of memory. Tried to allocate", "Out of memory. Tried to allocate", "CUDA error: out of memory"),
    r"(?:CUDA )?[Oo]ut of memory\. Tried to allocate " + _size("tried") + r"|CUDA error: out of memory",
)
def _oom(m, rec, state):
    text = rec.text
    fields: dict = {"tried_gib": _gib(m, "tried")}
    if m.group("tried") is None:
        fields["driver"] = True  # cudaErrorMemoryAllocation from a CUDA call, not the caching allocator
    old = _OLD_DETAIL.search(text, m.end())
    new = _NEW_DETAIL.search(text, m.end()) if old is None else None
    if old is not None:
        fields.update(gpu=int(old.group("gpu")), total_gib=_gib(old, "total"), free_gib=_gib(old, "free"),
                      allocated_gib=_gib(old, "alloc"))
        reserved = _gib(old, "reserved")
        if reserved is not None:
            fields["reserved_gib"] = reserved
            fields["reserved_unallocated_gib"] = round(max(reserved - fields["allocated_gib"], 0.0), 6)
        if old.group("cached") is not None:
            fields["cached_gib"] = _gib(old, "cached")
        if old.group("allowed") is not None:
            fields["allowed_gib"] = _gib(old, "allowed")
    elif new is not None:
        fields.update(gpu=int(new.group("gpu")), total_gib=_gib(new, "total"), free_gib=_gib(new, "free"))
        alloc = _NEW_ALLOC.search(text, new.end())
        if alloc is not None:
            fields.update(allocated_gib=_gib(alloc, "alloc"), reserved_unallocated_gib=_gib(alloc, "unalloc"))
            if alloc.group("private") is not None:
                fields["private_pools_gib"] = _gib(alloc, "private")
        proc = _PROC.search(text, new.end())
        if proc is not None:
            fields["process_in_use_gib"] = _gib(proc, "proc")
    if not first_time(state, ("oom", fields.get("tried_gib"), fields.get("gpu")), rec.loc.line):
        return []
    fields["detail"] = _oom_detail(fields, m)
    fields.update(_phase(state, rec.loc.line))
    return _error(rec, "cuda_oom", fields)


# Apple GPUs: aten/src/ATen/mps/MPSAllocator.mm (torch 2.0+) refuses an allocation past the high watermark of the
# unified memory it may use: "MPS backend out of memory (MPS allocated: %s, other allocations: %s, max allowed: %s).
# Tried to allocate %s on %s pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory
# allocations (may cause system failure)." (sizes as GB / MB in 2.0-2.3, GiB / MiB later). The device's memory is
# used up: the same failure as a CUDA OOM, on the Mac's GPU. (ROCm's "HIP out of memory. Tried to allocate" and
# Intel's "XPU out of memory. Tried to allocate" are the CUDA allocator's wording, read by _oom.)
_MPS_DETAIL = LazyPattern(
    r"\(MPS allocated: " + _size("alloc") + r", other allocations: " + _size("other") + r", max allowed: "
    + _size("allowed") + r"\)\. Tried to allocate " + _size("tried") + r" on (?P<pool>\w+) pool")


_MPS_GIB = {"bytes": 1 / 2**30, "B": 1 / 2**30, "KB": 1 / 2**20, "KiB": 1 / 2**20, "MB": 1 / 2**10, "MiB": 1 / 2**10,
            "GB": 1.0, "GiB": 1.0, "TB": 2**10, "TiB": 2**10}


def _mps_gib(d: "re.Match[str]", name: str) -> float:
    """MPSAllocator's format_size divides by powers of 1024 whatever the unit says (GB is GiB there)."""
    return round(float(d.group(name)) * _MPS_GIB[d.group(name + "_u")], 6)


@rule("mps-oom", ("MPS backend out of memory",), r"MPS backend out of memory")
def _mps_oom(m, rec, state):
    d = _MPS_DETAIL.search(rec.text, m.end())
    fields: dict = {"device": "mps"}
    if d is not None:
        fields.update(tried_gib=_mps_gib(d, "tried"), allocated_gib=_mps_gib(d, "alloc"), other_gib=_mps_gib(d, "other"),
                      allowed_gib=_mps_gib(d, "allowed"), pool=d.group("pool"))
    if not first_time(state, ("oom", fields.get("tried_gib"), "mps"), rec.loc.line):
        return []
    if d is not None:
        fields["detail"] = (f"Apple GPU (MPS): tried to allocate {_request(fields['tried_gib'], d)} with "
                            f"{fields['allocated_gib']:.2f} GiB allocated by MPS and {fields['other_gib']:.2f} GiB by "
                            f"others, of {fields['allowed_gib']:.2f} GiB allowed")
    else:
        fields["detail"] = "Apple GPU (MPS): the allocation would pass the memory MPS may use"
    fields.update(_phase(state, rec.loc.line))
    return _error(rec, "cuda_oom", fields)


# c10/cuda/CUDACachingAllocator.cpp (torch 1.x-2.x), when torch.cuda.set_per_process_memory_fraction caps
# the process (TGI, ComfyUI and others set it): TORCH_CHECK_WITH(OutOfMemoryError, ..., "Allocation on device ",
# device, " would exceed allowed memory. (out of memory)", "\nCurrently allocated     : ", ...,
# "\nRequested               : ", ...). The detail lines follow on their own lines, or flattened with
# literal `\n` when a server wraps the message (huggingface/text-generation-inference#563).
_FRACTION_REQUESTED = LazyPattern(r"Requested\s*: " + _size("tried"))


@rule(
    "cuda-oom-fraction",
    ("would exceed allowed memory. (out of memory)",),
    r"Allocation on device (?P<gpu>\d+) would exceed allowed memory\. \(out of memory\)",
)
def _oom_fraction(m, rec, state):
    req = _FRACTION_REQUESTED.search(rec.text, m.end())
    fields: dict = {"tried_gib": _gib(req, "tried") if req else None, "gpu": int(m.group("gpu")),
                    "memory_fraction": True}
    if not first_time(state, ("oom", fields["tried_gib"], fields["gpu"]), rec.loc.line):
        return []
    fields["detail"] = ("allocation would exceed the process's allowed memory (set_per_process_memory_fraction)"
                        + (f", tried to allocate {fields['tried_gib']:.2f} GiB" if fields["tried_gib"] else "")
                        + f" on GPU {fields['gpu']}")
    return _error(rec, "cuda_oom", fields)


# fairseq / metaseq trainers catch the CUDA OOM themselves (fairseq/trainer.py Trainer.train_step and
# valid_step: `if "out of memory" in str(e)`), log it with _log_oom and try to go on, so the allocator's
# message may be missing from the excerpt or printed long before:
#   logger.warning("attempting to recover from OOM in forward/backward pass")   (<= 0.9: print("| WARNING: ..."))
#   "OOM in all workers, skipping update"   "ran out of memory in validation step, retrying batch"
#   "| WARNING: ran out of memory, skipping batch"   (2018 trainer, train_step / _backward_and_opt)
# _log_oom's own line (`OOM: Ran out of memory with exception: CUDA out of memory. Tried to allocate ...`,
# older `| WARNING: ran out of memory with exception: ...`) carries the allocator text: the cuda-oom rule
# reads it. In a distributed run the recovery usually fails and the job dies; on one GPU the batch is lost.
@rule(
    "fairseq-oom",
    ("recover from OOM in forward/backward", "OOM in all workers", "ran out of memory in validation step",
     "ran out of memory, skipping batch"),
    r"(?P<what>attempting to recover from OOM in forward/backward pass|OOM in all workers, skipping update"
    r"|ran out of memory in validation step, retrying batch|ran out of memory, skipping batch)",
)
def _fairseq_oom(m, rec, state):
    if not first_time(state, ("fairseq_oom",), rec.loc.line):
        return []
    return _error(rec, "cuda_oom", {"trainer": "fairseq", "recovering": True,
                                    "detail": f"the trainer caught a CUDA out-of-memory error ({m.group('what')})"})


def _request(gib: float, m: "Optional[re.Match[str]]" = None) -> str:
    """A request's size: in GiB, or as the allocator printed it where that reads 0.00 GiB (`Tried to allocate
    256 bytes`, `20.00 MiB`: the fields keep GiB rounded to 6 places)."""
    if gib >= 0.005 or m is None or m.group("tried") is None:
        return f"{gib:.2f} GiB"
    return f"{m.group('tried')} {m.group('tried_u')}"


def _oom_detail(f: dict, m: "Optional[re.Match[str]]" = None) -> str:
    """The numbers that matter, in one line (the allocator's own message runs to 400 characters)."""
    if f.get("driver"):
        return "CUDA error: out of memory (a CUDA call failed, not PyTorch's caching allocator)"
    out = f"tried to allocate {_request(f['tried_gib'], m)}"
    if f.get("free_gib") is not None and f.get("total_gib") is not None:
        out += f" with {f['free_gib']:.2f} GiB free of {f['total_gib']:.2f} GiB on GPU {f['gpu']}"
    if f.get("reserved_unallocated_gib"):
        out += f"; {f['reserved_unallocated_gib']:.2f} GiB reserved by PyTorch but unallocated"
    return out


# The CUDA-error checks of the C++ inference runtimes, whose message carries cudaGetErrorString ("out of
# memory" for cudaErrorMemoryAllocation) and not PyTorch's allocator text:
#   NVIDIA/TensorRT-LLM cpp/include/tensorrt_llm/common/cudaUtils.h check():
#     fmtstr("[TensorRT-LLM][ERROR] CUDA runtime error in %s: %s", func, _cudaGetErrorEnum(result))
#     (the TensorRT plugins' _checkCuda: "CUDA runtime error in %s: %s" without the tag)
#   InternLM/lmdeploy src/turbomind/utils/cuda_utils.h check():
#     "[TM][ERROR] CUDA runtime error: " + _cudaGetErrorEnum(result) + " " + file + ":" + line
#     (FasterTransformer, which TurboMind forked: "[FT][ERROR] CUDA runtime error: ...")
#   TensorRT-LLM tensorrt_llm/_torch/pyexecutor/py_executor_creator.py _maybe_explain_if_oom (1.0+):
#     "Executor creation failed due to insufficient GPU memory." then the per-component budget lines.
@rule(
    "runtime-cuda-oom",
    ("CUDA runtime error", "Executor creation failed due to insufficient GPU memory"),
    r"(?:\[(?P<tag>TensorRT-LLM|TM|FT)\]\[ERROR\] )?CUDA runtime error(?: in (?P<call>.+?))?: out of memory\b"
    r"|(?P<executor>Executor creation failed due to insufficient GPU memory)",
)
def _runtime_oom(m, rec, state):
    runtime = {"TensorRT-LLM": "tensorrt-llm", "TM": "turbomind", "FT": "fastertransformer"}.get(m.group("tag") or "")
    if m.group("executor"):
        runtime = "tensorrt-llm"
        detail = "TensorRT-LLM executor creation failed: not enough free GPU memory for its components"
    else:
        call = m.group("call")
        detail = "CUDA runtime error: out of memory" + (f" in {call.strip()}" if call else "")
        if runtime:
            detail += f" ({runtime})"
    if not first_time(state, ("runtime_oom", runtime, bool(m.group("executor"))), rec.loc.line):
        return []
    return _error(rec, "cuda_oom", {"driver": True, "runtime": runtime, "detail": detail})


# The same runtimes' checks for any other CUDA error (`invalid argument`, `unspecified launch failure`, ...):
# the CUDA error a PyTorch process would print as `CUDA error: X`. TensorRT-LLM's executor logs a failed step
# as `[TensorRT-LLM][ERROR] Encountered an error in forwardAsync function: <that error>`; a C++ check that
# nothing catches ends the process with `terminate called after throwing an instance of 'T'` and
# `  what():  <that error>` (std::terminate's report, libstdc++'s verbose terminate handler).
_RUNTIME_CUDA_ERROR = LazyPattern(
    r"\[(?P<tag>TensorRT-LLM|TM|FT)\]\[ERROR\] CUDA runtime error(?: in (?P<call>.+?))?: (?P<err>[A-Za-z][\w ,'-]*?)"
    r"(?=\s+\(|\s+/|\s*$)"
)
_TLLM_EXC = LazyPattern(r"(?<![\w:])(?P<type>(?:\w+::)+\w*Exception): \[TensorRT-LLM\]")


@rule("runtime-cuda-error", ("CUDA runtime error",), _RUNTIME_CUDA_ERROR.pattern)
def _runtime_cuda_error(m, rec, state):
    err = m.group("err").strip()
    runtime = {"TensorRT-LLM": "tensorrt-llm", "TM": "turbomind", "FT": "fastertransformer"}[m.group("tag")]
    if not first_time(state, _key(rec, "runtime_cuda_error", err), rec.loc.line):
        return []
    ev = _error(rec, "cuda_error", {"cuda_error": err, "runtime": runtime,
                                    "call": m.group("call").strip() if m.group("call") else None})
    if ev.exc_type is None:
        term = state.get("terminate")  # (type, line) of libstdc++'s terminate head (_terminate_head)
        tllm = _TLLM_EXC.search(rec.text)
        if term is not None and 0 < rec.loc.line - term[1] <= 2:
            ev.exc_type = term[0]  # an uncaught C++ exception: the process aborted
            ev.fields["aborted"] = True
        elif tllm is not None:
            ev.exc_type = tllm.group("type")
        call = f" in {ev.fields['call']}" if ev.fields["call"] else ""
        step = " (the executor failed a step)" if "Encountered an error in forwardAsync" in rec.text else ""
        if ev.exc_type is None:
            ev.exc_type = "CUDA runtime error"
            ev.message = f"{err}{call} ({runtime}){step}"
        else:
            ev.message = f"CUDA runtime error{call}: {err} ({runtime}){step}"
    return ev


# cuBLAS as other stacks report it (an allocation failure stays cublas-alloc's, above):
#   TensorFlow's stream executor (tensorflow/stream_executor/cuda/cuda_blas.cc CUDABlas::Init, xla/stream_executor
#   later): LOG(ERROR) << "failed to create cublas handle: " << ToString(ret), once per attempt; the matmul that
#   needed it then fails with tensorflow/core/kernels/matmul_op.cc's errors::Internal("Blas GEMM launch failed :
#   a.shape=(", ...) (batch_matmul_op: "Blas xGEMMBatched launch failed", "Blas xGEMV launch failed").
#   Caffe's CUBLAS_CHECK (include/caffe/util/device_alternate.hpp): glog CHECK_EQ(status, CUBLAS_STATUS_SUCCESS) << " "
#   << cublasGetErrorString(status): `Check failed: status == CUBLAS_STATUS_SUCCESS (13 vs. 0)  CUBLAS_STATUS_EXECUTION_FAILED`.
#   CNTK's CUDA_CALL / CUBLAS_CALL (Source/Math/GPUMatrix.cu ThrowOnError) and onnxruntime's CudaCall / RocmCall
#   (core/providers/cuda/cuda_call.cc, rocm/rocm_call.cc): "%s failure %d: %s ; GPU=%d ; hostname=%s ; expr=%s" (onnxruntime
#   adds "; file=...; line=..." and "; %s"), libName "CUBLAS" (ROCm: "HIPBLAS" / "ROCBLAS"): `CUBLAS failure 13:
#   CUBLAS_STATUS_EXECUTION_FAILED ; GPU=1 ; hostname=... ; expr=cublas_gemm(...)`. Some CNTK releases print no status
#   name for cuBLAS (`CUBLAS failure 13: (see cublas_api.h & look for cublasStatus_t or CUBLAS_STATUS_xxx) ; ...`):
#   the number is cublasStatus_t's (cublas_api.h), read by its name. 3 (ALLOC_FAILED) is memory: not this rule's.
_CUBLAS_CODES = {1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
                 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
                 14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR"}


@rule("other-cublas", ("failed to create cublas handle: ", " launch failed", "CUBLAS_STATUS_", "BLAS failure "),
      r"failed to create cublas handle: (?P<handle>CUBLAS_STATUS_(?!ALLOC_FAILED)[A-Z_]+)"
      r"|(?<![\w-])Blas (?P<op>GEMM|xGEMMBatched|xGEMV|SGEMM|GEMV|GEMMBatched) launch failed"
      r"|\(\d+ vs\. \d+\)\s+(?P<glog>CUBLAS_STATUS_(?!ALLOC_FAILED|SUCCESS)[A-Z_]+)"
      r"|\b(?P<lib>CUBLAS|HIPBLAS|ROCBLAS) failure (?P<code>\d+): (?P<named>(?:CU|HIP|ROC)BLAS_STATUS_[A-Z_]+)?[^;]{0,120}"
      r" ; GPU=-?\d+")
def _other_cublas(m, rec, state):
    status = m.group("handle") or m.group("glog")
    if m.group("lib"):
        status = m.group("named") or (_CUBLAS_CODES.get(int(m.group("code"))) if m.group("lib") == "CUBLAS" else None)
        if status is not None and status.endswith("_ALLOC_FAILED"):
            return None
        err = f"{m.group('lib')} failure {m.group('code')}" + (f": {status}" if status else "")
    elif m.group("handle"):
        err = f"failed to create cublas handle: {status}"
    elif m.group("op"):
        err = f"Blas {m.group('op')} launch failed"
    else:
        err = status
    if not first_time(state, _key(rec, "other_cublas", status or "launch"), rec.loc.line):
        return []
    ev = _error(rec, "cuda_error", {"cuda_error": err, "library": "cublas", "status": status, "call": None})
    if ev.exc_type is None:
        ev.exc_type = "cuBLAS error"  # a log line (TensorFlow's LOG(ERROR), glog), not an exception's
    return ev


# Caffe's CUDA_CHECK (include/caffe/util/device_alternate.hpp): glog CHECK_EQ(error, cudaSuccess) << " " <<
# cudaGetErrorString(error), so a failed cudaMalloc reads `Check failed: error == cudaSuccess (2 vs. 0)  out of memory`
# (the other cudaGetErrorString texts are read by their own rules). Thrust (CUDA's C++ algorithms, under
# MinkowskiEngine, torch-scatter, spconv, ...) throws thrust::system::system_error / bad_alloc with the runtime's
# error: `parallel_for failed: cudaErrorMemoryAllocation: out of memory`, `std::bad_alloc: cudaErrorMemoryAllocation:
# out of memory` (older thrust without the enum name: `parallel_for failed: out of memory`, `std::bad_alloc: out of
# memory`); thrown from a noexcept path it ends the process (`terminate called after throwing an instance of
# 'thrust::system::system_error'`). Either is the GPU out of memory.
@rule("other-cuda-oom", ("cudaErrorMemoryAllocation", "bad_alloc: out of memory", "parallel_for failed: out of memory",
                         " vs. 0)"),
      r"(?P<thrust>cudaErrorMemoryAllocation|std::bad_alloc: out of memory|parallel_for failed: out of memory)"
      r"|\(2 vs\. 0\)\s+(?P<glog>out of memory)\s*$")
def _other_oom(m, rec, state):
    if not first_time(state, ("oom", None, None), rec.loc.line):
        return []
    if m.group("glog"):
        detail = "a CUDA allocation failed: out of memory (glog's CHECK of cudaSuccess, Caffe's CUDA_CHECK)"
    else:
        detail = "a CUDA allocation inside thrust failed: out of memory (cudaErrorMemoryAllocation)"
    ev = _error(rec, "cuda_oom", {"driver": True, "tried_gib": None, "detail": detail})
    _terminated(ev, rec, state)
    if ev.exc_type is None and m.group("glog"):
        ev.exc_type = "CUDA error"
    return ev


# Intel GPUs under SYCL / Level Zero: an allocation the device refuses comes back as the Unified Runtime's
# UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (39), which the SYCL runtime throws as `Native API failed. Native API returns:
# 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)` and torch's XPU backend as `UR backend failed. UR backend returns:39
# (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)` (intel/llvm unified-runtime/include/ur_api.h). The device's memory is used
# up, as with "XPU out of memory. Tried to allocate" from the caching allocator (read by _oom). OUT_OF_RESOURCES (40)
# is not read: Level Zero returns it for other resources than memory too.
@rule("ur-device-oom", ("UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",), r"(?:returns: ?\d+ \()?UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY")
def _ur_oom(m, rec, state):
    if not first_time(state, ("oom", None, "xpu"), rec.loc.line):
        return []
    return _error(rec, "cuda_oom", {"driver": True, "tried_gib": None, "device": "xpu",
                                    "detail": "Intel GPU (XPU): Level Zero refused a device allocation "
                                              "(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)"})


@rule("cublas-alloc", ("CUBLAS_STATUS_ALLOC_FAILED",), r"CUBLAS_STATUS_ALLOC_FAILED(?: when calling `(?P<call>[^`]*)`)?")
def _cublas_alloc(m, rec, state):
    if not first_time(state, ("cublas_alloc",), rec.loc.line):
        return []
    return _error(rec, "cuda_oom", {"cublas": True, "call": m.group("call")})


@rule("ecc", ("uncorrectable ECC error encountered",), r"uncorrectable ECC error encountered")
def _ecc(m, rec, state):
    if not first_time(state, _key(rec, "ecc"), rec.loc.line):
        return []
    return _error(rec, "ecc_error", {"cuda_error": "uncorrectable ECC error encountered"})


# CUDA runtime cudaErrorNvlinkUncorrectable (220): "uncorrectable NVLink error detected during the execution" --
# an NVLink hardware fault (the driver's kernel log names it Xid 74); PyTorch raises it as `CUDA error: ...`.
@rule("nvlink-uncorrectable", ("uncorrectable NVLink error detected",), r"uncorrectable NVLink error detected during the execution")
def _nvlink(m, rec, state):
    if not first_time(state, _key(rec, "nvlink"), rec.loc.line):
        return []
    ev = _error(rec, "nvlink_error", {"cuda_error": "uncorrectable NVLink error detected during the execution", "code": 220})
    _terminated(ev, rec, state)
    return ev


# libstdc++'s verbose terminate handler, when a C++ exception leaves a thread (a c10::Error from the CUDA caching
# allocator or a destructor, the NCCL watchdog's c10::DistBackendError) and the process aborts:
#   terminate called after throwing an instance of 'c10::Error'
#     what():  CUDA error: misaligned address
# The `what():` line is the exception's message; the head names its type.
@rule("terminate-head", ("terminate called after throwing an instance of",),
      r"terminate called after throwing an instance of '(?P<type>[A-Za-z_][\w:]*)'\s*$")
def _terminate_head(m, rec, state):
    state["terminate"] = (m.group("type"), rec.loc.line)
    return []


def _terminated(ev: ErrorEvent, rec, state) -> None:
    """A `what():` line right after the terminate head: the exception that aborted the process."""
    head = state.get("terminate")
    if head is None or not rec.text.lstrip().startswith("what():") or not 0 < rec.loc.line - head[1] <= 2:
        return
    if ev.exc_type is None:
        ev.exc_type = head[0]
    ev.fields = dict(ev.fields or {}, terminate=True)


# cudaErrorIllegalAddress (700) and its siblings, the other sticky kernel faults of the CUDA runtime
# (driver_types.h): cudaErrorMisalignedAddress (716: "the device encountered a load or store instruction on a
# memory address which is not aligned"; 1.x THC: `cuda runtime error (74) : misaligned address`),
# cudaErrorLaunchFailure (719, CUDA <= 9: 4; cudaGetErrorString "unspecified launch failure", driver API
# CUDA_ERROR_LAUNCH_FAILED: "an exception occurred on the device while executing a kernel. Common causes include
# dereferencing an invalid device pointer and accessing out of bounds shared memory"; 1.x THC: `THCudaCheck FAIL
# file=... error=4 : unspecified launch failure`, `cuda runtime error (4) : unspecified launch failure`) and
# cudaErrorIllegalInstruction (715, "an illegal instruction was encountered"): a kernel faulted, the context is
# left unusable, every later CUDA call fails.
# ROCm's HSA runtime (ROCR-Runtime src/core/runtime/runtime.cpp, Runtime::VMFaultHandler) reports the same fault on
# an AMD GPU and aborts: fprintf(stderr, "Memory access fault by GPU node-%u (Agent handle: %p) on address %p%s. Reason:
# %s.\n", ...) (older ROCm without the agent handle), %s "(may not be exact address)" when imprecise, the reason "Page
# not present or supervisor privilege", "Write access to a read-only page", "Execute access to a page marked NX",
# "Host access only", "DRAM ECC failure", ... ; HIP then raises nothing: the process dies of SIGABRT.
@rule("illegal-address", ("an illegal memory access was encountered", "misaligned address", "unspecified launch failure",
                          "an illegal instruction was encountered", "Memory access fault by GPU node-"),
      r"(?P<err>an illegal memory access was encountered|unspecified launch failure|an illegal instruction was encountered"
      r"|(?:CUDA (?:error|warning): |\(\d+\) : |error=\d+ : )misaligned address)"
      r"|Memory access fault by GPU node-(?P<node>\d+) (?:\(Agent handle: [^)]*\) )?on address \S+?"
      r"(?:\(may not be exact address\))?\. Reason: (?P<reason>[^.]+)")
def _illegal(m, rec, state):
    if not first_time(state, _key(rec, "illegal"), rec.loc.line):
        return []
    if m.group("node") is not None:
        ev = _error(rec, "cuda_illegal_address", {"cuda_error": f"memory access fault (ROCm): {m.group('reason')}",
                                                   "hsa_node": int(m.group("node"))})
        ev.exc_type = ev.exc_type or "HSA memory access fault"
        return ev
    err = "misaligned address" if m.group("err").endswith("misaligned address") else m.group("err")
    ev = _error(rec, "cuda_illegal_address", {"cuda_error": err})
    _terminated(ev, rec, state)
    return ev


# cudaErrorLaunchTimeout (702; CUDA <= 9: 6; driver API CUDA_ERROR_LAUNCH_TIMEOUT), cudaGetErrorString "the launch
# timed out and was terminated": a kernel ran longer than the watchdog of a GPU that drives a display (Windows' TDR,
# 2 s by default; an X server on Linux: the device property kernelExecTimeoutEnabled) and the driver killed it. The
# context is unusable afterwards. Through every wrapper: `CUDA error: X`, `cuda runtime error (6) : X`, THC's
# `THCudaCheck FAIL ... error=702 : X`, `what():  CUDA error: X`, TensorFlow's `CUDA_ERROR_LAUNCH_TIMEOUT: X`.
@rule("launch-timeout", ("the launch timed out and was terminated",), r"the launch timed out and was terminated")
def _launch_timeout(m, rec, state):
    if not first_time(state, _key(rec, "launch_timeout"), rec.loc.line):
        return []
    ev = _error(rec, "cuda_launch_timeout", {"cuda_error": "the launch timed out and was terminated"})
    _terminated(ev, rec, state)
    return ev


# Triton's OutOfResources (triton/runtime/errors.py; before 3.0 triton/compiler/errors.py, triton/runtime/autotuner.py):
# f"out of resource: {name}, Required: {required}, Hardware limit: {limit}" + ". Reducing block sizes or `num_stages`
# may help." (in every release since 2.0), raised when a compiled kernel is loaded on a GPU whose per-block shared
# memory (or other resource) is smaller than the kernel's configuration needs: kernels tuned for A100 / H100
# (~164-228 KiB) on consumer Ampere / Ada (~100 KiB), Turing (64 KiB) or Pascal (48 KiB). Its class name ends in no
# Error, so without this rule the exception line is not even an uncaught exception.
@rule("triton-out-of-resources", ("out of resource: ",),
      r"out of resource: (?P<res>[A-Za-z][\w ]*?), Required: (?P<req>\d+), Hardware limit(?:ation)?: (?P<limit>\d+)")
def _triton_resources(m, rec, state):
    res, req, limit = m.group("res"), int(m.group("req")), int(m.group("limit"))
    if not first_time(state, _key(rec, "triton_resources", res, req, limit), rec.loc.line):
        return []
    ev = _error(rec, "triton_out_of_resources", {"resource": res, "required": req, "limit": limit})
    ev.exc_type = ev.exc_type or _out_of_resources_class(rec.text)
    ev.message = f"a Triton kernel needs {req} of {res}, the GPU allows {limit}"
    return ev


def _out_of_resources_class(text: str) -> Optional[str]:
    """The exception's dotted name as printed (`triton.runtime.errors.OutOfResources`, or bare)."""
    end = text.find("OutOfResources")
    if end < 0:
        return None
    start = end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "._"):
        start -= 1
    return text[start:end + len("OutOfResources")]


# The PyTorch build (or an extension) has no kernel for this GPU's compute capability. The CUDA runtime's
# cudaErrorNoKernelImageForDevice (209; CUDA <= 9: 48) "no kernel image is available for execution on the device",
# through every wrapper (`CUDA error: X`, 1.x `THCudaCheck FAIL file=... error=48 : X`, `cuda runtime error (48) :
# X`), and cudaErrorInvalidDeviceFunction (98; old 8) "invalid device function", what a custom op built for other
# architectures (mmcv, detectron2, apex) raises. torch/cuda/__init__.py warns first, at CUDA initialisation:
#   _check_cubins (1.8+):   "{name} with CUDA capability sm_{cc} is not compatible with the current PyTorch
#                            installation.\nThe current PyTorch install supports CUDA capabilities {arch list}."
#   _check_capability:      "Found GPU{d} {name} which is of cuda capability {ma}.{mi}.\n    PyTorch no longer supports
#                            this GPU because it is too old." (2.8+: "... which is of compute capability (CC) {ma}.{mi}.")
# rocBLAS (library/src/tensile_host.cpp) has no Tensile GEMM kernels for the GPU's gfx target: "rocBLAS error: Cannot
# read <path>/TensileLibrary.dat: <strerror>" (newer: "... for GPU arch : gfx1201" and the list of the TensileLibrary
# files it has), then "rocBLAS error: Could not initialize Tensile host: ..."; the process aborts. With
# AMD_LOG_LEVEL >= 3 the HIP runtime traces its calls (hipamd/src/hip_*.cpp, `:3:hip_module.cpp :669 : <us> us:
# [pid:N tid:0x..] hipLaunchKernel: Returned hipErrorInvalidDeviceFunction : `): the launch's own result, the same
# missing kernel before torch raises it (and a paste may stop there).
_ARCH_ERROR = LazyPattern(r"no kernel image is available for execution on the device|(?:CUDA error: |HIP error: |\(\d+\) : "
                         r"|error=\d+ : )invalid device function|(?P<hiptrace>: Returned hipErrorInvalidDeviceFunction)|(?P<hip>hipErrorNoBinaryForGpu): (?:Unable to find code object "
                         r"for all current devices|Coudn't find binary for current devices)"
                         r"|(?P<tensile>Cannot read [^\n]{0,400}?TensileLibrary[\w.-]*\.(?:dat|yaml): )"
                         r"|(?P<tensile_host>Could not initialize Tensile host)")
_GFX = LazyPattern(r"for GPU arch ?: (?P<gfx>gfx[0-9a-f]+)")
# (the GPU's name is bounded: a name, not a line; it starts after a space, a colon or the line start)
_ARCH_WARN = LazyPattern(r"(?:^|(?<=[\s:]))(?P<gpu>[^\s:][^:]{0,80}?) with CUDA capability sm_(?P<cc>\d+) is not compatible "
                        r"with the current PyTorch installation|Found GPU(?P<idx>\d+) (?P<gpu2>[^\n]{1,120}?) which is of "
                        r"(?:cuda|compute) capability (?:\(CC\) )?(?P<ma>\d+)\.(?P<mi>\d+)")


@rule("arch-unsupported", ("no kernel image is available", "invalid device function", "with CUDA capability sm_",
                           "which is of cuda capability", "which is of compute capability", "hipErrorNoBinaryForGpu",
                           "Returned hipErrorInvalidDeviceFunction",
                           "TensileLibrary", "Could not initialize Tensile host"),
      _ARCH_ERROR.pattern + "|" + _ARCH_WARN.pattern)
def _arch(m, rec, state):
    if m.group("cc") or m.group("ma"):
        cc = m.group("cc") or f"{m.group('ma')}{m.group('mi')}"
        gpu = (m.group("gpu") or m.group("gpu2")).strip()
        if not first_time(state, ("arch_warn", gpu, cc), rec.loc.line):
            return []
        return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="cuda_arch_unsupported",
                          message=rec.text.strip(), fields={"gpu": gpu, "capability": f"sm_{cc}", "warning": True,
                                                            "cuda_error": f"{gpu} (sm_{cc}) is not supported by this PyTorch build"})
    if m.group("tensile") or m.group("tensile_host"):
        g = _GFX.search(rec.text, m.end())
        gfx = g.group("gfx") if g else None
        err = "rocBLAS has no Tensile kernels for this GPU" + (f" ({gfx})" if gfx else "")
        if not first_time(state, ("arch", "tensile"), rec.loc.line):
            return []  # `Could not initialize Tensile host` right after the `Cannot read` line: one failure
        return _error(rec, "cuda_arch_unsupported", {"cuda_error": err, "warning": False, "rocblas": True, "gfx": gfx})
    if m.group("hip"):
        err = "hipErrorNoBinaryForGpu: the ROCm build has no code object for this GPU"
    elif m.group(0).endswith("invalid device function") or m.group("hiptrace"):
        err = "invalid device function"
    else:
        err = "no kernel image is available for execution on the device"
    if not first_time(state, _key(rec, "arch", err), rec.loc.line):
        return []
    ev = _error(rec, "cuda_arch_unsupported", {"cuda_error": err, "warning": False})
    _terminated(ev, rec, state)
    return ev


@rule("device-assert-triggered", ("device-side assert triggered",), r"device-side assert triggered")
def _assert_triggered(m, rec, state):
    if not first_time(state, _key(rec, "assert_triggered"), rec.loc.line):
        return []
    return _error(rec, "cuda_device_assert", {"cuda_error": "device-side assert triggered"})


@rule(
    "device-assert",
    ("Assertion `",),
    r"(?<!\S)(?P<file>\S+\.cuh?):(?P<line>\d+): (?:(?P<func>[^:]+?): )?block: \[(?P<block>[\d,\s]+)\], "
    r"thread: \[(?P<thread>[\d,\s]+)\] Assertion `(?P<assertion>.{0,4096})` failed\.?",
)
def _assert_line(m, rec, state):
    return _device_assert(m.groupdict(), rec, state)


# The same assert without its `file:line: function: ` head: a terminal that wrapped the long THC-era line (the
# head on the line before), or a __PRETTY_FUNCTION__ with `::` in it (`lambda [](int)->auto::operator()(int)->auto`).
@rule("device-assert-bare", ("Assertion `",),
      r"(?<![\w\]])block: \[(?P<block>[\d,\s]+)\], thread: \[(?P<thread>[\d,\s]+)\] Assertion `(?P<assertion>.{0,4096})`"
      r" failed")
def _assert_bare(m, rec, state):
    return _device_assert(m.groupdict(), rec, state)


# ROCm's device-side assert (HIP's __assert_fail in hip/amd_detail/amd_device_functions.h, every ROCm release:
# "%s:%u: %s: Device-side assertion `%s' failed.\n" - a closing quote, not a backtick, and no block / thread):
# `/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side assertion
# `srcIndex < srcSelectDimSize' failed.` (PyTorch's hipified kernels, one line per failing thread).
@rule("device-assert-hip", ("Device-side assertion `",),
      r"(?<!\S)(?P<file>\S+?):(?P<line>\d+): (?P<func>[^`\n]{1,600}?): Device-side assertion `(?P<assertion>[^\n]{0,4096})' failed")
def _assert_hip(m, rec, state):
    return _device_assert(m.groupdict(), rec, state)


def _device_assert(g: dict, rec, state):
    path = g.get("file")
    kernel_file = re.split(r"[\\/]", path)[-1] if path else None
    if not first_time(state, ("assert", kernel_file, g.get("line"), g["assertion"]), rec.loc.line):
        return []  # one line per failing GPU thread: keep the first
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="cuda_device_assert", message=rec.text.strip(),
        fields={"assertion": g["assertion"], "kernel_file": kernel_file, "kernel_path": path,
                "kernel_line": int(g["line"]) if g.get("line") else None, "function": g.get("func"),
                "block": g.get("block"), "thread": g.get("thread")},
    )


@rule(
    "xid",
    ("NVRM: Xid",),
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d+),\s*(?:pid=(?P<pid>'?[^,]*?'?), name=(?P<name>[^,]*), )?(?P<detail>.*)$",
)
def _xid(m, rec, state):
    pid = (m.group("pid") or "").strip("'")
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="gpu_xid", message=rec.text.strip(),
        fields={"xid": int(m.group("xid")), "pci": m.group("pci"), "pid": int(pid) if pid.isdigit() else None,
                "process": m.group("name"), "detail": m.group("detail").strip()},
    )


# NVIDIA's Kubernetes device plugin (k8s-device-plugin internal/rm/health.go) turns the driver's critical Xid
# events into a device health change, in every release's wording:
#   XidCriticalError: Xid=79 on Device=GPU-..., the device will go unhealthy.
#   XidCriticalError: Xid=79 on Device=GPU-...; marking device as unhealthy.
@rule("device-plugin-xid", ("XidCriticalError: Xid=",), r"XidCriticalError: Xid=(?P<xid>\d+) on (?:Device=(?P<dev>[^,;\s]+)|unknown device)")
def _plugin_xid(m, rec, state):
    if not first_time(state, ("plugin_xid", m.group("xid"), m.group("dev")), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="gpu_xid", message=rec.text.strip(),
                      fields={"xid": int(m.group("xid")), "pci": m.group("dev") or "unknown", "source": "k8s-device-plugin",
                              "detail": "the device plugin marked the GPU unhealthy"})


@rule("nvrm-gpu-head", ("NVRM: The NVIDIA GPU ",), r"NVRM: The NVIDIA GPU (?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
def _nvrm_head(m, rec, state):
    state["nvrm_gpu"] = (m.group("pci"), rec.loc.line)
    return []


@rule(
    "fallen-off-bus",
    ("fallen off the bus and is not responding",),
    r"(?:NVRM: The NVIDIA GPU (?P<pci>[0-9A-Fa-f:.]+) .*?)?fallen off the bus and is not responding to commands",
)
def _fallen_off_bus(m, rec, state):
    pci = m.group("pci")
    head = state.pop("nvrm_gpu", None)
    if pci is None and head is not None and 0 < rec.loc.line - head[1] <= 3:
        pci = head[0]
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="gpu_fallen_off_bus", message=rec.text.strip(),
                      fields={"pci": pci})


# The CUDA runtime could not give the process a usable GPU, before any kernel ran. The texts are the
# runtime's cudaGetErrorString (CUDA toolkit cuda_runtime_api.h / driver_types.h), printed through every
# wrapper: PyTorch's `CUDA error: X` / 1.x THC `cuda runtime error (35) : X` / `THCudaCheck FAIL ... error=35
# : X`, c10/cuda/CUDAFunctions.cpp device_count_impl (`Unexpected error from cudaGetDeviceCount(). Did you
# run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804:
# X`, raised, or warned as `UserWarning: CUDA initialization: ...` by torch.cuda.is_available), vLLM's
# engine log, onnxruntime's `CUDA failure 35: X`, bitsandbytes' `Error X at line N in file ops.cu`:
#   35  cudaErrorInsufficientDriver          CUDA driver version is insufficient for CUDA runtime version
#   803 cudaErrorSystemDriverMismatch        system has unsupported display driver / cuda driver combination
#   804 cudaErrorCompatNotSupportedOnDevice  forward compatibility was attempted on non supported HW
#   torch/cuda/__init__.py _check_driver:    The NVIDIA driver on your system is too old (found version 11040).
#   222 cudaErrorUnsupportedPtxVersion       the provided PTX was compiled with an unsupported toolchain.
#                                            (the program's PTX is from a newer CUDA toolkit than the driver can JIT)
# and none at all:
#   100 cudaErrorNoDevice                    no CUDA-capable device is detected
#   46  cudaErrorDevicesUnavailable          CUDA-capable device(s) is/are busy or unavailable
#                                            (CUDA <= 10: all CUDA-capable devices are busy or unavailable)
#   c10/cuda/CUDAFunctions.cpp:              Found no NVIDIA driver on your system. Please check that you have ...
#                                            CUDA driver initialization failed, you might not have a CUDA gpu.
#   aten CUDAHooks / torch._C._cuda_init:    No CUDA GPUs are available
#   802 cudaErrorSystemNotReady              system not yet initialized (an NVSwitch system whose fabric NVIDIA
#                                            Fabric Manager has not set up: the service is not running, or not the
#                                            driver's version)
#   c10/cuda/CUDAFunctions.cpp, cudaErrorUnknown (999) from the device count: "CUDA unknown error - this may be due
#                                            to an incorrectly set up environment, e.g. changing env variable
#                                            CUDA_VISIBLE_DEVICES after program start. Setting the available devices to
#                                            be zero." (raised, or warned as `UserWarning: CUDA initialization: ...`)
_DRIVER_MISMATCH = {
    "CUDA driver version is insufficient for CUDA runtime version": (35, "the NVIDIA driver is older than the CUDA runtime"),
    "system has unsupported display driver / cuda driver combination": (803, "the user-space CUDA driver does not match the kernel driver"),
    "forward compatibility was attempted on non supported HW": (804, "CUDA forward-compatibility libraries loaded on a GPU that does not support them"),
    "NVIDIA driver on your system is too old": (None, "the NVIDIA driver is older than this PyTorch build's CUDA"),
    "the provided PTX was compiled with an unsupported toolchain": (222, "the program's PTX was built by a newer CUDA "
                                                                    "toolkit than the NVIDIA driver can compile"),
}
_NO_DEVICE = {
    "no CUDA-capable device is detected": (100, "no GPU visible to the process"),
    "CUDA-capable device(s) is/are busy or unavailable": (46, "the GPUs are busy (exclusive-process mode) or unavailable"),
    "all CUDA-capable devices are busy or unavailable": (46, "the GPUs are busy (exclusive-process mode) or unavailable"),
    "Found no NVIDIA driver on your system": (None, "no NVIDIA driver loaded"),
    "CUDA driver initialization failed, you might not have a CUDA gpu": (3, "the CUDA driver failed to initialise"),
    "No CUDA GPUs are available": (None, "no GPU visible to the process"),
    "system not yet initialized": (802, "the GPUs' NVSwitch fabric is not set up: NVIDIA Fabric Manager is not running "
                                        "or not of the driver's version"),
    "CUDA unknown error - this may be due to an incorrectly set up environment": (
        999, "the CUDA driver failed to initialise the GPUs (cudaErrorUnknown): often the nvidia_uvm module not loaded "
             "or a driver left broken by a suspend or an update, or CUDA_VISIBLE_DEVICES changed after start"),
    # cudaErrorInvalidDevice (101; CUDA <= 9: 10): the process asked for a GPU index that is not visible to it
    "invalid device ordinal": (101, "the GPU index asked for is not visible here: more processes per node than GPUs "
                                    "(--nproc_per_node), or cuda:N past the last GPU / CUDA_VISIBLE_DEVICES"),
}


def _alternation(texts) -> str:
    return "|".join(re.escape(t) for t in texts)


@rule(
    "cuda-unusable",
    tuple(_DRIVER_MISMATCH) + tuple(_NO_DEVICE),
    r"(?P<text>" + _alternation(_DRIVER_MISMATCH) + "|" + _alternation(_NO_DEVICE) + r")(?: \(found version (?P<found>\d+)\))?",
)
def _cuda_unusable(m, rec, state):
    text = m.group("text")
    mismatch = text in _DRIVER_MISMATCH
    code, what = (_DRIVER_MISMATCH if mismatch else _NO_DEVICE)[text]
    coded = re.search(r"(?:Error |error=|error \(|CUDA failure )(\d+)", rec.text)
    if coded is not None:
        code = int(coded.group(1))
    error = "cuda_driver_mismatch" if mismatch else "cuda_no_device"
    if not first_time(state, _key(rec, error), rec.loc.line):
        return []
    fields = {"cuda_error": text, "code": code, "detail": what, "warning": "UserWarning" in rec.text}
    if m.group("found"):
        fields["driver_found"] = int(m.group("found"))
    return _error(rec, error, fields)


# cudaErrorNvlinkUncorrectable (220): the kernel driver saw an uncorrectable error on an NVLink the
# context uses (Xid 74 in the kernel log); every later CUDA call of the process fails.
# nvidia-smi once the driver has lost a GPU (nvml's device handle query fails for it):
#   Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost.  Reboot the system to recover this GPU
#   (newer: `... for GPU0: 0000:24:00.0: GPU is lost.`), or `...: Unknown Error` for the same lost board.
@rule(
    "nvidia-smi-gpu-lost",
    ("Unable to determine the device handle for GPU",),
    r"Unable to determine the device handle for GPU ?(?:\d+: )?(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])"
    r": (?P<why>GPU is lost|Unknown Error)",
)
def _gpu_lost(m, rec, state):
    if not first_time(state, ("gpu_lost", m.group("pci")), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="gpu_fallen_off_bus", message=rec.text.strip(),
                      fields={"pci": m.group("pci"), "source": "nvidia-smi", "detail": m.group("why")})


# cuDNN refused or failed an operation. aten/src/ATen/cuda/Exceptions.h AT_CUDNN_CHECK (torch 1.1+):
# AT_ERROR("cuDNN error: ", cudnnGetErrorString(status)) (NOT_SUPPORTED adds ". This error may appear if you passed in a
# non-contiguous input."); torch 1.0's aten/src/ATen/cudnn/Exceptions.h: "CuDNN error: " (with "file:line: " in front in
# some builds); torch 0.4's cudnn_exception carries cudnnGetErrorString alone, so the exception line is the bare status
# (`RuntimeError: CUDNN_STATUS_MAPPING_ERROR`). The cuDNN v8 frontend (aten/src/ATen/native/cudnn/Conv_v8.cpp, torch
# 1.12+) reports a convolution no engine could run as TORCH_CHECK(false, "GET was unable to find an engine to execute
# this computation") (the benchmark path: "FIND was unable to ..."); AT_CUDNN_FRONTEND_CHECK: "cuDNN Frontend error: ".
# torch/backends/cudnn/__init__.py _init() refuses a cuDNN other than the one it was built against (another cuDNN on
# LD_LIBRARY_PATH or in the environment): 1.x-2.x "cuDNN version incompatibility: PyTorch was compiled  against
# (8, 5, 0) but found runtime version (8, 3, 3). PyTorch already comes bundled with cuDNN. ..." (two spaces sic);
# 0.4-1.0 "cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600" (some releases
# "incompatibility: ... linked against").
# CUDNN_STATUS_ALLOC_FAILED is cuDNN's out-of-memory. The frontend's `UserWarning: Plan failed with a cudnnException:
# ... cudnn_status: CUDNN_STATUS_NOT_SUPPORTED` (torch 2.3) is a plan cuDNN skipped, no error: none of these match it.
#
# Other stacks print the status name alone. TensorFlow's stream executor (tensorflow/stream_executor/cuda/cuda_dnn.cc,
# RETURN_IF_CUDNN_ERROR) returns port::Status(port::error::UNKNOWN, ToString(status) + "\nin <file>(<line>): '<call>'"),
# which Python shows as `UnknownError: CUDNN_STATUS_EXECUTION_FAILED` or, among several root errors,
# `  (0) Unknown: CUDNN_STATUS_EXECUTION_FAILED` (TF 2.9+ `UNKNOWN: `; INTERNAL likewise). Caffe's CUDNN_CHECK
# (include/caffe/util/cudnn.hpp) is glog's CHECK_EQ(status, CUDNN_STATUS_SUCCESS) << " " << cudnnGetErrorString(status):
# `Check failed: status == CUDNN_STATUS_SUCCESS (8 vs. 0)  CUDNN_STATUS_EXECUTION_FAILED` (NVCaffe adds ", device N");
# the value pair `(8 vs. 0)` before the name is read, so a console that wrapped the long glog line still gives it.
_CUDNN = LazyPattern(
    r"(?:cuDNN|CuDNN) error: (?P<status>CUDNN_STATUS_[A-Z_]+)"
    r"|(?:^|(?<=Error: )|(?<=Exception: )|(?P<tf>(?<=Unknown: )|(?<=UNKNOWN: )|(?<=Internal: )|(?<=INTERNAL: )))"
    r"(?P<bare>CUDNN_STATUS_[A-Z_]+)\s*$"
    r"|\(\d+ vs\. \d+\)\s+(?P<glog>CUDNN_STATUS_(?!SUCCESS)[A-Z_]+)"
    r"|(?P<engine>GET|FIND) was unable to find an engine to execute this computation"
    r"|cuDNN Frontend error: (?P<frontend>\S.*)$"
    r"|cuDNN version (?:incompatibility|mismatch): PyTorch was compiled +against (?P<built>\([\d, ]+\)|\d+) but "
    r"(?:found runtime version|linked against) (?P<run>\([\d, ]+\)|\d+)"
)


@rule("cudnn-error", ("cuDNN error: ", "CuDNN error: ", "CUDNN_STATUS_", "was unable to find an engine to execute",
                      "cuDNN Frontend error: ", "cuDNN version "), _CUDNN.pattern)
def _cudnn(m, rec, state):
    status = m.group("status") or m.group("bare") or m.group("glog")
    if m.group("built"):
        detail = f"torch was built against cuDNN {m.group('built')} but loaded {m.group('run')} (another cuDNN shadows torch's own)"
        status = "version mismatch"
    elif m.group("engine"):
        detail = f"cuDNN found no engine for the operation ({m.group('engine')}: the v8 frontend)"
    elif m.group("frontend"):
        detail = f"cuDNN frontend: {m.group('frontend').strip()[:200]}"
    else:
        detail = f"cuDNN returned {status}"
    if not first_time(state, _key(rec, "cudnn", status or m.group("engine") or "frontend"), rec.loc.line):
        return []
    if status == "CUDNN_STATUS_ALLOC_FAILED":
        return _error(rec, "cuda_oom", {"cudnn": True, "detail": "cuDNN could not allocate GPU memory (CUDNN_STATUS_ALLOC_FAILED)"})
    ev = _error(rec, "cuda_error", {"cuda_error": detail, "library": "cudnn", "status": status,
                                    "engine": m.group("engine")})
    if ev.exc_type is None and (m.group("bare") is None or m.group("tf") is not None):
        ev.exc_type = "cuDNN error"  # logged without the exception's class (a wrapper's log line, `what():`, glog)
    _terminated(ev, rec, state)
    return ev


# XLA compiles its GPU kernels' PTX with the CUDA toolkit's ptxas (xla/stream_executor/gpu/asm_compiler.cc, later
# subprocess_compilation.cc): a ptxas older than the GPU makes it warn once, `Falling back to the CUDA driver for PTX
# compilation; ptxas does not support CC 8.9` (then `Used ptxas at ...`), and hand the PTX to the driver, which often
# copes (the warning alone, and redzone_allocator's `UNIMPLEMENTED: ptxas ptxas too old. Falling back to the driver to
# compile.`, are no failure). When the driver cannot either, cuda_driver.cc logs `failed to load PTX text as a module:
# CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid` and the executable fails (`INTERNAL: Failed to load PTX text
# as a module: ...`); newer XLA raises at once, `XlaRuntimeError: UNIMPLEMENTED: /usr/local/cuda/bin/ptxas ptxas too old.
# Falling back to the driver to compile.`. Either after the fallback warning is the toolkit not knowing the GPU.
_XLA_PTXAS_SPAN = 200


@rule("xla-ptxas-too-old", ("ptxas does not support CC ", "ailed to load PTX text as a module: ", "ptxas too old"),
      r"(?P<warn>Falling back to the CUDA driver for PTX compilation; ptxas does not support CC (?P<cc>\d+\.\d+))"
      r"|[Ff]ailed to load PTX text as a module: (?P<err>CUDA_ERROR_[A-Z_]+)"
      r"|(?P<raised>XlaRuntimeError: UNIMPLEMENTED: \S*ptxas too old)")
def _xla_ptxas(m, rec, state):
    if m.group("warn"):
        state["xla_ptxas_cc"] = (m.group("cc"), rec.loc.line)
        return []  # the driver may compile it: only its failure (or XLA's refusal) is one
    seen = state.get("xla_ptxas_cc")
    if m.group("err") and (seen is None or rec.loc.line - seen[1] > _XLA_PTXAS_SPAN):
        return None
    if not first_time(state, ("xla_ptxas",), rec.loc.line):
        return []  # the driver's error, XLA's status, the executor's failure: one
    cc = f" (compute capability {seen[0]})" if seen else ""
    how = (f"the driver's fallback failed too ({m.group('err')})" if m.group("err") else
           "XLA refused to fall back to the driver")
    err = f"the CUDA toolkit's ptxas is older than the GPU{cc}: it cannot compile XLA's kernels for it, and {how}"
    return _error(rec, "cuda_arch_unsupported", {"cuda_error": err, "warning": False, "ptxas": True,
                                                  "capability": seen[0] if seen else None})


# MIOpen, cuDNN's counterpart on ROCm, compiles its kernels at run time (ROCm/MIOpen src/hipoc/hipoc_program.cpp, comgr.cpp):
# a kernel that does not build throws `MIOPEN_THROW("Code object build failed. Source: " + filename)`, printed as
# `MIOpen Error: /MIOpen/src/hipoc/hipoc_program.cpp:286: Code object build failed. Source: MIOpenIm2d2Col.cl`, after
# the compiler's own log: hipRTC (5.x+) `MIOpen(HIP): Error [BuildHip] HIPRTC status = HIPRTC_ERROR_COMPILATION (6),
# source file: X` (newer logs `MIOpen: Error [...]`) and `Error [Compile] 'hiprtcCompileProgram(...)' X:
# HIPRTC_ERROR_COMPILATION (6)`, comgr `Error [BuildOcl] comgr status = INVALID_ARGUMENT (2)`. PyTorch then raises the
# status by name (aten/src/ATen/miopen/Exceptions.h MIOPEN_CHECK: miopenGetErrorString, `RuntimeError:
# miopenStatusUnknownError`), TensorFlow `could not create miopen handle: miopenStatusUnknownError`.
# miopenStatusAllocFailed is MIOpen's out-of-memory. MIOpen's Warning lines (a missing perf database) are no failure.
_MIOPEN = LazyPattern(
    r"MIOpen Error: \S*?:\d+: (?P<build>Code object build failed)\. Source: (?P<src>\S+)"
    r"|MIOpen(?:\(HIP\))?: Error \[(?:BuildHip|Compile)\] (?:.*' (?P<src3>[^\s']+): |.*?)(?P<hiprtc>HIPRTC_ERROR_COMPILATION)\b"
    r"(?:.*?source file: (?P<src2>\S+))?"
    r"|(?:^|(?<=Error: )|(?<=miopen handle: ))(?P<status>miopenStatus(?:UnknownError|InternalError|NotInitialized|BadParm"
    r"|InvalidValue|NotImplemented|UnsupportedOp|VersionMismatch|AllocFailed))\b"
)


@rule("miopen-error", ("Code object build failed", "HIPRTC_ERROR_COMPILATION", "miopenStatus"), _MIOPEN.pattern)
def _miopen(m, rec, state):
    if not first_time(state, _key(rec, "miopen"), rec.loc.line):
        return []  # the compiler's log, the throw, PyTorch's exception: one failure
    if m.group("status") == "miopenStatusAllocFailed":
        return _error(rec, "cuda_oom", {"miopen": True, "detail": "MIOpen could not allocate GPU memory (miopenStatusAllocFailed)"})
    src = m.group("src") or m.group("src2") or m.group("src3")
    if m.group("build") or m.group("hiprtc"):
        detail = (f"MIOpen (ROCm's cuDNN) could not compile its kernel{' ' + src if src else ''} for this GPU "
                  f"({'hipRTC: HIPRTC_ERROR_COMPILATION' if m.group('hiprtc') else 'Code object build failed'})")
    else:
        detail = f"MIOpen (ROCm's cuDNN) returned {m.group('status')}"
    return _error(rec, "cuda_error", {"cuda_error": detail, "library": "cudnn", "status": m.group("status") or "build",
                                      "backend": "miopen"})


# cuBLAS failed a call. aten/src/ATen/cuda/Exceptions.h TORCH_CUDABLAS_CHECK (torch 1.5+): "CUDA error: ",
# at::cuda::blas::_cublasGetErrorEnum(status), " when calling `" #EXPR "`" (read by the cuda-error rule below, which
# marks it library = cublas); THC's THCublasCheck (torch <= 1.4, aten/src/THC/THCGeneral.cpp): _THError(file, line,
# "cublas runtime error : %s", errmsg) with errmsg from the status: "library not initialized", "resource allocation
# failed" (older "ressource"), "an invalid numeric value was used as an argument", "an absent device architectural
# feature is required", "an access to GPU memory space failed", "the GPU program failed to execute", "an internal
# operation failed", "unknown error"; the message ends " at <file>:<line>". Allocation failure is the OOM.
_THC_CUBLAS = {"library not initialized": "CUBLAS_STATUS_NOT_INITIALIZED",
               "an invalid numeric value was used as an argument": "CUBLAS_STATUS_INVALID_VALUE",
               "an absent device architectural feature is required": "CUBLAS_STATUS_ARCH_MISMATCH",
               "an access to GPU memory space failed": "CUBLAS_STATUS_MAPPING_ERROR",
               "the GPU program failed to execute": "CUBLAS_STATUS_EXECUTION_FAILED",
               "an internal operation failed": "CUBLAS_STATUS_INTERNAL_ERROR", "unknown error": None}


@rule("thc-cublas", ("cublas runtime error : ",),
      r"cublas runtime error : (?P<msg>library not initialized|res?source allocation failed|an invalid numeric value was "
      r"used as an argument|an absent device architectural feature is required|an access to GPU memory space failed"
      r"|the GPU program failed to execute|an internal operation failed|unknown error)")
def _thc_cublas(m, rec, state):
    msg = m.group("msg")
    if not first_time(state, _key(rec, "thc_cublas", msg), rec.loc.line):
        return []
    if msg.endswith("allocation failed"):
        return _error(rec, "cuda_oom", {"cublas": True, "detail": f"cuBLAS could not allocate GPU memory ({msg})"})
    status = _THC_CUBLAS[msg]
    return _error(rec, "cuda_error", {"cuda_error": f"cublas runtime error : {msg}", "library": "cublas",
                                      "status": status, "call": None})


# An op the MPS (Apple GPU) backend has no kernel for, with PYTORCH_ENABLE_MPS_FALLBACK unset: aten/src/ATen/mps/
# MPSFallback.mm mps_error_fallback, TORCH_CHECK_NOT_IMPLEMENTED(false, "The operator '", op.schema().operator_name(),
# "' is not currently implemented for the MPS device. If you want this op to be added in priority during the prototype
# phase of this feature, please comment on https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can
# set the environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` ..." (torch 1.12: "is not current implemented"; 2.6+
# points at issue 141287 instead). A C++ caller that does not catch it aborts: `libc++abi: terminating due to uncaught
# exception of type c10::NotImplementedError: <the message>`. With the fallback enabled the same op only warns, "The
# operator '...' is not currently supported on the MPS backend and will fall back to run on the CPU." (not this).
# Apple's MPS has no 64-bit floats: moving or creating a float64 tensor on the device raises c10::TypeError
# (TORCH_CHECK_TYPE in aten/src/ATen/mps) "Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't
# support float64. Please use float32 instead." (Python: TypeError; from C++ a libc++abi abort).
@rule("mps-float64", ("Cannot convert a MPS Tensor to ",), r"Cannot convert a MPS Tensor to (?P<dtype>\w+) dtype")
def _mps_float64(m, rec, state):
    if not first_time(state, ("mps_dtype", m.group("dtype")), rec.loc.line):
        return []
    ev = _error(rec, "dtype_unsupported", {"device": "mps", "dtype": m.group("dtype")})
    ev.message = f"the Apple GPU (MPS) has no {m.group('dtype')}: {rec.text[m.start():].strip()}"
    return ev


_LIBCXX_ABORT = LazyPattern(r"terminating (?:due to|with) uncaught exception of type (?P<type>[A-Za-z_][\w:]*)")


@rule("mps-op-unsupported", ("for the MPS device",),
      r"The operator '(?P<op>[^']{1,200})' is not current(?:ly)? implemented for the MPS device")
def _mps_op(m, rec, state):
    op = m.group("op")
    if not first_time(state, ("mps_op", op), rec.loc.line):
        return []
    ev = _error(rec, "mps_op_unsupported", {"op": op, "device": "mps"})
    if ev.exc_type is None:
        abort = _LIBCXX_ABORT.search(rec.text)
        ev.exc_type = abort.group("type") if abort else "NotImplementedError"
        if abort:
            ev.fields["aborted"] = True
        ev.message = rec.text[m.start():].strip()
    return ev


@rule(
    "cuda-error",
    ("CUDA error: ", "cuda runtime error ("),
    r"(?:CUDA error: |cuda runtime error \((?P<code>\d+)\) : )(?P<err>.*?\S)(?: at \S+:\d+)?\s*$",
)
def _cuda_error(m, rec, state):
    err = m.group("err").strip()
    # 2.6+ appends the search hint on the same line when the message is flattened
    err = re.split(r"\s+(?:Search for `|CUDA kernel errors might|Compile with `)", err)[0].strip()
    if not first_time(state, _key(rec, "cuda_error", err), rec.loc.line):
        return []
    if _BF16_GEMM_UNSUPPORTED.match(err):
        ev = _error(rec, "dtype_unsupported", {"cuda_error": err, "cublas": True})
        ev.message = ("cuBLAS has no bf16 GEMM for this GPU (CUBLAS_STATUS_NOT_SUPPORTED on a CUDA_R_16BF call; "
                      "native bf16 needs compute capability 8.0 or newer)")
        _terminated(ev, rec, state)
        return ev
    fields = {"cuda_error": err, "code": int(m.group("code")) if m.group("code") else None}
    blas = _CUBLAS_STATUS.match(err)
    if blas is not None:
        fields.update(library="cublas", status=blas.group("status"), call=blas.group("call"))
        # the call's argument list, often cut by the paste, says less than its name (ROCm prints the status there)
        fields["cuda_error"] = (f"{blas.group('status')} when calling {blas.group('call')}" if blas.group("call")
                                else blas.group("status"))
    ev = _error(rec, "cuda_error", fields)
    _terminated(ev, rec, state)  # `what():  CUDA error: X` of an aborting process is its uncaught exception
    return ev


# aten/src/ATen/cuda/CUDABlas.cpp: TORCH_CUDABLAS_CHECK(...) reports a failed cuBLAS call as `CUDA error:
# CUBLAS_STATUS_<status> when calling `<call>``. NOT_SUPPORTED on a call with bf16 operands (CUDA_R_16BF: the
# bgemm / gemm_and_bias / bgemm_strided_batched paths) is a GPU without a bf16 GEMM in that cuBLAS (pre-Ampere:
# Maxwell, Pascal, Volta, Turing depend on the cuBLAS release; pytorch/pytorch#57773); torch 1.7-1.9 refused it
# itself: "BFloat16 gemm in CUDA requires Ampere or later GPU" (python.py).
_BF16_GEMM_UNSUPPORTED = LazyPattern(r"CUBLAS_STATUS_NOT_SUPPORTED when calling `[^`]*\bCUDA_R_16BF\b")
# ROCm builds hipify the check: `CUDA error: HIPBLAS_STATUS_NOT_SUPPORTED when calling `HIPBLAS_STATUS_NOT_SUPPORTED``
# (the call's text replaced by the status, hipBLAS / hipBLASLt).
_CUBLAS_STATUS = LazyPattern(r"(?P<status>(?:CU|HIP)BLAS_STATUS_[A-Z_]+)(?: when calling `(?!(?:CU|HIP)BLAS_STATUS_)"
                            r"(?P<call>[A-Za-z_]\w*))?")


PARSER = Parser(
    name="cuda",
    framework=FW,
    priority=30,
    description="CUDA OOM (every allocator wording, MPS too), CUDA runtime errors, kernel faults and watchdog timeouts, Triton kernels past the GPU's resources, cuBLAS and cuDNN status errors, ops the MPS backend lacks, device asserts, ECC, NVLink, NVRM Xid, no usable GPU / driver mismatch, no kernel for the GPU's architecture",
    rules=[_startup_frame, _oom, _mps_oom, _oom_fraction, _fairseq_oom, _runtime_oom, _ur_oom, _cublas_alloc, _other_cublas, _other_oom, _ecc, _nvlink,
           _terminate_head, _illegal, _launch_timeout, _triton_resources, _arch, _assert_triggered, _assert_line, _assert_bare, _assert_hip, _xid,
           _plugin_xid, _nvrm_head, _fallen_off_bus, _gpu_lost, _cuda_unusable, _runtime_cuda_error, _cudnn, _miopen, _xla_ptxas,
           _thc_cublas, _mps_op, _mps_float64, _cuda_error],
)
