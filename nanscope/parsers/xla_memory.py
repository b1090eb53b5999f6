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

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
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


PARSER = Parser(
    name="xla_memory",
    framework="jax",
    priority=55,  # before the generic exception parser (python, 80): XlaRuntimeError's line is this one's
    description="XLA RESOURCE_EXHAUSTED out-of-memory (JAX / Flax, TF-XLA, torch_xla; GPU and TPU)",
    rules=[_xla_oom],
)
