"""Trainer set-up failures first seen in the blind public round 3000-3019 (session 13): Hugging Face from_pretrained
finding no config / tokenizer / processor files at the path or Hub id it was given (model-files-not-found), a
tokenizer.json too new for the installed tokenizers (dependency-missing), and DeepSpeed's launcher line for a
SIGKILLed worker pasted without its logger prefix (process-killed). Each is named by its own class instead of a
generic uncaught exception (or nothing), and the round's healthy traps stay quiet.

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
    ("3000.log", "model-files-not-found"),  # [rank0]: Can't load the configuration of (4.2x+)
    ("3001.log", "model-files-not-found"),  # before torchrun's elastic 'failed (exitcode: 1)'
    ("3002.log", "model-files-not-found"),  # hub.py: does not appear to have a file named config.json
    ("3003.log", "model-files-not-found"),  # a placeholder path
    ("3004.log", "model-files-not-found"),  # 4.0's 'Can't load config for ... Make sure that:'
    ("3005.log", "model-files-not-found"),  # typographic quotes
    ("3006.log", "model-files-not-found"),  # Can't load tokenizer for
    ("3007.log", "model-files-not-found"),  # Unrecognized model in ... `model_type`
    ("3008.log", "model-files-not-found"),  # generation_config.json, a file given for the directory
    ("3009.log", "model-files-not-found"),  # ERROR:root:<class 'OSError'>: relay
    ("3011.log", "process-killed"),
    ("3012.log", "process-killed"),  # accelerate's CalledProcessError ... died with <Signals.SIGKILL: 9>
    ("3017.log", "dependency-missing"),  # serde's untagged-enum message, printed bare
    ("3018.log", "dependency-missing"),  # ComfyUI's '!!! Exception during processing !!!'
    ("3019.log", "dependency-missing"),  # PyNormalizerTypeWrapper
    ("3020.log", "model-files-not-found"),  # round 2: an image processor, relayed without the exception type
    ("3021.log", "model-files-not-found"),
    ("3022.log", "model-files-not-found"),  # preprocessor_config.json, the pipeline saved without its processor
    ("3023.log", "model-files-not-found"),
    ("3024.log", "model-files-not-found"),  # after a TypeError and before the pipeline's re-raise
    ("3025.log", "model-files-not-found"),  # transformers 2.x: a vocab.txt given for the directory
    ("3026.log", "model-files-not-found"),  # Windows paths into the HF cache
    ("3027.log", "hf-hub-access-failed"),
])
def test_set_up_failure_is_named_by_its_class_not_a_generic_exception(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


def test_a_worker_killed_before_the_missing_output_model_is_the_kill() -> None:
    # 3010.log: DeepSpeed's '[...] exits with return code = -9' pasted without its logger prefix, then the next step
    # fails on the empty output directory: the kill comes first, the missing config.json after it
    assert ids(api.diagnose([str(PUBLIC / "3010.log")])) == ["process-killed", "model-files-not-found"]


@pytest.mark.parametrize("name", ["3014.log", "3015.log", "3016.log", "3028.log"])
def test_healthy_runs_of_the_round_stay_quiet(name: str) -> None:
    # apex FP16_Optimizer's first overflow (benign), PEFT's 'Could not find a config file in' warning, old transformers'
    # 'file .../vocab/config.json not found' info line
    assert api.diagnose([str(PUBLIC / name)]).verdict in ("clean", "benign")


def test_the_generic_exception_is_replaced() -> None:
    report = api.diagnose([str(PUBLIC / "3006.log")])
    assert "uncaught-exception" not in ids(report)
    assert "'bert-base-uncased'" in report.findings[0].summary


def test_a_path_every_rank_loads_names_no_rank() -> None:
    # 3000.log: the [rank0]: prefix is the printer; every rank loads the same missing path
    assert api.diagnose([str(PUBLIC / "3000.log")]).findings[0].initiating_rank is None


def test_the_file_that_was_looked_for_is_in_the_summary() -> None:
    assert "generation_config.json" in api.diagnose([str(PUBLIC / "3008.log")]).findings[0].summary
    assert "model_type" in api.diagnose([str(PUBLIC / "3007.log")]).findings[0].summary
    assert "tokenizers" in api.diagnose([str(PUBLIC / "3017.log")]).findings[0].summary


@pytest.mark.parametrize("line", [
    # diffusers' local-folder wording (TMElyralab/MuseV#150)
    "OSError: Error no file named config.json found in directory "
    "/data/USER/MuseV-main/configs/model/../../checkpoints/motion/musev_referencenet.",
    # hub.py's wording without the Checkout hint, as a web UI shows it (oobabooga/textgen#6392)
    "OSError: models/meta-llama_Meta-Llama-3-8B does not appear to have a file named config.json",
    # a front end's relay without the exception type (ZHO-ZHO-ZHO/ComfyUI-InstantID#104)
    "Can't load tokenizer for 'openai/clip-vit-large-patch14'. If you were trying to load it from "
    "'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make "
    "sure 'openai/clip-vit-large-patch14' is the correct path to a directory containing all relevant files for a "
    "CLIPTokenizer tokenizer.",
    # transformers 2.x-3.0's tokenizer wording (CCChenhao997/DualGCN-ABSA#11)
    "OSError: Model name 'xlnet-large-cased' was not found in tokenizers model name list (xlnet-base-cased, "
    "xlnet-large-cased). We assumed 'xlnet-large-cased' was a path, a model identifier, or url to a directory containing "
    "vocabulary files named ['spiece.model'] but couldn't find such vocabulary files at this path or url.",
    # transformers 5's AutoConfig without model_type (huggingface/transformers#44496)
    "ValueError: Unrecognized model in allenai/Olmo-Hybrid-Instruct-SFT-7B. Should have a `model_type` key in its "
    "config.json.",
])
def test_other_wordings_of_the_template(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == ["model-files-not-found"]


@pytest.mark.parametrize("line", [
    # the message's source line in a notebook traceback (leduckhai/S-Chain#3)
    "    650             f\"Can't load the configuration of '{pretrained_model_name_or_path}'. If you were trying to load it\"",
    # hub.py's raise in a rich traceback box
    "                        f\"{path_or_repo_id} does not appear to have a file named {filename}. Checkout \"",
    # a test's quoted message is not a failure
    "        OSError(\"Can't load image processor for 'org/model'.\"),",
    # a dict of error messages printed as reprs (huggingface/transformers#5475)
    " 'sshleifer/student_cnn_9_9': (\"Model name 'sshleifer/student_cnn_9_9' was not found in tokenizers model name list "
    "(facebook/bart-base, facebook/bart-large, facebook/bart-large-mnli, facebook/bart-large-cnn, facebook/bart-large-xsum, "
    "yjernite/bart_eli5). We assumed 'sshleifer/student_cnn_9_9' was a path, a model identifier, or url to a directory "
    "containing vocabulary files named ['vocab.json', 'merges.txt'] but couldn't find such vocabulary files at this path "
    "or url.\",),",
])
def test_source_lines_that_quote_the_message_are_not_the_failure(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == []


def test_the_weight_files_wording_stays_model_weights_not_found(tmp_path) -> None:
    # transformers' wording for the weights (a Hugging Face troubleshooting table; model_weights.py reads it)
    line = ("OSError: `meta-llama/Llama-2-70b` does not appear to have a file named pytorch_model.bin, model.safetensors, "
            "tf_model.h5, model.ckpt or flax_model.msgpack.")
    assert ids(diagnose_lines(tmp_path, [line])) == ["model-weights-not-found"]


def test_the_hubs_own_error_is_the_finding_when_it_is_in_the_log(tmp_path) -> None:
    # the Hub out of reach (hustvl/Matte-Anything#15) and then the loader's 'Can't load tokenizer' (Anything-of-anything/
    # Anything-3D#17, the same bert-base-uncased): one failure, whose cause the Hub's error names
    lines = [
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached "
        "files and it looks like bert-base-uncased is not the path to a directory containing a file named config.json.",
        "OSError: Can't load tokenizer for 'bert-base-uncased'. If you were trying to load it from "
        "'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, "
        "make sure 'bert-base-uncased' is the correct path to a directory containing all relevant files for a "
        "BertTokenizer tokenizer.",
    ]
    assert ids(diagnose_lines(tmp_path, lines)) == ["hf-hub-access-failed"]


@pytest.mark.parametrize("line", [
    # transformers 4.4x+'s wording of the Hub out of reach (Google-Health/medgemma#61)
    "We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.",
    # an older huggingface_hub with an empty disk cache (baichuan-inc/Baichuan-7B#83)
    "huggingface_hub.utils._errors.LocalEntryNotFoundError: Connection error, and we cannot find the requested files in "
    "the disk cache. Please try again or make sure your Internet connection is on.",
    # a revision the repository does not have, in diffusers' download (invoke-ai/InvokeAI#2768)
    "Error downloading StabilityAI standard VAE: fp16 is not a valid git identifier (branch name, tag name or commit id) "
    "that exists for this model name. Check the model page at 'https://huggingface.co/stabilityai/sd-vae-ft-mse' for "
    "available revisions.",
])
def test_the_hub_siblings_of_the_loaders_messages(tmp_path, line: str) -> None:
    assert ids(diagnose_lines(tmp_path, [line])) == ["hf-hub-access-failed"]


_COGVIEW_FETCH = ("Loading pipeline components...:  20%|██████████▍                                         | 1/5 "
                  "[00:00<00:02,  1.74it/s]An error occurred while trying to fetch "
                  "E:\\IMAGE\\ComfyUI_Torch23\\ComfyUI\\models\\CogView\\CogView4-6B\\vae: Error no file named "
                  "diffusion_pytorch_model.safetensors found in directory "
                  "E:\\IMAGE\\ComfyUI_Torch23\\ComfyUI\\models\\CogView\\CogView4-6B\\vae.")


def test_diffusers_falling_back_from_safetensors_is_no_failure(tmp_path) -> None:
    # chflame163/ComfyUI_CogView4_Wrapper#7: diffusers warns and tries the .bin weights next
    lines = [_COGVIEW_FETCH, "Defaulting to unsafe serialization. Pass `allow_pickle=False` to raise an error instead."]
    assert ids(diagnose_lines(tmp_path, lines)) == []


def test_diffusers_without_any_weight_file_is_model_weights_not_found(tmp_path) -> None:
    # the same thread: the .bin is missing too, and the node raises
    lines = [_COGVIEW_FETCH, "Defaulting to unsafe serialization. Pass `allow_pickle=False` to raise an error instead.",
             "!!! Exception during processing !!! Error no file named diffusion_pytorch_model.bin found in directory "
             "E:\\IMAGE\\ComfyUI_Torch23\\ComfyUI\\models\\CogView\\CogView4-6B\\vae."]
    assert ids(diagnose_lines(tmp_path, lines)) == ["model-weights-not-found"]
