"""Hugging Face Trainer / Accelerate console output.

The Trainer prints `str(logs)`: a Python dict repr. transformers 5.x prints the values as strings
(`{'loss': '6.804', 'grad_norm': '0.8704', 'learning_rate': '0.0004', 'epoch': '0.04688'}`),
older releases print floats and a bare `nan` (`{'loss': nan, 'grad_norm': nan, ...}`): neither
is JSON, so the pairs are read with a tolerant regex. The dicts carry no step; the tqdm bar does. The
bar drawn *before* a dict is rate-limited and may lag, but tqdm.write() redraws the bar right
after it with the current count (`{'loss': ...}\\n\\r 40%|####  | 20/50 [...]`), so a dict is held
until that redraw and takes its count. Without bars (disable_tqdm) the dicts are numbered in order.

With `logging_nan_inf_filter=True` (the default) a NaN loss is logged as the running average of
the finite ones (often `0`), while `grad_norm` still says `nan`: that pair is the tell.
"""

from __future__ import annotations

import math
import re

from nanscope.model import LifecycleEvent, StepEvent, WarningEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float
from nanscope.parsers.system import GLUED_KILL

_KV = LazyPattern(r"'(?P<k>[\w/\-.]+)':\s*(?P<v>'[^']*'|tensor\([^)]*\)|[^,}\s]+)")


# tqdm's postfix (`set_postfix(loss=...)`, accelerate/diffusers scripts): `[00:03<00:10, 4.9it/s, loss=nan]`.
# kohya-ss sd-scripts and musubi-tuner (train_network.py, sdxl_train*.py: `logs = {"avr_loss": avr_loss}`;
# `progress_bar.set_postfix(**logs)`) show only the moving average of the step losses:
# `steps:   1%|▋    | 41/3280 [00:50<1:06:54,  1.24s/it, avr_loss=nan]`
_POSTFIX = LazyPattern(r"(?:it/s|s/it),(?P<post>[^\]]*)\]")
_POSTFIX_PAIR = LazyPattern(r"(?:^|[\s,])(?P<k>[A-Za-z_][\w/.]*)=(?P<v>[^,\s\]]+)")
_POSTFIX_LOSS = ("loss", "train_loss", "step_loss", "loss_step", "total_loss", "train/loss", "avr_loss")


@rule("tqdm", ("it/s]", "s/it]", "it/s,", "s/it,"), r"\|\s*(?P<n>\d+)/(?P<total>\d+)\s*\[")
def _tqdm(m, rec, state):
    if GLUED_KILL.search(rec.text, m.end()):
        return None  # the shell's `Killed` glued to the last redraw: system.py's bar-killed
    glued = _glued_dict(m, rec)
    pending = state.pop("pending", None)
    if pending is None:
        out = _postfix_step(m, rec, state) if glued is None else []
    else:
        pending.step = int(m.group("n"))
        out = [pending]
    if glued is not None:
        out.append(glued)
    return out


# A loop of its own that iterates `tqdm(range(max_steps))` and print()s its log dict while the bar is on
# screen: the dict lands on the bar's line, right after its last redraw (hiyouga/ChatGLM-Efficient-Tuning and
# LLaMA-Factory's PPO trainer, src/glmtuner/tuner/ppo/trainer.py: `for step in tqdm(range(max_steps)): ...
# if (step+1) % self.args.logging_steps == 0: logs = dict(loss=round(loss_meter.avg, 4), reward=..., ...);
# print(logs)`):  `  1%|█▍   | 9/860 [00:43<1:05:18,  4.60s/it]{'loss': nan, 'reward': 0.2684, ...}`.
# The bar counts the iterations done before this one, so the dict is step n + 1.
_GLUED_DICT = LazyPattern(r"\]\s*(?=\{'(?:loss|grad_norm)':)")


def _glued_dict(m, rec) -> "StepEvent | None":
    g = _GLUED_DICT.search(rec.text, m.end())
    if g is None:
        return None
    pairs = {p.group("k"): p.group("v") for p in _KV.finditer(rec.text, g.end())}
    ev = _dict_step(rec, pairs)
    ev.step = int(m.group("n")) + 1
    return ev


def _dict_step(rec, pairs: dict) -> StepEvent:
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="hf", step=None,
        loss=to_float(pairs.get("loss")), grad_norm=to_float(pairs.get("grad_norm")),
        lr=to_float(pairs.get("learning_rate")), epoch=to_float(pairs.get("epoch")),
        raw_fields={k: v.strip("'") for k, v in pairs.items()},
    )


