"""Set-up checks of the fine-tuning stack that stop a run before (or at) its first step.

Each rule reads one library's own exception message; the text is the library's template, so the
rule holds for every model, path and number the template is filled with:

- torch/amp/grad_scaler.py (torch >= 2.3; torch/cuda/amp/grad_scaler.py since 1.6) `_unscale_grads_`:
  `raise ValueError("Attempting to unscale FP16 gradients.")`: a parameter being trained is itself
  fp16 (a model loaded in half precision, LoRA weights created in fp16) under the AMP grad scaler.
- peft src/peft/tuners/tuners_utils.py `inject_adapter` (0.4+; 0.2-0.3 in tuners/lora.py
  `_find_and_replace`, peft/utils/other.py for modules_to_save): `Target modules {target_modules} not
  found in the base model. Please check the target modules and try again.` (+ ` Note: You specified
  'layers_to_transform': ...`), and its siblings `No modules were targeted for adaptation. ...`,
  `All modules were excluded. This is likely unintended. ...`; tuners_utils.py `_prepare_adapter_config` (lora/model.py
  before 0.7): `Please specify `target_modules` in `peft_config``: no default targets for the model's type.
- transformers trainer.py: `_load_from_checkpoint` `Can't find a valid checkpoint at {path}`, `train`
  with resume_from_checkpoint=True `No valid checkpoint found in output directory ({output_dir})`; under DeepSpeed
  integrations/deepspeed.py `deepspeed_load_checkpoint`: `Can't find a valid checkpoint at {path}` (no global_step*
  folder) and `[deepspeed] failed to resume from checkpoint {path}` (DeepSpeed's load_checkpoint loaded nothing).
- transformers tokenization_utils_base.py `_get_padding_truncation_strategies`: `Asking to pad but the
  tokenizer does not have a padding token. Please select a token to use as `pad_token` ...`; the 2.x
  data collator: `You are attempting to pad samples but the tokenizer you are using (GPT2Tokenizer)
  does not have one.` (a later release: `... does not have a pad token.`).
- transformers tokenization_utils_base.py `get_chat_template` (4.43+, when the class default templates were
  removed): `Cannot use chat template functions because tokenizer.chat_template is not set and no template
  argument was passed! ...` (4.4x wording: `Cannot use apply_chat_template() because tokenizer.chat_template is
  not set ...`); processing_utils.py `ProcessorMixin.apply_chat_template`: `No chat template is set for this
  processor. Please either set the `chat_template` attribute, or provide a chat template as an argument.`
- transformers modeling_utils.py `_check_and_enable_flash_attn_2` / `_flash_attn_2_can_dispatch` (4.36+):
  `FlashAttention2 has been toggled on, but it cannot be used due to the following error:` + `the package
  flash_attn seems to be not installed.` / `you need flash_attn package version to be greater or equal than
  2.1.0. Detected version {v}.` / `Flash Attention 2 is not available.` / `Flash Attention 2 is not available on
  CPU. ...` (the reason sometimes wrapped to the next line), and `{Model} does not support Flash Attention 2.0
  yet.`; 4.34-4.35: `Flash Attention 2 is not available. Please refer to the documentation of
  https://github.com/Dao-AILab/flash-attention for installing it.`
- transformers trainer.py `Trainer.__init__` (4.3x+): `You cannot perform fine-tuning on purely
  quantized models. Please attach trainable adapters on top of the quantized model ...`, and `The model
  you are trying to fine-tune is quantized with {method} but that quantization method do not support
  training.`
- torch/utils/cpp_extension.py `_run_ninja_build` (every release with JIT extensions):
  `RuntimeError(f"Error building extension '{name}'" [+ ": " + ninja's output])` from
  `subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.` (`'-j',
  'N'` added under MAX_JOBS); DeepSpeed's op_builder/builder.py `jit_load`: `Unable to JIT load the
  {name} op due to ninja not being installed.` / `... due to it not being compatible due to
  hardware/software issue.`; torch's `Ninja is required to load C++ extensions`; no CUDA toolkit to compile with: DeepSpeed
  op_builder/builder.py `installed_cuda_version`: `MissingCUDAException("CUDA_HOME does not exist, unable to compile CUDA
  op(s)")` (before 0.10 an `assert cuda_home is not None, "..."`), torch cpp_extension.py `CUDA_HOME environment variable is
  not set. Please set it to your CUDA install root.`
- transformers trainer.py `Trainer.compute_loss`: `The model did not return a loss from the inputs, only
  the following keys: {output keys}. For reference, the inputs it received are {input keys}.`
- transformers trainer.py `Trainer._prepare_inputs`: `The batch received was empty, your model won't be able to train on
  it. Double-check that your training dataset contains keys expected by the model: {','.join(signature_columns)}.`
  (4.1x: `... keys expected by the model.`): remove_unused_columns dropped every column the forward does not name.
- transformers training_args.py `TrainingArguments.__post_init__`: `FP16 Mixed precision training with AMP or APEX
  (`--fp16`) and FP16 half precision evaluation (`--fp16_full_eval`) can only be used on CUDA devices.` (older and newer
  wordings at the rule): torch sees no CUDA device (cuda-no-device).
- transformers trainer.py `Trainer.__init__`: `train_dataset does not implement __len__, max_steps has to be specified`
  (4.27+: `The train_dataset does not implement __len__, max_steps has to be specified. The number of steps needs to be
  known in advance for the learning rate scheduler.`), `_inner_training_loop`: `args.max_steps must be set to a positive
  value if dataloader does not have a length, was {args.max_steps}`: an IterableDataset (streaming=True) and no max_steps.
  A wrapper that streams its data may check it in its own words (`When streaming is set to True, max_steps must be ...`;
  LLaMA-Factory's and ms-swift's argument checks: `Please specify `max_steps` in streaming mode.`).
- tokenizers bindings/python/src/tokenizer.rs (the fast tokenizers' input conversion; ValueError before 0.10, TypeError
  after): `TextEncodeInput must be Union[TextInputSequence, Tuple[InputSequence, InputSequence]]`, `TextInputSequence must
  be str`, `PreTokenizedInputSequence must be Union[List[str], Tuple[str]]`, `PreTokenizedEncodeInput must be Union[...]`;
  transformers tokenization_utils_base.py `__call__` / `_call_one`: `text input must of type `str` (single example),
  `List[str]` (batch or single pretokenized example) or `List[List[str]]` (batch of pretokenized examples).` (4.3x on:
  `must be of type`, also for `text_pair`, `text_target`, `text_pair_target`); the slow tokenizers' tokenization_utils.py
  `get_input_ids`: `Input {text} is not valid. Should be a string, a list/tuple of strings or a list/tuple of integers.`
  (2.x: `Input is not valid. ...`; with is_split_into_words: `... Should be a string or a list/tuple of strings when
  `is_split_into_words=True`.`): the tokenizer was handed something that is not text (None / NaN, bytes, numbers, nested
  lists, an AddedToken, a str with lone surrogates).
- transformers modeling_utils.py `PreTrainedModel.gradient_checkpointing_enable` (4.11+, where the Trainer's
  --gradient_checkpointing lands): `{ModelClass} does not support gradient checkpointing.`; diffusers modeling_utils.py
  `ModelMixin.enable_gradient_checkpointing`: the same words + ` Please make sure to set the boolean attribute
  `_supports_gradient_checkpointing` to `True` in the class definition.`: the model class does not declare support.
- transformers trainer.py `Trainer._determine_best_metric` (4.42+; before it `_save_checkpoint`, with no explanation):
  `metric_value = metrics[metric_to_check]` raising `KeyError: "The `metric_for_best_model` training argument is set to
  '{metric_to_check}', which is not found in the evaluation metrics. The available evaluation metrics are: [...]. Consider
  changing the `metric_for_best_model` via the TrainingArguments."` (the plain `KeyError: 'eval_loss'` under that lookup
  line first, or alone in older releases): load_best_model_at_end / metric_for_best_model names a key the evaluation
  does not return (monitored-metric-missing, as Lightning's callbacks).
- transformers tokenization_utils_base.py `BatchEncoding.convert_to_tensors`: `Unable to create tensor, you
  should probably activate truncation and/or padding with 'padding=True' 'truncation=True' to have batched
  tensors with the same length.` (+ ` Perhaps your features (`{key}` in this case) have excessive nesting
  (inputs type `list` where type `int` is expected).` since 4.2x).
- aten/src/ATen/native/TensorShape.cpp `check_stack_inputs` (torch.stack, which the DataLoader's default_collate and most
  collate functions call): `stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and [3, 224, 300]
  at entry 1` (often inside `Caught RuntimeError in DataLoader worker process 0.`).
- tensorflow core/kernels/data/batch_util.cc (tf.data `.batch()`, Keras fit over a dataset): `Cannot batch tensors with
  different shapes in component {i}. First element had shape {shape} and element {j} had shape {shape}.` (an
  INVALID_ARGUMENT, often as `(1) INVALID_ARGUMENT:  Cannot batch ...` in a Graph execution error).
- accelerate accelerator.py `Accelerator.prepare_model`: `You can't train a model that has been loaded in
  8-bit precision on a different device than the one you're training on. Make sure you loaded the model
  on the correct device using for example `device_map={'':torch.cuda.current_device()}` ...`, and `You
  can't train a model that has been loaded in 8-bit precision on multiple devices` (+ ` in any
  distributed mode. In order to use 8-bit models ...` since 0.20); 4-bit models get the same words.
- mmengine mmengine/registry/build_functions.py `build_from_cfg`: `KeyError: '{type} is not in the
  {scope}::{registry} registry. Please check whether the value of `{type}` is correct or it was registered
  as expected. ...'`; mmcv 1.x mmcv/utils/registry.py: `KeyError: '{type} is not in the {registry}
  registry'` (re-raised by a parent builder as `"{Parent}: '{type} is not in ...'"`).
- timm timm/models/_factory.py `create_model` (factory.py before 0.9): `RuntimeError: Unknown model ({name})`; fvcore
  fvcore/common/registry.py `Registry.get` (detectron2): `KeyError: "No object named '{name}' found in '{registry}'
  registry!"`: a name no registry has, like mmengine's (registry-type-not-found).
- transformers utils/hub.py `cached_file` (every from_pretrained): `{id} is not a local folder and is not a
  valid model identifier listed on 'https://huggingface.co/models'` (+ `If this is a private repository,
  make sure to pass a token ...`), and for a gated repo `You are trying to access a gated repo.`;
  huggingface_hub utils/_http.py `hf_raise_for_status`: `GatedRepoError: 401 Client Error. (Request ID:
  ...)`, `Cannot access gated repo for url {url}.`, `Access to model {id} is restricted. You must have access
  to it and be authenticated to access it. Please log in.` (older: `... You must be authenticated to access
  it.`; a logger that wraps the message (SD.Next's rich handler) ends the lines at `... for url` and `... have
  access to it and`; 403: `... is restricted and you are not in the authorized list. Visit ... to ask for access.`),
  `RepositoryNotFoundError: 401 Client Error.` / `Repository Not Found for url: {url}.`

A message is evidence where it is raised or printed: a source line that quotes it (`raise
ValueError("Attempting ...")` in a traceback, `f"Check batch ...` in rich's box) is not, so the
phrase must not follow a quote. The exception type before it is kept when there is one.
"""

