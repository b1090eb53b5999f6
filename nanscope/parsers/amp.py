"""fp16 loss-scaler lines of NVIDIA apex (amp, fp16_utils) and fairseq.

NVIDIA/apex apex/amp/handle.py (patched skip_step; amp was removed in cb65b8e, May 2025, so the
template is the old releases'), printed by every process that overflowed:
  Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0
  (two spaces after "overflow." in the source; pastes often have one; `loss scaler N` is the
  loss_id, one line per scaler; the scale prints as Python's str(float): 1.0, 2.0237e-320)
apex contrib optimizers (apex/contrib/optimizers/fp16_optimizer.py and forks):
  Gradient overflow.  Skipping step, reducing loss scale to 16384.0
apex/fp16_utils/fp16_optimizer.py (the older API):
  OVERFLOW! Skipping step. Attempted loss scale: 65536.0, reducing to 32768.0  (read by deepspeed.py)
  OVERFLOW within closure! Skipping step, reducing loss scale to 32768.0
apex halves the scale on every overflow (LossScaler.update_scale: loss_scale / 2, no lower bound by
default), so a scale below 1 means every step overflowed.

facebookresearch/fairseq fairseq/trainer.py + fairseq/optim/dynamic_loss_scaler.py
(OverflowError("setting loss scale to: " + str(self.loss_scale))), by release:
  | WARNING: overflow detected, setting loss scale to: 64.0                         (<= 0.8)
  fairseq.trainer | NOTE: overflow detected, setting loss scale to: 64.0             (0.9, 0.10)
  fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: 64.0
  fairseq/optim/amp_optimizer.py: AMP: overflow detected, setting scale to to 64.0
  FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. ...
fairseq starts at --fp16-init-scale 2**7 and divides by scale_factor 2 on each overflow. This module
reads the two newer wordings; the older ones and `Minimum loss scale reached` are read by
trainers.py's fairseq rules. The min-scale message is two sentences (fairseq/optim/dynamic_loss_scaler.py
check_overflow, fairseq/trainer.py / fp16_optimizer.py in older releases: "Minimum loss scale reached ({}).
Your loss is probably exploding. Try lowering the learning rate, using gradient clipping or increasing the
batch size."); a terminal or a paste that broke the line before its second sentence leaves that sentence on a
line of its own (facebookresearch/fairseq#1215's paste: `... scale reached (0.0001). Your loss is probably
exploding. Try lowering ...` in the middle of a frame line): the second sentence is read here, with the scale
when its `(0.0001)` is on the same line.
"""

from __future__ import annotations

from nanscope.model import ScaleEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.numbers import to_float

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|inf|nan)"


@rule(
    "apex-overflow",
    ("Gradient overflow.", "OVERFLOW within closure!"),
    r"(?:Gradient overflow\.|OVERFLOW within closure!)\s+Skipping step,\s+(?:loss scaler (?P<id>\d+) )?"
    r"reducing loss scale to (?P<new>" + _F + r")",
)
def _apex(m, rec, state):
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="apex", action="overflow", new_scale=to_float(m.group("new")),
    )


@rule(
    "fairseq-overflow-newer",
    ("ignoring gradient, setting loss scale to", "AMP: overflow detected"),
    r"(?:gradient overflow detected, ignoring gradient, setting loss scale to|AMP: overflow detected, setting scale to to):? "
    r"(?P<new>" + _F + r")",
)
def _fairseq(m, rec, state):
    # The older wordings (and `Minimum loss scale reached`) are trainers.py's fairseq rules.
    # Printed by the master process only (fairseq silences INFO on the other ranks).
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="fairseq", action="overflow", new_scale=to_float(m.group("new")),
        rank_is_printer_only=True,
    )


@rule(
    "fairseq-min-scale-tail",
    ("Your loss is probably exploding. Try lowering the learning rate",),
    r"(?:\((?P<s>" + _F + r")\)\.\s+)?Your loss is probably exploding\. Try lowering the learning rate",
)
def _fairseq_min_tail(m, rec, state):
    if "Minimum loss scale reached" in rec.text:
        return None  # the whole message: trainers.py's fairseq-min-scale rule
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="fairseq", action="minimum", new_scale=to_float(m.group("s")),
        rank_is_printer_only=True,
    )


PARSER = Parser(
    name="amp",
    framework="apex",
    priority=20,
    description="apex amp / fp16_utils and fairseq fp16 loss-scaler lines",
    rules=[_apex, _fairseq, _fairseq_min_tail],
)
