"""transformers' generate() (and the pipelines, TRL / RAG code that call it) refusing the arguments it was given:
a keyword the model's forward does not take, a sampling parameter outside its range, a generation config that does
not validate. The call raises before a token is generated. One signature: generate-arguments-invalid.

Templates (huggingface/transformers, quoted from source via the search index):
  src/transformers/generation/utils.py GenerationMixin._validate_model_kwargs (4.27+; the TF and Flax mixins too):
      raise ValueError(f"The following `model_kwargs` are not used by the model: {unused_model_args} (note: typos in
      the generate arguments will also show up in this list)")
      -> ValueError: The following `model_kwargs` are not used by the model: ['max_tokens'] (note: ...)
  src/transformers/generation/logits_process.py, the warpers generate() builds for sampling:
      TemperatureLogitsWarper: f"`temperature` (={temperature}) has to be a strictly positive float, otherwise your
          next token scores will be invalid." (+ " If you're looking for greedy decoding strategies, set
          `do_sample=False`." for 0.0; before 4.37: f"`temperature` has to be a strictly positive float, but is {t}")
      TopPLogitsWarper: f"`top_p` has to be a float > 0 and < 1, but is {top_p}"
      TopKLogitsWarper: f"`top_k` has to be a strictly positive integer, but is {top_k}"
  src/transformers/generation/configuration_utils.py GenerationConfig.save_pretrained (4.34+ raises):
      raise ValueError("The generation config instance is invalid -- `.validate()` throws warnings and/or
      exceptions. Fix these issues to save the configuration.\\n\\nThrown during validation:\\n" + str(exc))
      (4.32-4.33 said the same as a UserWarning, `... This warning will be raised to an exception ...`, and skipped
      the save: no failure.)
      The inner exception it wraps, printed first in the chained traceback (4.38-4.39 `raise
      ValueError(str([w.message for w in caught_warnings]))`): `ValueError: [UserWarning('`do_sample` is set to
      `False`. However, `temperature` is set to `0.9` -- this flag is only used in sample-based generation modes. ...')]`;
      4.5x `GenerationConfig.validate(strict=True)`: `raise ValueError("GenerationConfig is invalid: \\n" + info_message)`
      -> `ValueError: GenerationConfig is invalid: ` with `- `temperature`: ...` lines after it; 4.32's short-lived
      raising validate(): `ValueError: `do_sample` is set to `False`. However, temperature is set to 0.9 -- ... Set
      `do_sample=True` or unset temperature to continue.`
The validation warnings themselves (`do_sample` is set to `False`. However, `temperature` is set to ...) are
warnings: generate() ignores the parameter and goes on; only the ValueError wordings are read.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "hf"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception))(?::[ \t]|\(\")")


@rule(
    "generate-arguments",
    ("are not used by the model: [", "has to be a strictly positive", "`top_p` has to be a float > 0 and < 1",
     "The generation config instance is invalid -- ", "ValueError: [UserWarning(", "ValueError: `do_sample` is set to `False`",
     "GenerationConfig is invalid:"),
    r"The following `model_kwargs` are not used by the model: (?P<unused>\[[^\]]*\])"
    r"|`(?P<param>temperature|top_k)` (?:\(=(?P<pv>[^)]*)\) )?has to be a strictly positive (?:float|integer)"
    r"(?:, but is (?P<pv2>\S+))?"
    r"|`top_p` has to be a float > 0 and < 1, but is (?P<topp>\S+)"
    r"|(?P<config>The generation config instance is invalid) -- `\.validate\(\)` throws warnings and/or exceptions\."
    r"(?P<tail>.*)"
    r"|(?<![\"'])ValueError: (?:\[UserWarning\(['\"])?`do_sample` is set to `False`\. However, `?(?P<flag>\w+)`? is set to "
    r"`?(?P<fv>[\w.+-]+)"
    r"|(?<![\"'])ValueError: (?P<strict>GenerationConfig is invalid):",
)
def _generate_args(m, rec, state):
    if m.group("config") and "This warning will be raised" in m.group("tail"):
        return []  # 4.32-4.33: a warning, the config is not saved and the job goes on
    if not first_time(state, ("generate_args",), rec.loc.line):
        return []  # the exception, its re-print by asyncio / a wrapper
    if m.group("unused"):
        what = "unused_model_kwargs"
        detail = (f"generate() refused keyword arguments the model does not take: {m.group('unused')} "
                  "(a typo or another library's name, e.g. max_tokens for max_new_tokens)")
    elif m.group("param"):
        what = m.group("param")
        value = (m.group("pv") or m.group("pv2") or "").rstrip(".")
        detail = f"generate() refused {what}={value}: it must be strictly positive when sampling (do_sample=True)"
    elif m.group("topp"):
        what = "top_p"
        detail = f"generate() refused top_p={m.group('topp').rstrip('.')}: it must be between 0 and 1"
    elif m.group("flag"):
        what = "generation_config"
        detail = (f"the generation config does not validate: {m.group('flag')}={m.group('fv').rstrip('.')} is set with "
                  "do_sample=False (a sampling parameter greedy decoding does not use), so it was not saved")
    else:
        what = "generation_config"
        detail = "the generation config does not validate (sampling parameters that contradict do_sample), so it was not saved"
    exc = _EXC.search(rec.text)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="generate_arguments_invalid",
                      message=rec.text.strip(), exc_type=exc.group("type") if exc else None,
                      fields={"argument": what, "detail": detail})


PARSER = Parser(
    name="generate_args",
    framework=FW,
    priority=41,
    description="transformers generate(): keyword arguments the model does not take, sampling parameters out of range, a generation config that does not validate",
    rules=[_generate_args],
)