from __future__ import annotations

import re
from typing import Any

from nanscope.model import ErrorEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.python import no_device_fields

# not right after a quote: a source line quoting the message is no evidence
_TYPE = r"(?<![\"'])"

# The exception type right before the message (`ValueError: `, `huggingface_hub.errors.GatedRepoError: `), read
# from a bounded stretch before the match: in the rule's own regex an optional dotted-name group would be
# retried at every position of a long word (quadratic on a hostile line).
_TYPE_BEFORE = LazyPattern(r"(?:^|[^\w.])((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Warning)):\s*$")


def exc_type_before(text: str, start: int) -> "str | None":
    """The exception type that ends right before `start` in `text`, if any (within 160 characters)."""
    m = _TYPE_BEFORE.search(text[max(0, start - 160):start])
    return m.group(1) if m else None


def error_event(m: "re.Match[str]", rec, kind: str, framework: str, detail: str, /, **fields: Any) -> ErrorEvent:
    """The ErrorEvent of a rule whose regex names the message `msg`: the text from there (400 characters
    at most), the exception type printed before it, `detail` and any other fields."""
    msg = rec.text[m.start("msg"):].strip()
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=framework, error=kind, message=msg[:400],
                      exc_type=exc_type_before(rec.text, m.start("msg")), fields={"detail": detail, **fields})


