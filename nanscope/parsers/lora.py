"""A LoRA adapter the model or the serving engine refused (vLLM V0 and V1, TensorRT-LLM).

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
from nanscope.parsers.base import Parser, rule

FW = "serving"
_EXC = re.compile(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): ")


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


PARSER = Parser(
    name="lora",
    framework=FW,
    priority=37,  # before tensorrt_llm (38) and python's exception reader (80), whose lines carry these words
    description="A LoRA adapter the model or the serving engine refused (vLLM, TensorRT-LLM): not found, rank too high, modules it cannot apply",
    rules=[_lora_load],
)
