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

The Trainer also refuses a GPU run on a machine whose torch sees no CUDA device (cuda-no-device), by release:
- trainer/connectors/accelerator_connector.py `_choose_gpu_accelerator_backend` (1.7+, lightning 2.x):
  `MisconfigurationException("No supported gpu backend found!")` (accelerator='gpu', neither CUDA nor MPS).
- `_check_device_config_and_set_final_flags` / `_set_parallel_devices_and_init_accelerator` (1.6+):
  `` `CUDAAccelerator` can not run on your system since the accelerator is not available. The following
  accelerator(s) is available and can be passed into `accelerator` argument of `Trainer`: ['cpu']. ``
  (1.6: `GPUAccelerator can not run ...`, no backticks).
- utilities/device_parser.py `_sanitize_gpu_ids` (0.x-1.x; later accelerators/cuda.py): `You requested GPUs: [0]`
  then, on the next line, `But your machine only has: []` (later `You requested gpu: ...`): an empty list is no
  GPU at all; a non-empty one is fewer GPUs than the devices asked for (parallel-size-exceeds-gpus).

The fork-based strategies (ddp_notebook / ddp_fork, 1.8+) refuse to start when the notebook already used CUDA:
strategies/launchers/multiprocessing.py `_check_bad_cuda_fork`: `RuntimeError: Lightning can't create new processes if
CUDA is already initialized. Did you manually call `torch.cuda.*` functions, ...` (cuda-forked-subprocess, the same
failure torch reports as `Cannot re-initialize CUDA in forked subprocess`).
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import error_event, exc_type_before

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


@rule("lightning-no-gpu", ("No supported gpu backend found", "Accelerator can not run on your system since the accelerator is not available",
                           "Accelerator` can not run on your system since the accelerator is not available", "But your machine only has: ["),
      # Hydra prints the exception's repr (`MisconfigurationException('No supported gpu backend found!')`); the raise
      # in a traceback's source line is no evidence, nor is a test's `match="CUDAAccelerator` ...`
      r"(?<!raise MisconfigurationException\(\")(?<!raise MisconfigurationException\(')(?P<msg>No supported gpu backend found!?"
      r"|(?<![\"'])`?(?P<acc>CUDA|GPU)Accelerator`? can not run on your system since the accelerator is not available"
      r"|(?<![\"'{])But your machine only has: \[(?P<avail>[\d, ]*)\])")
def _no_gpu(m, rec, state):
    avail = m.group("avail")
    if avail is not None and avail.strip():
        return error_event(m, rec, "parallel_exceeds_gpus", "lightning",
                           f"the Trainer asked for more GPUs than this process sees (visible: [{avail.strip()}]): devices / gpus "
                           f"is larger than the GPUs the launcher or CUDA_VISIBLE_DEVICES gives it")
    detail = ("the Lightning Trainer asked for a GPU, and torch sees no CUDA device "
              "(a CPU-only torch build, no GPU allocated to the job, or CUDA_VISIBLE_DEVICES empty)")
    return error_event(m, rec, "cuda_no_device", "lightning", detail, cuda_error=m.group("msg").strip()[:120])


@rule("lightning-cuda-fork", ("Lightning can't create new processes if CUDA is already initialized",),
      r"(?<![\"'])(?P<msg>Lightning can't create new processes if CUDA is already initialized)")
def _cuda_fork(m, rec, state):
    return error_event(m, rec, "cuda_forked_subprocess", "lightning",
                       "the fork-based strategy (ddp_notebook / ddp_fork) found CUDA already initialised in the parent process")


PARSER = Parser(
    name="lightning_checks",
    framework="lightning",
    priority=40,  # before the generic exception parser (python, 80)
    description="Lightning ModelCheckpoint / EarlyStopping / ReduceLROnPlateau monitoring a metric that is never logged; a GPU Trainer with no GPU",
    rules=[_monitor_missing, _no_gpu, _cuda_fork],
)
