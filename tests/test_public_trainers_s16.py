"""Fine-tuning failures, blind public round 4500- (session 16): the Trainer's DeepSpeed config check, PEFT target
modules given as one string, tokenizers without a pad token, a QLoRA loss that logs 0.0, LoRA + gradient
checkpointing with no graph, class labels outside the head, load_state_dict of a wrapped checkpoint and of
DataParallel's `module.` keys (the key lists read without their head), a tokenizer.json too new for tokenizers,
`evaluation_strategy` removed from TrainingArguments, ragged labels torch.tensor cannot stack, and a NaN evaluation
loss in the eval dict and in the end-of-run metrics block; noisy losses and 'Some weights ... newly initialized'
warnings as healthy traps. Round 2 (4520-): the AMP scaler refusing fp16 gradients, PEFT without default target
modules, index_select's device-side assert for token ids past the vocabulary (CUDA's wording and ROCm's HIP wording);
the tokenizer's sequence-length warning as a trap. Round 3 (4530-): datasets failing to build the training data
(pyarrow's JSON parse error in a notebook's exception chain), a NaN DeepSpeech fine-tune; the FLOPs warning as a trap. Round 4 (4540-): accelerate refusing a model that device_map='auto' split over GPUs in a
distributed launch.

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
    ("4500.log", "deepspeed-config-mismatch"),  # ds train_batch_size=32 vs hf train_batch_size (calculated)=4
    ("4501.log", "peft-target-modules-not-found"),  # the traceback pasted innermost frame first
    ("4502.log", "tokenizer-no-pad-token"),
    ("4503.log", "loss-zero"),  # 31.45, then 0.0 at every log
    ("4504.log", "autograd-no-grad"),
    ("4505.log", "label-out-of-range"),
    ("4506.log", "label-out-of-range"),  # 'IndexError: ' then the message on the next line
    ("4507.log", "state-dict-mismatch"),
    ("4510.log", "eval-loss-nonfinite"),  # the end-of-run metrics block: eval_loss = nan
    ("4511.log", "state-dict-mismatch"),  # 'actual error: RuntimeError: ...', then torch's key lists
    ("4514.log", "dependency-missing"),
    ("4515.log", "eval-loss-nonfinite"),  # {'eval_loss': nan, ...}
    ("4516.log", "trainer-argument-unsupported"),
    ("4517.log", "batch-not-padded"),  # torch's 'expected sequence of length 15757 at dim 1 (got 16242)'
])
def test_the_first_finding_names_the_failure(name: str, expected: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank is None  # no log of the round shows a rank


@pytest.mark.parametrize("name, expected", [
    ("4520.log", "amp-fp16-params"),
    ("4521.log", "peft-target-modules-not-found"),  # 'Please specify `target_modules` in `peft_config`'
    ("4522.log", "peft-target-modules-not-found"),
    ("4523.log", "cuda-device-assert"),  # indexSelectLargeIndex, then 'Fatal Python error: Aborted'
    ("4524.log", "cuda-device-assert"),
    ("4525.log", "cuda-device-assert"),  # ROCm: "Indexing.hip:1292: ...: Device-side assertion `...' failed."
    ("4526.log", "cuda-device-assert"),
])
def test_round_2_first_finding(name: str, expected: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank is None


def test_rocm_assert_is_one_failure_with_its_kernel(tmp_path) -> None:
    # mosaicml/composer#2758: one line per failing GPU thread, HIP's wording
    line = ("/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side assertion "
            "`srcIndex < srcSelectDimSize' failed.")
    report = diagnose_lines(tmp_path, [line] * 4)
    assert ids(report) == ["cuda-device-assert"]
    assert "Indexing.hip:1292" in report.findings[0].summary


@pytest.mark.parametrize("name, expected", [
    ("4530.log", "dataset-load-failed"),
    ("4531.log", "dataset-load-failed"),
    ("4532.log", "dataset-load-failed"),  # ArrowInvalid: JSON parse error ... under a DatasetGenerationError header
    ("4533.log", "nan-persistent"),
])
def test_round_3_first_finding(name: str, expected: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank is None


def test_the_notebook_chain_is_one_dataset_failure() -> None:
    # findalexli/mllm-dpo#2: ArrowInvalid, then ArrowTypeError, then DatasetGenerationError - one failure
    assert ids(api.diagnose([str(PUBLIC / "4532.log")])) == ["dataset-load-failed"]


@pytest.mark.parametrize("name", ["4540.log", "4541.log", "4542.log"])
def test_round_4_device_map_in_a_distributed_launch(name: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report) == ["device-map-distributed"]  # one failure, however often the traceback repeats it
    assert report.findings[0].initiating_rank is None


def test_the_quantized_wording_stays_its_own_class(tmp_path) -> None:
    report = diagnose_lines(tmp_path, [
        "ValueError: You can't train a model that has been loaded in 8-bit precision on multiple devices in any "
        "distributed mode. In order to use 8-bit models that have been loaded across multiple GPUs the solution is to "
        "use Naive Pipeline Parallelism. Therefore you should not specify that you are under any distributed regime in "
        "your accelerate config.",
    ])
    assert ids(report) == ["quantized-model-device-map"]


@pytest.mark.parametrize("name", ["4508.log", "4509.log", "4512.log", "4513.log", "4527.log", "4528.log", "4534.log"])
def test_healthy_runs_of_the_round_stay_clean(name: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_a_finite_eval_and_a_nan_metric_are_not_a_nan_eval_loss(tmp_path) -> None:
    report = diagnose_lines(tmp_path, [
        "{'eval_loss': 1.8342, 'eval_rouge1': nan, 'eval_runtime': 17.3192, 'epoch': 0.08}",
        "***** eval metrics *****",
        "  eval_bleu               =        nan",
        "  eval_loss               =     1.8342",
    ])
    assert ids(report) == []


def test_a_nan_training_loss_leads_over_its_nan_evaluation(tmp_path) -> None:
    # once the training loss itself is NaN step after step, the evaluation's NaN is the same failure
    report = diagnose_lines(tmp_path, [
        "{'loss': nan, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.1}",
        "{'loss': nan, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.2}",
        "{'loss': nan, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.3}",
        "{'eval_loss': nan, 'eval_runtime': 3.1, 'eval_samples_per_second': 64.5, 'epoch': 0.3}",
    ])
    assert ids(report)[0] == "nan-persistent"
    assert "eval-loss-nonfinite" not in ids(report)


def test_the_key_lists_alone_are_a_state_dict_mismatch(tmp_path) -> None:
    # aks2203/deep-thinking#5: DataParallel's 'module.' prefix on every key
    report = diagnose_lines(tmp_path, [
        '\tMissing key(s) in state_dict: "projection.0.weight", "head.0.weight". ',
        '\tUnexpected key(s) in state_dict: "module.projection.0.weight", "module.head.0.weight".',
    ])
    assert ids(report) == ["state-dict-mismatch"]
    assert "1 missing-key line(s), 1 unexpected-key line(s)" in report.findings[0].summary
