"""ESPnet (and the FunASR / SenseVoice trainers that copied its loop): the non-finite-gradient
warnings and ESPnet2's periodic step line.

  espnet2/train/trainer.py, Trainer.train_one_epoch, after clip_grad_norm_:
      logging.warning(f"The grad norm is {grad_norm}. Skipping updating the model.")
      (older: f"The grad norm is {grad_norm}. " "Skipping updating the model."; grad_norm is a
      float in old releases, a tensor in newer ones)
      [user] 2021-04-23 19:22:52,420 (trainer:581) WARNING: The grad norm is nan. Skipping updating the model.
  espnet2/train/trainer.py, Trainer.run, at the end of an epoch in which no update happened:
      "The gradients at all steps are invalid in this epoch. Something seems wrong. This training was stopped at {iepoch}epoch"
  espnet/asr/pytorch_backend/asr.py and chainer_backend (ESPnet1 CustomUpdater):
      logging.warning("grad norm is nan. Do not update model.")
  espnet2/train/reporter.py, Reporter.log_message (every log_interval batches):
      2epoch:train:12009-12640batch: iter_time=3.163e-04, forward_time=0.110, loss=65.129, loss_att=124.079, ..., optim0_lr0=1.485e-05, train_time=0.624

ESPnet skips the update itself, so a non-finite grad norm here is a skipped step, not poisoned
weights; a whole epoch of them stops the run.
"""

from __future__ import annotations

import re

from nanscope.model import StepEvent, WarningEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"


@rule(
    "espnet2-grad-norm",
    ("Skipping updating the model",),
    r"The grad norm is (?P<v>tensor\([^)]*\)|\S+?)\.\s+Skipping updating the model",
)
def _grad_norm(m, rec, state):
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="espnet", warning="grad_norm_nonfinite", message=rec.text,
        fields={"grad_norm": to_float(m.group("v")), "skipped": True},
    )


@rule("espnet1-grad-norm", ("Do not update model",), r"\bgrad norm is (?P<v>nan|inf)\. Do not update model")
def _grad_norm1(m, rec, state):
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="espnet", warning="grad_norm_nonfinite", message=rec.text,
        fields={"grad_norm": to_float(m.group("v")), "skipped": True},
    )


@rule(
    "espnet2-all-invalid",
    ("The gradients at all steps are invalid",),
    r"The gradients at all steps are invalid in this epoch\. Something seems wrong\. "
    r"This training was stopped at (?P<ep>\d+)\s*epoch",
)
def _all_invalid(m, rec, state):
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="espnet", warning="nonfinite_stop", message=rec.text,
        fields={"epoch": int(m.group("ep"))},
    )


_PAIR = LazyPattern(r"(?<!\w)(?P<k>[A-Za-z_]\w*)=(?P<v>" + _F + r")(?![\w.])")


@rule("espnet2-step", ("epoch:train:",), r"\b(?P<ep>\d+)epoch:train:(?P<a>\d+)-(?P<b>\d+)batch: (?P<rest>.*)$")
def _step(m, rec, state):
    pairs = {p.group("k"): p.group("v") for p in _PAIR.finditer(m.group("rest"))}
    if "loss" not in pairs:
        return None
    lr = next((v for k, v in pairs.items() if k.startswith("optim0_lr")), None)
    # The batch counter restarts every epoch and the epoch length is not printed: the step is the
    # last batch of the interval within its epoch.
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="espnet", step=int(m.group("b")), loss=to_float(pairs["loss"]),
        lr=to_float(lr), epoch=float(m.group("ep")), raw_fields=pairs,
    )


PARSER = Parser(
    name="espnet",
    framework="espnet",
    priority=28,
    description="ESPnet / FunASR: skipped non-finite gradient updates and ESPnet2 step lines",
    rules=[_grad_norm, _grad_norm1, _all_invalid, _step],
)
