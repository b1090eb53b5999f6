"""onnxruntime has no kernel for a node of the model (its op at that opset, with those input types, on this provider).

microsoft/onnxruntime, the session's kernel lookup when it partitions the graph (onnxruntime/core/framework,
every release): a Status NOT_IMPLEMENTED, printed by the Python binding as
`[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : <message>` (onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented;
RuntimeError before 1.0) and by the mobile / C API as `Error code - ORT_NOT_IMPLEMENTED - <message>`, <message> being
  <= 1.7:  `Could not find an implementation for the node Mul(6)` (`... the node bert / embeddings / one_hot:OneHot(9)`)
  1.8+:    `Could not find an implementation for Pad(13) node with name '/Pad'`
The op and its opset version are read from the message. The phrase alone is other software's too (a compiler's
"Could not find an implementation for the function ..."): it counts with the Op(version) that onnxruntime prints.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import exc_type_before

FW = "onnxruntime"


@rule("ort-not-implemented", ("Could not find an implementation for ",),
      r"(?P<msg>Could not find an implementation for (?:the node (?P<node>[^\n()]{1,200}?)\((?P<v>\d{1,3})\)"
      r"|(?P<op>[A-Za-z_][\w.:]{0,80})\((?P<v2>\d{1,3})\)(?: node with name '(?P<name>[^'\n]{0,200})')?))")
def _ort_not_implemented(m, rec, state):
    op = m.group("op") or m.group("node").rsplit(":", 1)[-1].strip()
    version = int(m.group("v") or m.group("v2"))
    if not first_time(state, ("ort_not_implemented", op, version), rec.loc.line):
        return []
    fields = {"operator": op, "opset": version, "node": m.group("name") or (m.group("node") or "").strip() or None,
              "detail": f"onnxruntime has no kernel for {op} at opset {version} (with these input types, on this execution provider)"}
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="onnxruntime_op_not_implemented",
                      message=rec.text[m.start("msg"):].strip()[:400], exc_type=exc_type_before(rec.text, m.start("msg")),
                      fields=fields)


PARSER = Parser(
    name="onnxruntime",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80): the NotImplemented / RuntimeError line is this one's
    description="onnxruntime sessions: a node with no kernel (NOT_IMPLEMENTED: Could not find an implementation for Op(version))",
    rules=[_ort_not_implemented],
)
