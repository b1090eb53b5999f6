"""CUDA graph capture failures: an operation that stream capture does not allow (vLLM, SGLang, TGI, torch.cuda.graph).

Serving engines capture their decode step in CUDA graphs at start-up (vLLM `Capturing CUDA graph shapes`,
SGLang `Capture cuda graph begin`, TGI `Cuda Graphs are enabled for sizes`). An operation that is illegal
while a stream is capturing (a host sync, a pageable copy, an NCCL call that needs uncaptured work, an
allocation outside the graph's pool) ends the capture with one of the CUDA runtime's stream-capture errors;
their cudaGetErrorString texts are fixed (CUDA runtime API, cudaError enum 900-908):

  900 cudaErrorStreamCaptureUnsupported   operation not permitted when stream is capturing
  901 cudaErrorStreamCaptureInvalidated   operation failed due to a previous error during capture
  902 cudaErrorStreamCaptureMerge         operation would result in a merge of separate capture sequences
  903 cudaErrorStreamCaptureUnmatched     capture was not initiated in this stream
  904 cudaErrorStreamCaptureUnjoined      capturing stream has unjoined work
  905 cudaErrorStreamCaptureIsolation     dependency created on uncaptured work in another stream
  906 cudaErrorStreamCaptureImplicit      operation would make the legacy stream depend on a capturing blocking stream
  907 cudaErrorCapturedEvent              operation not permitted on an event last recorded in a capturing stream
  908 cudaErrorStreamCaptureWrongThread   attempt to terminate a thread-local capture sequence from another thread

They reach a log as PyTorch's `RuntimeError: CUDA error: <text>` (torch.AcceleratorError in 2.8+; `HIP error`
on ROCm, `MUSA error` on MUSA), as NCCL's `NCCL WARN Cuda failure '<text>'` (enqueue.cc, when the collective
inside the capture fails), and behind SGLang's `Exception: Capture cuda graph failed: <error>`
(python/sglang/srt/model_executor/cuda_graph_runner.py). torch's hint `Search for
`cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/...` names the enum.

PyTorch also refuses, itself, calls it knows cannot be captured (aten/src/ATen/cuda/CUDAGraphsUtils.cuh
assertNotCapturing: TORCH_CHECK(status == cudaStreamCaptureStatusNone, attempt, " during CUDA graph capture. If
you need this call to be captured, please file an issue. Current cudaStreamCaptureStatus: ", status)), e.g.
`Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture. ...` (a kernel reading the RNG seed).

TensorRT's own logger reports a failed capture inside an enqueue as `Error Code 1: Cuda Runtime (<text>)`. trtexec
(samples/common/sampleDevice.h TrtCudaGraph::endCaptureOnError, sampleInference.cpp) then gives the graph up and
goes on without it:
    sample::gLogWarning << "The CUDA graph capture on the stream has failed." << std::endl;
    "The built TensorRT engine contains operations that are not permitted under CUDA graph capture mode."
    "The specified --useCudaGraph flag has been ignored. The inference will be launched without using CUDA graph
    launch."
so TensorRT's capture error is held until the end of the log and dropped when that fallback follows.

This parser runs before the cuda and nccl parsers so that these lines read as what they are, a failed
capture, rather than a generic CUDA or NCCL error.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "cuda"

_TEXTS = {
    "operation not permitted when stream is capturing": "cudaErrorStreamCaptureUnsupported",
    "operation failed due to a previous error during capture": "cudaErrorStreamCaptureInvalidated",
    "operation would result in a merge of separate capture sequences": "cudaErrorStreamCaptureMerge",
    "capture was not initiated in this stream": "cudaErrorStreamCaptureUnmatched",
    "capturing stream has unjoined work": "cudaErrorStreamCaptureUnjoined",
    "dependency created on uncaptured work in another stream": "cudaErrorStreamCaptureIsolation",
    "operation would make the legacy stream depend on a capturing blocking stream": "cudaErrorStreamCaptureImplicit",
    "operation not permitted on an event last recorded in a capturing stream": "cudaErrorCapturedEvent",
    "attempt to terminate a thread-local capture sequence from another thread": "cudaErrorStreamCaptureWrongThread",
}
_ENUM = r"cudaErrorStreamCapture(?:Unsupported|Invalidated|Merge|Unmatched|Unjoined|Isolation|Implicit|WrongThread)|cudaErrorCapturedEvent"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): ")


@rule(
    "capture-error",
    ("stream is capturing", "error during capture", "separate capture sequences", "capture was not initiated",
     "capturing stream has unjoined work", "uncaptured work in another stream", "capturing blocking stream",
     "last recorded in a capturing stream", "thread-local capture sequence", "cudaErrorStreamCapture",
     "cudaErrorCapturedEvent"),
    r"(?P<sgl>Capture cuda graph failed: )?(?:(?P<api>CUDA|HIP|MUSA) error: |Cuda failure ')?"
    r"(?P<text>" + "|".join(re.escape(t) for t in _TEXTS) + r")"
    r"|`?(?P<enum>" + _ENUM + r")\b",
)
def _capture_error(m, rec, state):
    enum = m.group("enum") or _TEXTS[m.group("text")]
    if not first_time(state, ("cuda_graph_capture",), rec.loc.line):
        return []  # torch's message, its `Search for ...` hint, the engine's re-raise: one failed capture
    exc = _EXC.search(rec.text)
    where = ("NCCL" if "NCCL WARN" in rec.text else
             "SGLang's CUDA graph runner" if m.group("sgl") else None)
    detail = f"{m.group('text') or enum} ({enum})" + (f", reported by {where}" if where else "")
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="cuda_graph_capture",
                    message=rec.text.strip(), exc_type=exc.group("type") if exc else None,
                    fields={"cuda_error": enum, "detail": detail})
    if "Error Code 1: Cuda Runtime (" in rec.text:
        if state.get("trt_graph_fallback"):
            return []
        state["pending"] = ev  # TensorRT's enqueue: trtexec may give the graph up and run without it
        return []
    return ev


@rule(
    "trtexec-graph-fallback",
    ("The CUDA graph capture on the stream has failed.", "--useCudaGraph flag has been ignored"),
    r"The CUDA graph capture on the stream has failed\.|The specified --useCudaGraph flag has been ignored",
)
def _trtexec_fallback(m, rec, state):
    state.pop("pending", None)
    state["trt_graph_fallback"] = True
    return []  # trtexec runs the engine without a CUDA graph: a missed speed-up, not a failure


@rule(
    "torch-not-capturing",
    ("during CUDA graph capture. If you need this call to be captured",),
    r" during CUDA graph capture\. If you need this call to be captured, please file an issue\."
    r"(?: Current cudaStreamCaptureStatus: (?P<status>\w+))?",
)
def _torch_not_capturing(m, rec, state):
    if not first_time(state, ("cuda_graph_capture",), rec.loc.line):
        return []
    exc = _EXC.search(rec.text)
    attempt = rec.text[:m.start()].strip()
    for sep in ("Error: ", "Exception: "):  # the exception types the message is wrapped in
        at = attempt.rfind(sep)
        if at >= 0:
            attempt = attempt[at + len(sep):]
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="cuda_graph_capture",
                      message=rec.text.strip(), exc_type=exc.group("type") if exc else None,
                      fields={"cuda_error": "torch assertNotCapturing",
                              "detail": f"{attempt} during CUDA graph capture (PyTorch refuses it while a stream captures)"})


PARSER = Parser(
    name="cudagraph",
    framework=FW,
    priority=29,  # before cuda (30) and nccl (35), whose generic CUDA-error rules would claim these lines
    description="CUDA graph capture failures: the CUDA runtime's stream-capture errors, from torch, NCCL, SGLang or TensorRT"
                " (not trtexec's capture it gives up to run without graphs)",
    rules=[_capture_error, _torch_not_capturing, _trtexec_fallback],
)
