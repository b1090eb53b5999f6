"""Set-up failures of the fine-tuning stack first seen in the blind public round 2250-2268 (session 10):
each is named by its own class instead of a generic uncaught exception, in the shapes users pasted.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied
verbatim from the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines, ids, run_cli
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected", [
    ("2250.log", "amp-fp16-params"),  # torch 2.x grad_scaler under accelerate's clip_grad_norm_
    ("2251.log", "amp-fp16-params"),  # torch.cuda.amp under accelerate 0.14, a tqdm bar glued before the traceback
    ("2252.log", "amp-fp16-params"),  # three lines and a bar
    ("2253.log", "deepspeed-batch-size-mismatch"),  # [rank0]: prefix
    ("2254.log", "deepspeed-batch-size-mismatch"),  # rich's box, the message wrapped over three lines
    ("2255.log", "peft-target-modules-not-found"),  # wrapped over two lines
    ("2256.log", "peft-target-modules-not-found"),
    ("2257.log", "resume-checkpoint-not-found"),
    ("2258.log", "resume-checkpoint-not-found"),
    ("2260.log", "extension-build-failed"),  # a notebook traceback
    ("2261.log", "extension-build-failed"),  # ninja's CalledProcessError under [rank1]:, the RuntimeError cut off
    ("2264.log", "tokenizer-no-pad-token"),  # wrapped
    ("2265.log", "tokenizer-no-pad-token"),
    ("2267.log", "quantized-model-no-adapter"),
    # round 2270-2276
    ("2270.log", "model-returned-no-loss"),  # printed without the exception type
    ("2271.log", "model-returned-no-loss"),
    ("2272.log", "batch-not-padded"),  # wrapped over three lines
    ("2273.log", "batch-not-padded"),  # the raise's source line before it
    ("2274.log", "quantized-model-device-map"),
    ("2275.log", "quantized-model-device-map"),
    # round 2280-2288
    ("2280.log", "label-out-of-range"),  # a torch 1.x notebook traceback
    ("2281.log", "label-out-of-range"),
    ("2282.log", "label-out-of-range"),
    ("2283.log", "label-out-of-range"),  # TensorFlow's kernel message on its own line
    ("2284.log", "label-out-of-range"),  # Keras from R
    ("2285.log", "registry-type-not-found"),  # mmengine
    ("2286.log", "registry-type-not-found"),  # mmcv 1.x
    # round 2290-2296
    ("2290.log", "hf-hub-access-failed"),  # rich wraps the OSError over five lines
    ("2291.log", "hf-hub-access-failed"),
    ("2292.log", "hf-hub-access-failed"),  # huggingface_hub's GatedRepoError 401
    ("2293.log", "hf-hub-access-failed"),  # the older 'You must be authenticated' wording
    ("2294.log", "hf-hub-access-failed"),  # 403, not in the authorized list, no exception line
    # round 2297-2299
    ("2297.log", "hf-hub-access-failed"),  # an access request awaiting review, no exception line of its own
    ("2298.log", "hf-hub-access-failed"),  # huggingface_hub 0.2x 'Repo model ... is gated'
    ("2299.log", "hf-hub-access-failed"),  # transformers' OSError, wrapped
])
def test_setup_failure_is_named_first_and_not_as_a_generic_exception(name: str, expected: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert "uncaught-exception" not in ids(report)


@pytest.mark.parametrize("name", ["2262.log", "2263.log", "2266.log", "2268.log", "2276.log", "2287.log", "2288.log"])
def test_start_up_warnings_of_a_healthy_run_stay_clean(name: str) -> None:
    # 'Some weights of the model checkpoint ... were not used', Ultralytics' 'AMP: checks failed ... AMP will be
    # disabled during training': the run goes on.
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_deepspeed_batch_check_says_which_numbers_disagree() -> None:
    report = api.diagnose([str(PUBLIC / "2253.log")])
    assert "train_batch_size 8 != micro batch 2 x gradient accumulation 1 x world size 1 (= 2)" in report.findings[0].summary


def test_cli_exits_non_zero_on_a_set_up_failure_and_the_json_names_it() -> None:
    import json

    proc = run_cli("diagnose", str(PUBLIC / "2257.log"), "--format", "json")
    assert proc.returncode == 1
    finding = json.loads(proc.stdout)["findings"][0]
    assert finding["id"] == "resume-checkpoint-not-found"
    assert "./output/checkpoint-500" not in finding["summary"]  # 2257 is MedicalGPT's path, not qlora's
    assert "/finetune-sft/outputs-sft-v2/checkpoint-32500" in finding["summary"]


@pytest.mark.parametrize("line", [
    # a traceback's source line of the raise (zai-org/CogVideo#775)
    '    raise ValueError("Attempting to unscale FP16 gradients.")',
    # rich's box shows the assertion's f-string (bigcode-project/starcoder#77)
    '│ ❱  891 │   │   │   f"Check batch related parameters. train_batch_si │',
    # the notebook frame's source line of the error prefix (dredwardhyde/gpt-neo-fine-tuning-example#12)
    "   1626     error_prefix=f\"Error building extension '{name}'\")",
    # transformers' trainer.py source line in a traceback (artidoro/qlora#27)
    "    raise ValueError(f\"Can't find a valid checkpoint at {resume_from_checkpoint}\")",
    # the raise's source line of convert_to_tensors (patil-suraj/question_generation#6)
    '    "Unable to create tensor, you should probably activate truncation and/or padding "',
    # mmcv's registry.py source line in a traceback (csuhan/ReDet#37)
    "    f'{obj_type} is not in the {registry.name} registry')",
    # rich's box shows transformers' hub.py source line (oobabooga/textgen#865)
    '│    425 │   │   │   f"{path_or_repo_id} is not a local folder and is not a va │',
])
def test_a_source_line_quoting_the_message_is_no_evidence(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == []


def test_missing_labels_name_the_inputs_the_model_got() -> None:
    report = api.diagnose([str(PUBLIC / "2270.log")])
    assert "input_ids,token_type_ids,attention_mask" in report.findings[0].summary


def test_a_tensorflow_label_error_says_how_many_classes_the_model_has() -> None:
    report = api.diagnose([str(PUBLIC / "2284.log")])
    assert "class label 3, but the model has 3 outputs (labels 0..2)" in report.findings[0].summary


def test_a_gated_repo_says_whether_the_account_lacks_access() -> None:
    not_granted = api.diagnose([str(PUBLIC / "2294.log")]).findings[0].summary
    refused = api.diagnose([str(PUBLIC / "2293.log")]).findings[0].summary
    assert "google/gemma-3-4b-pt is a gated repo and this account is not granted access" in not_granted
    assert "mistralai/Mistral-7B-Instruct-v0.2 is a gated repo and the download is not authenticated" in refused


def test_a_gated_refusal_cut_before_the_hubs_reason_is_still_named(tmp_path) -> None:
    # ToTheBeginning/PuLID#97, the paste's first two lines: the held refusal is released at the end of the input
    lines = ["raise _format(GatedRepoError, message, response) from e",
             "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: "
             "Root=1-66f4b037-1bf3d7d219afbc904ee05694;5601d2c9-8fd8-4ed8-b38d-d8a432e1fa59)"]
    report = diagnose_lines(tmp_path, lines)
    assert ids(report) == ["hf-hub-access-failed"]
    assert "(401 Client Error)" in report.findings[0].summary


def test_a_successful_op_build_is_no_failure(tmp_path) -> None:
    # hiyouga/LlamaFactory#6058: DeepSpeed built and loaded cpu_adam
    lines = ["Loading extension module cpu_adam...", "Time to load cpu_adam op: 60.97907280921936 seconds"]
    assert ids(diagnose_lines(tmp_path, lines)) == []
