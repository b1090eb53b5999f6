"""Compilers and accelerator runtimes, blind public rounds 4444- (session 17): the TPU runtime that does not start
(libtpu's one-process lock under JAX, torch_xla's PJRT start-up aborting on 'No ba16c7433 device found', jaxlib's
NOT_FOUND, XRT's 'Couldn't open device: /dev/accel0'), torch.onnx.export without a symbolic function for an op,
torch.compile failures printed without their class (BackendCompilerFailed's `backend='inductor' raised:` message,
dynamo's dynamic-control-flow UserError), TensorFlow's MirroredStrategy on a build without NCCL and its own NCCL
status check; TensorFlow's verbose GPU start-up lines as healthy traps. Round 2: onnxruntime sessions without a kernel
for a node (both wordings), XLA's own NCCL status under JAX (and its 'Unable to load NCCL library'); XLA's 'Delay kernel
timed out' ERROR line and dynamo's graph-break log as traps. Round 3: JAX tracing errors (ConcretizationTypeError from
0.2's FilteredStackTrace to 0.4's jax.errors, TracerBoolConversionError, a notebook's JSON record), XLA:TPU's HBM
compile OOM; XLA's slow constant-folding alarm as a trap.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected, rank", [
    ("4444.log", "tpu-init-failed", None),  # sglang-jax: 'The TPU is already in use by process with pid 2718466'
    ("4445.log", "tpu-init-failed", None),  # torch_xla: glog F 'UNKNOWN: TPU initialization failed: No ba16c7433 ...'
    ("4446.log", "tpu-init-failed", None),  # jaxlib: XlaRuntimeError: NOT_FOUND: No ba16c7433 device found.
    ("4447.log", "tpu-init-failed", None),  # XRT: Couldn't open device: /dev/accel0 (Operation not permitted)
    ("4448.log", "tpu-init-failed", None),  # XRT under xmp.spawn: PERMISSION_DENIED: open(/dev/accel0)
    ("4449.log", "onnx-export-unsupported", None),  # aten::lift_fresh at opset 13
    ("4450.log", "torch-compile-failed", None),  # ComfyUI: backend='inductor' raised: / CompilationError: at 8:11:
    ("4451.log", "torch-compile-failed", None),  # Dynamic control flow is not supported ... (no class)
    ("4452.log", "dist-backend-unavailable", None),  # Windows TF: no kernel for NcclAllReduce
    ("4453.log", "nccl-error", None),  # TF: (5) INTERNAL:  NCCL: unhandled system error. Set NCCL_DEBUG=WARN ...
    # round 2 (4460-4471), scored blind after round 1
    ("4460.log", "torch-compile-failed", None),  # BackendCompilerFailed: Triton Error [CUDA]: device kernel image is invalid
    ("4461.log", "onnxruntime-op-not-implemented", None),  # Could not find an implementation for Pad(13) node ...
    ("4462.log", "onnxruntime-op-not-implemented", None),  # the old wording: ... for the node Mul(6)
    ("4463.log", "onnxruntime-op-not-implemented", None),  # BatchNormalization(1)
    ("4464.log", "triton-out-of-resources", None),
    ("4465.log", "nccl-error", None),  # XLA: NCCL operation ncclCommInitRank(...) failed: unhandled cuda error
    ("4466.log", "nccl-error", None),  # 'Execution of replica 1 failed': a replica is a device, not a rank
    ("4467.log", "nccl-error", None),  # 2021's 'Internal: ... NCCL operation ncclAllReduce(...) failed: invalid usage'
    ("4468.log", "nccl-error", None),
    ("4469.log", "dist-backend-unavailable", None),  # XLA: Unable to load NCCL library
    # round 3 (4480-4488), scored blind after round 2
    ("4480.log", "jax-tracer-error", None),  # jax 0.2: FilteredStackTrace: jax.core.ConcretizationTypeError ...
    ("4481.log", "jax-tracer-error", None),  # ... then IPython's header of the same exception: one finding
    ("4482.log", "jax-tracer-error", None),  # rich's traceback wraps the sentence after 'where'
    ("4483.log", "jax-tracer-error", None),  # jax.errors.ConcretizationTypeError: ...: traced array with shape uint64[]
    ("4484.log", "jax-tracer-error", None),  # UnfilteredStackTrace: jax.errors.TracerBoolConversionError
    ("4485.log", "jax-tracer-error", None),  # a notebook's JSON record: "message": "Attempted boolean conversion ...
    ("4486.log", "cuda-oom", None),  # XLA:TPU compile permanent error. Ran out of memory in memory space hbm
    ("4487.log", "cuda-oom", None),
    # round 4 (4490-4491), scored blind after round 3
    ("4490.log", "cudnn-init-failed", None),  # Node: '...Conv2D' / DNN library is not found.
    ("4491.log", "cudnn-init-failed", None),
])
def test_the_first_failure_and_its_rank(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


@pytest.mark.parametrize("name", ["4454.log", "4455.log", "4470.log", "4471.log", "4488.log"])
def test_healthy_runs_of_the_rounds_stay_clean(name: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_what_the_tpu_finding_says(tmp_path) -> None:
    # the cause is read from libtpu's words: a holder's pid, a device not permitted, no device
    report = api.diagnose([str(PUBLIC / "4444.log")])
    f = report.findings[0]
    assert "another process holds the TPU" in f.summary
    log = tmp_path / "job.log"
    # pytorch/xla#9604, verbatim
    log.write_text("RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization failed: open(/dev/accel2): "
                   "Operation not permitted\n", encoding="utf-8")
    assert "may not open the TPU device" in api.diagnose([str(log)]).findings[0].summary


def test_a_programs_own_tpu_fallback_is_no_failure(tmp_path) -> None:
    # user code printing its own fallback around the phrase: no libtpu status, no finding
    log = tmp_path / "job.log"
    log.write_text("TPU initialization failed: Could not find TPU. Falling back to GPU/CPU.\n", encoding="utf-8")
    assert ids(api.diagnose([str(log)])) == []


def test_the_onnx_finding_names_the_opset_that_has_the_op(tmp_path) -> None:
    # huggingface/optimum#1331, verbatim
    log = tmp_path / "export.log"
    log.write_text("torch.onnx.errors.UnsupportedOperatorError: Exporting the operator 'aten::tril' to ONNX opset "
                   "version 13 is not supported. Support for this operator was added in version 14, try exporting "
                   "with this version.\n", encoding="utf-8")
    f = api.diagnose([str(log)]).findings[0]
    assert f.id == "onnx-export-unsupported"
    assert "aten::tril" in f.summary and "opset 14" in f.summary


def test_the_inner_exception_joins_the_bare_backend_line() -> None:
    report = api.diagnose([str(PUBLIC / "4450.log")])
    assert len(report.findings) == 1
    assert "CompilationError" in report.findings[0].summary


def test_xla_names_the_nccl_call_and_its_reason() -> None:
    f = api.diagnose([str(PUBLIC / "4466.log")]).findings[0]
    assert "ncclGroupEnd() failed: unhandled cuda error" in f.summary
    assert f.initiating_rank is None  # 'replica 1' / 'replica 0' are devices of one process


def test_onnxruntime_names_the_op_and_its_opset() -> None:
    f = api.diagnose([str(PUBLIC / "4461.log")]).findings[0]
    assert "Pad(13)" in f.summary


def test_the_jax_finding_says_which_use_of_a_tracer_failed() -> None:
    f = api.diagnose([str(PUBLIC / "4484.log")]).findings[0]
    assert "a Python if / while / and / or" in f.summary
    report = api.diagnose([str(PUBLIC / "4481.log")])
    assert ids(report) == ["jax-tracer-error"]  # the filtered trace and the notebook header are one exception