@rule("amp-fp16-params", ("Attempting to unscale FP16 gradients",), _TYPE + r"(?P<msg>Attempting to unscale FP16 gradients\.?)")
def _amp_fp16(m, rec, state):
    return error_event(m, rec, "amp_fp16_params", "pytorch",
                  "the AMP grad scaler found fp16 gradients: the parameters being trained are fp16 themselves")


@rule("peft-target-modules", ("not found in the base model", "No modules were targeted for adaptation",
                              "All modules were excluded. This is likely unintended", "Please specify `target_modules` in `peft_config`"),
      _TYPE + r"(?P<msg>Target modules (?P<mods>.{0,500}?) not found in the base model\b"
      r"|No modules were targeted for adaptation\b|All modules were excluded\. This is likely unintended"
      r"|(?P<nodefault>Please specify `target_modules` in `peft_config`))")
def _peft_targets(m, rec, state):
    mods = m.group("mods")
    if m.group("nodefault"):
        detail = ("PEFT has no default LoRA target modules for this model type and none were given (target_modules is "
                  "empty: an architecture this peft release does not know)")
    else:
        detail = (f"PEFT found none of the target modules {mods[:160]} in the model" if mods is not None
                  else "PEFT matched no module to adapt (target_modules / exclude_modules)")
    return error_event(m, rec, "peft_target_modules", "peft", detail)


@rule("resume-checkpoint", ("Can't find a valid checkpoint at", "No valid checkpoint found in output directory",
                             "[deepspeed] failed to resume from checkpoint "),
      _TYPE + r"(?P<msg>Can't find a valid checkpoint at (?P<path>\S.*)$"
      r"|No valid checkpoint found in output directory \((?P<dir>[^)]*)\)"
      r"|\[deepspeed\] failed to resume from checkpoint (?P<ds>\S.*)$)")
def _resume_checkpoint(m, rec, state):
    if m.group("ds"):
        return error_event(m, rec, "resume_checkpoint_not_found", "hf",
                           f"DeepSpeed loaded no state from {m.group('ds').strip()[:200]}: the checkpoint folder has no DeepSpeed "
                           "state it can resume (saved with save_only_model, or its 'latest' tag names no global_step folder)")
    where = (m.group("path") or m.group("dir") or "").strip()
    return error_event(m, rec, "resume_checkpoint_not_found", "hf", f"the Trainer found no checkpoint it can resume from at {where[:200]}")


@rule("tokenizer-no-pad", ("does not have a padding token", "You are attempting to pad samples"),
      _TYPE + r"(?P<msg>Asking to pad but the tokenizer does not have a padding token"
      r"|You are attempting to pad samples but the tokenizer you are using \((?P<tok>\w+)\) does not have (?:one|a pad token)\.)")
def _tokenizer_pad(m, rec, state):
    tok = m.group("tok")
    return error_event(m, rec, "tokenizer_no_pad_token", "hf",
                  f"the tokenizer{f' ({tok})' if tok else ''} defines no pad token, and a batch had to be padded")


_FA2_WHY = (("seems to be not installed", "the flash_attn package is not installed"),
            ("greater or equal than", "the installed flash_attn is older than transformers needs"),
            ("not available on CPU", "the model is on the CPU (torch sees no CUDA device)"),
            ("is not available", "flash_attn cannot be imported on this machine (a build for another torch / CUDA, or no GPU)"))


