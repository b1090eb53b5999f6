"""Class labels outside the model's outputs, as the loss kernels report them.

- PyTorch aten/src/ATen/native/LossNLL.cpp (nll_loss, cross_entropy on the CPU; every release since 1.0):
  `TORCH_CHECK_INDEX(cur_target >= 0 && cur_target < n_classes, "Target ", cur_target, " is out of bounds.")`
  -> `IndexError: Target 5 is out of bounds.` (on the GPU the same check is a device-side assert,
  `Assertion `t >= 0 && t < n_classes` failed.`, which cuda-device-assert reports).
- TensorFlow tensorflow/core/kernels/sparse_xent_op.cc (SparseSoftmaxCrossEntropyWithLogits, Keras'
  sparse_categorical_crossentropy): `Received a label value of 32 which is outside the valid range of
  [0, 11).  Label values: ...`, inside `InvalidArgumentError` / `Graph execution error` / `Node:` blocks,
  often on a line of its own.

The label, and the number of classes where the message gives it, go into the finding. A source line that
quotes the template (`"Target ", cur_target, ...`) is not the error: the label must be a number.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import exc_type_before


@rule("torch-target-out-of-bounds", ("is out of bounds.",),
      r"(?<![\w\"'])Target (?P<label>-?\d+) is out of bounds\.")
def _torch_target(m, rec, state):
    label = int(m.group("label"))
    why = "a negative label (an ignore index the loss does not use?)" if label < 0 else "not below the number of classes"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="pytorch", error="label_out_of_range",
                      message=rec.text[m.start():].strip()[:300], exc_type=exc_type_before(rec.text, m.start()),
                      fields={"detail": f"the loss got class label {label}, {why}", "label": label})


@rule("tf-label-outside-range", ("which is outside the valid range of [0, ",),
      r"Received a label value of (?P<label>-?\d+) which is outside the valid range of \[0, (?P<n>\d+)\)")
def _tf_label(m, rec, state):
    label, n = int(m.group("label")), int(m.group("n"))
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="tensorflow", error="label_out_of_range",
                      message=rec.text[m.start():].strip()[:300], exc_type="InvalidArgumentError",
                      fields={"detail": f"the loss got class label {label}, but the model has {n} outputs (labels 0..{n - 1})",
                              "label": label, "classes": n})


PARSER = Parser(
    name="label_checks",
    framework="pytorch",
    priority=40,  # before the generic exception parser (python, 80)
    description="Class labels outside the model's outputs (torch nll_loss / cross_entropy, TF sparse softmax cross-entropy)",
    rules=[_torch_target, _tf_label],
)
