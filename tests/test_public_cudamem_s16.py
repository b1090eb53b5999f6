"""GPU and memory failures, session 16: the blind round 4400 and up, and the forms it showed.

JAX/XLA's RESOURCE_EXHAUSTED (its BufferAssignment report; the status wrapped by a paste after `Out`), the BFC
allocator of TensorFlow and XLA failing a request (`ran out of memory trying to allocate 1.25TiB (rounded to
...)requested by op`), TensorFlow's `ResourceExhaustedError: 2 root error(s) found.` over its OOM root errors,
ROCm's HIP out of memory, error 35 (the driver older than the CUDA runtime) from Lua Torch, CUDA's samples and
onnxruntime, `no kernel image is available`, a ZeRO-offload rank killed for host memory; TF's benign redzone
message and its `not a failure` BFC warnings as traps.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines, ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected", [
    ("4400.log", "cuda-oom"),
    ("4401.log", "cuda-oom"),
    ("4402.log", "cuda-driver-mismatch"),
    ("4403.log", "cuda-driver-mismatch"),
    ("4404.log", "cuda-driver-mismatch"),
    ("4405.log", "cuda-oom"),
    ("4406.log", "cuda-oom"),
    ("4407.log", "cuda-arch-unsupported"),
    ("4408.log", "cuda-oom"),
    ("4409.log", "process-killed"),
    ("4410.log", "cuda-oom"),
])
def test_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)]))[0] == expected


@pytest.mark.parametrize("name", ["4411.log", "4412.log"])
def test_benign_memory_warnings_are_healthy(name: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_tf_root_errors_header_is_the_oom_not_a_bare_exception() -> None:
    # Azure/MachineLearningNotebooks#880: `ResourceExhaustedError: 2 root error(s) found.` then `(0) Resource
    # exhausted: OOM when allocating tensor ...`: one finding, the OOM, the exception line under it
    report = api.diagnose([str(PUBLIC / "4406.log")])
    assert ids(report) == ["cuda-oom"]
    assert "uncaught-exception" in report.findings[0].also_matched


def test_wrapped_xla_status_reads_its_size() -> None:
    # jax-ml/jax#788: `... Resource exhausted: Out ` / `of memory while trying to allocate 5520758552 bytes.`
    report = api.diagnose([str(PUBLIC / "4410.log")])
    assert "5520758552 bytes" in report.findings[0].summary


def test_bfc_allocator_failure_in_tf1_wording(tmp_path) -> None:
    # a line built from TF 1.x bfc_allocator.cc's template (no thread here printed it): `Allocator (<name>) ran out of
    # memory trying to allocate <size>.  Current allocation summary follows.`
    r = diagnose_lines(tmp_path, [
        "2018-03-01 10:00:00.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:273] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.2KiB.  Current allocation summary follows.",
    ])
    assert ids(r) == ["cuda-oom"]


def test_bfc_allocator_not_a_failure_warning_is_healthy(tmp_path) -> None:
    # talmolab/sleap#587: the non-retrying caller's warning, between healthy epochs
    r = diagnose_lines(tmp_path, [
        "2021-09-29 16:46:34.070863: W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.60GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.",
    ])
    assert ids(r) == []


def test_a_head_without_its_tail_is_nothing(tmp_path) -> None:
    r = diagnose_lines(tmp_path, [
        "Execution of replica 0 failed: Resource exhausted: Out ",
        "step 10 done, wrote 5520758552 bytes",
    ])
    assert ids(r) == []


@pytest.mark.parametrize("name, expected", [
    ("4420.log", "cuda-driver-mismatch"),
    ("4421.log", "cuda-driver-mismatch"),
    ("4422.log", "cublas-error"),
    ("4423.log", "cublas-error"),
    ("4424.log", "cuda-oom"),
    ("4425.log", "cuda-oom"),
    ("4426.log", "cuda-oom"),
    ("4427.log", "process-killed"),
    ("4429.log", "cuda-driver-mismatch"),
])
def test_round_two_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)]))[0] == expected


def test_numba_low_occupancy_warning_is_healthy() -> None:
    assert ids(api.diagnose([str(PUBLIC / "4428.log")])) == []


def test_cntk_cublas_failure_without_a_status_name_is_read_by_its_code(tmp_path) -> None:
    # CNTK releases whose CudaErrString<cublasStatus_t> prints a pointer to cublas_api.h instead of the name
    # (a line built from that template): 13 is CUBLAS_STATUS_EXECUTION_FAILED
    r = diagnose_lines(tmp_path, [
        "CUBLAS failure 13: (see cublas_api.h & look for cublasStatus_t or CUBLAS_STATUS_xxx) ; GPU=0 ; hostname=h ; expr=cublasSgemm(x)",
    ])
    assert ids(r) == ["cublas-error"]
    assert "CUBLAS_STATUS_EXECUTION_FAILED" in r.findings[0].summary


def test_a_request_of_bytes_is_not_zero_gib() -> None:
    # pinokiocomputer/pinokio#941: `Tried to allocate 256 bytes on shared pool`
    report = api.diagnose([str(PUBLIC / "4425.log")])
    assert "tried to allocate 256 bytes" in report.findings[0].summary


@pytest.mark.parametrize("name", ["4440.log", "4441.log", "4442.log", "4443.log"])
def test_xla_illegal_address_is_an_illegal_memory_access(name: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)]))[0] == "cuda-illegal-memory-access"
