"""Lightning callbacks that watch a metric the LightningModule never logs: the run stops at the check.

Lightning-AI/pytorch-lightning, by release (the metric name and the logged keys are filled in):
- callbacks/model_checkpoint.py `_save_topk_checkpoint` (1.5+; `lightning.fabric.utilities.exceptions.` or
  `pytorch_lightning.utilities.exceptions.MisconfigurationException`):
  `` `ModelCheckpoint(monitor='val/loss')` could not find the monitored key in the returned metrics: [...].
  HINT: Did you call `log('val/loss', value)` in the `LightningModule`? ``; 1.0-1.4: `ModelCheckpoint(monitor=
  'val_loss') not found in the returned metrics: [...]. HINT: Did you call self.log('val_loss', tensor) in the
  LightningModule?`. It is raised once the validation loop has run; before that (and in the checkpoint hooks of
  training steps) the same text is only a warning (`UserWarning: ...`, `model_checkpoint.py:384: ...`): the
  run goes on, without the monitored checkpoints.
- callbacks/early_stopping.py `_validate_condition_metric`: `Early stopping conditioned on metric `val_loss`
  which is not available. Pass in or modify your `EarlyStopping` callback to use any of the following: ...`,
  a RuntimeError with strict=True (the default), a RuntimeWarning otherwise.
- the scheduler update (trainer/connectors/optimizer_connector.py, later loops/utilities.py / core/optimizer.py):
  `ReduceLROnPlateau conditioned on metric val_loss which is not available. Available metrics are: [...].
  Condition can be set using `monitor` key in lr scheduler dict` (MisconfigurationException).

Only the raised form is the failure (the exception's type before the text); the warnings are not read.
Keras' `Early stopping conditioned on metric ... Available metrics are:` is a warning and is not this.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import exc_type_before

_RAISED = ("MisconfigurationException", "RuntimeError")


@rule("lightning-monitor-missing", ("could not find the monitored key in the returned", ") not found in the returned metrics",
                                    "which is not available. Pass in or modify your `EarlyStopping`",
                                    "ReduceLROnPlateau conditioned on metric "),
      r"(?<![\"'])(?P<msg>`?(?P<cb>ModelCheckpoint)\(monitor=['\"](?P<m1>[^'\"]{1,200})['\"]\)`? "
      r"(?:could not find the monitored key in the returned|not found in the returned metrics)"
      r"|Early stopping conditioned on metric `(?P<m2>[^`]{1,200})` which is not available\. Pass in or modify your `EarlyStopping`"
      r"|ReduceLROnPlateau conditioned on metric (?P<m3>\S{1,200}) which is not available)")
def _monitor_missing(m, rec, state):
    exc = exc_type_before(rec.text, m.start("msg"))
    if exc is None or exc.rsplit(".", 1)[-1] not in _RAISED:
        return []  # the warning form: the run goes on
    metric = m.group("m1") or m.group("m2") or m.group("m3")
    who = "ModelCheckpoint" if m.group("cb") else "EarlyStopping" if m.group("m2") else "ReduceLROnPlateau"
    avail = rec.text[m.end("msg"):]
    detail = f"{who} monitors {metric!r}, but no logged metric has that name (the LightningModule logs it under another name, or not in the loop that runs)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="lightning", error="monitored_metric_missing",
                      message=rec.text[m.start("msg"):].strip()[:400], exc_type=exc,
                      fields={"detail": detail, "metric": metric, "callback": who, "logged": avail.strip()[:300]})


PARSER = Parser(
    name="lightning_checks",
    framework="lightning",
    priority=40,  # before the generic exception parser (python, 80)
    description="Lightning ModelCheckpoint / EarlyStopping / ReduceLROnPlateau monitoring a metric that is never logged",
    rules=[_monitor_missing],
)
