"""XLA ran out of device memory (JAX / Flax, TensorFlow with XLA, torch_xla): RESOURCE_EXHAUSTED.

openxla/xla, by backend (the status text follows absl's `RESOURCE_EXHAUSTED: `; TensorFlow's Status before
2.x printed `Resource exhausted: `; JAX raises it as `jaxlib.xla_extension.XlaRuntimeError` / `JaxRuntimeError`):
- GPU, xla/stream_executor/integrations/tf_allocator_adapter.cc `MemoryAllocationError`:
  `Out of memory while trying to allocate {size} bytes.` (`Out of host memory while trying to allocate ...
  Please set the environment variable XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB ...` for pinned host memory), then
  `BufferAssignment OOM Debugging.` and the buffer stats; another allocator path: `Out of memory allocating
  {size} bytes.`
- TPU runtime (xla docs/errors/error_0100.md, error_0101.md): `Error allocating device buffer: Attempting to
  allocate 8.00M. That was not possible. There are 6.43M free.; (0x0x1_HBM0)`, `Error loading program '{name}':
  Attempting to reserve 29.49G at the bottom of memory. That was not possible. ...` (torch_xla prints the
  same per line of its error block).
- TPU compiler (error_1000.md, error_1001.md): `XLA:TPU compile permanent error. Ran out of memory in memory
  space hbm. Used 49.34G of 32.00G hbm. ...`, `Ran out of memory in memory space vmem ...`, `Allocation
  (size=134217728) would exceed memory (size=67108864)`.

The words after the status are XLA's: the status code alone is no OOM (`RESOURCE_EXHAUSTED` is also gRPC's
code for a quota). One failure is printed on many lines (the status, torch_xla's block, JAX's re-raise): one
event per stream.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers._repeats import first_time

_UNITS = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}


def _human(n: int) -> str:
    for u in ("T", "G", "M", "K"):
        if n >= _UNITS[u]:
            return f"{n / _UNITS[u]:.2f} {u}iB"
    return f"{n} bytes"


@rule("xla-resource-exhausted", ("RESOURCE_EXHAUSTED: ", "Resource exhausted: Out of"),
      r"(?:RESOURCE_EXHAUSTED|Resource exhausted): (?P<msg>.{0,200}?(?:"
      r"Out of (?P<host>host )?memory (?:while trying to allocate|allocating) (?P<bytes>\d+) bytes"
      r"|Attempting to (?P<verb>allocate|reserve) (?P<size>[\d.]+[KMGT]?)(?: at the bottom of memory)?\. That was not possible"
      r"|Ran out of memory in memory space (?P<space>\w+)"
      r"|Allocation \(size=(?P<asize>\d+)\) would exceed memory))")
def _xla_oom(m, rec, state):
    if not first_time(state, ("xla_oom",), rec.loc.line):
        return []
    tpu = m.group("size") is not None or m.group("space") is not None or m.group("asize") is not None
    if m.group("bytes"):
        n = int(m.group("bytes"))
        what = f"{_human(n)} ({n} bytes)"
    elif m.group("size"):
        what = f"{m.group('size')}B" + (" for the program" if m.group("verb") == "reserve" else "")
    elif m.group("asize"):
        what = _human(int(m.group("asize")))
    else:
        what = f"its buffers in {m.group('space')}"
    where = "host (pinned) memory" if m.group("host") else ("the TPU's memory" if tpu else "the device's memory")
    fields = {"framework": "xla", "detail": f"XLA could not allocate {what} in {where} (RESOURCE_EXHAUSTED)"}
    msg = rec.text[m.start("msg"):].strip()
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="xla", error="host_oom" if m.group("host") else "cuda_oom",
                      message=msg[:400], fields=fields)


# A console or a paste that wraps the status line (jax-ml/jax#788: `... failed: Resource exhausted: Out ` alone,
# then `of memory while trying to allocate 5520758552 bytes.`): the head is kept for one line and the next line,
# joined to it, is read as the status.
_HEAD = LazyPattern(r"(?:RESOURCE_EXHAUSTED|Resource exhausted): (?P<part>(?:O(?:u(?:t(?: (?:o(?:f(?: .{0,60})?)?)?)?)?)?)?)$")


@rule("xla-resource-exhausted-head", ("RESOURCE_EXHAUSTED: ", "Resource exhausted: "), _HEAD.pattern)
def _xla_head(m, rec, state):
    state["xla_head"] = (rec.loc.line, rec.text)
    return None  # nothing to read yet


@rule("xla-resource-exhausted-tail", ("bytes",), r"^\s*\S.{0,80}?\d+ bytes\b", match_start=True)
def _xla_tail(m, rec, state):
    head = state.pop("xla_head", None)
    if head is None or head[0] != rec.loc.line - 1:
        return None
    for text in (head[1] + rec.text.lstrip(), head[1].rstrip() + " " + rec.text.lstrip()):
        full = _xla_oom.regex.search(text)
        if full is not None:
            return _xla_oom.build(full, rec, state)
    return None


# The BFC allocator of TensorFlow and XLA (tensorflow/core/common_runtime/bfc_allocator.cc, now
# xla/tsl/framework/bfc_allocator.cc), AllocateRawInternal when no chunk fits and the caller wanted the
# failure logged (the retrying path: the allocation fails, the op's OOM / RESOURCE_EXHAUSTED follows):
#   TF 1.x:  `Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.2KiB.  Current allocation summary follows.`
#   TF 2.x:  `... trying to allocate 3.00GiB (rounded to 3221225472).  Current allocation summary follows.`
#   2.4+, XLA: `... trying to allocate 1.25TiB (rounded to 1374521760000)requested by op <op name>` (sic, no space)
# AllocateRaw's other warning, for a caller that does not retry (a cuDNN autotuner's scratch space):
# `... trying to allocate 2.15GiB[ with freed_by_count=0]. The caller indicates that this is not a failure, but may
# mean that there could be performance gains if more memory is available.` is a fallback that succeeded: not this.
_BFC = LazyPattern(
    r"Allocator \((?P<alloc>[\w-]+)\) ran out of memory trying to allocate (?P<size>[\d.]+\s?[KMGTP]?i?B)"
    r"(?: \(rounded to (?P<rounded>\d+)\)|\.  Current allocation summary follows)")


@rule("bfc-allocator-oom", ("ran out of memory trying to allocate",), _BFC.pattern)
def _bfc_oom(m, rec, state):
    rest = rec.text[m.end():]
    if "not a failure" in rest:
        return []
    alloc = m.group("alloc")
    host = "host" in alloc.lower() or alloc.lower().startswith("cpu")
    if not first_time(state, ("bfc_oom", alloc), rec.loc.line):
        return []
    fw = "xla" if ("xla/" in rec.text or "tsl/" in rec.text) else "tensorflow"
    op = re.match(r"requested by op (?P<op>\S+)", rest)
    by = f" for {op.group('op')}" if op else ""
    fields = {"framework": fw, "allocator": alloc,
              "detail": f"the {alloc} allocator could not allocate {m.group('size')}{by}"
                        f" ({'host' if host else 'device'} memory exhausted)"}
    dev = re.match(r"GPU_(\d+)_bfc$", alloc)
    if dev:
        fields["gpu"] = int(dev.group(1))  # a device index of this process, not a rank
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=fw, error="host_oom" if host else "cuda_oom",
                      message=rec.text[m.start():].strip()[:400], fields=fields)


PARSER = Parser(
    name="xla_memory",
    framework="jax",
    priority=55,  # before the generic exception parser (python, 80): XlaRuntimeError's line is this one's
    description="XLA RESOURCE_EXHAUSTED out-of-memory (JAX / Flax, TF-XLA, torch_xla; GPU and TPU)",
    rules=[_xla_oom, _xla_head, _xla_tail, _bfc_oom],
)
