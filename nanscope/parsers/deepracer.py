"""AWS DeepRacer's simulation application (simapp, on rl_coach): the training worker's NaN stop.

aws-deepracer-community/deepracer-simapp bundle/markov/training_worker.py, after each training
round, checks every agent's mean loss and stops the job when one is NaN:
  utils.json_format_logger("NaN detected in loss function, aborting training. Job failed!", ...)   (older)
  log_and_exit("NaN detected in loss function, aborting training.", SIMAPP_TRAINING_WORKER_EXCEPTION, ...)
Both print one JSON record, e.g.
  {"simapp_exception": {"version": "1.0", "date": "...", "function": "training_worker",
   "message": "NaN detected in loss function, aborting training. Job failed!", ...}}
and the worker exits: the run stopped because its loss was NaN (the same stop as Keras's
TerminateOnNaN). mmdetection3d-style heads warn `NaN detected in loss function, which will be
ignored automatically` and go on: that is no stop and is not read here.
"""

from __future__ import annotations

from nanscope.model import WarningEvent
from nanscope.parsers.base import Parser, rule


@rule("simapp-nan-stop", ("NaN detected in loss function, aborting training",),
      r"NaN detected in loss function, aborting training")
def _nan_stop(m, rec, state):
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="deepracer", warning="nonfinite_stop",
        message="NaN detected in loss function, aborting training",
    )


PARSER = Parser(
    name="deepracer",
    framework="deepracer",
    priority=28,
    description="AWS DeepRacer simapp (rl_coach) training worker: the NaN-loss stop",
    rules=[_nan_stop],
)
