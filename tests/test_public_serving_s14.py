"""Serving engines, first seen in the blind public rounds of session 14 (3300-): vLLM's start-up memory-profiling
assertion, a --quantization that contradicts the checkpoint's own quantization config, TGI's and candle's loaders
missing a tensor the model needs, vLLM finding no device; the profile's DEBUG records and the gptq_marlin notice as
healthy traps. Each is named by its own class instead of a generic uncaught exception (or nothing).

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim from
the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines, ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected", [
    ("3300.log", "vllm-memory-profiling-error"),  # V1's wording in the engine core (an XPU whose reading did not move)
    ("3301.log", "quantization-method-mismatch"),  # 0.3's traceback, backticks lost in the paste
    ("3302.log", "quantization-method-mismatch"),  # gptq_marlin, a kernel name, given as the method
    ("3303.log", "state-dict-mismatch"),  # TGI's Weights.get_filename
    ("3304.log", "state-dict-mismatch"),  # candle's CannotFindTensor under Cake: a tied lm_head
    ("3305.log", "cuda-no-device"),  # vLLM's DeviceConfig in a container without its GPUs
    ("3308.log", "vllm-memory-profiling-error"),  # the assertion wrapped over five lines by the reporter
])
def test_failure_is_named_by_its_class_not_a_generic_exception(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


@pytest.mark.parametrize("name", ["3306.log", "3307.log"])
def test_healthy_runs_of_the_round_stay_clean(name: str) -> None:
    # V1's DEBUG records of a healthy memory profile on three TP workers; 0.5's notice that gptq was forced
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_the_profiles_numbers_are_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "3300.log")]).findings[0].summary
    assert "30.3 GiB" in summary and "stayed" in summary


def test_free_memory_that_grew_is_said_so(tmp_path) -> None:
    # vllm-project/vllm#56830's numbers, on one line as vLLM prints them
    line = ("(EngineCore_DP0 pid=1) ERROR 09-14 10:00:00 [core.py:700] AssertionError: Error in memory profiling. "
            "Initial free memory 82.94 GiB, current free memory 90.17 GiB. This happens when other processes sharing "
            "the same container release GPU memory while vLLM is profiling during initialization. To fix this, ensure "
            "consistent GPU memory allocation or isolate vLLM in its own container.")
    report = diagnose_lines(tmp_path, [line])
    assert ids(report) == ["vllm-memory-profiling-error"]
    assert "from 82.94 GiB to 90.17 GiB" in report.findings[0].summary


def test_the_memory_profiling_assertion_outranks_the_engines_death(tmp_path) -> None:
    lines = [
        "(EngineCore_DP0 pid=418) ERROR 01-29 15:38:21 [core.py:946] AssertionError: Error in memory profiling. "
        "Initial free memory 30.3 GiB, current free memory 30.3 GiB. This happens when other processes sharing the "
        "same container release GPU memory while vLLM is profiling during initialization.",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
    assert ids(diagnose_lines(tmp_path, lines)) == ["vllm-memory-profiling-error"]


def test_both_methods_are_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "3302.log")]).findings[0].summary
    assert "quant_method gptq" in summary and "--quantization gptq_marlin" in summary


def test_the_missing_tensor_and_the_tied_head_are_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "3304.log")]).findings[0].summary
    assert "'lm_head.weight'" in summary and "ties the output head" in summary


def test_tgis_shard_failure_after_the_missing_tensor_is_collateral(tmp_path) -> None:
    # huggingface/text-generation-inference#1608's exception line, then the launcher's lines that follow it
    lines = [
        "RuntimeError: weight model.layers.0.self_attn.q_proj.weight does not exist",
        " rank=0",
        "2024-02-29T03:25:58.928974Z ERROR text_generation_launcher: Shard 0 failed to start",
        "Error: ShardCannotStart",
    ]
    assert ids(diagnose_lines(tmp_path, lines)) == ["state-dict-mismatch"]


def test_a_file_that_does_not_exist_is_not_a_missing_tensor(tmp_path) -> None:
    assert "state-dict-mismatch" not in ids(diagnose_lines(tmp_path, ["RuntimeError: weight file /data/x does not exist"]))


# round 2 (3310-3312), scored blind after the round-1 fixes
@pytest.mark.parametrize("name, expected", [
    ("3310.log", "tensor-parallel-indivisible"),  # AWQ's group alignment under --tensor-parallel-size 2
    ("3311.log", "tensor-parallel-indivisible"),  # validate_fp8_block_shape's block_k under V1 workers
    ("3312.log", "cuda-no-device"),  # UnspecifiedPlatform, then the API server starts; the RuntimeError cut
])
def test_round_2_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


def test_the_quantized_block_is_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "3311.log")]).findings[0].summary
    assert "192" in summary and "128-wide fp8 quantization block" in summary


def test_marlins_tile_check_is_a_tensor_parallel_split(tmp_path) -> None:
    # vllm/model_executor/layers/quantization/utils/marlin_utils.py verify_marlin_supports_shape's words
    line = ("ValueError: Weight output_size_per_partition = 32 is not divisible by min_thread_n = 64. Consider reducing "
            "tensor_parallel_size or running with --quantization gptq.")
    report = diagnose_lines(tmp_path, [line])
    assert ids(report) == ["tensor-parallel-indivisible"] and "Marlin kernel tile" in report.findings[0].summary


def test_vllm_imported_without_a_gpu_and_no_server_is_quiet(tmp_path) -> None:
    line = "INFO 05-14 04:44:35 [__init__.py:243] No platform detected, vLLM is running on UnspecifiedPlatform"
    assert ids(diagnose_lines(tmp_path, [line])) == []


def test_the_unspecified_platform_and_the_runtime_error_are_one_finding(tmp_path) -> None:
    lines = ["INFO 05-14 04:44:35 [__init__.py:243] No platform detected, vLLM is running on UnspecifiedPlatform",
             "INFO 05-14 04:44:37 [api_server.py:1034] vLLM API server version 0.8.4",
             "RuntimeError: Failed to infer device type"]
    report = diagnose_lines(tmp_path, lines)
    assert ids(report) == ["cuda-no-device"]


# round 3 (3320-3324), scored blind after the round-2 fixes
@pytest.mark.parametrize("name, expected", [
    ("3320.log", "quantization-method-unknown"),  # vLLM 0.2's registry without GPTQ, in the config traceback
    ("3321.log", "quantization-method-unknown"),  # the same words alone, without their exception type
    ("3322.log", "quantization-method-unknown"),  # pydantic's 'Value error, ', an empty method name, the list cut
    ("3323.log", "attention-head-size-unsupported"),  # the paged-attention kernel's dispatch: head size 32
])
def test_round_3_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


def test_round_3_gptq_benchmark_start_up_stays_clean() -> None:
    # gptq_marlin chosen at runtime, eager mode without async output, NCCL_CUMEM_ENABLE at 0
    assert ids(api.diagnose([str(PUBLIC / "3324.log")])) == []


def test_the_unknown_method_and_what_the_release_knows_are_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "3320.log")]).findings[0].summary
    assert "'gptq'" in summary and "it knows awq, squeezellm" in summary


def test_an_empty_method_name_is_said_so() -> None:
    summary = api.diagnose([str(PUBLIC / "3322.log")]).findings[0].summary
    assert "empty quant_method" in summary and "it knows" not in summary  # the pasted list is cut


@pytest.mark.parametrize("line", [
    # vllm/model_executor/layers/quantization/__init__.py get_quantization_config
    "ValueError: Invalid quantization method: kitchen_int8",
    # vllm/transformers_utils/configs/mistral.py
    "(APIServer pid=44) Value error, Found unknown quantization='{'qformat_weight': 'fp8_e4m3'}' in config",
    # transformers' quantizers/auto.py
    "ValueError: Unknown quantization type, got exl3 - supported types are: ['awq', 'bitsandbytes_4bit', 'gptq']",
])
def test_other_wordings_of_an_unknown_quantization_method(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == ["quantization-method-unknown"]


def test_transformers_skipping_an_unknown_quantization_is_not_a_failure(tmp_path) -> None:
    line = ("Unknown quantization type, got llvq - supported types are: ['awq', 'gptq']. Hence, we will skip the "
            "quantization. To remove the warning, you can delete the quantization_config attribute in config.json")
    assert "quantization-method-unknown" not in ids(diagnose_lines(tmp_path, [line]))


def test_the_unknown_method_outranks_the_engines_death(tmp_path) -> None:
    lines = [
        "(EngineCore_DP0 pid=9) ERROR 08-19 10:00:00 [core.py:700] ValueError: Unknown quantization method: mxfp4. "
        "Must be one of ['awq', 'fp8', 'gptq'].",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
    assert ids(diagnose_lines(tmp_path, lines)) == ["quantization-method-unknown"]


@pytest.mark.parametrize("line, size", [
    ("ValueError: head_size (100) is not supported. Supported head sizes: [64, 80, 96, 128].", "100"),
    ("ValueError: Head size 160 is not supported by PagedAttention. Supported head sizes are: [64, 80, 96, 112, 128, "
     "256].", "160"),
    ("(EngineCore_DP0 pid=7) ERROR 08-05 10:00:00 [core.py:700] ValueError: Head size 40 is not supported by "
     "MLACommon. Supported head sizes are: [576]. Set VLLM_ATTENTION_BACKEND=FLEX_ATTENTION to use FlexAttention "
     "backend which supports all head sizes.", "40"),
])
def test_the_head_size_checks_of_each_release(tmp_path, line: str, size: str) -> None:
    report = diagnose_lines(tmp_path, [line])
    assert ids(report) == ["attention-head-size-unsupported"]
    assert f"head size {size}" in report.findings[0].summary


def test_the_flash_attention_fallback_notice_is_quiet(tmp_path) -> None:
    line = "INFO 04-17 20:54:09 [cuda.py:292] Cannot use FlashAttention-2 backend for head size 88."
    assert ids(diagnose_lines(tmp_path, [line])) == []


# round 4 (3330-3335), scored blind after the round-3 fixes
@pytest.mark.parametrize("name, expected", [
    ("3330.log", "quantization-method-unknown"),  # transformers without fp8: DeepSeek-V3's traceback
    ("3331.log", "quantization-method-unknown"),  # an AutoFP8 checkpoint under an older transformers' list
    ("3332.log", "quantization-method-unknown"),  # the error line alone
    ("3333.log", "quantization-method-unknown"),  # behind torchrun's [rank1]: prefix
    ("3334.log", "dependency-missing"),  # Llama 3.1's rope_scaling under a transformers before 4.43, no exception type
])
def test_round_4_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


def test_round_4_flash_attention_warnings_of_a_working_server_stay_clean() -> None:
    assert ids(api.diagnose([str(PUBLIC / "3335.log")])) == []


def test_the_new_rope_type_is_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "3334.log")]).findings[0].summary
    assert "rope_type llama3" in summary and "transformers is older than the model's config" in summary


def test_a_newer_rope_scaling_type_is_a_version_problem(tmp_path) -> None:
    line = "ValueError: `rope_scaling`'s type field must be one of ['linear', 'dynamic'], got longrope"
    report = diagnose_lines(tmp_path, [line])
    assert ids(report) == ["dependency-missing"] and "longrope" in report.findings[0].summary


def test_a_malformed_two_field_rope_scaling_is_not_a_version_problem(tmp_path) -> None:
    line = ("ValueError: `rope_scaling` must be a dictionary with with two fields, `type` and `factor`, got "
            "{'type': 'linear', 'factor': 2.0, 'scale': 4}")
    assert "dependency-missing" not in ids(diagnose_lines(tmp_path, [line]))


# round 5 (3340-3341), scored blind after the round-4 fix
@pytest.mark.parametrize("name, limit", [
    ("3340.log", "64, 128, 256 only"),  # FlashAttention-3's Hopper build; the exception line indented by one space
    ("3341.log", "only 128"),  # a V100 port's own wording
])
def test_round_5_flash_attentions_head_size_limits(name: str, limit: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report) == ["attention-head-size-unsupported"] and limit in report.findings[0].summary


@pytest.mark.parametrize("line", [
    "RuntimeError: FlashAttention forward only supports head dimension at most 256",
    "RuntimeError: CK FlashAttention backward only supports head dimension at most 256",
    "RuntimeError: head_size should be a multiple of 8",
])
def test_flash_attentions_own_head_size_checks(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == ["attention-head-size-unsupported"]