@rule("flash-attention-unavailable", ("FlashAttention2 has been toggled on, but it cannot be used",
                                      "does not support Flash Attention 2.0 yet",
                                      "Flash Attention 2 is not available. Please refer to the documentation of https://github.com/Dao-AILab"),
      _TYPE + r"(?P<msg>FlashAttention2 has been toggled on, but it cannot be used due to the following error:"
      r"|(?<!\w)(?P<model>[A-Z]\w{1,120}) does not support Flash Attention 2\.0 yet"
      r"|Flash Attention 2 is not available\. Please refer to the documentation of https://github\.com/Dao-AILab)")
def _flash_attention(m, rec, state):
    if m.group("model"):
        detail = f"{m.group('model')} does not implement FlashAttention 2 (attn_implementation='flash_attention_2' was asked for)"
    else:
        rest = rec.text[m.end("msg"):]
        why = next((w for key, w in _FA2_WHY if key in rest), None)
        detail = f"attn_implementation='flash_attention_2' was asked for but {why or 'flash_attn cannot be used here'}"
        found = re.search(r"Detected version (\d[\w.+]*?)\.?(?:\s|$)", rest)
        if found:
            detail += f" ({found.group(1)} installed)"
    return error_event(m, rec, "flash_attention_unavailable", "hf", detail)


@rule("quantized-no-adapter", ("fine-tuning on purely quantized models", "but that quantization method do not support training"),
      _TYPE + r"(?P<msg>You cannot perform fine-tuning on purely quantized models"
      r"|The model you are trying to fine-tune is quantized with (?P<method>\S+) but that quantization method do not support training)")
def _quantized(m, rec, state):
    method = m.group("method")
    detail = (f"the model is quantized with {method}, which cannot be trained" if method
              else "the model is quantized and has no trainable adapter attached")
    return error_event(m, rec, "quantized_model_no_adapter", "hf", detail)


# The linker's own line before a failed build: `/usr/bin/ld: cannot find -lcuda` (binutils; newer: `...: No such file or
# directory`): kept for the build failure that follows it.
@rule("linker-no-libcuda", ("cannot find -lcuda",), r"\bld(?:\.\w+)?: cannot find -lcuda\b")
def _linker_no_libcuda(m, rec, state):
    state["no_libcuda"] = rec.loc.line
    return []


@rule("extension-build", ("Error building extension '", "['ninja', '-v'", "Unable to JIT load the ", "Ninja is required to load C++ extensions",
                          "CUDA_HOME does not exist, unable to compile CUDA op", "CUDA_HOME environment variable is not set",
                          "/main.c', "),
      _TYPE + r"(?P<msg>Error building extension '(?P<name>[^'{}]+)'"
      r"|(?P<nocuda>CUDA_HOME does not exist, unable to compile CUDA op\(s\)|CUDA_HOME environment variable is not set)"
      r"|Command '\['ninja', '-v'(?:, '-j', '\d+')?\]' returned non-zero exit status \d+"
      r"|(?P<triton>Command '\['[^',]{1,300}', '[^',]{0,300}/main\.c', )"
      r"|Unable to JIT load the (?P<op>\w+) op due to (?P<why>ninja not being installed|it not being compatible)"
      r"|Ninja is required to load C\+\+ extensions)")
def _extension_build(m, rec, state):
    name = m.group("name") or m.group("op")
    if m.group("triton"):
        # triton/runtime/build.py _build (triton 2.x-3.x; triton/compiler.py before 2.1): the C launcher of a kernel
        # (cuda_utils, __triton_launcher, triton_) is compiled from a main.c in a temporary directory with $CC / gcc /
        # clang and linked against the driver's libcuda (`subprocess.check_call(cc_cmd)` raises CalledProcessError).
        if "returned non-zero exit status" not in rec.text[m.end("triton"):]:
            return None
        lib = state.pop("no_libcuda", None)
        detail = "Triton's JIT build of its C launcher (main.c, with the C compiler) failed"
        if lib is not None and rec.loc.line - lib <= 10:
            detail += (": the linker cannot find libcuda (`cannot find -lcuda`): the driver's libcuda.so is not on the "
                       "linker's path (a libcuda.so link, LIBRARY_PATH or TRITON_LIBCUDA_PATH)")
        else:
            detail += " (the compiler's errors are in the lines above)"
        return error_event(m, rec, "extension_build_failed", "triton", detail)
    if m.group("nocuda"):
        detail = "no CUDA toolkit was found to compile the CUDA ops (CUDA_HOME is not set and no nvcc is on the PATH)"
    elif m.group("why") and m.group("why").startswith("it not"):
        detail = f"DeepSpeed's {name} op is not compatible with this hardware / software (see ds_report)"
    elif m.group("why") or "Ninja is required" in m.group("msg"):
        detail = "ninja is not installed, so no C++/CUDA extension can be JIT-built"
    else:
        detail = f"the JIT build of the C++/CUDA extension{f' {name}' if name else ''} failed (ninja's compile)"
    return error_event(m, rec, "extension_build_failed", "pytorch", detail)


@rule("model-no-loss", ("The model did not return a loss from the inputs",),
      _TYPE + r"(?P<msg>The model did not return a loss from the inputs, only the following keys: (?P<out>[\w,]*)\."
      r"(?: For reference, the inputs it received are (?P<inp>[\w,]*))?)")
def _model_no_loss(m, rec, state):
    inputs = m.group("inp")
    detail = (f"the model returned only {m.group('out')}: the batch ({inputs}) has no labels" if inputs
              else f"the model returned only {m.group('out')} and no loss")
    return error_event(m, rec, "model_returned_no_loss", "hf", detail)


