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

Targets of another shape than the predictions (loss-shape-mismatch), as each loss checks them:
- PyTorch aten/src/ATen/native/LossNLL.cpp (torch/nn/functional.py `nll_loss` in 1.x): `Expected input
  batch_size (60) to match target batch_size (10).`; for N-d inputs `Expected target size [2, 10], got [2, 5]`.
- torch/nn/functional.py `binary_cross_entropy_with_logits`: `Target size (torch.Size([16])) must be the same as
  input size (torch.Size([16, 1]))`; `binary_cross_entropy`: `Using a target size (...) that is different to the
  input size (...) is deprecated. Please ensure they have the same size.` (a ValueError; the regression losses'
  `... This will likely lead to incorrect results due to broadcasting.` is a UserWarning and is not read).
- TensorFlow tensor_shape.py `assert_is_compatible_with` under Keras losses: `ValueError: Shapes (None, 10) and
  (None, 1) are incompatible`; the graph's `Dimensions must be equal, but are 2 and 3 for '{{node
  binary_crossentropy/mul}} ...'` (TF 1.x: `... for 'model/loss_0/loss/Pow' (op: 'Pow') ...`), read only when the
  node is a loss's (a MatMul of the model is not the targets).
- Keras 3 keras/src/backend/*/nn.py: `Arguments `target` and `output` must have the same shape. Received:
  target.shape=..., output.shape=...`, and `Argument `output` must have rank (ndim) `target.ndim - 1`.`
  (sparse_categorical_crossentropy given one-hot labels); Keras 2.0-2.3 training_utils.py: `A target array with
  shape (10, 2) was passed for an output of shape (None, 10) while using as loss `categorical_crossentropy`.`,
  `Error when checking target: expected dense_20 to have shape (3,) but got array with shape (22,)`, `You are
  passing a target array of shape (...) while using as loss `categorical_crossentropy`.`
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
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


_SHAPE = r"\([^()]{0,80}\)"
_TSIZE = r"torch\.Size\(\[[\d, ]{0,80}\]\)"
_LOSS_NODE = LazyPattern(r"crossentropy|loss|squared_error|absolute_error|hinge|focal|dice", re.IGNORECASE)


@rule("loss-shape-mismatch",
      ("to match target batch_size (", "Expected target size [", "must be the same as input size (",
       "that is different to the input size (", ") are incompatible", "Dimensions must be equal, but are ",
       "Arguments `target` and `output` must have the same shape", "must have rank (ndim) `target.ndim - 1`",
       "was passed for an output of shape", "Error when checking target: expected ", "You are passing a target array of shape"),
      r"(?<![\"'\w])(?P<msg>Expected input batch_size \((?P<ib>\d+)\) to match target batch_size \((?P<tb>\d+)\)"
      r"|Expected target size (?P<et>\[[\d, ]{0,80}\]), got (?P<gt>\[[\d, ]{0,80}\])"
      r"|Target size \((?P<bt>" + _TSIZE + r")\) must be the same as input size \((?P<bi>" + _TSIZE + r")\)"
      r"|Using a target size \((?P<dt>" + _TSIZE + r")\) that is different to the input size \((?P<di>" + _TSIZE + r")\) is deprecated"
      r"|Shapes (?P<sa>" + _SHAPE + r") and (?P<sb>" + _SHAPE + r") are incompatible"
      r"|Dimensions must be equal, but are (?P<da>\d+) and (?P<db>\d+) for '(?:\{\{node (?P<node>[^}']{1,200})\}\}|(?P<node1>[^']{1,200})' \(op: ')"
      r"|Arguments `target` and `output` must have the same shape\. Received: target\.shape=(?P<kt>" + _SHAPE + r"), output\.shape=(?P<ko>" + _SHAPE + r")"
      r"|Argument `output` must have rank \(ndim\) `target\.ndim - 1`\. Received: target\.shape=(?P<rt>" + _SHAPE + r"), output\.shape=(?P<ro>" + _SHAPE + r")"
      r"|A target array with shape (?P<at>" + _SHAPE + r") was passed for an output of shape (?P<ao>" + _SHAPE + r") while using as loss `(?P<al>\w+)`"
      r"|Error when checking target: expected (?P<layer>\w+) to have (?:shape (?P<ce>" + _SHAPE + r")|(?P<cn>\d+) dimensions),? but got array with shape (?P<cg>" + _SHAPE + r")"
      r"|You are passing a target array of shape (?P<pt>" + _SHAPE + r") while using as loss `(?P<pl>\w+)`)")
def _loss_shape(m, rec, state):
    g = m.group
    if g("ib"):
        detail, fw = f"the loss got predictions for {g('ib')} samples and targets for {g('tb')}", "pytorch"
    elif g("et"):
        detail, fw = f"the loss expected targets of size {g('et')} and got {g('gt')}", "pytorch"
    elif g("bt") or g("dt"):
        t, i = (g("bt"), g("bi")) if g("bt") else (g("dt"), g("di"))
        detail, fw = f"the binary cross-entropy got targets {t[len('torch.Size('):-1]} for predictions {i[len('torch.Size('):-1]}", "pytorch"
    elif g("sa"):
        detail, fw = f"TensorFlow: shapes {g('sa')} and {g('sb')} are incompatible (under a Keras loss: the labels against the model's output)", "tensorflow"
    elif g("da"):
        node = g("node") or g("node1")
        if not _LOSS_NODE.search(node):
            return None  # some other op's shapes: not the loss's targets
        detail, fw = f"TensorFlow's {node.split(' ', 1)[0]} got dimensions {g('da')} and {g('db')}: the labels do not fit the model's output", "tensorflow"
    elif g("kt") or g("rt"):
        t, o = (g("kt"), g("ko")) if g("kt") else (g("rt"), g("ro"))
        why = "" if g("kt") else " (sparse_categorical_crossentropy takes integer labels, not one-hot)"
        detail, fw = f"the Keras loss got targets {t} for outputs {o}{why}", "keras"
    elif g("at"):
        detail, fw = f"the targets {g('at')} do not fit the output {g('ao')} under {g('al')}", "keras"
    elif g("layer"):
        want = g("ce") or f"{g('cn')} dimensions"
        detail, fw = f"the layer {g('layer')} outputs {want} but the targets have shape {g('cg')}", "keras"
    else:
        detail, fw = f"the targets {g('pt')} are not one-hot matrices for {g('pl')}", "keras"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=fw, error="loss_shape_mismatch",
                      message=rec.text[m.start("msg"):].strip()[:300], exc_type=exc_type_before(rec.text, m.start("msg")),
                      fields={"detail": detail})


PARSER = Parser(
    name="label_checks",
    framework="pytorch",
    priority=40,  # before the generic exception parser (python, 80)
    description="Class labels outside the model's outputs (torch nll_loss / cross_entropy, TF sparse softmax cross-entropy), "
                "and targets of another shape than the predictions (PyTorch, TensorFlow, Keras losses)",
    rules=[_torch_target, _tf_label, _loss_shape],
)
