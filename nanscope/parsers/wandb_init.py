"""Weights & Biases could not start the run's logging, and the training script went down with it.

wandb/wandb, by release (wandb.init is called by the script itself, or by the HF Trainer's WandbCallback at
on_train_begin, Lightning's WandbLogger, accelerate's tracker; its exception ends the run before a step):
- sdk/wandb_login.py `prompt_api_key`: `raise UsageError("api_key not configured (no-tty). call " + directive)`
  with directive `wandb.login(key=[your_api_key])` (`wandb login [your_api_key]` in CLI mode); wandb's
  terminal prints it first as `wandb: ERROR api_key not configured (no-tty). call wandb.login(...)`.
  No key in the environment (WANDB_API_KEY), in ~/.netrc, and no terminal to ask for one.
- sdk/wandb_init.py (0.16+): `CommError: Run initialization has timed out after {timeout} sec. Please try
  increasing the timeout with the `init_timeout` setting: ...` (0.15-0.17: `... Please refer to the
  documentation for additional information: https://docs.wandb.ai/...`), also as `wandb: ERROR Run
  initialization has timed out after ...`; 0.12-0.15: `UsageError: Error communicating with wandb process`
  (`InitStartError`): the wandb service process did not start or answer.
- sdk/internal/internal_api.py: `CommError: It appears that you do not have permission to access the
  requested resource. ...` (the entity / project is not the account's).

`wandb: Network error (TransientError), entering retry loop.` is wandb retrying an upload during a healthy
run: not this. One failure prints its message twice (wandb's ERROR line, the exception): one event.
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time
from nanscope.parsers.setup_checks import error_event

_WHY = {
    "key": "wandb has no API key (no WANDB_API_KEY, no ~/.netrc login) and no terminal to ask for one",
    "timeout": "wandb's run initialization timed out (its service process or the W&B server did not answer)",
    "process": "wandb could not start or reach its service process",
    "permission": "the W&B account may not write to the entity / project the run names",
}


@rule("wandb-init", ("api_key not configured (no-tty)", "Run initialization has timed out after ",
                     "Error communicating with wandb process", "do not have permission to access the requested resource"),
      r"(?<![\"'])(?P<msg>(?P<key>api_key not configured \(no-tty\))"
      r"|Run initialization has timed out after (?P<secs>[\d.]+) sec"
      r"|(?P<process>Error communicating with wandb process)"
      r"|(?<=CommError: )(?P<perm>It appears that you do not have permission to access the requested resource))")
def _wandb_init(m, rec, state):
    kind = ("key" if m.group("key") else "timeout" if m.group("secs") else "process" if m.group("process")
            else "permission")
    if not first_time(state, ("wandb_init", kind), rec.loc.line):
        return []
    detail = _WHY[kind] + (f" (after {m.group('secs')} s)" if m.group("secs") else "")
    return error_event(m, rec, "wandb_init_failed", "wandb", detail, kind=kind)


PARSER = Parser(
    name="wandb_init",
    framework="wandb",
    priority=40,  # before the generic exception parser (python, 80)
    description="Weights & Biases failing to start the run: no API key, init timeouts, no service process, no permission",
    rules=[_wandb_init],
)
