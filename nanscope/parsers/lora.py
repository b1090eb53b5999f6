"""A LoRA adapter the model or the serving engine refused (vLLM V0 and V1, TensorRT-LLM, LoRAX / TGI).

vLLM loads an adapter in vllm/lora/worker_manager.py WorkerLoRAManager._load_adapter (V0's engine loop, V1's
engine core `add_lora`, the LLM class's per-request LoRARequest) and checks it against the engine's LoRA
config; every refusal names the adapter:

  _load_adapter, any exception while reading the checkpoint (0.4-0.6):
      raise RuntimeError(f"Loading lora {lora_request.lora_local_path} failed") from e
      -> RuntimeError: Loading lora /path/to/adapter failed
  _load_adapter, 0.7+ (the path holds no adapter vLLM can read; other exceptions re-raised as they are):
      raise ValueError(f"Loading lora {lora_request.lora_name} failed: No adapter found for {lora_path}") from e
      -> ValueError: Loading lora ["sql failed: No adapter found for /path"]  (V1 wraps it in a list)
  vllm/lora/peft_helper.py PEFTHelper.validate_legal (earlier: _load_adapter itself):
      f"LoRA rank {self.r} is greater than max_lora_rank {lora_config.max_lora_rank}."
      f"LoRA added vocab size {...} is greater than lora_extra_vocab_size {...}."
  vllm/lora/utils.py parse_fine_tuned_lora_name (an adapter with modules_to_save / an lm_head delta):
      raise ValueError(f"{name} is unsupported LoRA weight")
      -> ValueError: base_model.model.lm_head.weight is unsupported LoRA weight
  vllm/lora/models.py LoRAModel.from_local_checkpoint (0.4+; the adapter targets modules the model has no LoRA
  layer for: a vision tower, fused qkv_proj names from another architecture, embed_tokens / lm_head):
      f"While loading {lora_dir}, expected target modules in {expected_lora_modules} but received
      {unexpected_modules}. Please verify that the loaded LoRA module is correct"
  V1's executor re-raises a worker's failure as `RuntimeError: Worker failed with error '<the text above>',
  please check the stack trace above for the root cause`, which carries the same words.

TensorRT-LLM cpp/tensorrt_llm/runtime/loraUtils.cpp / the LoRA plugin, an adapter above the engine's
--max_lora_rank:
      TLLM_CHECK_WITH_INFO(..., "Invalid low_rank (%d). low_rank must be smaller than mMaxLowRank (%d)", ...)
      -> [TensorRT-LLM][ERROR] Assertion failed: Invalid low_rank (1024). low_rank must be smaller than mMaxLowRank (64)

A base model the engine has no LoRA support for (the adapter itself may be fine):
  vLLM (0.3-0.5, vllm/lora/... and the model runner's load_model, before the model class has
  SupportsLoRA):  f"Model {model.__class__.__name__} does not support LoRA, but LoRA is enabled. Support for this
      model may be added in the future. If this is important to you, please open an issue on github."
  (NVIDIA NIM's `Profile <hash> does not support LoRA, but LoRA is enabled. Skipping profile.` is a WARNING of a
  profile it skips, not matched.)
  LoRAX (and TGI's multi-LoRA, which took its code) server/.../models/model.py Model.load_adapter:
      raise ValueError("This model does not support adapter loading.")
      raise ValueError("This model does not support dynamic adapter loading. ...")
      raise ValueError(f"This model was initialized with the adapter {...} and therefore does not support dynamic
      adapter loading. ...")
  and before that check existed (predibase/lorax#65, fixed by #76), an AttributeError on the shard's model class,
  relayed by the router as `Server error: 'BLOOMSharded' object has no attribute 'load_adapter'`.
An adapter directory without its config, peft's PeftConfigMixin.from_pretrained (LoRAX's router relays it as
`Server error: ...`):  raise ValueError(f"Can't find '{CONFIG_NAME}' at '{pretrained_model_name_or_path}'")
with CONFIG_NAME = "adapter_config.json".

peft's `Target modules [...] not found in the base model` is left out: it is nearly always get_peft_model at the
start of a fine-tuning run (a LoraConfig written for another architecture), a training failure, not an adapter a
server refused.

The source lines a traceback prints (`raise RuntimeError(f"Loading lora {lora_path} failed")`) carry the
template, not a value: a name that opens with `{` and a rank that is no number are not matched.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "serving"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): ")


def _event(rec, state, adapter: str, reason: str, fields: dict) -> list[ErrorEvent]:
    if not first_time(state, ("lora_load",), rec.loc.line):
        return []  # the exception, its re-raise by the executor, the API server's copy: one failure
    exc = _EXC.search(rec.text)
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="lora_load_failed",
                       message=rec.text.strip(), exc_type=exc.group("type") if exc else None,
                       fields={"adapter": adapter, "reason": reason, **fields,
                               "detail": f"the LoRA adapter{(' ' + adapter) if adapter else ''} was refused: {reason}"})]


@rule(
    "lora-load",
    ("Loading lora ", "is unsupported LoRA weight", "is greater than max_lora_rank",
     "is greater than lora_extra_vocab_size", "low_rank must be smaller than mMaxLowRank",
     "expected target modules in "),
    r"Loading lora (?P<name>[^\s{]\S*?) failed(?:: (?P<why>[^\"'\]\r\n]+))?"
    r"|(?<![{\w.])(?P<weight>[\w.]{1,300}) is unsupported LoRA weight"
    r"|LoRA rank (?P<r>\d+) is greater than max_lora_rank (?P<max>\d+)"
    r"|LoRA added vocab size (?P<v>\d+) is greater than lora_extra_vocab_size (?P<vmax>\d+)"
    r"|While loading (?P<tdir>[^{,\s][^,]*), expected target modules in (?P<exp>.+?) but received (?P<got>\[[^\]]*\]?)"
    r"|Invalid low_rank \((?P<lr>\d+)\)\. low_rank must be smaller than mMaxLowRank \((?P<lmax>\d+)\)",
)
def _lora_load(m, rec, state):
    if m.group("name"):
        name = m.group("name").strip("[\"'")
        why = (m.group("why") or "").strip()
        return _event(rec, state, name, why or "its checkpoint could not be read (see the exception above it)",
                      {"phase": "load"})
    if m.group("weight"):
        return _event(rec, state, "", f"it holds {m.group('weight')}, a weight vLLM's LoRA layers cannot apply "
                                      "(modules_to_save / an lm_head delta)", {"weight": m.group("weight")})
    if m.group("r"):
        r, cap = int(m.group("r")), int(m.group("max"))
        return _event(rec, state, "", f"its rank {r} is above the engine's max_lora_rank {cap}",
                      {"rank": r, "max_rank": cap})
    if m.group("tdir"):
        got = m.group("got")
        return _event(rec, state, m.group("tdir").strip(), f"it targets modules the model has no LoRA layer for {got}",
                      {"received": got})
    if m.group("v"):
        return _event(rec, state, "", f"its added vocabulary ({m.group('v')} tokens) is above "
                                      f"lora_extra_vocab_size {m.group('vmax')}", {})
    r, cap = int(m.group("lr")), int(m.group("lmax"))
    return _event(rec, state, "", f"its rank {r} is not below the engine's maximum LoRA rank {cap} "
                                  "(TensorRT-LLM --max_lora_rank)", {"rank": r, "max_rank": cap})


@rule(
    "lora-unsupported",
    ("does not support LoRA, but LoRA is enabled", "does not support adapter loading.",
     "does not support dynamic adapter loading", "object has no attribute 'load_adapter'",
     "Can't find 'adapter_config.json' at '"),
    r"Model (?P<cls>\w+) does not support LoRA, but LoRA is enabled"
    r"|(?P<lorax>This model does not support adapter loading\.)"
    r"|(?P<dyn>This model (?:was initialized with the adapter (?P<static>\S+) and therefore )?does not support dynamic"
    r" adapter loading)"
    r"|'(?P<acls>\w+)' object has no attribute 'load_adapter'"
    r"|Can't find 'adapter_config\.json' at '(?P<dir>[^'\s]*)",
)
def _lora_unsupported(m, rec, state):
    if m.group("cls"):
        return _event(rec, state, "", f"the base model's class {m.group('cls')} has no LoRA support in this vLLM "
                                      "(the base model lacks it, not the adapter)", {"phase": "start", "model_class": m.group("cls")})
    if m.group("lorax"):
        return _event(rec, state, "", "the served base model's architecture has no adapter support in this "
                                      "LoRAX / TGI", {"phase": "load"})
    if m.group("dyn"):
        static = f" (it was started with the adapter {m.group('static')})" if m.group("static") else ""
        return _event(rec, state, "", f"this server loads no adapter per request{static}", {"phase": "load"})
    if m.group("acls"):
        return _event(rec, state, "", f"the served model's class {m.group('acls')} cannot load adapters (no "
                                      "load_adapter: an architecture this LoRAX has no adapter support for)",
                      {"phase": "load", "model_class": m.group("acls")})
    where = m.group("dir")
    return _event(rec, state, where, "its directory has no adapter_config.json (not a PEFT adapter, or only partly "
                                     "downloaded)", {"phase": "load"})


PARSER = Parser(
    name="lora",
    framework=FW,
    priority=37,  # before tensorrt_llm (38) and python's exception reader (80), whose lines carry these words
    description="A LoRA adapter the model or the serving engine refused (vLLM, TensorRT-LLM, LoRAX / TGI): not found, no adapter_config.json,"
                " rank too high, modules it cannot apply, a base model with no LoRA support",
    rules=[_lora_load, _lora_unsupported],
)