@rule("trainer-batch-empty", ("The batch received was empty, your model won't be able to train on it",),
      _TYPE + r"(?P<msg>The batch received was empty, your model won't be able to train on it\."
      r"(?: Double-check that your training dataset contains keys expected by the model(?:: (?P<cols>[\w,]{1,400}))?)?)")
def _trainer_batch_empty(m, rec, state):
    cols = m.group("cols")
    detail = ("the Trainer kept only the dataset columns named in the model's forward signature (remove_unused_columns) and "
              "none was left" + (f": the model takes {cols[:200]}, the dataset has none of them" if cols else ""))
    return error_event(m, rec, "dataset_columns_removed", "hf", detail, columns=cols)


# TrainingArguments.__post_init__ by release: 4.0-4.3 "Mixed precision training with AMP or APEX (`--fp16`) can only be used
# on CUDA devices.", 4.4-4.9 "... (`--fp16`) and FP16 evaluation can only be used on CUDA devices.", 4.10-4.19 "... (`--fp16`
# or `--bf16`) and half precision evaluation (`--fp16_full_eval` or `--bf16_full_eval`) can only be used on CUDA devices.",
# 4.20+ "FP16 Mixed precision training with AMP or APEX (`--fp16`) and FP16 half precision evaluation (`--fp16_full_eval`)
# can only be used on CUDA devices." (later "on CUDA or NPU devices", "... or certain XPU devices (with IPEX).", "on CUDA or
# MLU devices or NPU devices or ..."). The raise's source line quotes it: after a quote (and after '"FP16 ') it is no error.
_NO_CUDA_FP16 = (_TYPE + r"(?<![\"']FP16 )(?P<msg>(?:FP16 )?Mixed precision training with AMP or APEX \(`--fp16`(?: or `--bf16`)?\)"
                 r"[^.]{0,160}? can only be used on CUDA\b[^.]{0,100}? devices)")


@rule("trainer-fp16-no-cuda", ("Mixed precision training with AMP or APEX (`--fp16`",), _NO_CUDA_FP16)
def _fp16_no_cuda(m, rec, state):
    fields = no_device_fields(m.group("msg"))
    return error_event(m, rec, "cuda_no_device", "hf", fields.pop("detail"), **fields)


# The Trainer sizes its run (and the LR schedule) from len(train_dataloader) x epochs; a dataset without __len__ needs
# max_steps. Trainer.__init__ 4.2x "train_dataset does not implement __len__, max_steps has to be specified", 4.27+ "The
# train_dataset ... specified. The number of steps needs to be known in advance for the learning rate scheduler.";
# _inner_training_loop "args.max_steps must be set to a positive value if dataloader does not have a length, was -1"; a
# streaming wrapper's own check (CEHR-BERT: "When streaming is set to True, max_steps must be a non-negative integer.").
# LLaMA-Factory hparams/parser.py and ms-swift's argument checks refuse it before the Trainer does: "Please specify
# `max_steps` in streaming mode." (ValueError; LLaMA-Factory's first releases: an AssertionError with the same words).
@rule("trainer-max-steps-required", ("does not implement __len__, max_steps has to be specified", "max_steps must be ",
                                     "Please specify `max_steps` in streaming mode"),
      _TYPE + r"(?P<msg>(?:The )?train_dataset does not implement __len__, max_steps has to be specified\b[^\n]{0,120}"
      r"|args\.max_steps must be set to a positive value if dataloader does not have a length, was (?P<was>-?\d+|None)"
      r"|(?:When )?(?:[Ss]treaming|an? (?:IterableDataset|iterable dataset))[^.\n]{0,60}?, max_steps must be "
      r"(?:set|specified|a (?:non-negative|positive) integer)\b(?:[^\n]{0,40}?Current max_steps: (?P<cur>-?\d+|None))?"
      r"|Please specify `max_steps` in streaming mode\.?)")
def _max_steps_required(m, rec, state):
    was = m.group("was") or m.group("cur")
    detail = ("the training dataset has no length (an IterableDataset: datasets' streaming=True, a generator) and max_steps is "
              "not set" + (f" (it is {was})" if was is not None else "") + ", so the run's length and its learning-rate "
              "schedule cannot be computed")
    return error_event(m, rec, "max_steps_required", "hf", detail)


# What a tokenizer refuses as input, by layer: the Rust bindings' conversion of each sequence, transformers' type check in
# __call__ (4.0-4.2x typo 'must of type'), the slow tokenizers' get_input_ids. Each is the tokenizer's, never the model's.
@rule("tokenizer-input-invalid", ("TextEncodeInput must be Union", "TextInputSequence must be str", "InputSequence must be Union",
                                  "EncodeInput must be Union", " input must of type `str`", " input must be of type `str`",
                                  "is not valid. Should be a string"),
      _TYPE + r"(?P<msg>(?P<rust>TextEncodeInput must be Union\[TextInputSequence, Tuple\[InputSequence, InputSequence\]\]"
      r"|TextInputSequence must be str\b|PreTokenizedInputSequence must be Union\[List\[str\], Tuple\[str\]\]"
      r"|PreTokenizedEncodeInput must be Union\[PreTokenizedInputSequence, Tuple\[[\w, ]{0,80}\]\]\]?)"
      r"|(?P<arg>text(?:_pair)?(?:_target)?) input must (?:be )?of type `str`(?: \(single example\), `[Ll]ist\[str\]` "
      r"\(batch or single pretokenized example\) or `[Ll]ist\[[Ll]ist\[str\]\]` \(batch of pretokenized examples\)\.?)?"
      r"|Input (?:(?P<input>[^\n]{1,200}?) )?is not valid\. Should be a string(?:, a list/tuple of strings or a list/tuple of "
      r"integers| or a list/tuple of strings when `is_split_into_words=True`)\.?)")
