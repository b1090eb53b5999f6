"""The optimizer refuses what it was given: no trainable parameter at all, or a saved state of another set of parameters.

torch/optim/optimizer.py (torch.optim and the optimizers built on it: bitsandbytes' 8-bit optimizers, DeepSpeed's):
- `Optimizer.__init__`: `raise ValueError("optimizer got an empty parameter list")` (every release): the parameters
  handed over (usually `filter(lambda p: p.requires_grad, model.parameters())` or a LoRA network's) are none: every
  weight is frozen, the adapter attached to no module, or the list was consumed (a generator iterated twice).
- `Optimizer.load_state_dict` (resume): `raise ValueError("loaded state dict has a different number of parameter
  groups")` and `raise ValueError("loaded state dict contains a parameter group that doesn't match the size of
  optimizer's group")` (bitsandbytes' Optimizer8bit.load_state_dict: the same words): the checkpoint was saved with other
  trainable parameters (another LoRA / freeze configuration, another model release, a stage that trains other modules).

torch/amp/grad_scaler.py (torch >= 2.3; torch/cuda/amp/grad_scaler.py since 1.6) `GradScaler.step`: `assert
len(optimizer_state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."`: under AMP (fp16,
the HF Trainer's / accelerate's scaler) the step found no gradient on any parameter of the optimizer, the same fault one
step later: the Trainer builds its optimizer from the parameters that require grad, so a model frozen whole (an adapter
loaded without is_trainable, a PEFT set-up that leaves the loss's path without adapters) reaches the scaler with
nothing that got a gradient.

A traceback's raise line (`raise ValueError("optimizer got an empty parameter list")`) quotes the message: not read.
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.setup_checks import error_event


@rule("optimizer-empty", ("optimizer got an empty parameter list",),
      r"(?<![\"'])(?P<msg>optimizer got an empty parameter list)")
def _empty_params(m, rec, state):
    if not first_time(state, ("optimizer", "empty"), rec.loc.line):
        return []
    return error_event(m, rec, "no_trainable_parameters", "pytorch",
                       "the optimizer was given no parameter to train: everything is frozen (requires_grad=False), the adapter "
                       "attached to no module, or the parameter list is empty")


@rule("grad-scaler-no-grads", ("No inf checks were recorded for this optimizer",),
      r"(?<![\"'])(?P<msg>No inf checks were recorded for this optimizer\.?)")
def _scaler_no_grads(m, rec, state):
    if not first_time(state, ("optimizer", "scaler"), rec.loc.line):
        return []
    return error_event(m, rec, "no_trainable_parameters", "pytorch",
                       "the AMP grad scaler's step found no gradient on any parameter of the optimizer: nothing it optimises "
                       "requires grad or is reached by the loss (a model frozen whole, an adapter loaded without is_trainable=True, "
                       "LoRA modules the forward does not use)")


@rule("optimizer-state", ("loaded state dict contains a parameter group that doesn't match",
                          "loaded state dict has a different number of parameter groups"),
      r"(?<![\"'])(?P<msg>loaded state dict (?:contains a parameter group that doesn't match the size of optimizer's group"
      r"|has a different number of parameter groups))")
def _state_mismatch(m, rec, state):
    if not first_time(state, ("optimizer", "state"), rec.loc.line):
        return []
    what = "a parameter group of another size" if "size" in m.group("msg") else "another number of parameter groups"
    return error_event(m, rec, "optimizer_state_mismatch", "pytorch",
                       f"the saved optimizer state has {what} than the optimizer built now: the checkpoint was saved with other "
                       "trainable parameters (another freeze / LoRA set-up or model release)")


PARSER = Parser(
    name="optimizer_checks",
    framework="pytorch",
    priority=40,  # before the generic exception parser (python, 80)
    description="Optimizers given no trainable parameter (or none that got a gradient under AMP), and saved optimizer states that do not fit on resume",
    rules=[_empty_params, _scaler_no_grads, _state_mismatch],
)
