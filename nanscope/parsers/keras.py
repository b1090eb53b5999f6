"""Keras / tf.keras progress bars, the TerminateOnNaN callback, and TensorFlow's out-of-memory error.

  Keras 2 / tf.keras (keras/utils/generic_utils.py, Progbar.update: `'%{numdigits}d/%d ['`, a bar of
  `=`, `>` and `.`, ` - ETA: ...` or the elapsed time, then ` - {name}: {avg:.4f}` per metric):
        3/234 [..............................] - ETA: 33:37:24 - loss: 44.4110
      512/512 [==============================] - 127s 247ms/step - loss: nan - acc: nan - val_loss: nan
  Keras 3 (keras/src/utils/progbar.py: a bar of `━`, then ` - {name}: {avg:.4f}`):
        4/234 ━━━━━━━━━━━━━━━━━━━━ 5:01 1s/step - accuracy: 0.1250 - loss: nan
  TerminateOnNaN (keras/callbacks.py, on_batch_end; `batch` is 0-based, so `Batch 3` is bar count 4):
      Keras 2: print('Batch %d: Invalid loss, terminating training' % (batch))
      later:   io_utils.print_msg(f"Batch {batch}: Invalid loss, terminating training")
    The bar ends in `\\r`, so the message is often glued to the bar line before it:
        3/234 [....] - ETA: 33:37:24 - loss: 44.4110Batch 3: Invalid loss, terminating training

The bar's count restarts every epoch; the step is the count plus the targets of the epochs before
(a count that goes back down starts a new epoch, and so does the epoch header ProgbarLogger prints
before each epoch's bar, which a log that keeps only each epoch's final bar needs: `Epoch 2/10`, in
Keras 2 / 3 `print_msg(f"Epoch {epoch + 1}/{self.epochs}")`; `Epoch 2` in the first releases).
Non-finite averages print as `nan` / `inf`.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent, StepEvent, WarningEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"
# The number ends at a separator, or where TerminateOnNaN's message is glued on (`44.4110Batch 3:`),
# never inside a longer name (`loss: nan_count`).
_LOSS = LazyPattern(r"(?:^|\s)- loss: (?P<v>" + _F + r")(?=[^\w.]|Batch |$)")
_TERMINATE = LazyPattern(r"Batch (?P<b>\d+): Invalid loss, terminating training")


def _global(state: dict, n: int, total: int) -> int:
    last = state.get("keras_last")
    header = state.pop("keras_header", False)
    if last is not None and (n < last or header):
        state["keras_base"] = state.get("keras_base", 0) + state.get("keras_total", total)
    state["keras_last"], state["keras_total"] = n, total
    return state.get("keras_base", 0) + n


def _terminated(m, rec, state, step):
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="keras", step=step, warning="nonfinite_stop", message=m.group(0),
        fields={"batch": int(m.group("b"))},
    )


@rule(
    "keras-progbar",
    ("- loss: ",),
    r"^\s*(?P<n>\d+)/(?P<tot>\d+) (?:\[[=>.]*\]|━+)(?P<rest>.*)$",
    match_start=True,
)
def _progbar(m, rec, state):
    rest = m.group("rest")
    lm = _LOSS.search(rest)
    if lm is None:
        return None
    n, tot = int(m.group("n")), int(m.group("tot"))
    step = _global(state, n, tot)
    loss = to_float(lm.group("v"))
    out = [StepEvent(loc=rec.loc, text=rec.text, framework="keras", step=step, loss=loss, raw_fields={"total": tot})]
    t = _TERMINATE.search(rest)
    if t is not None:
        # Printed by the callback for batch index b (count b + 1) before the bar shows that count.
        out.append(_terminated(t, rec, state, step - n + int(t.group("b")) + 1))
    return out


@rule("keras-epoch-header", ("Epoch ",), r"^Epoch \d+(?:/\d+)?\s*$", match_start=True)
def _epoch_header(m, rec, state):
    if "keras_last" not in state:
        return None  # no bar yet: nothing to number, and not necessarily Keras
    state["keras_header"] = True
    return []


@rule("keras-terminate-on-nan", ("Invalid loss, terminating training",), _TERMINATE.pattern)
def _terminate(m, rec, state):
    base = state.get("keras_base", 0)
    return _terminated(m, rec, state, base + int(m.group("b")) + 1 if "keras_last" in state else None)


# TensorFlow's allocators (tensorflow/core/framework/op_kernel.cc, tensor allocation in OpKernelContext:
# errors::ResourceExhausted("OOM when allocating tensor with shape", shape, " and type ", dtype, " on ",
# device, " by allocator ", allocator name); TF 1.0-1.4 wrote only `OOM when allocating tensor with
# shape[123008,500]`). The same text is in the kernel's C++ warning (`W .../op_kernel.cc:1431]
# OP_REQUIRES failed at fused_batch_norm_op.cc:573 : Resource exhausted: OOM when allocating ...`),
# the collective executor's abort (`BaseCollectiveExecutor::StartAbort Resource exhausted: OOM ...`),
# and the Python exception Keras re-raises (`ResourceExhaustedError: OOM when allocating ...`, also
# `tensorflow.python.framework.errors_impl.ResourceExhaustedError:` and `(see above for traceback):`):
# one failure. A GPU device (`/job:localhost/replica:0/task:0/device:GPU:1`, old `.../gpu:0`) with its
# BFC allocator (`GPU_1_bfc`) is device memory; the `cpu` allocator on a CPU device is host memory.
# The BFC allocator's `ran out of memory trying to allocate 84.60MiB. The caller indicates that this is
# not a failure` is a retry that succeeded: not this.
_TF_DEVICE = LazyPattern(r"(?:device:)?(?P<kind>GPU|gpu|CPU|cpu):(?P<i>\d+)")


@rule(
    "tf-oom",
    ("OOM when allocating tensor",),
    r"OOM when allocating tensor (?:with|of) shape ?\[(?P<shape>[^\]]*)\]"
    r"(?: and type (?P<dtype>\w+))?(?: on (?P<device>\S+) by allocator (?P<alloc>\w+))?",
)
def _tf_oom(m, rec, state):
    dev = _TF_DEVICE.search(m.group("device") or "")
    kind = dev.group("kind").upper() if dev else None
    if not first_time(state, ("tf_oom", m.group("shape"), m.group("device")), rec.loc.line):
        return []
    host = kind == "CPU"
    where = f" on {kind} {dev.group('i')}" if dev else ""
    by = f" ({m.group('alloc')} allocator)" if m.group("alloc") else ""
    dtype = f" {m.group('dtype')}" if m.group("dtype") else ""
    fields = {"framework": "tensorflow", "shape": f"[{m.group('shape')}]", "detail":
              f"TensorFlow could not allocate a{dtype} tensor of shape [{m.group('shape')}]{where}{by}"}
    if kind == "GPU":
        fields["gpu"] = int(dev.group("i"))  # a device index of this process, not a rank
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="tensorflow", error="host_oom" if host else "cuda_oom",
                      message=m.group(0), fields=fields)


# tf.keras optimizer_v2/utils.py filter_empty_gradients (keras/optimizers/... in Keras 2.x, keras/src/optimizers in 3):
# `raise ValueError(f"No gradients provided for any variable: {variable names}.")` (Keras 3: `No gradients provided for any
# variable.`): the tape found no gradient from the loss to any trainable variable (autograd-no-grad's TensorFlow form).
@rule("keras-no-gradients", ("No gradients provided for any variable",),
      r"(?<![\"'])(?P<msg>No gradients provided for any variable)")
def _no_gradients(m, rec, state):
    if not first_time(state, ("keras", "no-gradients"), rec.loc.line):
        return []
    message = ("TensorFlow found no gradient from the loss to any trainable variable: the loss is not a differentiable "
               "function of them (argmax, numpy or integer casts between prediction and loss, a custom loss that ignores "
               "y_pred, the loss computed outside the GradientTape)")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="keras", error="autograd_no_grad", message=message,
                      exc_type="ValueError", fields={"detail": rec.text[m.start():].strip()[:300]})


PARSER = Parser(
    name="keras",
    framework="keras",
    priority=27,
    description="Keras / tf.keras progress bars and TerminateOnNaN; TensorFlow's OOM when allocating tensor; no gradients for any variable",
    rules=[_progbar, _epoch_header, _terminate, _tf_oom, _no_gradients],
)
