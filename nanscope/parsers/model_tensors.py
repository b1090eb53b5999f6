"""Serving engines' loaders that look a tensor up by name and do not find it in the checkpoint: the model the engine
built needs a weight the files do not have (another architecture variant or layout, a head tied to the embeddings
and so not saved, a fine-tune saved with other names). One signature: state-dict-mismatch.

Templates (quoted from source via the search index and from issue logs):
  huggingface/text-generation-inference server/text_generation_server/utils/weights.py Weights.get_filename
  (every release since 0.8):
      raise RuntimeError(f"weight {tensor_name} does not exist")
      -> RuntimeError: weight model.layers.0.self_attn.q_proj.weight does not exist
      (the launcher relays the shard's stderr; in its JSON output the traceback is one escaped line)
  huggingface/candle candle-core/src/error.rs (the Rust engines on candle: Cake, mistral.rs, candle's examples):
      #[error("cannot find tensor {path}")] CannotFindTensor { path: String }
      -> Error: cannot find tensor lm_head.weight      (anyhow's `Error: ` from main)
A missing `lm_head.weight` is, as a rule, a checkpoint that ties the head to the input embeddings
(tie_word_embeddings: the small Qwen2 / Gemma / Llama 3.2 models) read by a loader that does not.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "serving"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception))(?::[ \t]|\(')")
_NAME = r"[\w.\-]+"


@rule(
    "tensor-not-in-checkpoint",
    (" does not exist", "cannot find tensor "),
    r"RuntimeError: weight (?P<tgi>" + _NAME + r") does not exist"
    r"|(?:^|Error: )cannot find tensor (?P<candle>" + _NAME + r")\s*$",
)
def _tensor_missing(m, rec, state):
    name = m.group("tgi") or m.group("candle")
    if not first_time(state, ("tensor_missing", name), rec.loc.line):
        return []  # every shard raises it; the launcher relays it again
    loader = "TGI's weight loader" if m.group("tgi") else "the candle weight loader"
    detail = f"the model the engine built needs tensor {name!r}, which the checkpoint does not have"
    if name.startswith("lm_head.") or name.endswith(".lm_head.weight"):
        detail += " (a checkpoint that ties the output head to the input embeddings saves no lm_head)"
    exc = _EXC.search(rec.text)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="state_dict_mismatch", message=f"{loader}: {detail}",
        exc_type=exc.group("type") if exc else None,
        fields={"tensor": name, "loader": loader, "detail": detail},
    )


PARSER = Parser(
    name="model_tensors",
    framework=FW,
    priority=37,  # before the engines (40) and python's exception reader (80): the exception line is this
    description="TGI / candle: a tensor the engine's model needs that the checkpoint does not have",
    rules=[_tensor_missing],
)
