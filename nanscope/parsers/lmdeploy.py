"""LMDeploy (InternLM/lmdeploy): the PyTorch engine's main loop that died, so no request is served any more.

LMDeploy logs through its own logger (`2025-04-21 10:43:58,013 - lmdeploy - ERROR - engine.py:781 - MESSAGE`),
and the engine's loop reports its own end, in each release's words (lmdeploy/pytorch/engine/):
  0.2-0.3  request.py:   raise ThreadError('Engine main loop stopped.')          -> the requests see it
  0.4-0.6  request.py:   logger.exception(f'Engine loop failed with error: {e}')  (`... error: map::at`)
  0.7+     engine.py / model_agent.py _task_callback: logger.exception(f'Task <{task_name}> failed')
           (EngineMainLoop, MainLoopBackground, the model agent's loops; mp_engine's zmq_rpc the same words)
  latest   engine.py:    logger.exception('Engine main loop failed.')
`Engine main loop cancelled.` (a shutdown) and request.py's debug line are no failure. The traceback after the
line says what killed the loop (a CUDA error, out of memory, a worker of the Ray executor), which other rules
read too.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "lmdeploy"


@rule(
    "engine-loop-failed",
    ("> failed", "Engine loop failed with error: ", "Engine main loop failed.", "Engine main loop stopped."),
    r"(?:^|[\s:(\[-])(?:Task <(?P<task>\w+)> failed\s*$|Engine loop failed with error: (?P<err>.+)"
    r"|Engine main loop (?P<how>failed|stopped)\.)",
)
def _engine_loop(m, rec, state):
    if not first_time(state, ("lmdeploy_engine",), rec.loc.line):
        return []  # the loop's own line and the requests that see it stopped
    if m.group("task"):
        detail = f"the engine's {m.group('task')} task failed (its traceback follows)"
    elif m.group("err"):
        detail = f"the engine loop failed: {m.group('err').strip()}"
    else:
        detail = f"the engine main loop {m.group('how')}"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="lmdeploy_engine_dead", message=rec.text.strip(),
                      fields={"source": "lmdeploy", "task": m.group("task"), "detail": detail})


PARSER = Parser(
    name="lmdeploy",
    framework=FW,
    priority=40,
    description="LMDeploy: the PyTorch engine's main loop failed or stopped",
    rules=[_engine_loop],
)
