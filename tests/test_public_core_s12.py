"""PyTorch core and numerics, session 12: the families behind the blind round 2500-2519, as users pasted them.

cuDNN and cuBLAS status errors across releases (torch 0.4's bare status, 1.0's `CuDNN error:`, THC's `cublas runtime
error : ...`, the cuDNN v8 frontend's `GET was unable to find an engine`), an operator the Apple MPS backend lacks,
ROCm's wordings of a build without kernels for the GPU, a THC-era device assert wrapped by the terminal, dynamo's
own tracing failures, and a shared-memory mapping that failed. Every input is read from the excerpt in
sample_logs/public/<N>.log (verbatim from the public thread its MANIFEST.toml entry names), cut to what the case needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines as diagnose, ids

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def excerpt(n: int, lines: slice = slice(None)) -> list[str]:
    return (PUBLIC / f"{n}.log").read_text(encoding="utf-8").splitlines()[lines]


@pytest.mark.parametrize("n, status", [
    (2503, "CUDNN_STATUS_MAPPING_ERROR"),   # cuDNN error: ... (torch 1.x)
    (2504, "CUDNN_STATUS_MAPPING_ERROR"),   # torch 0.4: the bare status is the exception's message
    (1105, "CUDNN_STATUS_INTERNAL_ERROR"),
    (1106, "CUDNN_STATUS_INTERNAL_ERROR"),  # torch 1.0: CuDNN error: ...
])
def test_a_cudnn_status_error_is_cudnn_error_naming_the_status(tmp_path, n, status):
    r = diagnose(tmp_path, excerpt(n))
    assert ids(r) == ["cudnn-error"]
    assert status in r.findings[0].summary


def test_the_v8_frontend_finding_no_engine_is_cudnn_error(tmp_path):
    r = diagnose(tmp_path, excerpt(2505))
    assert ids(r) == ["cudnn-error"]
    assert "no engine" in r.findings[0].summary


def test_the_frontends_skipped_plan_warning_is_no_error(tmp_path):
    assert ids(diagnose(tmp_path, excerpt(1821))) == []


@pytest.mark.parametrize("n, status", [
    (2507, "CUBLAS_STATUS_INVALID_VALUE"),      # the paste's own line breaks inside the call
    (2508, "CUBLAS_STATUS_INVALID_VALUE"),
    (1116, "CUBLAS_STATUS_EXECUTION_FAILED"),
    (1808, "CUBLAS_STATUS_NOT_INITIALIZED"),
    (2522, "the GPU program failed to execute"),  # THC (torch <= 1.4)
])
def test_a_cublas_status_error_is_cublas_error(tmp_path, n, status):
    r = diagnose(tmp_path, excerpt(n))
    assert ids(r) == ["cublas-error"]
    assert status in r.findings[0].summary


def test_cublas_out_of_memory_stays_cuda_oom_and_a_bf16_gemm_stays_dtype_unsupported(tmp_path):
    assert ids(diagnose(tmp_path, excerpt(1100))) == ["cuda-oom"]
    assert ids(diagnose(tmp_path, excerpt(2111))) == ["dtype-unsupported"]


@pytest.mark.parametrize("n, op", [
    (2519, "aten::isin.Tensor_Tensor_out"),
    (2518, "aten::_index_put_impl_"),      # torch 1.12's "is not current implemented"
    (2502, "aten::searchsorted.Tensor"),   # libc++abi: the C++ caller aborted
])
def test_an_op_the_mps_backend_lacks_is_mps_op_unsupported_naming_the_op(tmp_path, n, op):
    r = diagnose(tmp_path, excerpt(n))
    assert ids(r) == ["mps-op-unsupported"]
    assert op in r.findings[0].summary


def test_the_mps_fallback_warning_is_healthy_and_the_error_after_it_is_the_failure(tmp_path):
    assert ids(diagnose(tmp_path, excerpt(2520))) == []
    assert ids(diagnose(tmp_path, excerpt(2521))) == ["mps-op-unsupported"]


@pytest.mark.parametrize("n", [2500, 2501])
def test_rocm_wordings_of_a_build_without_kernels_for_the_gpu_are_cuda_arch_unsupported(tmp_path, n):
    assert ids(diagnose(tmp_path, excerpt(n))) == ["cuda-arch-unsupported"]


def test_a_thc_device_assert_the_terminal_wrapped_is_still_the_device_assert(tmp_path):
    r = diagnose(tmp_path, excerpt(2506))
    assert ids(r) == ["cuda-device-assert"]
    assert len(r.findings[0].evidence) == 1  # one per kernel site, not one per failing thread


@pytest.mark.parametrize("n", [2509, 2510])
def test_dynamo_failing_while_it_traces_is_a_compile_failure(tmp_path, n):
    assert ids(diagnose(tmp_path, excerpt(n))) == ["torch-compile-failed"]


def test_a_failed_shared_memory_mapping_is_shm_exhausted(tmp_path):
    assert ids(diagnose(tmp_path, excerpt(2511))) == ["shm-exhausted"]


@pytest.mark.parametrize("n", [2514, 2515, 2516, 2517])
def test_attention_and_load_warnings_are_healthy(tmp_path, n):
    assert ids(diagnose(tmp_path, excerpt(n))) == []


# --- round 2 (2523-2535), after round 1's fixes ---

def test_rocms_memory_access_fault_is_an_illegal_memory_access(tmp_path):
    r = diagnose(tmp_path, excerpt(2523))
    assert ids(r)[0] == "cuda-illegal-memory-access"
    assert "Page not present" in r.findings[0].summary


@pytest.mark.parametrize("n", [2524, 2525])
def test_rocblas_without_tensile_kernels_for_the_gpu_is_cuda_arch_unsupported(tmp_path, n):
    r = diagnose(tmp_path, excerpt(n))
    assert ids(r) == ["cuda-arch-unsupported"]
    assert len(r.findings[0].evidence) == 1  # `Cannot read` and `Could not initialize Tensile host`: one failure


def test_the_gfx_target_rocblas_names_is_in_the_summary(tmp_path):
    assert "gfx1201" in diagnose(tmp_path, excerpt(2525)).findings[0].summary


@pytest.mark.parametrize("n, built", [(2526, "(8, 5, 0)"), (2527, "(8, 3, 2)"), (2528, "7102")])
def test_torchs_cudnn_version_check_is_cudnn_error_naming_both_versions(tmp_path, n, built):
    r = diagnose(tmp_path, excerpt(n))
    assert ids(r) == ["cudnn-error"]
    assert built in r.findings[0].summary


def test_the_cudnn_frontend_error_is_cudnn_error(tmp_path):
    assert ids(diagnose(tmp_path, excerpt(2529))) == ["cudnn-error"]


@pytest.mark.parametrize("n", [2530, 2531])
def test_float64_on_apples_gpu_is_dtype_unsupported(tmp_path, n):
    r = diagnose(tmp_path, excerpt(n))
    assert ids(r) == ["dtype-unsupported"]
    assert "float64" in r.findings[0].summary


def test_dynamos_unsupported_is_a_compile_failure(tmp_path):
    r = diagnose(tmp_path, excerpt(2532))
    assert ids(r) == ["torch-compile-failed"]
    assert "non-Tensor" in r.findings[0].summary


@pytest.mark.parametrize("n", [2533, 2534, 2535])
def test_hipblaslt_fallback_nvrtc_workaround_and_graph_break_records_are_healthy(tmp_path, n):
    assert ids(diagnose(tmp_path, excerpt(n))) == []


# --- round 3 (2536-2539) ---

@pytest.mark.parametrize("n", [2536, 2537])
def test_a_nan_parameter_torch_distributions_refuses_is_a_nonfinite_stop(tmp_path, n):
    r = diagnose(tmp_path, excerpt(n))
    assert ids(r) == ["nan-persistent"]
    assert "uncaught-exception" not in ids(r)


def test_a_distribution_refusal_split_over_lines_points_at_the_exception_line(tmp_path):
    r = diagnose(tmp_path, excerpt(2536))
    assert r.findings[0].evidence[0].line == 15  # `ValueError: Expected parameter loc ...`, not the tensor's line


@pytest.mark.parametrize("n", [2538, 2539])
def test_pickle_truncated_under_torch_load_is_checkpoint_corrupt_even_without_the_traceback_head(tmp_path, n):
    assert ids(diagnose(tmp_path, excerpt(n))) == ["checkpoint-corrupt"]


def test_the_rocm_builds_hipblas_status_is_cublas_error(tmp_path):
    # round 4, 2540
    r = diagnose(tmp_path, excerpt(2540))
    assert ids(r) == ["cublas-error"]
    assert "HIPBLAS_STATUS_NOT_SUPPORTED" in r.findings[0].summary


# --- round 5 (2541-2545) ---

def test_an_fp16_kernel_the_cpu_lacks_is_dtype_unsupported(tmp_path):
    r = diagnose(tmp_path, excerpt(2541))
    assert ids(r) == ["dtype-unsupported"]
    assert "addmm_impl_cpu_" in r.findings[0].summary


@pytest.mark.parametrize("n", [2544, 2545])
def test_a_random_generator_on_another_device_is_device_mismatch(tmp_path, n):
    assert ids(diagnose(tmp_path, excerpt(n))) == ["device-mismatch"]
