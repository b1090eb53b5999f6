"""The metrics records of danijar's Dreamer agents (and the world-model RL code copied from them).

danijar/dreamer dreamer.py Dreamer._write_summaries (TensorFlow 2):
  print(f'[{step}]', ' / '.join(f'{k} {v:.1f}' for k, v in metrics))
  [5000] expl_amount 0.0 / model_grad_norm nan / value_grad_norm 40.3 / ... / model_loss 5864.5 / value_loss 6.4 / ...
danijar/dreamerv2 common/logger.py TerminalOutput prints the same `[step] key value / key value` line; the
optimizers name their metrics f'{name}_loss' and f'{name}_grad_norm' (model, actor, critic / value). The
world model's are the training's loss and gradient norm: the actor and critic learn on its imagined
rollouts, so a world model that went NaN / inf is the failure whatever the others print. The generic
step reader takes `[5000]` for no step and knows none of these keys.
"""

from __future__ import annotations

import re

from nanscope.model import StepEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.numbers import to_float

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"
_PAIR = re.compile(r"(?:^|/ )(?P<k>[A-Za-z_][\w/]*) (?P<v>" + _F + r")(?= /|\s*$)")


@rule("dreamer-metrics", ("model_loss ", "model_grad_norm "),
      r"^\[(?P<step>\d+)\] (?P<rest>[A-Za-z_][\w/]* " + _F + r"(?: / [A-Za-z_][\w/]* " + _F + r")+)\s*$", match_start=True)
def _metrics(m, rec, state):
    pairs = {p.group("k"): p.group("v") for p in _PAIR.finditer(m.group("rest"))}
    loss, norm = to_float(pairs.get("model_loss")), to_float(pairs.get("model_grad_norm"))
    if loss is None and norm is None:
        return None
    return StepEvent(loc=rec.loc, text=rec.text, framework="tensorflow", step=int(m.group("step")), loss=loss,
                     grad_norm=norm, raw_fields=pairs)


PARSER = Parser(
    name="dreamer",
    framework="tensorflow",
    priority=26,  # before the generic step parser (pytorch.py, 90), which reads no step from `[5000]`
    description="danijar's Dreamer / DreamerV2 metrics records ([step] key value / key value)",
    rules=[_metrics],
)
