"""A layer ran on a parameter that ZeRO-3 (or FSDP) has sharded away: the local weight is an empty placeholder.

DeepSpeed ZeRO-3 (deepspeed/runtime/zero/partition_parameters.py, `zero.Init` and the engine's parameter
coordinator) keeps each parameter as a 0-element tensor on every rank (`ds_tensor` holds this rank's shard) and
gathers the full weight only inside the engine's forward; FSDP's flat parameters leave the same empty views
(use_orig_params=False). A model built under zero.Init (transformers' HfDeepSpeedConfig / accelerate's
zero3_init_flag) but called outside the engine (a frozen text encoder, a reference or reward model, a generate()
or a PEFT embedding adapter the hooks do not gather) hands that placeholder to the kernel, and PyTorch's
embedding check refuses it:

- aten/src/ATen/native/Embedding.cpp `embedding`: `TORCH_CHECK(weight.dim() == 2, "'weight' must be 2-D")`
  (every release since 1.0), printed as `RuntimeError: 'weight' must be 2-D` (also behind `[rankN]: `).

Printing the parameter shows the placeholder (`Parameter containing:` / `tensor([], device='cuda:1', ...)`).
Only the raised form is read: the check's own source line (`"'weight' must be 2-D"` in quotes) is not.
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import error_event


@rule("embedding-weight-not-2d", ("'weight' must be 2-D",),
      r"(?:RuntimeError|Error): (?P<msg>'weight' must be 2-D)")
def _weight_not_2d(m, rec, state):
    return error_event(m, rec, "zero3_param_partitioned", "deepspeed",
                       "an embedding got a weight that is not 2-D: a ZeRO-3 / FSDP sharded placeholder used outside the engine's forward")


PARSER = Parser(
    name="sharded_params",
    framework="deepspeed",
    priority=40,  # before the generic exception parser (python, 80)
    description="Layers run on ZeRO-3 / FSDP sharded parameters outside the engine ('weight' must be 2-D)",
    rules=[_weight_not_2d],
)