def postfix_loss(text: str, start: int = 0, end: "int | None" = None) -> "tuple[float, dict] | None":
    """The loss a tqdm postfix in text[start:end] names, with all its pairs (None without one)."""
    pm = _POSTFIX.search(text, start, len(text) if end is None else end)
    if pm is None:
        return None
    pairs = {p.group("k"): p.group("v") for p in _POSTFIX_PAIR.finditer(pm.group("post"))}
    named = {k.lower(): k for k in pairs}  # (LucidDreamer's `Loss=nan`: the key as the script spelled it)
    key = next((named[k] for k in _POSTFIX_LOSS if k in named), None)
    loss = to_float(pairs[key]) if key else None
    return (loss, pairs) if loss is not None else None


def _postfix_step(m, rec, state):
    """A bar whose postfix names a loss is a step line (the count is the step); tqdm redraws one
    count several times, and only a new count is a new step."""
    found = postfix_loss(rec.text, m.end())
    n = int(m.group("n"))
    if found is None or state.get("tqdm_last") == n:
        return []
    loss, pairs = found
    state["tqdm_last"] = n
    return [StepEvent(loc=rec.loc, text=rec.text, framework="hf", step=n, loss=loss,
                      lr=to_float(pairs.get("lr")), raw_fields=pairs)]


# ms-swift's trainers add the step to the dict (swift/trainers/mixin.py, swift/megatron: logs['global_step/max_steps']
# = f'{state.global_step}/{state.max_steps}'): `..., 'global_step/max_steps': '5/2169', 'percentage': '0.23%', ...}`
_OWN_STEP = LazyPattern(r"^(\d{1,12})/\d{1,12}$")


@rule("log-dict", ("{'loss'", "{'grad_norm'", "{'train_runtime'", "{'eval_", "'learning_rate'"), r"^\{'[\w/\-.]+':", match_start=True)
def _log_dict(m, rec, state):
    pairs = {p.group("k"): p.group("v") for p in _KV.finditer(rec.text)}
    if "train_runtime" in pairs:
        earlier = state.pop("pending", None)
        end = LifecycleEvent(
            loc=rec.loc, text=rec.text, framework="hf", action="end",
            fields={"train_loss": to_float(pairs.get("train_loss"))},
        )
        return [earlier, end] if earlier is not None else [end]
    if "loss" not in pairs and "grad_norm" not in pairs:
        bad = _nonfinite_eval_loss(pairs)
        if bad is not None:  # an evaluation whose loss is NaN / inf: not a training step, but a failure
            return [_eval_loss_event(rec, bad[0], bad[1], "the evaluation's log dict")]
        return []  # eval dicts and friends: recognised, not a training step
    earlier = state.pop("pending", None)  # no bar since the last dict: it keeps its place in order
    ev = _dict_step(rec, pairs)
    own = _OWN_STEP.match(pairs.get("global_step/max_steps", "").strip("'"))
    if own is not None:
        ev.step = int(own.group(1))  # the dict says its step: no bar needed
        return [earlier, ev] if earlier is not None else [ev]
    state["pending"] = ev
    return [earlier] if earlier is not None else []


# The evaluation loss keys: Trainer.evaluate(metric_key_prefix="eval") logs `eval_loss` (`test_loss` / `predict_loss`
# for predict(), `eval_<name>_loss` for each of several eval datasets: trainer.py _evaluate / evaluation_loop,
# metrics[f"{metric_key_prefix}_loss"]).
_EVAL_LOSS_KEY = LazyPattern(r"(?:eval|test|predict)_(?:[\w\-.]{1,80}_)?loss")


def _nonfinite_eval_loss(pairs: dict) -> "tuple[str, str] | None":
    for k, v in pairs.items():
        if _EVAL_LOSS_KEY.fullmatch(k):
            x = to_float(v)
            if x is not None and not math.isfinite(x):
                return k, v.strip("'")
    return None


def _eval_loss_event(rec, key: str, value: str, where: str) -> WarningEvent:
    return WarningEvent(loc=rec.loc, text=rec.text, framework="hf", warning="eval_loss_nonfinite",
                        message=f"{key} = {value} ({where})", fields={"metric": key, "value": value})


# Trainer.log_metrics (trainer_pt_utils.py) and the example scripts print the end-of-run metrics as a block,
# `***** eval metrics *****` then one `  {key: <{k_width}} = {value:>{v_width}}` line per key (print() or
# logger.info, so a logging prefix may stand before it): `  eval_loss               =        nan`.
@rule("metrics-block-eval-loss", ("_loss ",),
      r"(?:^|\s)(?P<k>(?:eval|test|predict)_(?:[\w\-.]{1,80}_)?loss) += +(?P<v>nan|NaN|-?inf)\s*$")
def _metrics_block_eval_loss(m, rec, state):
    return [_eval_loss_event(rec, m.group("k"), m.group("v"), "the end-of-run metrics block")]


PARSER = Parser(
    name="hf",
    framework="hf",
    priority=30,
    description="Hugging Face Trainer log dicts and tqdm progress bars",
    rules=[_log_dict, _tqdm, _metrics_block_eval_loss],
)