def _tokenizer_input_invalid(m, rec, state):
    if m.group("rust"):
        detail = ("the fast (Rust) tokenizer was handed a sequence that is not a str: None or NaN from an empty dataset cell, a "
                  "number, bytes, a list where a string was expected (words without is_split_into_words=True), or a str "
                  "holding lone surrogates")
    elif m.group("arg"):
        detail = (f"the tokenizer's `{m.group('arg')}` is neither a str, a list of str nor a list of lists of str: None / NaN "
                  "in a column, bytes, numbers, a pandas Series or numpy array")
    else:
        shown = m.group("input")
        detail = ("the slow (Python) tokenizer got an input that is not a string, a list of strings or of token ids"
                  + (f" ({shown[:80]}: an object whose str() only looks like text, such as an AddedToken, or None)" if shown else ""))
    return error_event(m, rec, "tokenizer_input_invalid", "hf", detail)


# transformers PreTrainedModel.gradient_checkpointing_enable / diffusers ModelMixin.enable_gradient_checkpointing:
# f"{self.__class__.__name__} does not support gradient checkpointing." (the class's supports_gradient_checkpointing /
# _supports_gradient_checkpointing is False). The raise's f-string shows "{self.__class__.__name__}": no class name.
@rule("gradient-checkpointing-unsupported", (" does not support gradient checkpointing",),
      _TYPE + r"(?<![\w.{}])(?P<msg>(?P<cls>[A-Z][A-Za-z0-9_]{1,80}) does not support gradient checkpointing\b\.?[^\n]{0,200})")
def _gradient_checkpointing_unsupported(m, rec, state):
    detail = (f"{m.group('cls')} does not declare gradient-checkpointing support in the installed release "
              "(supports_gradient_checkpointing is False), so --gradient_checkpointing / gradient_checkpointing_enable() is refused")
    return error_event(m, rec, "gradient_checkpointing_unsupported", "hf", detail, model_class=m.group("cls"))


# Trainer._determine_best_metric (4.42+): raise KeyError(f"The `metric_for_best_model` training argument is set to
# '{metric_to_check}', which is not found in the evaluation metrics. The available evaluation metrics are:
# {list(metrics.keys())}. Consider changing the `metric_for_best_model` via the TrainingArguments.") from the plain KeyError of
# `metric_value = metrics[metric_to_check]` (the only error before 4.42). The explanation is read after KeyError's quote,
# never after an f-string's; the plain KeyError only right under the lookup line.
_KEYERROR_MSG = LazyPattern(r"KeyError: (?P<msg>'[^'\n]{1,120}')")


@rule("trainer-best-metric-missing", ("`metric_for_best_model` training argument is set to", "metric_value = metrics[metric_to_check]",
                                      "KeyError: '"),
      r"(?:(?<=KeyError: \")|(?<=KeyError: ')|(?<![\"'{]))(?P<msg>The `metric_for_best_model` training argument is set to "
      r"'(?P<metric>[^'\n]{1,120})', which is not found in the evaluation metrics\.(?: The available evaluation metrics are: "
      r"(?P<avail>\[[^\]\n]{0,800}\]))?[^\n]{0,120})"
      r"|(?P<frame>(?:^|\s)metric_value = metrics\[metric_to_check\]\s*$)"
      r"|(?<![\w.])KeyError: '(?P<key>[^'\n]{1,120})'\s*$")
def _best_metric_missing(m, rec, state):
    if m.group("frame"):
        state["best_metric_lookup"] = rec.loc.line
        return None  # a source line: noted, left to the other rules
    if m.group("key") is not None:
        at = state.pop("best_metric_lookup", None)
        if at is None or rec.loc.line - at > 3:
            return None  # any other KeyError: not this rule's
        metric, avail = m.group("key"), None
        mk = _KEYERROR_MSG.search(rec.text, m.start()) or m  # the message is the KeyError's own text
    else:
        state.pop("best_metric_lookup", None)
        metric, avail, mk = m.group("metric"), m.group("avail"), m
    if not first_time(state, ("trainer", "best-metric"), rec.loc.line):
        return []
    detail = (f"metric_for_best_model is {metric!r} (load_best_model_at_end / the best-checkpoint tracking), but the evaluation "
              "returned no such metric" + (f"; it returned {avail[:240]}" if avail else "")
              + " (the eval dataset's name in the keys, a compute_metrics that returns other names, or an evaluation that produced no loss)")
    return error_event(mk, rec, "monitored_metric_missing", "hf", detail, metric=metric, callback="metric_for_best_model")


