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

- aten/src/ATen/native/Blas.cpp `addmv` (F.linear / matmul of a matrix with a 1-D weight): `TORCH_CHECK(mat.size(1) ==
  vec.size(0) && ..., "size mismatch, got input (", self.size(0), "), mat (", mat.size(0), "x", mat.size(1), "), vec
  (", vec.size(0), ")")`: a Linear whose weight is a flat 1-D vector of a whole matrix (vec a multiple of the hidden
  size, e.g. `got input (8192), mat (8192x4096), vec (16777216)`, 4096 x 4096) ran on a ZeRO-3 / FSDP flat parameter
  that was not gathered. Only that shape is read (a vec that is not a multiple of mat's columns is another bug).

Printing the parameter shows the placeholder (`Parameter containing:` / `tensor([], device='cuda:1', ...)`).
Only the raised form is read: the check's own source line (`"'weight' must be 2-D"` in quotes) is not.

deepspeed/runtime/engine.py `DeepSpeedEngine.no_sync` (0.16+): `assert not self.zero_optimization_partition_gradients(),
f"no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage {stage}"`. accelerate's
`accumulate()` / the HF Trainer enter the model's no_sync() on the micro-steps of gradient accumulation, so ZeRO-2 / 3
with gradient_accumulation_steps > 1 stops at the first accumulation step (until transformers / accelerate skip it).

A ZeRO checkpoint resumed on another data-parallel world size: deepspeed/runtime/engine.py `_load_zero_checkpoint`
(every release since ZeRO-2's elastic checkpoints; load_optimizer_states=True, no universal checkpoint):
`raise ZeRORuntimeException("The checkpoint being loaded used a DP " f"world size of {loaded} but the current world
size is {now}. Automatic adjustment of ZeRO's optimizer state partitioning with a new world size is not currently
supported.")`, printed as `deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint ...` (behind `[rankN]: ` on
every rank); some wrappers print the two sentences on two lines, so the second is read alone when the first was not
seen. The optimizer states are saved as one partition per DP rank (zero_pp_rank_R_mp_rank_*_optim_states.pt) and cannot
be re-sharded on load. The raise line (`raise ZeRORuntimeException("The checkpoint being loaded used a DP " ...`) is no
error by itself.

FSDP (use_orig_params=False) flattens the parameters of each wrapped unit into one FlatParameter, which must have one
dtype, one requires_grad and one device; a PEFT model (frozen base weights beside trainable LoRA weights in the same
layer, adapters in float32 beside a bfloat16 base) breaks that (torch/distributed/fsdp/flat_param.py, later
_flat_param.py, `FlatParamHandle._init_flat_param` / `_validate_tensors_to_flatten`):
- torch 1.12-2.0: `ValueError("`FlatParameter` requires uniform `requires_grad`")`, `"`FlatParameter` requires uniform
  dtype but got {dtype} and {param.dtype}"`;
- torch 2.1+: `Must flatten tensors with uniform `requires_grad` when `use_orig_params=False``, `Must flatten tensors
  with uniform dtype but got {dtype} and {tensor.dtype}`, `Must flatten tensors on the same device but got both {a}
  and {b}`.
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.setup_checks import error_event


@rule("embedding-weight-not-2d", ("'weight' must be 2-D",),
      r"(?:RuntimeError|Error): (?P<msg>'weight' must be 2-D)")
def _weight_not_2d(m, rec, state):
    return error_event(m, rec, "zero3_param_partitioned", "deepspeed",
                       "an embedding got a weight that is not 2-D: a ZeRO-3 / FSDP sharded placeholder used outside the engine's forward")


@rule("linear-weight-flat", ("size mismatch, got input (",),
      r"(?:RuntimeError|Error): (?P<msg>size mismatch, got input \((?P<inp>\d+)\), mat \((?P<rows>\d+)x(?P<cols>\d+)\), "
      r"vec \((?P<vec>\d+)\))")
def _linear_weight_flat(m, rec, state):
    cols, vec = int(m.group("cols")), int(m.group("vec"))
    if cols == 0 or vec <= cols or vec % cols:
        return None  # not a flattened matrix: another shape bug, the generic reader's
    if not first_time(state, ("zero3_flat_linear",), rec.loc.line):
        return []
    return error_event(m, rec, "zero3_param_partitioned", "deepspeed",
                       f"a Linear layer got a flat 1-D weight of {vec} elements ({vec // cols} x {cols}) instead of its matrix: "
                       "a ZeRO-3 / FSDP sharded parameter that was not gathered for this forward")


@rule("zero-no-sync", ("no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage",),
      r"(?<![\"'])(?P<msg>no_sync context manager is incompatible with gradient partitioning logic of ZeRO stage (?P<stage>\d))")
def _zero_no_sync(m, rec, state):
    return error_event(m, rec, "zero_no_sync_unsupported", "deepspeed",
                       f"gradient accumulation entered DeepSpeed's no_sync(), which ZeRO stage {m.group('stage')} refuses "
                       "(it partitions gradients and must reduce them every micro-step)", stage=int(m.group("stage")))


@rule("zero-checkpoint-dp-world-size", ("The checkpoint being loaded used a DP world size of",
                                        "Automatic adjustment of ZeRO's optimizer state partitioning with a new world size"),
      r"(?<![\"'])(?P<msg>The checkpoint being loaded used a DP world size of (?P<saved>\d+) but the current world size is (?P<now>\d+)"
      r"|(?P<alone>Automatic adjustment of ZeRO's optimizer state partitioning with a new world size is not currently supported))")
def _zero_dp_world_size(m, rec, state):
    if not first_time(state, ("zero", "dp-world-size"), rec.loc.line):
        return []  # every rank raises it, and a two-line print says it twice
    if m.group("alone"):
        detail = ("DeepSpeed cannot load ZeRO's partitioned optimizer states on another data-parallel world size than the "
                  "checkpoint was saved with")
        return error_event(m, rec, "checkpoint_world_size_mismatch", "deepspeed", detail)
    saved, now = int(m.group("saved")), int(m.group("now"))
    detail = (f"the ZeRO checkpoint was saved by {saved} data-parallel ranks and is loaded by {now}: its optimizer states are "
              f"partitioned {saved} ways and DeepSpeed cannot re-shard them")
    return error_event(m, rec, "checkpoint_world_size_mismatch", "deepspeed", detail, saved_world_size=saved, world_size=now)


@rule("fsdp-flat-param-uniform", ("`FlatParameter` requires uniform ", "Must flatten tensors with uniform ",
                                   "Must flatten tensors on the same device"),
      r"(?<![\"'])(?P<msg>`FlatParameter` requires uniform (?P<what1>`requires_grad`|dtype)(?: but got (?P<a1>\S+) and (?P<b1>\S+))?"
      r"|Must flatten tensors with uniform (?P<what2>`requires_grad`|dtype)(?: but got (?P<a2>\S+) and (?P<b2>\S+))?"
      r"|Must flatten tensors on the same device but got both (?P<a3>\S+) and (?P<b3>\S+))")
def _fsdp_flat_param(m, rec, state):
    if not first_time(state, ("fsdp_flat_param",), rec.loc.line):
        return []  # every rank raises it
    what = m.group("what1") or m.group("what2") or "device"
    a, b = (m.group("a1") or m.group("a2") or m.group("a3")), (m.group("b1") or m.group("b2") or m.group("b3"))
    if what == "`requires_grad`":
        detail = ("a wrapped module mixes frozen and trainable parameters (a PEFT / LoRA model) and FSDP was built with "
                  "use_orig_params=False")
    else:
        detail = (f"a wrapped module's parameters have different {what}s{f' ({a} and {b})' if a and b else ''}, "
                  "which one flat parameter cannot hold (LoRA weights in another dtype than the base model's, or a module left on another device)")
    return error_event(m, rec, "fsdp_mixed_flat_params", "fsdp", detail, what=what.strip("`"))


PARSER = Parser(
    name="zero_checks",
    framework="deepspeed",
    priority=40,  # before the generic exception parser (python, 80)
    description="DeepSpeed ZeRO set-up checks: sharded placeholder weights used outside the engine ('weight' must be 2-D), no_sync under ZeRO-2/3, "
                "ZeRO checkpoints resumed on another data-parallel world size, FSDP units whose parameters cannot be flattened together",
    rules=[_weight_not_2d, _linear_weight_flat, _zero_no_sync, _zero_dp_world_size, _fsdp_flat_param],
)
