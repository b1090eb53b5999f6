"""A model directory (or Hub snapshot) with no weight files the loader can use: the config and tokenizer are
there, the weights are not (a partial download, a fine-tune that saved only its adapter, a --load-format that
asks for another file type, a wrong directory). One signature: model-weights-not-found.

Templates (quoted from source via the search index):
  vllm-project/vllm vllm/model_executor/model_loader/weight_utils.py, later default_loader.py _prepare_weights
  (sgl-project/sglang's model_loader copies it):
      raise RuntimeError(f"Cannot find any model weights with `{model_name_or_path}`")
      (printed with the backticks; a wrapper's repr of the error keeps only the text: RuntimeError('Cannot find any
      model weights with /path'))
  huggingface/transformers src/transformers/modeling_utils.py PreTrainedModel.from_pretrained:
      OSError(f"{path} does not appear to have a file named {WEIGHTS_NAME}, {SAFE_WEIGHTS_NAME}, {TF2_WEIGHTS_NAME},
      {TF_WEIGHTS_NAME} or {FLAX_WEIGHTS_NAME}.")   (the names listed vary by release: pytorch_model.bin,
      model.safetensors, tf_model.h5, model.ckpt, flax_model.msgpack)
      OSError(f"Error no file named {WEIGHTS_NAME}, ... found in directory {path}.")   (a local directory)
The same words about config.json are another failure (no model there at all), so only the weight names count.
TGI's `No safetensors weights found for model X at revision None. Downloading PyTorch weights.` is a warning:
it falls back to the .bin files.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "serving"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception))(?::[ \t]|\(')")
_WEIGHT_NAMES = r"(?:pytorch_model\.bin|model\.safetensors|tf_model\.h5|model\.ckpt|flax_model\.msgpack)"


@rule(
    "model-weights-not-found",
    ("Cannot find any model weights with", "does not appear to have a file named", "Error no file named "),
    r"Cannot find any model weights with [`']?(?P<vpath>[^`'\s)]+)"
    r"|(?:^|\s)(?P<hpath>\S+) does not appear to have a file named (?P<hnames>" + _WEIGHT_NAMES + r"[^.]*)"
    r"|Error no file named (?P<dnames>" + _WEIGHT_NAMES + r".*?) found in directory (?P<dpath>[^\s,]+?)\.?(?:\s|$)",
)
def _no_weights(m, rec, state):
    path = m.group("vpath") or m.group("hpath") or m.group("dpath")
    if not first_time(state, ("model_weights",), rec.loc.line):
        return []  # every worker raises it, the engine re-raises it
    loader = "vLLM / SGLang" if m.group("vpath") else "transformers"
    exc = _EXC.search(rec.text)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="model_weights_not_found", message=rec.text.strip(),
        exc_type=exc.group("type") if exc else None,
        fields={"path": path, "loader": loader,
                "detail": f"{loader} found no weight files it can load in {path}"},
    )


PARSER = Parser(
    name="model_weights",
    framework=FW,
    priority=37,  # before the engines (40) and python's exception reader (80): the exception line is this
    description="vLLM / SGLang / transformers: a model directory or snapshot without weight files the loader can use",
    rules=[_no_weights],
)
