"""DeepSpeed ZeRO checks a training set-up trips: a sharded placeholder weight used outside the engine, and
accelerate's gradient accumulation entering no_sync under ZeRO's gradient partitioning.

A layer ran on a parameter that ZeRO-3 (or FSDP) has sharded away: the local weight is an empty placeholder.

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

deepspeed/runtime/engine.py `DeepSpeedEngine.no_sync` (0.16+): `assert not self.zero_optimization_partition_gradients(),
f"no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage {stage}"`. accelerate's
`accumulate()` / the HF Trainer enter the model's no_sync() on the micro-steps of gradient accumulation, so ZeRO-2 / 3
with gradient_accumulation_steps > 1 stops at the first accumulation step (until transformers / accelerate skip it).
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import error_event


@rule("embedding-weight-not-2d", ("'weight' must be 2-D",),
      r"(?:RuntimeError|Error): (?P<msg>'weight' must be 2-D)")
def _weight_not_2d(m, rec, state):
    return error_event(m, rec, "zero3_param_partitioned", "deepspeed",
                       "an embedding got a weight that is not 2-D: a ZeRO-3 / FSDP sharded placeholder used outside the engine's forward")


@rule("zero-no-sync", ("no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage",),
      r"(?<![\"'])(?P<msg>no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage (?P<stage>\d))")
def _zero_no_sync(m, rec, state):
    return error_event(m, rec, "zero_no_sync_unsupported", "deepspeed",
                       f"gradient accumulation entered DeepSpeed's no_sync(), which ZeRO stage {m.group('stage')} refuses "
                       "(it partitions gradients and must reduce them every micro-step)", stage=int(m.group("stage")))


PARSER = Parser(
    name="zero_checks",
    framework="deepspeed",
    priority=40,  # before the generic exception parser (python, 80)
    description="DeepSpeed ZeRO set-up checks: sharded placeholder weights used outside the engine ('weight' must be 2-D), no_sync under ZeRO-2/3",
    rules=[_weight_not_2d, _zero_no_sync],
)
