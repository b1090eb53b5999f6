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
from nanscope.parsers.pairs import PAIR, classify, norm_key


@rule("step-line", ("loss", "Loss", "LOSS"), PAIR.pattern, re.I)
def _step(m: "re.Match[str]", rec, state):
    fields: dict[str, str] = {}
    for p in PAIR.finditer(rec.text):
        fields.setdefault(norm_key(p.group("key")), p.group("val"))
    keys = list(fields)
    where = classify(keys)
    if where is None:
        return None
    vals = list(fields.values())
    got = {fld: vals[i] for fld, i in where.items()}
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", step=to_int(got.get("step")), loss=to_float(got["loss"]),
        grad_norm=to_float(got.get("grad_norm")), lr=to_float(got.get("lr")), loss_scale=to_float(got.get("loss_scale")),
        tokens_per_s=to_float(got.get("tokens_per_s")), epoch=to_float(got.get("epoch")), raw_fields=fields,
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