# torch.tensor() over a ragged nested list (torch/csrc/utils/tensor_new.cpp internal_new_from_data / compute_sizes:
# "expected sequence of length {n} at dim {d} (got {m})", every release): BatchEncoding.convert_to_tensors's as_tensor
# raises it first, and the `Unable to create tensor ...` ValueError is raised from it (a paste may hold only this one).
@rule("batch-not-padded", ("Unable to create tensor, you should probably activate truncation",
                           "Cannot batch tensors with different shapes in component ", "stack expects each tensor to be equal size, but got ",
                           "expected sequence of length "),
      _TYPE + r"(?P<msg>Unable to create tensor, you should probably activate truncation and/or padding\b"
      r"|expected sequence of length (?P<l0>\d+) at dim (?P<dim>\d+) \(got (?P<l1>\d+)\)"
      r"|stack expects each tensor to be equal size, but got (?P<s0>\[[\d, ]*\]) at entry \d+ and (?P<s1>\[[\d, ]*\]) at entry \d+"
      r"|Cannot batch tensors with different shapes in component \d+\.(?P<tf>)(?: First element had shape (?P<a>\[[\d,]*\]) and element \d+ had shape (?P<b>\[[\d,]*\]))?)")
def _batch_not_padded(m, rec, state):
    if m.group("l0"):
        if not first_time(state, ("batch", "ragged"), rec.loc.line):
            return []  # the same ragged batch again a few lines on (a re-raise, a DataLoader worker): one failure
        return error_event(m, rec, "batch_not_padded", "pytorch",
                           f"torch.tensor got a nested list whose rows differ in length ({m.group('l0')} and {m.group('l1')} at "
                           f"dim {m.group('dim')}): the sequences of the batch (labels, input_ids) were not padded to one length")
    if m.group("s0"):
        return error_event(m, rec, "batch_not_padded", "pytorch",
                           f"torch.stack (the DataLoader's collate) got samples of different shapes ({m.group('s0')} and {m.group('s1')}): "
                           "the inputs were not resized, cropped or padded to one shape")
    if m.group("tf") is not None:
        shapes = f" ({m.group('a')} and {m.group('b')})" if m.group("a") else ""
        return error_event(m, rec, "batch_not_padded", "tensorflow",
                           f"tf.data could not stack examples of different shapes{shapes} into one batch: "
                           "the inputs were not resized or padded to one shape")
    feat = re.search(r"Perhaps your features \(`(?P<f>[^`]+)` in this case\)", rec.text)
    detail = ("the batch's sequences differ in length (or are not token ids) and were not padded"
              + (f"; the feature `{feat.group('f')}` is nested or not tokenized" if feat else ""))
    return error_event(m, rec, "batch_not_padded", "hf", detail)


@rule("quantized-device-map", ("has been loaded in 8-bit precision on",),
      _TYPE + r"(?P<msg>You can't train a model that has been loaded in 8-bit precision on "
      r"(?P<where>a different device than the one you're training on|multiple devices))")
def _quantized_device_map(m, rec, state):
    if m.group("where").startswith("multiple"):
        detail = "the quantized model is spread over several GPUs (device_map) and the job runs distributed"
    else:
        detail = "the quantized model was loaded on another GPU than the one this process trains on"
    return error_event(m, rec, "quantized_model_device_map", "accelerate", detail)


# accelerate's Accelerator.prepare / prepare_model (0.20+): a model whose hf_device_map spans several devices
# (from_pretrained(device_map='auto' / 'balanced'), naive model parallelism) cannot be wrapped for DDP / FSDP /
# DeepSpeed: `You can't train a model that has been loaded with `device_map='auto'` in any distributed mode. Please
# rerun your script specifying `--num_processes=1` or by launching with `python {{myscript.py}}`.` (every release
# since; ACCELERATE_BYPASS_DEVICE_MAP=true skips it). The Trainer calls prepare, so it is the Trainer's error too.
@rule("device-map-distributed", ("in any distributed mode",),
      _TYPE + r"(?P<msg>You can't train a model that has been loaded with `device_map='(?P<map>[\w-]{1,20})'` in any distributed mode)")
def _device_map_distributed(m, rec, state):
    if not first_time(state, ("device_map", "distributed"), rec.loc.line):
        return []  # the same refusal again a few lines on (a chained or repeated traceback)
    return error_event(m, rec, "device_map_distributed", "accelerate",
                       "the model was loaded split over several GPUs (device_map='auto', naive model parallelism) and the "
                       "job runs distributed (DDP / FSDP / DeepSpeed), which needs one whole copy per process")


# the message is the KeyError's quoted argument: here the quote before it is the exception's, and the
# source line that builds it (`f'{obj_type} is not in the {registry.name} registry')`) has no KeyError
@rule("registry-type", (" registry'", " registry. Please check whether the value of"),
      r"KeyError: [\"'](?:\w+: [\"'])?(?P<msg>(?P<obj>[\w.]+) is not in the (?:(?P<scope>\w+)::)?(?P<reg>\w+) registry)")
def _registry_type(m, rec, state):
    scope = f"{m.group('scope')}::" if m.group("scope") else ""
    detail = f"the config's type {m.group('obj')} is in no {scope}{m.group('reg')} registry (not imported, or another scope)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="mmengine", error="registry_type_not_found",
                      message=rec.text[m.start("msg"):].strip()[:400], exc_type="KeyError", fields={"detail": detail})


# Other registries that build a model from a name: timm's create_model (timm/models/_factory.py, factory.py before
# 0.9: `raise RuntimeError('Unknown model (%s)' % model_name)`) and fvcore's Registry.get (detectron2 and its
# projects: `raise KeyError("No object named '{}' found in '{}' registry!".format(name, self._name))`). The raise
# in a traceback's source line has a quote before the words, the error line the exception type.
@rule("model-registry", ("RuntimeError: Unknown model (", "No object named '"),
      r"RuntimeError: (?P<msg>Unknown model \((?P<timm>[^()\s]{1,200})\))"
      r"|KeyError: [\"'](?P<fvmsg>No object named '(?P<obj>[^']{1,200})' found in '(?P<reg>[^']{1,100})' registry)")
