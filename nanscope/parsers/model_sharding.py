"""A parallel size the model cannot be split by: the serving engines' checks that attention heads, layers and
weight rows divide evenly over the tensor- (or pipeline-) parallel ranks. The server never starts; the fix is a
parallel size that divides the model, not more memory or another release. One signature:
tensor-parallel-indivisible.

Templates (quoted from the engines' source via the search index):
  vllm-project/vllm vllm/config.py (later vllm/config/model.py) ModelConfig.verify_with_parallel_config:
      raise ValueError(f"Total number of attention heads ({total_num_attention_heads})"
                       " must be divisible by tensor parallel size "
                       f"({tensor_parallel_size}).")
      (0.10+ behind pydantic's `Value error, `); releases before uneven pipeline stages (<= 0.5) also
      raise ValueError(f"Total number of hidden layers ({total_num_hidden_layers}) "
                       "must be divisible by pipeline parallel size "
                       f"({pipeline_parallel_size}).")
  huggingface/text-generation-inference server/text_generation_server/utils/weights.py get_sharded (and the
      MoE / MLP loaders of the custom modelling files):
      assert size % world_size == 0, f"The choosen size {size} is not compatible with sharding on {world_size} shards"
      (the MoE loaders spell it `chosen`); the flash_*_modeling.py attention layers:
      raise ValueError(f"`num_heads` must be divisible by `num_shards` (got `num_heads`: {self.num_heads} "
                       f"and `num_shards`: {weights.process_group.size()}")
  hpcaitech/ColossalAI shardformer policies (ColossalAI inference too):
      assert ..., f"The number of attention heads must be divisible by tensor parallel size."
      (and `The number of key_value heads must be divisible by tensor parallel size.`)
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "serving"
_EXC = re.compile(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): ")


@rule(
    "parallel-size-indivisible",
    ("must be divisible by tensor parallel size", "must be divisible by pipeline parallel size",
     "is not compatible with sharding on", "must be divisible by `num_shards`"),
    r"Total number of (?P<what>attention heads|hidden layers) \((?P<n>\d+)\) must be divisible by"
    r" (?P<kind>tensor|pipeline) parallel size \((?P<p>\d+)\)"
    r"|The number of (?P<cwhat>attention heads|key_value heads) must be divisible by tensor parallel size"
    r"|The cho+sen size (?P<size>\d+) is not compatible with sharding on (?P<shards>\d+) shards"
    r"|`num_heads` must be divisible by `num_shards` \(got `num_heads`: (?P<heads>\d+) and `num_shards`: (?P<hshards>\d+)",
)
def _indivisible(m, rec, state):
    if not first_time(state, ("parallel_indivisible",), rec.loc.line):
        return []  # every rank raises it, the engine re-raises it, pydantic prints it again
    if m.group("what"):
        what, n, p = m.group("what"), int(m.group("n")), int(m.group("p"))
        kind = m.group("kind")
    elif m.group("cwhat"):
        what, n, p, kind = m.group("cwhat"), None, None, "tensor"
    elif m.group("size"):
        what, n, p, kind = "rows of a weight", int(m.group("size")), int(m.group("shards")), "tensor"
    else:
        what, n, p, kind = "attention heads", int(m.group("heads")), int(m.group("hshards")), "tensor"
    if n is not None:
        detail = f"{n} {what} cannot be split over {kind} parallel size {p}"
    else:
        detail = f"the model's {what} cannot be split over the tensor parallel size"
    exc = _EXC.search(rec.text)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="tensor_parallel_indivisible", message=rec.text.strip(),
        exc_type=exc.group("type") if exc else ("AssertionError" if m.group("size") else None),
        fields={"what": what, "count": n, "parallel_size": p, "parallelism": kind, "detail": detail},
    )


PARSER = Parser(
    name="model_sharding",
    framework=FW,
    priority=37,  # before the engines' own rules (40) and python's exception reader (80): the exception line is this
    description="vLLM / TGI / ColossalAI: attention heads, layers or weight rows that the tensor- (pipeline-) parallel size does not divide",
    rules=[_indivisible],
)
