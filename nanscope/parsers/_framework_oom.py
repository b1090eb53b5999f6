"""Device out-of-memory reports of training frameworks that are not PyTorch: PaddlePaddle and MXNet (not a parser:
the templates and events the python parser's rules use).

PaddlePaddle, paddle/fluid/memory/allocation/cuda_allocator.cc (1.8-2.x; the same text in
cuda_virtual_mem_allocator.cc, cuda_malloc_async_allocator.cc, gpu_info.cc, and paddle/phi/core/memory/ in 3.x),
thrown as ResourceExhaustedError (a BadAlloc), whose text starts with two newlines:
  Out of memory error on GPU %d. Cannot allocate %s memory on GPU %d, %s memory has been allocated and
  available memory is only %s.
  Please check whether there is any other process using GPU %d.
  1. If yes, please stop them, or start PaddlePaddle on another GPU.
  2. If no, please decrease the batch size of your model. ...
(1.8's cuda_allocator.cc has no `%s memory has been allocated and `). Sizes are string::HumanReadableSize's
(`98.000244MB`, `0.000000B`). It reaches the log as Python's `RuntimeError: ResourceExhaustedError:` /
`MemoryError: ...`, or as operator.cc's warning `<op> raises an exception paddle::memory::allocation::BadAlloc,
ResourceExhaustedError: ` with the message on the lines after.

The python parser reads both (its rules paddle-oom and mxnet-oom, with the patterns and events from here): the
exception that carries the message comes first, and a line is one parser's.

MXNet, src/storage/pooled_storage_manager.h (GPUPooledStorageManager::Alloc, 0.x-1.x):
  LOG(FATAL) << "cudaMalloc retry failed: " << cudaGetErrorString(e)   (after releasing the pool)
  LOG(FATAL) << "cudaMalloc failed: " << cudaGetErrorString(e)
printed by dmlc's logging as `[hh:mm:ss] src/storage/./pooled_storage_manager.h:157: cudaMalloc failed: out of
memory` (inside `mxnet.base.MXNetError: ...` from Python), or with 1.6+'s FFI traceback as
`File ".../pooled_storage_manager.h", line 161` then `MXNetError: cudaMalloc retry failed: out of memory`.
The storage manager's file or MXNetError is required: llama.cpp's `cudaMalloc failed: out of memory` is ggml's.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers.base import LazyPattern

_SIZE = r"(?P<{0}>\d+(?:\.\d+)?)\s?(?P<{0}_u>[kKMGTP]?B)"
_GIB = {"B": 2 ** -30, "kB": 2 ** -20, "KB": 2 ** -20, "MB": 2 ** -10, "GB": 1.0, "TB": 2 ** 10, "PB": 2 ** 20}


def _gib(m, name: str):
    if m.group(name) is None:
        return None
    return round(float(m.group(name)) * _GIB[m.group(name + "_u")], 6)


PADDLE_OOM = LazyPattern(
    r"Out of memory error on GPU (?P<gpu>\d+)\. Cannot allocate " + _SIZE.format("tried") + r" memory on GPU \d+, "
    r"(?:" + _SIZE.format("alloc") + r" memory has been allocated and )?available memory is only " + _SIZE.format("avail"))


def _human(gib: float) -> str:
    return f"{gib:.2f} GiB" if gib >= 1 else f"{gib * 1024:.1f} MiB"


def paddle_oom_event(m, rec) -> ErrorEvent:
    gpu = int(m.group("gpu"))
    tried = _gib(m, "tried")
    alloc, avail = _gib(m, "alloc"), _gib(m, "avail")
    detail = f"PaddlePaddle could not allocate {_human(tried)} on GPU {gpu}"
    if alloc is not None:
        detail += f" with {_human(alloc)} allocated"
    detail += f" and {_human(avail)} available"
    fields = {"framework": "paddlepaddle", "gpu": gpu, "tried_gib": tried, "free_gib": avail, "detail": detail}
    if alloc is not None:
        fields["allocated_gib"] = alloc
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="paddlepaddle", error="cuda_oom",
                      message=m.group(0)[:400], exc_type="ResourceExhaustedError", fields=fields)


MXNET_OOM = LazyPattern(r"(?:storage_manager\.h:\d+: |MXNetError: )cudaMalloc (?P<retry>retry )?failed: out of memory")


def mxnet_oom_event(m, rec) -> ErrorEvent:
    retried = m.group("retry") is not None
    detail = ("MXNet's pooled GPU storage could not cudaMalloc" + (" even after releasing its pool" if retried else "")
              + ": out of GPU memory")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="mxnet", error="cuda_oom", message=rec.text.strip()[:400],
                      exc_type="MXNetError", fields={"framework": "mxnet", "detail": detail, "pool_released": retried})
