"""The reference DPO trainer's stats line (eric-mitchell/direct-preference-optimization) and its forks.

trainers.py BasicTrainer.train, every logging interval, on rank 0 (the same line in the forks that
keep the trainer: ContextualAI/HALOs, the SimPO/IPO/KTO ports, accelerate versions that call
self.accelerator.print or self.log_message_rank0):
  rank0_print(f'train stats after {self.example_counter} examples: {formatted_dict(mean_train_metrics)}')
formatted_dict renders every float as a quoted '%.5g' string and leaves the two counters as ints:
  train stats after 160768 examples: {'rewards_train/chosen': 'nan', ..., 'logps_train/chosen': 'nan',
  'loss/train': 'nan', 'examples_per_second': '5.4876', 'grad_norm': 'nan', 'counters/examples': 160768,
  'counters/updates': 5024}
The step is `counters/updates` (optimizer steps; `counters/examples` counts examples, another unit);
a line whose counter does not read as a number gives no step rather than a guessed one.
"""

from __future__ import annotations

import re

from nanscope.model import StepEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float, to_int

_PAIR = LazyPattern(r"'(?P<k>[^']*)':\s*(?P<v>'[^']*'|[^,}\s]+)")


@rule("train-stats", ("train stats after ",), r"\btrain stats after (?P<n>\d+) examples: \{(?P<d>.*)\}")
def _train_stats(m, rec, state):
    pairs = {p.group("k"): p.group("v").strip("'") for p in _PAIR.finditer(m.group("d"))}
    if "loss/train" not in pairs and "grad_norm" not in pairs:
        return None
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="dpo-reference", step=to_int(pairs.get("counters/updates")),
        loss=to_float(pairs.get("loss/train")), grad_norm=to_float(pairs.get("grad_norm")),
        lr=to_float(pairs.get("lr")), raw_fields=pairs,
    )


PARSER = Parser(
    name="dpo-reference",
    framework="dpo-reference",
    priority=29,
    description="the reference DPO trainer's 'train stats after N examples: {...}' lines (and its forks')",
    rules=[_train_stats],
)
