"""DeepSpeed fp16 loss scaler and engine progress lines.

deepspeed/runtime/fp16/loss_scaler.py (current):
  [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768
  [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1
  Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.
older releases: `[deepscale] OVERFLOW! ...`, `Grad overflow on iteration N`,
`Reducing dynamic loss scale from A to B`, `[Rank 0] Overflow detected. Skipping step. ...`.
ZeRO stage 1/2 of DeepSpeed 0.3-0.5 (deepspeed/runtime/zero/stage2.py, FP16_DeepSpeedZeroOptimizer.step)
prints its own wording on every rank:
  [deepspeed] fp16 dynamic loss scale overflow! Rank 4 Skipping step. Attempted loss scale: 4294967296, reducing to 4294967296
(the attempted scale kept on the first overflow is the scaler's hysteresis, as above). Every rank
prints the one overflow of a step (the overflow flag is all-reduced first): consecutive lines with the
same scales from ranks not yet seen in that group are one overflow, and the group ends at a rank that
printed already (rank 0's loss_scaler.py message repeats Rank 0, so each of its lines is an overflow).
deepspeed/runtime/engine.py: `[Rank 0] step=10, skipped=2, lr=[0.0001], mom=[(0.9, 0.999)]`.
deepspeed/launcher/launch.py sigkill_handler (the line number moves: 315/321, 318/324, 428/434, 335/341):
  [2024-03-20 20:31:29,210] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3353707
  [2024-03-20 20:31:29,269] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', '--local_rank=4', ...] exits with return code = 1
A paste often keeps only the message: the argv list and its return code without the logger's prefix
(`['/usr/bin/python3', '-u', 'train.py', '--local_rank=0', ...] exits with return code = -9`), and forks print
it with print() the same way; both are read (a line that starts with the argv list's `['`).
The handler runs when a local process exits non-zero: it kills the others, then logs the return code of the
one that died (negative: the signal that killed it). The command it prints is the argv of the last process
the launcher spawned, whichever process failed, so its `--local_rank` is no rank evidence.

The overflow message is printed only by rank 0, whichever rank overflowed: its "Rank 0" is the
printer, never evidence of where the overflow came from.

Under the Hugging Face Trainer the message is often glued to the tqdm redraw before it
(` 14%|█▍  | 378/2724 [13:58:09<86:18:35, 132.44s/it][2023-06-07 22:16:00,018] [INFO] ...
OVERFLOW! ...`): the bar counts the optimizer steps done, so the overflow is in step 378 + 1. A
bar whose postfix names a loss (accelerate/diffusers scripts: `..., 14.89s/it, lr=1e-5,
step_loss=nan, td=2.85s][2024-07-10 ...] ... OVERFLOW! ...`) is also that step's loss: the line
gives both events, as it would if the two writes had not shared a line.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent, LifecycleEvent, ScaleEvent, StepEvent
from nanscope.parsers.base import LazyPattern, Parser, rule, signal_of
from nanscope.parsers.hf import postfix_loss
from nanscope.parsers.numbers import to_float, to_int
from nanscope.parsers.setup_checks import exc_type_before

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|inf|nan)"
# a tqdm redraw right before the message: "| 378/2724 [13:58:09<86:18:35, 132.44s/it]" (or with a
# postfix: "| 16/6000 [00:55<4:54:46,  2.96s/it, lr=0, noise_step_loss=nan]")
_TQDM = LazyPattern(r"\|\s*(?P<n>\d+)/(?P<total>\d+) \[[^\]]*(?:it/s|s/it)[^\]]*\]\s*(?:\[[^\]]*\]\s*)*$")


_RANK = LazyPattern(r"Rank (?P<r>\d+) ")


def _same_overflow(m, rec, state, old, new) -> bool:
    """True for another rank's copy of the overflow the previous line reported (see above)."""
    r = _RANK.search(rec.text, m.start(), m.end())
    if r is None:
        state.pop("ds_overflow", None)
        return False
    rank, group = int(r.group("r")), state.get("ds_overflow")
    if group is not None and group[0] == (old, new) and rank not in group[1]:
        group[1].add(rank)
        return True
    state["ds_overflow"] = ((old, new), {rank})
    return False


def _glued_step(m, rec):
    """The step in progress from a tqdm bar glued in front of the message (None without one)."""
    t = _TQDM.search(rec.text, 0, m.start())
    return int(t.group("n")) + 1 if t is not None else None


