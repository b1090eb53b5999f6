"""The metrics records of danijar's Dreamer agents (and the world-model RL code copied from them).

danijar/dreamer dreamer.py Dreamer._write_summaries (TensorFlow 2):
  print(f'[{step}]', ' / '.join(f'{k} {v:.1f}' for k, v in metrics))
  [5000] expl_amount 0.0 / model_grad_norm nan / value_grad_norm 40.3 / ... / model_loss 5864.5 / value_loss 6.4 / ...
danijar/dreamerv2 common/logger.py TerminalOutput prints the same `[step] key value / key value` line; the
optimizers name their metrics f'{name}_loss' and f'{name}_grad_norm' (model, actor, critic / value). The
world model's are the training's loss and gradient norm: the actor and critic learn on its imagined
rollouts, so a world model that went NaN / inf is the failure whatever the others print. The generic
step reader takes `[5000]` for no step and knows none of these keys.

juliusfrost/dreamer-pytorch (and every agent on astooke/rlpyt) logs through rlpyt's tabular logger instead:
rlpyt/utils/logging/logger.py log() stamps each line `'%Y-%m-%d %H:%M:%S.%f %Z' | ` (an empty %Z leaves two
spaces), dump_tabular prints tabulate's `key  value` rows, one per line; the runner records `Iteration` first
(rlpyt/runners/minibatch_rl.py _log_diagnostics; from 2020-04 on under logger.tabular_prefix('Diagnostics/'), so the
rows read `Diagnostics/Iteration` and `Diagnostics/CumUpdates`), then record_tabular_misc_stat writes each optimiser
statistic as `{key}/Average`, `/Std`, `/Median`, `/Min`, `/Max` (`{key}Average` without a TensorBoard writer):
  2020-12-08 21:40:45.483178  | model_loss/Average              nan
The world model's loss and gradient norm (`model_loss`, `grad_norm_model`; rlpyt's own algorithms: `loss`)
are read from their Average rows, at the iteration the table printed. record_tabular_misc_stat writes np.nan
in all five rows when it has no values (no optimisation yet: the replay buffer still filling, astooke/rlpyt#78),
which reads exactly like statistics of NaN values; so a nan row is a NaN only once the stream showed the
optimiser working: a finite value of that statistic before, or `CumUpdates` above 0 in the same table.
"""

from __future__ import annotations

import math

from nanscope.model import StepEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.numbers import to_float

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"


@rule("dreamer-metrics", ("model_loss ", "model_grad_norm "),
      r"^\[(?P<step>\d+)\] (?P<rest>[A-Za-z_][\w/]* " + _F + r"(?: / [A-Za-z_][\w/]* " + _F + r")+)\s*$", match_start=True)
def _metrics(m, rec, state):
    # (the rule's regex has checked the `key value / key value` shape: split it, no second regex)
    pairs = dict(part.rsplit(" ", 1) for part in m.group("rest").strip().split(" / "))
    loss, norm = to_float(pairs.get("model_loss")), to_float(pairs.get("model_grad_norm"))
    if loss is None and norm is None:
        return None
    return StepEvent(loc=rec.loc, text=rec.text, framework="tensorflow", step=int(m.group("step")), loss=loss,
                     grad_norm=norm, raw_fields=pairs)


_RLPYT_KEY = {"model_loss": "loss", "loss": "loss", "grad_norm_model": "grad_norm"}


@rule("rlpyt-tabular", ("Iteration ", "CumUpdates ", "loss/Average ", "lossAverage ", "grad_norm_model/Average ",
                         "grad_norm_modelAverage "),
      r"(?:^|\| )(?:(?:Diagnostics/)?(?P<it>Iteration|CumUpdates)|(?P<key>model_loss|loss|grad_norm_model)/?Average)\s+(?P<v>" + _F + r")\s*$")
def _rlpyt(m, rec, state):
    v = to_float(m.group("v"))
    finite = v is not None and math.isfinite(v)
    if m.group("it") == "Iteration":
        state["rlpyt_iter"] = int(v) if finite else None
        state["rlpyt_updates"] = False
        return []
    if m.group("it") == "CumUpdates":
        state["rlpyt_updates"] = finite and v > 0
        return []
    field = _RLPYT_KEY[m.group("key")]
    seen = state.setdefault("rlpyt_finite", set())
    if finite:
        seen.add(field)
    elif field not in seen and not state.get("rlpyt_updates"):
        return []  # no optimisation in view yet: rlpyt's placeholder nan, not a NaN value
    return StepEvent(loc=rec.loc, text=rec.text, framework="pytorch", step=state.get("rlpyt_iter"),
                     raw_fields={"row": m.group("key") + "/Average", field: m.group("v")}, **{field: v})


PARSER = Parser(
    name="dreamer",
    framework="tensorflow",
    priority=26,  # before the generic step parser (pytorch.py, 90), which reads no step from `[5000]`
    description="danijar's Dreamer / DreamerV2 metrics records ([step] key value / key value) and rlpyt's tabular rows",
    rules=[_metrics, _rlpyt],
)
