"""Plain PyTorch training scripts: the step lines people print, and PyTorch's own warnings.

Step lines have no fixed template, so this parser reads `key value`, `key=value` and `key: value`
pairs and maps common key names onto the event fields. A line is a step line only when it has a
loss and a step counter (or a loss with a grad norm / lr / scale), so prose that mentions a loss
is not one. Examples, all seen in real scripts:
  step 12 | loss nan | grad_norm 0.9 | lr 1.0e-03 | scale 32768.0
  step=12, loss=2.3012, grad_norm=0.9134, lr=0.001
  Step 12: loss: nan
  iter 120: loss 4.2345, time 12.34ms, mfu 1.20%          (nanoGPT)
  Epoch 1 Step 12 Loss 2.3
"""

from __future__ import annotations

import re

from nanscope.model import StepEvent, WarningEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.numbers import to_float, to_int

_NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)(?![\w.])"
_PAIR = re.compile(
    r"(?P<key>grad[ _]norm|loss[ _]scale|lm[ _]loss|train[ _]loss|[A-Za-z_][\w./]*)"
    r"(?:[ \t]*[:=][ \t]*|[ \t]+)(?P<val>" + _NUM + r")",
    re.I,
)
_STEP_KEYS = {"step", "steps", "iter", "iters", "iteration", "global_step", "it", "batch"}
_LOSS_KEYS = {"loss", "train_loss", "train loss", "lm loss", "lm_loss", "total_loss", "loss/train", "train/loss"}
_GRAD_KEYS = {"grad_norm", "grad norm", "gnorm", "grad_norm/total", "total_norm", "gradnorm", "norm"}
_LR_KEYS = {"lr", "learning_rate", "learning-rate"}
_SCALE_KEYS = {"scale", "loss_scale", "loss scale", "grad_scale", "lossscale"}
_TPS_KEYS = {"tps", "tokens/s", "tok/s", "tokens_per_s", "tokens_per_sec", "throughput"}
_EPOCH_KEYS = {"epoch"}


@rule("step-line", ("loss", "Loss", "LOSS"), _PAIR.pattern, re.I)
def _step(m: "re.Match[str]", rec, state):
    fields: dict[str, str] = {}
    for p in _PAIR.finditer(rec.text):
        key = p.group("key").lower().replace("-", "_")
        fields.setdefault(key, p.group("val"))
    loss = step = grad = lr = scale = tps = epoch = None
    have_loss = have_step = False
    for key, val in fields.items():
        if key in _LOSS_KEYS and not have_loss:
            loss, have_loss = to_float(val), True
        elif key in _STEP_KEYS and not have_step:
            step, have_step = to_int(val), True
        elif key in _GRAD_KEYS and grad is None:
            grad = to_float(val)
        elif key in _LR_KEYS and lr is None:
            lr = to_float(val)
        elif key in _SCALE_KEYS and scale is None:
            scale = to_float(val)
        elif key in _TPS_KEYS and tps is None:
            tps = to_float(val)
        elif key in _EPOCH_KEYS and epoch is None:
            epoch = to_float(val)
    if not have_loss:
        return None
    if not (have_step or grad is not None or lr is not None or scale is not None):
        return None
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", step=step, loss=loss, grad_norm=grad,
        lr=lr, loss_scale=scale, tokens_per_s=tps, epoch=epoch, raw_fields=fields,
    )


@rule(
    "lr-scheduler-before-optimizer",
    ("lr_scheduler.step()",),
    r"Detected call of `?lr_scheduler\.step\(\)`? before `?optimizer\.step\(\)`?",
)
def _lr_warning(m, rec, state):
    # torch/optim/lr_scheduler.py: printed when the first optimizer step was skipped (e.g. by
    # GradScaler on an overflow) or when the script really calls them in the wrong order.
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", warning="lr_scheduler_before_optimizer",
        message=rec.text,
    )


@rule(
    "clip-grad-nonfinite",
    ("is non-finite, so it cannot be clipped",),
    r"The total norm of order (?P<p>\S+) for gradients from `parameters` is non-finite",
)
def _clip(m, rec, state):
    # torch/nn/utils/clip_grad.py with error_if_nonfinite=True
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", warning="grad_norm_nonfinite", message=rec.text,
    )


PARSER = Parser(
    name="pytorch",
    framework="pytorch",
    priority=90,
    description="plain PyTorch step prints and PyTorch warnings",
    rules=[_lr_warning, _clip, _step],
)