def _glued_loss(m, rec) -> list:
    """The step event of a glued bar whose postfix names a loss (see above), or nothing."""
    t = _TQDM.search(rec.text, 0, m.start())
    got = postfix_loss(rec.text, t.start(), m.start()) if t is not None else None
    if got is None:
        return []
    loss, pairs = got
    return [StepEvent(loc=rec.loc, text=rec.text, framework="hf", step=int(t.group("n")), loss=loss,
                      lr=to_float(pairs.get("lr")), raw_fields=pairs)]


@rule(
    "overflow-hysteresis",
    ("OVERFLOW!", "Overflow detected", "loss scale overflow!"),
    r"(?:OVERFLOW!|Overflow detected\.|fp16 dynamic loss scale overflow!)\s*Rank \d+ Skipping step\.?\s*Attempted loss scale: (?P<old>" + _F + r"), but hysteresis is (?P<h>\d+)",
)
def _hysteresis(m, rec, state):
    s = to_float(m.group("old"))
    if _same_overflow(m, rec, state, s, s):
        return []
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", action="overflow", old_scale=s, new_scale=s,
        step=_glued_step(m, rec), rank_is_printer_only=True,
    )


@rule(
    "overflow",
    ("OVERFLOW!", "Overflow detected", "loss scale overflow!"),
    r"(?:OVERFLOW!|Overflow detected\.|fp16 dynamic loss scale overflow!)\s*(?:Rank \d+ )?Skipping step\.?\s*(?:Attempted loss scale: (?P<old>" + _F + r"),? reducing to (?P<new>" + _F + r"))?",
)
def _overflow(m, rec, state):
    old, new = to_float(m.group("old")), to_float(m.group("new"))
    if _same_overflow(m, rec, state, old, new):
        return []
    return _glued_loss(m, rec) + [ScaleEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", action="overflow",
        old_scale=old, new_scale=new, step=_glued_step(m, rec),
        rank_is_printer_only=True,
    )]


@rule("grad-overflow-iteration", ("Grad overflow on iteration",), r"Grad overflow on iteration (?P<it>\d+)")
def _grad_overflow(m, rec, state):
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", action="overflow", step=to_int(m.group("it")),
        rank_is_printer_only=True,
    )


@rule("reducing-scale", ("Reducing dynamic loss scale",), r"Reducing dynamic loss scale from (?P<old>" + _F + r") to (?P<new>" + _F + r")")
def _reducing(m, rec, state):
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", action="decrease",
        old_scale=to_float(m.group("old")), new_scale=to_float(m.group("new")), rank_is_printer_only=True,
    )


@rule("scale-minimum", ("already at minimum",), r"(?i)current loss scale already at minimum")
def _minimum(m, rec, state):
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", action="minimum", rank_is_printer_only=True,
    )


@rule("progress", ("skipped=",), r"\bstep=(?P<step>\d+), skipped=(?P<skipped>\d+)(?:, lr=\[(?P<lr>[^\],]*))?")
def _progress(m, rec, state):
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", step=int(m.group("step")),
        skipped_total=int(m.group("skipped")), lr=to_float(m.group("lr")),
    )


@rule("dtype-unsupported", ("is not supported on your device",), r"Type (?P<dtype>\w+) is not supported on your device")
def _dtype(m, rec, state):
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", error="dtype_unsupported",
        message=rec.text, fields={"dtype": m.group("dtype")},
    )


# deepspeed/runtime/config.py DeepSpeedConfig._batch_assertion (every release since 0.3; 0.5.x printed
# `world_size2 != 1 * 1 * 1` without the space, fixed in deepspeedai/DeepSpeed#1734):
#   assert train_batch == micro_batch * grad_acc * self.world_size, (f"Check batch related parameters.
#   train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size {train_batch} != ...")
# and its siblings `Train batch size: {n} has to be greater than 0`, `Micro batch size per gpu: {n} has to be
# greater than 0`, `Gradient accumulation steps: {n} has to be greater than 0`, and _set_batch_related_parameters'
# `Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided`. deepspeed.initialize stops
# on every rank before the first step. A source line quoting the template (rich's box shows `f"Check batch ...`)
# is not the assertion: the phrase must not follow a quote. Rich wraps the message: its first line has the phrase.
_BATCH = LazyPattern(r"world_size\s*(?P<t>\d+) != (?P<m>\d+) \* (?P<g>\d+) \* (?P<w>\d+)")


