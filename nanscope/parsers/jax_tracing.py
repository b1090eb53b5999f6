"""JAX cannot trace the function: a Python-level use of a traced value under jit / vmap / grad / pmap.

jax-ml/jax jax/_src/errors.py (jax/core.py before 0.2.x moved them), the classes and their messages by release:
- ConcretizationTypeError: `Abstract tracer value encountered where concrete value is expected.` (0.2.x, then the
  context: `The problem arose with the `bool` function.`, `The error arose in jax.numpy.reshape.`, `While tracing the
  function f at path:line, this value became a tracer due to JAX operations on these lines: ...`); 0.4+ puts the
  tracer after a colon: `Abstract tracer value encountered where concrete value is expected: traced array with shape
  uint64[]` / `...: Traced<ShapedArray(float16[16,1024])>with<DynamicJaxprTrace(level=1/0)>`, then what was asked of it
  (`The delete() method was called on the JAX Tracer object ...`) and `The error occurred while tracing the function
  init at ...`.
- TracerBoolConversionError (0.4.13+, a ConcretizationTypeError): `Attempted boolean conversion of traced array with
  shape bool[].` (0.4.13 - 0.4.30 printed a double dot); TracerIntegerConversionError: `The __index__() method was called
  on traced array with shape int32[].`; TracerArrayConversionError: `The numpy.ndarray conversion method __array__() was
  called on traced array with shape float32[]` (before 0.4: `... was called on the JAX Tracer object Traced<...>`);
  NonConcreteBooleanIndexError: `Array boolean indices must be concrete; got ...`; UnexpectedTracerError: `Encountered
  an unexpected tracer. A function transformed by JAX had a side effect, allowing for a reference to an intermediate
  value ... to escape the scope of the transformation.`
JAX prints them behind its traceback filter (`FilteredStackTrace: jax.core.ConcretizationTypeError: ...` in 0.2.x,
`jax._src.traceback_util.UnfilteredStackTrace: jax.errors.TracerBoolConversionError: ...`), as the exception's own line,
or a front end shows the message alone (a notebook's JSON error record: `"name": "TracerBoolConversionError",` then
`"message": "Attempted boolean conversion of traced array with shape bool[1].`). The sentences are JAX's own; the
source lines that raise them in a traceback (`raise ConcretizationTypeError(self,`) carry none of them.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "jax"

_DETAIL = {
    "TracerBoolConversionError": "a Python if / while / and / or (a bool) on a traced value inside jit / vmap / grad",
    "TracerIntegerConversionError": "a traced value used as a Python int (an index, range(n), a shape)",
    "TracerArrayConversionError": "a traced value passed to NumPy (np.* instead of jax.numpy inside a traced function)",
    "NonConcreteBooleanIndexError": "boolean-mask indexing with a traced mask: the result's shape would depend on its values",
    "UnexpectedTracerError": "a traced value escaped its transformation (kept in a global, self or a closure after the trace)",
    "ConcretizationTypeError": "a concrete Python value (a shape, an index, a bool) was needed from a traced value",
}

_MESSAGES = [
    # a console that wraps long lines (rich's traceback) may break the sentence after "where"
    ("ConcretizationTypeError", r"Abstract tracer value encountered where(?: concrete value is expected|[ \t]*$)"),
    ("TracerBoolConversionError", r"Attempted boolean conversion of traced array with shape"),
    ("TracerIntegerConversionError", r"The __index__\(\) method was called on traced array with shape"),
    ("TracerArrayConversionError", r"The numpy\.ndarray conversion method __array__\(\) was called on (?:traced array with shape|the JAX Tracer object)"),
    ("NonConcreteBooleanIndexError", r"Array boolean indices must be concrete"),
    ("UnexpectedTracerError", r"Encountered an unexpected tracer"),
]


@rule("jax-tracer-error",
      ("Abstract tracer value encountered", "boolean conversion of traced array", "method was called on traced array",
       "conversion method __array__() was called on", "Array boolean indices must be concrete", "Encountered an unexpected tracer"),
      r"(?P<msg>" + "|".join(f"(?P<m{i}>{rx})" for i, (_, rx) in enumerate(_MESSAGES)) + r")")
def _jax_tracer(m, rec, state):
    if re.search(r"\braise\b|\bmsg\s*[+]?=|\bf[\"']\S*$|[(][\"']$", rec.text[:m.start("msg")]):
        return None  # the source line that builds or raises the message, quoted in a traceback
    kind = next(cls for i, (cls, _) in enumerate(_MESSAGES) if m.group(f"m{i}"))
    named = re.search(r"\b(?:jax\.(?:_src\.)?errors\.|jax\.core\.)?(?P<cls>ConcretizationTypeError|Tracer(?:Bool|Integer|Array)"
                      r"ConversionError|NonConcreteBooleanIndexError|UnexpectedTracerError): ?$", rec.text[:m.start("msg")])
    if named:
        kind = named.group("cls")
    if not first_time(state, ("jax_tracer",), rec.loc.line):
        return []
    text = rec.text[m.start("msg"):].strip().rstrip('",')
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="jax_tracer_error", message=text[:400],
                      exc_type=f"jax.errors.{kind}", fields={"kind": kind, "detail": _DETAIL[kind]})


PARSER = Parser(
    name="jax_tracing",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80): the ConcretizationTypeError line is this one's
    description="JAX tracing errors (ConcretizationTypeError and its Tracer*ConversionError kin, UnexpectedTracerError)",
    rules=[_jax_tracer],
)
