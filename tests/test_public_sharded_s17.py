"""Sharded / large-scale training stacks, blind public rounds 4323- (session 17): Megatron's parallel-state check
of the world size against TP x PP (x CP, x EP) and DeepSpeed's MoE group helper's bare 'N is not divisible by M',
ZeRO checkpoints resumed on another data-parallel size, FSDP / FSDP2 mixed-precision dtype errors (ATen's scalar
type check, autograd's gradient setter with and without grad_dtype), FSDP2 + TP full-state-dict loads; the
FP16_Optimizer's first loss-scale reduction as a healthy trap.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment, or written from the framework's message template (named in the comment).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines, ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected", [
    ("4323.log", "parallel-world-size-mismatch"),  # NeMo recipe, TP x PP = 2, one process
    ("4324.log", "parallel-world-size-mismatch"),  # DeepSpeed MoE ep_size 8 on 4 GPUs (_ensure_divisibility)
    ("4325.log", "checkpoint-world-size-mismatch"),
    ("4326.log", "dtype-mismatch"),  # FSDP MixedPrecision bf16, an fp32 operand in the attention matmul
    ("4327.log", "dtype-mismatch"),  # FSDP2: bf16 gradient into an fp32 parameter's grad_dtype
    ("4328.log", "state-dict-mismatch"),
])
def test_round1_first_finding(name: str, expected: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected


def test_round1_trap_stays_quiet() -> None:
    # cybertronai/transformer-xl#2: FP16_Optimizer's debug prints and one loss-scale halving, harmless
    assert api.diagnose([str(PUBLIC / "4329.log")]).verdict in ("clean", "benign")


def test_the_parallel_check_is_not_named_on_a_rank(tmp_path) -> None:
    # every rank checks the same sizes against the same world size: the rank that printed it did not start it
    report = api.diagnose([str(PUBLIC / "4323.log")])
    assert report.findings[0].id == "parallel-world-size-mismatch"
    assert "uncaught-exception" not in ids(report)


@pytest.mark.parametrize("line", [
    # Megatron-LM megatron/core/parallel_state.py, 2022-2023 and 2023+ (context parallel) wordings
    "RuntimeError: world_size (6) is not divisible by tensor_model_parallel_size (4) x pipeline_model_parallel_size (1)",
    "RuntimeError: world_size (12) is not divisible by tensor_model_parallel_size (8) x pipeline_model_parallel_size (1) "
    "x context_parallel_size (1)",
    # the MoE fold, with and without 'decoder ' (NVIDIA-NeMo/Speech#14838's title; THUDM/slime#1818)
    "RuntimeError: decoder world_size (4) is not divisible by expert_tensor_model_pipeline_parallel size (8)",
    "RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)",
    "RuntimeError: data_parallel_size (2) is not divisible by expert_model_parallel_size ",
    # vLLM / SGLang distributed/parallel_state.py (open-compass/VLMEvalKit#561)
    "RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (1) x pipeline_model_parallel_size (1). ",
])
def test_parallel_state_wordings(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line]))[0] == "parallel-world-size-mismatch"


def test_a_bare_divisibility_assert_elsewhere_is_not_the_launch(tmp_path) -> None:
    # Megatron's core/utils.py ensure_divisibility also checks heads per partition: that is the model, not the world
    report = diagnose_lines(tmp_path, [
        '  File "/workspace/Megatron-LM/megatron/core/utils.py", line 34, in ensure_divisibility',
        '    assert numerator % denominator == 0, "{} is not divisible by {}".format(numerator, denominator)',
        "AssertionError: 32 is not divisible by 3",
    ])
    assert "parallel-world-size-mismatch" not in ids(report)


def test_old_megatron_mpu_helper_under_initialize_model_parallel(tmp_path) -> None:
    # megatron/mpu/initialize.py initialize_model_parallel -> megatron/mpu/utils.py ensure_divisibility (2019-2022)
    report = diagnose_lines(tmp_path, [
        "Traceback (most recent call last):",
        '  File "/workspace/Megatron-LM/megatron/mpu/initialize.py", line 65, in initialize_model_parallel',
        "    ensure_divisibility(world_size, model_parallel_size)",
        '  File "/workspace/Megatron-LM/megatron/mpu/utils.py", line 28, in ensure_divisibility',
        "    assert numerator % denominator == 0, '{} is not divisible by {}'.format(",
        "AssertionError: 4 is not divisible by 8",
    ])
    assert ids(report)[0] == "parallel-world-size-mismatch"


def test_grad_setter_device_check_is_not_dtype(tmp_path) -> None:
    # torch/csrc/autograd/python_variable.cpp THPVariable_set_grad: the device-type check beside the dtype one
    report = diagnose_lines(tmp_path, [
        "RuntimeError: attempting to assign a gradient with device type 'cpu' to a tensor with device type 'cuda'. "
        "Please ensure that the gradient and the tensor are on the same device",
    ])
    assert "dtype-mismatch" not in ids(report)
