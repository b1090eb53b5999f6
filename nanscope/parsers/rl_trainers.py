"""TRL's RL trainers refusing their batch layout before the first step (GRPO's generations per prompt).

huggingface/trl trainer/grpo_trainer.py `GRPOTrainer.__init__` (0.14-0.16; `per_device_train_batch_size` counts
completions since 0.15) and trainer/grpo_config.py `GRPOConfig.__post_init__` (0.17+), by release:
  `The global train batch size ({num_processes} x {per_device_train_batch_size}) must be evenly divisible by the
  number of generations per prompt ({num_generations}). Given the current train batch size, the valid values for
  the number of generations are: [...]` (and `The global eval batch size ...`);
  `generation_batch_size ({n}) must be divisible by the number of generations per prompt ({g})` (later
  `... must be divisible by num_generations ({g})`);
  `The global eval batch size ({a} * {b}) must be divisible by the number of generations used for evaluation ({g}).`;
  `GRPO requires at least 2 generations per prompt to calculate the advantages. You provided {g}, which is less
  than the minimum required.`
Every rank raises it (a configuration check): the rank a prefix shows is no origin.
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import error_event


@rule("grpo-generations", ("must be evenly divisible by the number of generations", "must be divisible by the number of generations",
                           "must be divisible by num_generations", "GRPO requires at least 2 generations per prompt"),
      r"(?<![\"'])(?P<msg>The global (?P<split>train|eval) batch size(?: \((?P<a>\d+) [x*] (?P<b>\d+)\))? must be (?:evenly )?"
      r"divisible by the number of generations(?: per prompt| used for evaluation)?(?: \((?P<n>\d+)\))?"
      r"|generation_batch_size \((?P<gb>\d+)\) must be divisible by (?:num_generations|the number of generations per prompt) \((?P<n2>\d+)\)"
      r"|GRPO requires at least 2 generations per prompt)")
def _grpo_generations(m, rec, state):
    g = m.group
    n = g("n") or g("n2")
    if g("a"):
        total = int(g("a")) * int(g("b"))
        detail = (f"the global {g('split')} batch ({g('a')} processes x {g('b')} per device = {total} completions) cannot be "
                  f"split into groups of {n} generations per prompt" if n else
                  f"the global {g('split')} batch ({g('a')} x {g('b')}) is not a multiple of num_generations")
    elif g("gb"):
        detail = f"generation_batch_size {g('gb')} is not a multiple of num_generations {n}"
    elif g("split"):
        detail = f"the global {g('split')} batch is not a multiple of num_generations"
    else:
        detail = "num_generations is below 2: GRPO compares at least two completions per prompt"
    return error_event(m, rec, "grpo_batch_generations_mismatch", "trl", detail)


PARSER = Parser(
    name="rl_trainers",
    framework="trl",
    priority=40,  # before the generic exception parser (python, 80)
    description="TRL GRPO's batch / generations-per-prompt checks",
    rules=[_grpo_generations],
)
