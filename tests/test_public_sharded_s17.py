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


# round 2 (4330-4334), scored blind after round 1's fixes
@pytest.mark.parametrize("name, expected", [
    ("4330.log", "dtensor-mixed-tensor"),  # torchtune LoRA: aten.mm with a DTensor weight and a plain tensor
    ("4331.log", "checkpoint-parallel-layout-mismatch"),  # Megatron: a TP=1 checkpoint loaded with TP=2
    ("4332.log", "state-dict-mismatch"),  # TP=4 shards loaded on one card, the header not pasted
    ("4334.log", "extension-build-mismatch"),  # DeepSpeed's cpu_adam op: undefined symbol curandCreateGenerator
])
def test_round2_first_finding(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)]))[0] == expected


def test_round2_trap_stays_quiet() -> None:
    # om-ai-lab/VLM-R1#304: ZeRO-3's 'Invalidate trace cache' between normal GRPO lines
    assert api.diagnose([str(PUBLIC / "4333.log")]).verdict in ("clean", "benign")


def test_every_rank_raising_the_dtensor_error_names_no_rank() -> None:
    # 4330: rank 1's error, then rank 7's traceback: the same code on every shard, no first rank
    f = api.diagnose([str(PUBLIC / "4330.log")]).findings[0]
    assert (f.id, f.initiating_rank) == ("dtensor-mixed-tensor", None)


@pytest.mark.parametrize("line, expected", [
    # megatron/checkpointing.py check_checkpoint_args: the parallel sizes are the layout ...
    ("[rank3]: AssertionError: pipeline_model_parallel_size value from checkpoint (2) is not equal to the input "
     "argument value (4).", "checkpoint-parallel-layout-mismatch"),
    # ... the 2020 name of the tensor size
    ("AssertionError: model_parallel_size value from checkpoint (2) is not equal to the input argument value (1).",
     "checkpoint-parallel-layout-mismatch"),
    # torch/distributed/tensor/_dispatch.py, under Ray's prefix
    ("(main_task pid=4129158) RuntimeError: aten.copy_.default: got mixed torch.Tensor and DTensor, need to convert all "
     "torch.Tensor to DTensor before calling distributed operators!", "dtensor-mixed-tensor"),
])
def test_round2_wordings(tmp_path, line: str, expected: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line]))[0] == expected


def test_a_model_shape_argument_is_not_the_layout(tmp_path) -> None:
    # the same _compare on num_layers: another model, not another parallel split
    report = diagnose_lines(tmp_path, [
        "AssertionError: num_layers value from checkpoint (24) is not equal to the input argument value (32).",
    ])
    assert "checkpoint-parallel-layout-mismatch" not in ids(report)


# round 3 (4335-4336), scored blind after round 2's fixes
@pytest.mark.parametrize("name", ["4335.log", "4336.log"])
def test_round3_gemini_unreduced_gradients(name: str) -> None:
    # hpcaitech/ColossalAI#4970 (GeminiDDP, the exception line), #3176 (ZeroDDP, the message without its head)
    f = api.diagnose([str(PUBLIC / name)]).findings[0]
    assert (f.id, f.initiating_rank) == ("zero-ddp-unreduced-grads", None)


def test_gemini_tuple_message_over_lines(tmp_path) -> None:
    # hpcaitech/ColossalAI#5184: the tuple's strings printed one per line after `RuntimeError: (`
    report = diagnose_lines(tmp_path, [
        "RuntimeError: (",
        "\"ZERO DDP error: the synchronization of gradients doesn't exit properly.\",",
        "'The most possible reason is that the model is not compatible with GeminiDDP.\\n',",
    ])
    assert ids(report)[0] == "zero-ddp-unreduced-grads"


def test_gemini_raise_line_alone_is_no_error(tmp_path) -> None:
    report = diagnose_lines(tmp_path, [
        '  File "/opt/conda/lib/python3.10/site-packages/colossalai/zero/gemini/gemini_ddp.py", line 314, in _post_backward',
        "    raise RuntimeError(\"ZERO DDP error: the synchronization of gradients doesn't exit properly.\",",
    ])
    assert "zero-ddp-unreduced-grads" not in ids(report)


# round 4 (4337-4338), scored blind after round 3's fix
@pytest.mark.parametrize("name, expected", [
    ("4337.log", "state-dict-mismatch"),  # Megatron dist_checkpointing: Global shape mismatch for loaded ... (Cosmos/NeMo)
    ("4338.log", "zero3-param-partitioned"),  # ZeRO-3 placeholder weight into F.embedding, frame paths wrapped by the paste
])
def test_round4_first_finding(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)]))[0] == expected


def test_dist_checkpointing_zarr_local_shape_wording(tmp_path) -> None:
    # megatron/core/dist_checkpointing/strategies/zarr.py (2023): the local-chunk variant of the same check
    report = diagnose_lines(tmp_path, [
        "megatron.core.dist_checkpointing.core.CheckpointingException: Local shape mismatch for loaded ((512, 768)) "
        "and expected ((1024, 768)) tensor for key model.embedding.position_embeddings.weight",
    ])
    assert ids(report)[0] == "state-dict-mismatch"
