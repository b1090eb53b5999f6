"""TensorRT-LLM (trtllm-serve, the LLM API): an executor worker that failed to start.

TensorRT-LLM's logger prints `[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [E] MESSAGE` (newer: `[TRT-LLM] [E]
[executor] MESSAGE`). When an executor worker raises while it is created, tensorrt_llm/executor/worker.py
worker_main logs

    logger.error(f"Failed to initialize executor on rank {mpi_rank()}: {e}")

then the traceback, and the proxy raises `RuntimeError: Executor worker returned error`. The exception text
says what failed. Here it is read for the NCCL case: the NCCLCHECK macro's wording of NCCL's own examples,
`Failed, NCCL error %s:%d '%s'` (__FILE__, __LINE__, ncclGetErrorString), inside TensorRT-LLM's assertion
(`[TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error ../tensorrt_llm/runtime/ncclCommunicator.cpp:90
'invalid usage ...'`): an NCCL error of that rank's communicator set-up. (The same NCCLCHECK line outside this
executor wrapper is the nccl parser's to read.) A CUDA OOM there is the cuda parser's (it runs first), an
architecture transformers does not know is the architecture parser's.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "tensorrt-llm"


@rule(
    "executor-init-nccl",
    ("Failed to initialize executor on rank",),
    r"Failed to initialize executor on rank (?P<rank>\d+): .*?Failed, NCCL error (?P<at>\S+:\d+) '(?P<why>[^']*)'",
)
def _executor_nccl(m, rec, state):
    if not first_time(state, ("trtllm_nccl",), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="nccl_error", message=rec.text.strip(),
                      fields={"source": "tensorrt-llm", "reason": m.group("why"), "at": m.group("at"),
                              "phase": "startup",
                              "detail": f"the executor on rank {m.group('rank')} could not set up NCCL: {m.group('why')}"})


PARSER = Parser(
    name="tensorrt_llm",
    framework=FW,
    priority=38,
    description="TensorRT-LLM: an executor worker whose start-up failed on NCCL",
    rules=[_executor_nccl],
)