def _model_registry(m, rec, state):
    if m.group("timm"):
        return error_event(m, rec, "registry_type_not_found", "timm",
                           f"timm has no model registered as {m.group('timm')} (the module that defines it was not imported, "
                           "or this timm release does not have it)")
    detail = f"the config's {m.group('obj')} is in no {m.group('reg')} registry (the module that registers it was not imported)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="detectron2", error="registry_type_not_found",
                      message=rec.text[m.start("fvmsg"):].strip()[:400], exc_type="KeyError", fields={"detail": detail})


@rule("hf-hub-refusal", ("is not a local folder and is not a", "Access to model ", "GatedRepoError: ",
                                  "RepositoryNotFoundError: ", "Repository Not Found for url:",
                                  "You are trying to access a gated repo", "Cannot access gated repo for url",
                                  "is awaiting a review from the repo authors", " is gated. You must be authenticated"),
      r"(?P<msg>(?:^|(?<=\s))(?P<id>[^\s{}\"'`]{1,300}) is not a local folder and is not a"
      r"|Access to model (?P<gated>\S+) is restricted(?P<why>\. You must (?:have access to it and )?be authenticated"
      r"|\. You must have access to it and[ \t]*$| and you are not in the authorized list)"
      r"|Repo model (?P<oldgated>\S+) is gated\. You must be authenticated"
      r"|Your request to access model (?P<pending>\S+) is awaiting a review from the repo authors"
      r"|(?P<kind>GatedRepo|RepositoryNotFound)Error: (?P<code>\d{3}) Client Error"
      r"|Repository Not Found for url: (?P<url>\S+)"
      r"|You are trying to access a gated repo\."
      r"|(?P<gcannot>Cannot access gated repo for url)(?:[ \t]+(?P<gurl>\S+?)\.?)?[ \t]*$)")
def _hf_not_accessible(m, rec, state):
    # huggingface_hub prints `GatedRepoError: 401 Client Error. (...)`, a blank line, `Cannot access gated repo for
    # url ...` and then the Hub's reason (restricted, not authorized, awaiting review): the first two are held
    # until the reason, so the finding says why; any other line of this parser releases them as they are
    held = state.pop("pending", None)
    near = held is not None and rec.loc.line - held.loc.line <= 3
    out = [held] if held is not None else []
    if m.group("gcannot") or m.group("kind") == "GatedRepo":
        if near:
            out = []  # the refusal's next line: one failure
        code = m.group("code")
        first = (f"the Hub refused the gated repo at {m.group('gurl')}" if m.group("gurl")
                 else "the Hub refused a gated repo" if m.group("gcannot")
                 else f"the model is a gated repo the Hub refused ({code} Client Error)")
        state["pending"] = error_event(m, rec, "hf_hub_access", "hf", first)
        return out
    if near and m.group("gated", "oldgated", "pending") != (None, None, None):
        out = []  # the reason line says the same failure, and why
    if m.group("id"):
        detail = f"{m.group('id')} is neither a local folder nor a model id on the Hub (or a private repo without a token)"
    elif m.group("gated"):
        why = ("this account is not granted access" if "authorized list" in m.group("why")
               else "the download is not authenticated (no token, or not logged in)")
        detail = f"{m.group('gated')} is a gated repo and {why}"
    elif m.group("oldgated"):
        detail = f"{m.group('oldgated')} is a gated repo and the download is not authenticated (no token, or not logged in)"
    elif m.group("pending"):
        detail = f"{m.group('pending')} is a gated repo and this account's access request is still awaiting review"
    elif m.group("kind") == "GatedRepo" or "gated repo" in m.group("msg"):
        code = m.group("code")
        detail = f"the model is a gated repo the Hub refused ({code} Client Error)" if code else "the model is a gated repo the Hub refused"
    else:
        detail = "the Hub has no such repository (or it is private and the download is not authenticated)"
    return out + [error_event(m, rec, "hf_hub_access", "hf", detail)]


PARSER = Parser(
    name="setup_checks",
    framework="hf",
    priority=40,  # before the generic exception parser (python, 80), which would call these uncaught exceptions
    description="Fine-tuning set-up checks: fp16 parameters under AMP, PEFT target modules, resume checkpoints, pad tokens, FlashAttention 2, "
                "unpadded batches, missing labels, batches emptied by remove_unused_columns, fp16 without CUDA, iterable datasets without max_steps, "
                "tokenizer inputs that are not text, models refusing gradient checkpointing, metric_for_best_model keys the evaluation lacks, quantized models and their devices, Triton's launcher build without libcuda, JIT op builds",
    rules=[_amp_fp16, _peft_targets, _resume_checkpoint, _tokenizer_pad, _flash_attention, _quantized, _linker_no_libcuda, _extension_build, _model_no_loss,
           _trainer_batch_empty, _fp16_no_cuda, _max_steps_required, _tokenizer_input_invalid,
           _gradient_checkpointing_unsupported, _best_metric_missing,
           _batch_not_padded, _quantized_device_map, _device_map_distributed, _registry_type, _model_registry,
           _hf_not_accessible],
)
