"""torch.onnx.export cannot convert an operator of the model.

pytorch/pytorch torch/onnx, by release (the TorchScript exporter):
- torch <= 1.11, symbolic_registry.get_registered_op: `RuntimeError: Exporting the operator uniform to ONNX opset
  version 12 is not supported. Please feel free to request support or submit a pull request on PyTorch GitHub.`
  (or `... Support for this operator was added in version 14, try exporting with this version.`);
- torch 1.12, symbolic_registry.UnsupportedOperatorError: `Exporting the operator prim::DictConstruct to ONNX opset
  version 14 is not supported. ...`;
- torch 1.13+, torch/onnx/errors.py UnsupportedOperatorError: `Exporting the operator 'aten::lift_fresh' to ONNX opset
  version 13 is not supported. Please feel free to request support or submit a pull request on PyTorch GitHub:
  https://github.com/pytorch/pytorch/issues`; for another domain `ONNX export failed on an operator with unrecognized
  namespace {domain}::{op}. If you are trying to export a custom operator, make sure you registered it with the right
  domain and version.`
- symbolic_helper._onnx_unsupported (every release since 1.x; torch.onnx.errors.SymbolicValueError in 1.13+):
  `Unsupported: ONNX export of operator {op}, {why}. Please feel free to request support ...`, and
  _onnx_opset_unsupported: `Unsupported: ONNX export of {op} in opset {n}. Please try opset version {m}.`
- torch <= 1.4's ATen fallback: `ONNX export failed: Couldn't export operator aten::upsample_bilinear2d`.
The operator is named by the message; the source line that builds it in a traceback (`msg = "Exporting the operator "
+ opname + ...`) names none.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import exc_type_before

FW = "pytorch"


@rule("onnx-export-unsupported",
      ("to ONNX opset version", "ONNX export of operator", "ONNX export of ", "unrecognized namespace",
       "ONNX export failed: Couldn't export operator"),
      r"(?<![\"'])(?P<msg>Exporting the operator '?(?P<op>[\w:.]{1,120})'? to ONNX opset version (?P<opset>\d+) is not supported"
      r"|Unsupported: ONNX export of (?:operator )?(?P<op2>[\w:.]{1,120})"
      r"|ONNX export failed on an operator with unrecognized namespace (?P<op3>[\w:.]{1,120})"
      r"|ONNX export failed: Couldn't export operator (?P<op4>[\w:.]{1,120}))")
def _onnx_unsupported(m, rec, state):
    op = m.group("op") or m.group("op2") or m.group("op3") or m.group("op4")
    if not first_time(state, ("onnx_export", op), rec.loc.line):
        return []
    text = rec.text[m.start("msg"):].strip()
    added = re.search(r"Support for this operator was added in version (\d+)|Please try opset version (\d+)", text)
    opset = m.group("opset") or (re.search(r" in opset (\d+)", text) or [None, None])[1]
    fields = {"operator": op, "opset": int(opset) if opset else None,
              "supported_from": int(added.group(1) or added.group(2)) if added else None}
    if fields["supported_from"]:
        fields["detail"] = f"the exporter converts {op} from opset {fields['supported_from']} on: export with that opset"
    elif m.group("op3"):
        fields["detail"] = f"{op} is a custom operator of a namespace the exporter has no symbolic function for"
    else:
        fields["detail"] = f"the exporter has no conversion for {op}" + (f" at opset {opset}" if opset else "")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="onnx_export_unsupported", message=text[:400],
                      exc_type=exc_type_before(rec.text, m.start("msg")), fields=fields)


PARSER = Parser(
    name="onnx_export",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80): the UnsupportedOperatorError line is this one's
    description="torch.onnx.export: an operator the ONNX exporter cannot convert (at this opset)",
    rules=[_onnx_unsupported],
)
