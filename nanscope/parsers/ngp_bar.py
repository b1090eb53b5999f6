"""The tqdm bar of torch-ngp's Trainer and the projects built on it (stable-dreamfusion, nerf2mesh,
dreamfields-torch, torch-ngp's sdf/ and dnerf/ trainers): the loss is in the bar's description.

ashawkey/torch-ngp nerf/utils.py (sdf/utils.py alike), Trainer.train_one_epoch / evaluate_one_epoch:
  self.log(f"==> Start Training Epoch {self.epoch}, lr={self.optimizer.param_groups[0]['lr']:.6f} ...")
  pbar = tqdm.tqdm(total=len(loader) * loader.batch_size,
                   bar_format='{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]')
  pbar.set_description(f"loss={loss_val:.4f} ({total_loss/self.local_step:.4f}), lr={lr:.6f}")   (with a scheduler
                                                          stepped per batch; else without the lr; forks print
                                                          ` lr=` without the comma, and more digits)
  self.log(f"++> Evaluate at epoch {self.epoch} ...")   (the evaluation bar prints the validation loss alike)
ashawkey/stable-dreamfusion's copy stamps and names them:
  ==> [2023-07-17_21-23-59] Start Training <workspace> Epoch 82/300, lr=0.050000 ...
  ++> Evaluate <workspace> at epoch 81 ...
tqdm's set_description appends ": " to the text and the bar format adds another, so a redraw reads
  loss=0.005879 (0.006519) lr=0.009618: :  75% 158/210 [00:03<00:01, 41.08it/s]
  loss=nan (nan): :   0% 0/100 [00:00<?, ?it/s]
the value, the running mean of the epoch in parentheses, then the bar's count of samples. The generic
tqdm readers do not read a bar's description; the count restarts every epoch, so the step is the count
plus the counts of the epochs before. tqdm redraws one count several times (set_description redraws,
then update moves on): the last drawing of a count is its step. A terminal capture glues what was
printed next to the redraw (tqdm ends a redraw with `\\r`): tensorboardX's NaN warning is read with the
bar; anything else leaves the line to the parser it belongs to.
"""

from __future__ import annotations

import re

from nanscope.model import StepEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float
from nanscope.parsers.pytorch import tensorboard_nonfinite

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"
_TBX = LazyPattern(r"^\s*(?:(?:WARNING|Warning)[:\s-]+(?:[\w.]+[:\s-]+)?)?NaN or Inf found in input tensor\.\s*$")


@rule("ngp-epoch", ("Start Training ", "++> Evaluate "),
      r"^(?:==> (?:\[[^\]]*\] )?Start Training (?:\S.* )?Epoch (?P<train>\d+)(?:/\d+)?, lr="
      r"|\+\+> Evaluate (?:\S.* )?at epoch (?P<eval>\d+))", match_start=True)
def _epoch(m, rec, state):
    if m.group("train") is not None:
        ep = int(m.group("train"))
        if state.get("ngp_epoch") not in (None, ep):
            state["ngp_base"] = state.get("ngp_base", 0) + state.get("ngp_last", 0)
            state["ngp_last"] = 0
        state["ngp_epoch"] = ep
        state["ngp_eval"] = False
    else:
        state["ngp_eval"] = True
    return _flush(state)


@rule("ngp-bar", ("loss=",),
      r"^loss=(?P<loss>" + _F + r") \((?P<avg>" + _F + r")\)(?:,? lr=(?P<lr>" + _F + r"))?: :\s*\d+% (?P<n>\d+)/(?P<tot>\d+) "
      r"\[[^\]]*\](?P<rest>.*)$", match_start=True)
def _bar(m, rec, state):
    rest = m.group("rest")
    glued = bool(rest.strip())
    if glued and not _TBX.match(rest):
        return None  # another message glued to the redraw: its own parser reads the line
    extra = tensorboard_nonfinite(rec, state) if glued else []
    if state.get("ngp_eval"):
        return extra  # the validation loss of the evaluation bar is not a training step
    n = int(m.group("n"))
    if n < state.get("ngp_last", 0):  # a new epoch without its header in view
        state["ngp_base"] = state.get("ngp_base", 0) + state["ngp_last"]
    state["ngp_last"] = n
    step = state.get("ngp_base", 0) + n
    ev = StepEvent(loc=rec.loc, text=rec.text, framework="pytorch", step=step, loss=to_float(m.group("loss")),
                   lr=to_float(m.group("lr")),
                   epoch=float(state["ngp_epoch"]) if state.get("ngp_epoch") is not None else None,
                   raw_fields={"loss": m.group("loss"), "avg_loss": m.group("avg"), "n": m.group("n"),
                               "total": m.group("tot")})
    held = state.pop("pending", None)
    state["pending"] = ev
    if held is not None and held.step != step:
        return [held] + extra
    return extra


def _flush(state: dict) -> list:
    held = state.pop("pending", None)
    return [held] if held is not None else []


PARSER = Parser(
    name="ngp_bar",
    framework="pytorch",
    priority=24,  # before trainers.py (25) and hf.py's tqdm rule (30), which do not read a bar's description
    description="torch-ngp's Trainer tqdm bar (loss in the description) and its epoch headers",
    rules=[_epoch, _bar],
)