@rule("batch-config", ("Check batch related parameters", "has to be greater than 0", "train_micro_batch_size_per_gpu needs to be provided"),
      r"(?<![\"'])(?P<msg>Check batch related parameters\."
      r"|(?:Train batch size|Micro batch size per gpu|Gradient accumulation steps): -?\d+ has to be greater than 0"
      r"|Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided)")
def _batch_config(m, rec, state):
    msg = rec.text[m.start("msg"):].strip()
    nums = _BATCH.search(msg)
    if nums is not None:
        t, mb, g, w = (int(nums.group(k)) for k in "tmgw")
        detail = (f"train_batch_size {t} != micro batch {mb} x gradient accumulation {g} x world size {w} "
                  f"(= {mb * g * w})")
    else:
        detail = msg[:200]
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", error="deepspeed_batch_config", message=msg[:400],
        exc_type=exc_type_before(rec.text, m.start("msg")), fields={"detail": detail},
    )


@rule("launcher-exit", ("exits with return code",),
      r"(?:sigkill_handler\].*|^\s*\[['\"][^\n]*['\"]\]) exits with return code = (?P<code>-?\d+)\s*$")
def _launcher_exit(m, rec, state):
    code = int(m.group("code"))
    _drop_unexplained(state)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", error="worker_failed", message=f"exits with return code = {code}",
        exitcode=code, signal=signal_of(code), fields={"launcher": "deepspeed"},
    )


# Where the handler's kill lines are not followed by the line that says why (the return code, or the
# launcher's own signal), the excerpt or the log stopped there: a worker ended and the launcher tore the
# others down, and the input does not say how. The first kill line is held (state["pending"]) as that
# exit, with no exit code; the return-code line, the launcher's `Main process received SIGINT, exiting`
# or 0.3-0.5's CalledProcessError (its own exception, read by the python parser) replace it. The
# signatures that read it (process-killed) count it only when nothing else in the input is an error.
_UNEXPLAINED = "ds_unexplained_kill"


def _drop_unexplained(state) -> None:
    if state.get(_UNEXPLAINED):
        state.pop(_UNEXPLAINED)
        state.pop("pending", None)


@rule("launcher-kill", ("Killing subprocess",), r"(?:sigkill_handler\] |^\s*)Killing subprocess (?P<pid>\d+)\s*$")
def _launcher_kill(m, rec, state):
    if "pending" not in state and not state.get("ds_kill_seen"):
        state["ds_kill_seen"] = True
        state[_UNEXPLAINED] = True
        state["pending"] = ErrorEvent(
            loc=rec.loc, text=rec.text, framework="deepspeed", error="worker_failed",
            message="the DeepSpeed launcher killed its workers after one ended; its return code is not in the input",
            fields={"launcher": "deepspeed", "exit_unexplained": True,
                    "died": "ended, and the DeepSpeed launcher killed the job's processes (the "
                            "launcher's line with the return code is not in the input; a death that leaves no traceback "
                            "is most often a SIGKILL)"},
        )
    return LifecycleEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", action="teardown",
        fields={"pid": int(m.group("pid")), "signal": "SIGKILL", "launcher": "deepspeed"},
    )


# launch.py sigkill_handler when the launcher itself got the signal (no worker had failed):
#   logger.info(f"Main process received {sig_names[signum]}, exiting")   (SIGINT / SIGTERM)
@rule("launcher-signalled", ("Main process received",), r"Main process received (?P<sig>SIGINT|SIGTERM), exiting")
def _launcher_signalled(m, rec, state):
    _drop_unexplained(state)
    return LifecycleEvent(
        loc=rec.loc, text=rec.text, framework="deepspeed", action="teardown",
        fields={"signal": m.group("sig"), "launcher": "deepspeed", "launcher_signalled": True},
    )


PARSER = Parser(
    name="deepspeed",
    framework="deepspeed",
    priority=20,
    description="DeepSpeed loss scaler, engine progress and launcher lines",
    rules=[_hysteresis, _overflow, _grad_overflow, _reducing, _minimum, _progress, _dtype, _batch_config, _launcher_exit,
           _launcher_kill, _launcher_signalled],
)
