"""Trainer set-up failures first seen in the blind public rounds 2650-2669, 2671-2684, 2685-2693 and 2694-2699 (session 12): ZeRO-3 / FSDP
sharded weights used outside the engine, empty training datasets, cuDNN that cannot initialise under JAX / TensorFlow,
timm's model registry, Lightning's Trainer without a GPU, OpenMMLab's mmcv version check, tf.data batches of unequal
images; imports that fail, weights left on the meta device, embedding indices past the table, DeepSpeed without
CUDA_HOME, ZeRO's no_sync under gradient accumulation, Lightning forking after CUDA; fp16 kernels the CPU lacks,
collate's torch.stack over unequal samples, FlashAttention's sm80 check, PEFT without default target modules; optimizer
states that do not fit on resume, optimizers given no trainable parameter, Keras with no gradient. Each is named by its own class instead of a generic uncaught exception (or nothing).

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
    ("2650.log", "zero3-param-partitioned"),  # the empty Parameter printed after the error
    ("2651.log", "zero3-param-partitioned"),  # [rank1]: prefix, PEFT's LoRA embedding
    ("2652.log", "zero3-param-partitioned"),
    ("2653.log", "dataset-empty"),  # accelerate's re-raise after it
    ("2654.log", "dataset-empty"),  # torch 1.x, python 3.6
    ("2670.log", "dataset-empty"),  # LLaMA-Factory's own check
    ("2655.log", "cudnn-init-failed"),  # XLA's log lines only, no exception
    ("2656.log", "cudnn-init-failed"),  # a notebook's XlaRuntimeError cell after it
    ("2657.log", "cudnn-init-failed"),  # TensorFlow's 2 root error(s)
    ("2658.log", "registry-type-not-found"),  # timm's create_model
    ("2659.log", "registry-type-not-found"),
    ("2660.log", "cuda-no-device"),  # Lightning 0.x: the message on the lines after the exception type
    ("2661.log", "cuda-no-device"),  # Hydra's repr of the exception
    ("2662.log", "dependency-missing"),  # mmcv newer than mmdet supports
    ("2663.log", "dependency-missing"),
    ("2665.log", "batch-not-padded"),  # tf.data
    ("2671.log", "dependency-missing"),  # ModuleNotFoundError of a package
    ("2672.log", "dependency-missing"),  # a module another transformers release does not have
    ("2673.log", "dependency-missing"),  # cannot import name, peft newer than transformers
    ("2674.log", "dependency-missing"),
    ("2675.log", "dependency-missing"),  # transformers' require_version
    ("2676.log", "meta-tensor-copy"),
    ("2677.log", "meta-tensor-copy"),  # torch 2.1+ wording
    ("2678.log", "embedding-index-out-of-range"),
    ("2679.log", "embedding-index-out-of-range"),  # a notebook traceback
    ("2680.log", "extension-build-failed"),  # DeepSpeed's MissingCUDAException
    ("2681.log", "zero-no-sync-unsupported"),
    ("2682.log", "cuda-forked-subprocess"),  # Lightning's ddp_notebook check
    ("2685.log", "dtype-unsupported"),  # fp16 LayerNorm on the CPU
    ("2686.log", "dtype-unsupported"),  # the paste lost the closing quote
    ("2687.log", "batch-not-padded"),  # inside a DataLoader worker's re-raise
    ("2688.log", "batch-not-padded"),
    ("2689.log", "batch-not-padded"),
    ("2690.log", "cuda-arch-unsupported"),  # flash-attn's backward on a T4
    ("2691.log", "cuda-arch-unsupported"),
    ("2692.log", "peft-target-modules-not-found"),
    ("2694.log", "optimizer-state-mismatch"),
    ("2695.log", "optimizer-state-mismatch"),  # bitsandbytes' 8-bit optimizer
    ("2696.log", "no-trainable-parameters"),  # behind a GUI's '[training STDERR] ' relay
    ("2697.log", "no-trainable-parameters"),
    ("2698.log", "autograd-no-grad"),  # TensorFlow's wording
    ("2699.log", "no-trainable-parameters"),
])
def test_set_up_failure_is_named_by_its_class_not_a_generic_exception(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


@pytest.mark.parametrize("name", ["2666.log", "2667.log", "2668.log", "2669.log", "2683.log", "2684.log", "2693.log"])
def test_healthy_runs_of_the_round_stay_clean(name: str) -> None:
    # Keras 3 and tf.keras early stopping (a loss that rises for two epochs before the stop), TensorFlow's cudart
    # warning on a machine without CUDA, TensorFlow's start-up lines, the tokenizer's maximum-length warning
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_the_cudnn_versions_are_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "2655.log")]).findings[0].summary
    assert "(9.10.1)" in summary and "(9.13.1)" in summary


def test_the_mmcv_range_the_package_wants_is_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "2662.log")]).findings[0].summary
    assert "MMCV 2.2.0" in summary and "mmcv>=2.0.0rc4, <2.2.0" in summary


def test_the_rank_that_raised_is_named() -> None:
    assert "on rank 1" in api.diagnose([str(PUBLIC / "2651.log")]).findings[0].summary


@pytest.mark.parametrize("line", [
    # the library's own raise / call lines in a traceback are no failure by themselves
    '    raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")',  # kohya_ss#2660
    "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)",  # LlamaFactory#3446
    "    raise RuntimeError('Unknown model (%s)' % model_name)",  # SpikingResformer#1
    '    raise RuntimeError("Cannot find valid samples, check `data/README.md` for the data format.")',  # LlamaFactory#2577
    '    raise MissingCUDAException("CUDA_HOME does not exist, unable to compile CUDA op(s)")',  # vixtts-demo#12
    "    from transformers.deepspeed import is_deepspeed_zero3_enabled",  # DB-GPT-Hub#295
    '    raise ValueError("optimizer got an empty parameter list")',  # pruning-from-scratch#4
    '    raise ValueError("loaded state dict contains a parameter group "',  # stereo-transformer#58
])
def test_source_lines_that_quote_the_message_are_not_the_failure(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == []


def test_lightning_seeing_fewer_gpus_than_asked_is_not_a_missing_gpu(tmp_path) -> None:
    # ray-project/ray_lightning#32: a Ray worker given one GPU while the Trainer asks for two
    found = ids(diagnose_lines(tmp_path, ["(pid=1521999)  But your machine only has: [0]"]))
    assert found == ["parallel-size-exceeds-gpus"]


def test_a_cudnn_plan_warning_is_not_an_initialisation_failure() -> None:
    # 1821.log: torch's cuDNN v8 API falls back to another plan and the run goes on
    assert "cudnn-init-failed" not in ids(api.diagnose([str(PUBLIC / "1821.log")]))


def test_a_circular_import_in_the_code_is_not_a_missing_dependency(tmp_path) -> None:
    # CPython's wording for an import cycle in the user's own modules: the generic exception, not dependency-missing
    line = ("ImportError: cannot import name 'Trainer' from partially initialized module 'trainer' "
            "(most likely due to a circular import) (/work/trainer.py)")
    assert "dependency-missing" not in ids(diagnose_lines(tmp_path, [line]))


def test_a_missing_flash_attn_module_is_flash_attention_unavailable(tmp_path) -> None:
    assert ids(diagnose_lines(tmp_path, ["ModuleNotFoundError: No module named 'flash_attn'"])) == ["flash-attention-unavailable"]


def test_the_missing_module_and_the_removed_name_are_in_the_summary() -> None:
    assert "transformers.deepspeed" in api.diagnose([str(PUBLIC / "2672.log")]).findings[0].summary
    assert "transformers has no EncoderDecoderCache" in api.diagnose([str(PUBLIC / "2673.log")]).findings[0].summary


def test_the_zero_stage_is_in_the_summary() -> None:
    assert "ZeRO stage 2" in api.diagnose([str(PUBLIC / "2681.log")]).findings[0].summary


def test_a_compile_failure_caused_by_an_import_stays_the_compile_failure() -> None:
    # 305.log: inductor's import of triton fails inside BackendCompilerFailed: the compile failure is what the user sees
    assert ids(api.diagnose([str(PUBLIC / "305.log")]))[0] == "torch-compile-failed"


def test_a_kernel_given_integer_or_float_labels_is_a_dtype_mismatch_not_a_precision_problem(tmp_path) -> None:
    # aten's AT_DISPATCH wording with a dtype that is not a low precision: the tensors have the wrong type
    line = "RuntimeError: \"nll_loss_forward_reduce_cuda_kernel_2d_index\" not implemented for 'Float'"
    assert ids(diagnose_lines(tmp_path, [line])) == ["dtype-mismatch"]


def test_the_unequal_shapes_are_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "2688.log")]).findings[0].summary
    assert "[4, 128, 170] and [4, 96, 128]" in summary


@pytest.mark.parametrize("line", [
    # transformers training_args.py / trainer.py: options that contradict each other (lines from notebooks' output)
    "ValueError: --load_best_model_at_end requires the save and eval strategy to match, but found",
    "ValueError: You have set `args.eval_strategy` to IntervalStrategy.EPOCH but you didn't pass an `eval_dataset` to "
    "`Trainer`. Either set `args.eval_strategy` to `no` or pass an `eval_dataset`. ",
])
def test_contradicting_trainer_options_are_an_invalid_config(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == ["trainer-config-invalid"]
