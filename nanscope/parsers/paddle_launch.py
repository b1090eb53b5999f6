"""PaddlePaddle's launcher (`python -m paddle.distributed.launch`): the trainers it saw exit non-zero.

python/paddle/distributed/utils/launch_utils.py and fleet/launch_utils.py watch_local_trainers (1.8-2.x), when a
trainer's process returned non-zero (`ret = p.proc.poll()`, `ret != 0`):
  logger.error("ABORT!!! Out of all {} trainers, the trainer process with rank={} was aborted. Please check its log."
               .format(nranks, error_rank))
then terminate_local_procs ("terminate all the procs"). The record is the launcher's: the trainer's own error is in
its log (log/workerlog.N), the status itself is not printed (a positive code or a signal). The ranks are those it
found dead in one pass of its poll, in rank order: with one listed, that rank is the one that failed.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time


@rule("paddle-launch-abort", ("ABORT!!! Out of all",),
      r"ABORT!!! Out of all (?P<n>\d+) trainers, the trainer process with rank=\[(?P<ranks>[\d, ]*)\] was aborted")
def _abort(m, rec, state):
    ranks = [int(r) for r in m.group("ranks").replace(" ", "").split(",") if r]
    if not first_time(state, ("paddle_abort", tuple(ranks)), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="paddlepaddle", error="worker_failed",
                      message=m.group(0).strip(), exc_type="a non-zero exit", rank=ranks[0] if len(ranks) == 1 else None,
                      fields={"launcher": "paddle", "ranks": ranks, "world_size": int(m.group("n")),
                              "nonzero_exit": True})


PARSER = Parser(
    name="paddle_launch",
    framework="paddlepaddle",
    priority=60,
    description="paddle.distributed.launch's record of trainers that exited non-zero",
    rules=[_abort],
)
