"""PaddlePaddle's launcher (`python -m paddle.distributed.launch`): the trainers it saw exit non-zero.

python/paddle/distributed/utils/launch_utils.py and fleet/launch_utils.py watch_local_trainers (1.8-2.x), when a
trainer's process returned non-zero (`ret = p.proc.poll()`, `ret != 0`):
  logger.error("ABORT!!! Out of all {} trainers, the trainer process with rank={} was aborted. Please check its log."
               .format(nranks, error_rank))
then terminate_local_procs ("terminate all the procs"). The record is the launcher's: the trainer's own error is in
its log (log/workerlog.N), the status itself is not printed (a positive code or a signal). The ranks are those it
found dead in one pass of its poll, in rank order: with one listed, that rank is the one that failed.

The launcher of 2.3 and later (python/paddle/distributed/launch/controllers/controller.py watch, `LAUNCH INFO` /
`LAUNCH ERROR` records) stops at the first container of its pod it finds failed and prints it
(`self.ctx.logger.error("Container failed !!!\n{}".format(fc[0]))`, job/container.py Container.__str__):
  LAUNCH ERROR 2022-10-25 15:17:31,067 Container failed !!!
  Container rank 0 status failed cmd ['/usr/bin/python3.8', '-u', 'train.py'] code -6 log log/default.fpwuxo.0.log
then `ERROR LOG DETAIL` and the tail of that container's log. The code is the process's exit status, negative for a
signal (subprocess' returncode: -6 is SIGABRT); the container's rank is its index in this node's pod (pod.py
add_container), a local rank: the global rank only where the input is one node's.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, launcher_alone, rule, signal_of
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


@rule("paddle-container-failed", ("status failed cmd",),
      r"^Container rank (?P<rank>\d+) status failed cmd (?P<cmd>\[.*\]) code (?P<code>-?\d+) log (?P<log>\S+)")
def _container(m, rec, state):
    code = int(m.group("code"))
    if code == 0 or not first_time(state, ("paddle_container", m.group("rank"), code), rec.loc.line):
        return []
    o = rec.origin
    lr = int(m.group("rank"))
    single_node = launcher_alone(o)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="paddlepaddle", error="worker_failed",
                      message=m.group(0).strip(), exitcode=code, signal=signal_of(code), rank=lr if single_node else None,
                      fields={"launcher": "paddle", "local_rank": lr, "log": m.group("log"), "first_observed": True})


PARSER = Parser(
    name="paddle_launch",
    framework="paddlepaddle",
    priority=60,
    description="paddle.distributed.launch's record of trainers that exited non-zero",
    rules=[_abort, _container],
)
