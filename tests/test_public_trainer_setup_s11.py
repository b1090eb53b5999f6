"""Trainer set-up failures first seen in the blind public round 2450-2467 (session 11): removed trainer
arguments, W&B runs that cannot start, tokenizers without a chat template, datasets that cannot be read,
Lightning callbacks monitoring a metric nobody logs, and XLA's device OOM. Each is named by its own class
instead of a generic uncaught exception.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied
verbatim from the thread named in the comment.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import diagnose_lines, ids, run_cli
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected", [
    ("2450.log", "trainer-argument-unsupported"),  # a notebook traceback, SFTTrainer after trl 0.12
    ("2451.log", "trainer-argument-unsupported"),  # TrainingArguments after transformers 4.46
    ("2452.log", "wandb-init-failed"),  # wandb's ERROR line, the paste cut inside wandb's reraise
    ("2453.log", "wandb-init-failed"),
    ("2454.log", "chat-template-missing"),  # [rank0]: prefix
    ("2455.log", "chat-template-missing"),  # the 4.4x wording
    ("2456.log", "chat-template-missing"),  # then PyTorch's destroy_process_group warning
    ("2457.log", "cuda-oom"),  # JAX, XLA's BufferAssignment stats after it
    ("2458.log", "cuda-oom"),
    ("2459.log", "dataset-load-failed"),  # the reader's error printed twice (tqdm line, logger)
    ("2460.log", "dataset-load-failed"),  # under xtuner / mmengine's runner
    ("2461.log", "monitored-metric-missing"),
    ("2462.log", "monitored-metric-missing"),  # a progress bar after it
    ("2463.log", "monitored-metric-missing"),  # pytorch_lightning 1.x wording
])
def test_set_up_failure_is_named_first_and_not_as_a_generic_exception(name: str, expected: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report) == [expected]


@pytest.mark.parametrize("name", ["2464.log", "2465.log", "2466.log", "2467.log"])
def test_healthy_runs_of_the_round_stay_clean(name: str) -> None:
    # Lightning's max_steps stop with wandb retrying uploads, tokenizer length warnings, HF Trainer dicts with an
    # eval dict, a LoRA run whose grad_norm moves between 2 and 15
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_a_removed_argument_says_what_replaced_it() -> None:
    summary = api.diagnose([str(PUBLIC / "2451.log")]).findings[0].summary
    assert "TrainingArguments.__init__() does not take 'evaluation_strategy'" in summary
    assert "use eval_strategy" in summary


def test_python_3_8_names_no_class_so_only_known_removed_arguments_count(tmp_path) -> None:
    # huggingface/transformers#7974 (transformers 3.3, Python 3.6): the argument names the trainer API
    assert ids(diagnose_lines(tmp_path, ["TypeError: __init__() got an unexpected keyword argument 'evaluation_strategy'"])) \
        == ["trainer-argument-unsupported"]
    # facebookresearch/pytext#152: some other constructor, a plain uncaught TypeError
    other = ids(diagnose_lines(tmp_path, ["TypeError: __init__() got an unexpected keyword argument 'dtype'"]))
    assert "trainer-argument-unsupported" not in other


def test_xla_oom_says_how_much_it_asked_for() -> None:
    summary = api.diagnose([str(PUBLIC / "2457.log")]).findings[0].summary
    assert "4.44 GiB (4770354232 bytes)" in summary


def test_torch_xla_prints_the_tpu_oom_on_every_line_of_its_block_one_finding(tmp_path) -> None:
    # pytorch/xla#3470
    lines = [
        "2022-04-04 00:27:49.642380: E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   (1) RESOURCE_EXHAUSTED: "
        "Attempting to reserve 6.48G at the bottom of memory. That was not possible. There are 6.78G free, 0B reserved, "
        "and 3.33G reservable.",
        "2022-04-04 00:27:49.642414: E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   OP_REQUIRES failed at "
        "tpu_execute_op.cc:266 : RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory. That was not "
        "possible. There are 6.78G free, 0B reserved, and 3.33G reservable.",
    ]
    report = diagnose_lines(tmp_path, lines)
    assert ids(report) == ["cuda-oom"]
    assert len(report.findings[0].evidence) == 1
    assert "6.48GB for the program in the TPU's memory" in report.findings[0].summary


def test_the_datasets_wrapper_after_the_readers_error_is_the_same_failure() -> None:
    report = api.diagnose([str(PUBLIC / "2459.log")])
    assert len(report.findings[0].evidence) == 1
    assert "(ArrowInvalid: JSON parse error: Column() changed from object to array in row 0)" in report.findings[0].summary


def test_the_monitor_names_the_metric_the_callback_waited_for() -> None:
    summary = api.diagnose([str(PUBLIC / "2461.log")]).findings[0].summary
    assert "ModelCheckpoint monitors 'val/usdr'" in summary


@pytest.mark.parametrize("line", [
    # the raise's source line in a traceback (michael-wzhu/ChatMed#8)
    'raise DatasetGenerationError("An error occurred while generating the dataset") from e',
    # transformers' processing_utils.py source line, as a traceback shows it
    '                    "No chat template is set for this processor. Please either set the `chat_template` attribute, "',
    # Lightning warns before validation ran, and the run goes on (invoke-ai/InvokeAI#608)
    "UserWarning: `ModelCheckpoint(monitor='val/loss_simple_ema')` could not find the monitored key in the returned "
    "metrics: ['train/loss_simple', 'train/loss_simple_step', 'train/loss_vlb', 'train/loss_vlb_step', 'train/loss', "
    "'train/loss_step', 'global_step', 'epoch', 'step']. HINT: Did you call `log('val/loss_simple_ema', value)` in the "
    "`LightningModule`?",
    # wandb retrying an upload in a healthy run (uzh-rpg/RVT#40)
    "Epoch 2: : 25832it [1:35:47,  4.49it/s, loss=2.23, v_num=3hqp]wandb: Network error (TransientError), entering retry loop.",
    # wandb's login source line (wandb/sdk/wandb_login.py) in a traceback
    '    raise UsageError("api_key not configured (no-tty). call " + directive)',
])
def test_quotes_warnings_and_retries_are_no_failure(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == []


def test_cli_exits_non_zero_and_the_json_names_the_class() -> None:
    proc = run_cli("diagnose", str(PUBLIC / "2453.log"), "--format", "json")
    assert proc.returncode == 1
    finding = json.loads(proc.stdout)["findings"][0]
    assert finding["id"] == "wandb-init-failed"
    assert "no API key" in finding["summary"]


# --- round 2470-2482 --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("2470.log", "flash-attention-unavailable"),
    ("2471.log", "dataset-load-failed"),  # LLaMA-Factory's registry, started outside the repo
    ("2472.log", "dataset-load-failed"),  # LLamaTuner's dataset_info.yaml, a shell prompt around it
    ("2473.log", "dataset-load-failed"),  # the registry itself not found
    ("2474.log", "loss-shape-mismatch"),  # a notebook traceback
    ("2475.log", "loss-shape-mismatch"),  # the last, smaller batch of the first epoch, tqdm around it
    ("2476.log", "loss-shape-mismatch"),  # torch 1.x nll_loss
    ("2477.log", "loss-shape-mismatch"),  # BCEWithLogits
    ("2478.log", "loss-shape-mismatch"),
    ("2479.log", "loss-shape-mismatch"),  # binary_cross_entropy's 'is deprecated' ValueError
    ("2480.log", "loss-shape-mismatch"),  # Keras 2's target check, no exception type
])
def test_round_2_set_up_failure_is_named_first_and_alone(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


@pytest.mark.parametrize("name", ["2481.log", "2482.log"])
def test_round_2_healthy_runs_stay_clean(name: str) -> None:
    # LLaMA-Factory's final train metrics; Keras 2.0 epochs on a plateau
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_the_loss_says_which_shapes_disagree() -> None:
    assert "predictions for 4 samples and targets for 1" in api.diagnose([str(PUBLIC / "2475.log")]).findings[0].summary
    assert "targets [1, 3, 256, 256] for predictions [1, 1, 256, 256]" in \
        api.diagnose([str(PUBLIC / "2477.log")]).findings[0].summary


def test_flash_attention_says_why_it_cannot_be_used() -> None:
    summary = api.diagnose([str(PUBLIC / "2470.log")]).findings[0].summary
    assert "the flash_attn package is not installed" in summary


@pytest.mark.parametrize("line", [
    # transformers' modeling_utils.py source line in a traceback
    '            preface = "FlashAttention2 has been toggled on, but it cannot be used due to the following error:"',
    # LLaMA-Factory's parser.py source line in a traceback (hiyouga/LlamaFactory#7703)
    '    raise ValueError(f"Undefined dataset {name} in {DATA_CONFIG}.")',
    # torch's functional.py source line in a traceback (milesial/Pytorch-UNet#244)
    '    raise ValueError("Target size ({}) must be the same as input size ({})".format(target.size(), input.size()))',
])
def test_round_2_source_lines_are_no_evidence(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == []


# --- round 2483-2491 --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("2483.log", "grpo-batch-generations-mismatch"),  # [rank1]: prefix, 7 processes
    ("2484.log", "grpo-batch-generations-mismatch"),
    ("2485.log", "grpo-batch-generations-mismatch"),
    ("2486.log", "bitsandbytes-setup-failed"),  # the message on the line after 'RuntimeError:'
    ("2487.log", "bitsandbytes-setup-failed"),  # 0.3x wording
    ("2488.log", "bitsandbytes-setup-failed"),  # 0.43+: no exception line in the excerpt
    ("2489.log", "trainer-config-invalid"),  # axolotl's pydantic model
])
def test_round_3_set_up_failure_is_named_first_and_alone(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


def test_trl_ppo_metric_rows_stay_clean() -> None:
    assert ids(api.diagnose([str(PUBLIC / "2491.log")])) == []


def test_grpo_says_how_the_batch_and_the_groups_disagree() -> None:
    summary = api.diagnose([str(PUBLIC / "2483.log")]).findings[0].summary
    assert "7 processes x 1 per device = 7 completions" in summary
    assert "groups of 8 generations per prompt" in summary


def test_hf_argument_parser_lists_the_unknown_options(tmp_path) -> None:
    # an open-instruct DPO write-up: a flag no dataclass declares
    report = diagnose_lines(tmp_path, ["ValueError: Some specified arguments are not used by the HfArgumentParser: "
                                       "['--gradient_checkpointing']"])
    assert ids(report) == ["trainer-config-invalid"]
    assert "['--gradient_checkpointing']" in report.findings[0].summary


@pytest.mark.parametrize("line", [
    # rich's box shows bitsandbytes' cextension.py source (bmaltais/kohya_ss#1523)
    "│   21 │   │   CUDA Setup failed despite GPU being available. Please run the following command     │",
    # trl's grpo_trainer.py source line (quoted in huggingface/trl#3061)
    '              f"The global train batch size ({num_processes} x {args.per_device_train_batch_size}) must be evenly "',
    # transformers' hf_argparser.py source line
    '        raise ValueError(f"Some specified arguments are not used by the HfArgumentParser: {unknown_args}")',
])
def test_round_3_source_lines_are_no_evidence(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == []


# --- round 2490, 2492-2498 --------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("2490.log", "bitsandbytes-setup-failed"),  # transformers' bnb quantizer, a Colab notebook
    ("2492.log", "dependency-missing"),  # accelerate for the Trainer, a notebook traceback
    ("2493.log", "dependency-missing"),
    ("2494.log", "flash-attention-unavailable"),  # trust_remote_code's check_imports
    ("2495.log", "flash-attention-unavailable"),
    ("2496.log", "dependency-missing"),  # accelerate and bitsandbytes, the 4.3x wording
    ("2497.log", "dependency-missing"),  # BitsAndBytesConfig and an old bitsandbytes
])
def test_round_4_dependency_failure_is_named_first_and_alone(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


def test_the_trainers_start_block_stays_clean() -> None:
    assert ids(api.diagnose([str(PUBLIC / "2498.log")])) == []


def test_the_dependency_finding_names_the_package_and_version() -> None:
    summary = api.diagnose([str(PUBLIC / "2493.log")]).findings[0].summary
    assert "accelerate>=0.21.0" in summary
    summary = api.diagnose([str(PUBLIC / "2497.log")]).findings[0].summary
    assert "bitsandbytes>=0.39.0" in summary


def test_long_hostile_words_before_the_templates_are_read_without_backtracking(tmp_path) -> None:
    # synthetic (robustness): a very long word right before each template's literal, which an unbounded name group
    # would retry at every position; the lines are no failure of these classes
    word = "A" * 30000
    lines = [word + "() got an unexpected keyword argument 'evaluation_strategy'",
             "9" * 30000 + "x validation error for AxolotlConfig",
             word + "x is required for a normal functioning of this module, but found a==1",
             word + "x requires the SentencePiece library but it was not found in your environment",
             word + "x does not support Flash Attention 2.0 yet"]
    report = diagnose_lines(tmp_path, lines)
    assert not {"trainer-argument-unsupported", "trainer-config-invalid"} & set(ids(report))


@pytest.mark.parametrize("line, expected", [
    # TF 2 / Keras 3 graph error inside a dice loss (DebeshJha/ResUNetPlusPlus#17)
    ("ValueError: Dimensions must be equal, but are 196608 and 65536 for '{{node compile_loss/dice_loss/mul}} = "
     "Mul[T=DT_FLOAT](compile_loss/dice_loss/flatten_8_1/Reshape, compile_loss/dice_loss/flatten_9_1/Reshape)' with input "
     "shapes: [?,196608], [?,65536].", ["loss-shape-mismatch"]),
    # TF 1.x wording of the same check in a focal loss (PRBonn/bonnet#42)
    ("tensorflow.python.framework.errors_impl.InvalidArgumentError: Dimensions must be equal, but are 1867776 and 1800000 "
     "for 'train_model/model/loss_0/loss/Pow' (op: 'Pow') with input shapes: [1867776,3], [1800000,3].",
     ["loss-shape-mismatch"]),
])
def test_tensorflow_dimension_checks_on_a_loss_node(tmp_path, line: str, expected: list) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == expected


def test_a_dimension_check_on_another_op_is_not_the_loss(tmp_path) -> None:
    # allenai/bi-att-flow#123: an LSTM MatMul, the model's own shapes
    line = ("ValueError: Dimensions must be equal, but are 900 and 300 for 'model_0/prepro/u1/fw/fw/while/basic_lstm_cell/"
            "MatMul_6' (op: 'MatMul') with input shapes: [?,900], [300,400].")
    assert "loss-shape-mismatch" not in ids(diagnose_lines(tmp_path, [line]))


@pytest.mark.parametrize("lines", [
    # scicode-bench/SciCode#40: a column missing from one file
    ["datasets.exceptions.DatasetGenerationCastError: An error occurred while generating the dataset", "",
     "All the data files must have the same columns, but at some point there are 1 missing columns ({'general_solution'})"],
    # ZihanZhaoSJTU/LibriSQA#2: the cast error itself, the schemas on the lines after it
    ["    raise CastError(", "datasets.table.CastError: Couldn't cast", "text: string", "answer_and_analysis: string"],
])
def test_datasets_files_of_different_columns(tmp_path, lines: list) -> None:
    report = diagnose_lines(tmp_path, lines)
    assert ids(report) == ["dataset-load-failed"]
    assert "do not all have the same columns" in report.findings[0].summary
