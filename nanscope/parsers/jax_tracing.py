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

An array dimension that the mesh axes it is sharded over do not divide (jax-sharding-indivisible), in the releases'
words (all ValueError; IndivisibleError, a ValueError, from 0.4.3x):
- jax/_src/pjit.py pjit_check_aval_sharding (2021-2026, for jit / pjit arguments and outputs, device_put,
  with_sharding_constraint): `One of {what_aval}{name_str} was given the sharding of {s}, which implies that the global
  size of its dimension {i} should be divisible by {size}, but it is equal to {shape[i]} (full shape: {shape})`
  (2021's first version: `... was given the resource assignment of {spec}, which implies that the size of its dimension
  {i} should be divisible by {size}, but it is equal to {shape[i]}`); 2026 re-raises the sharding's own check as
  `One of {what} was given the sharding {e}. This error occurs at source: ...`.
- the sharding's shard_shape (jax/_src/sharding.py, sharding_impls.py before; 2022+): `{sharding} implies that array
  axis {dim} is partitioned {p} times, but the dimension size is {s} (full shape: {shape}, per-dimension tiling
  factors: {partitions} should evenly divide the shape)`; named_sharding / core.py _check_divisibility (2025+):
  `Sharding spec {spec} implies that array axis {dim} is partitioned {size} times, but does not evenly divide the
  dimension size {sh}.`
- shard_map (jax.experimental.shard_map 2022-2025, jax/_src/shard_map.py after): `shard_map applied to the function
  '{f}' was given argument arrays with axis sizes that are not evenly divisible by the corresponding mesh axis sizes:`,
  then per argument `... which maps array axis {d} (of size {n}) to mesh axes ('dp', 'fsdp') (of total size {sz}),
  but {sz} does not evenly divide {n}`.
- sharding_impls.py's PartitionSpec recovery: `shape=(8, 2) is incompatible with mesh_shape=...: dim_size=3 is not
  divisible by axis_size=2.`
The source lines quoted in a traceback (`raise ValueError(f"One of {what_aval}{name_str} was given the sharding "`)
carry placeholders, not numbers, and are not read.
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


def _int(m, *names):
    return next((int(m.group(n)) for n in names if m.group(n)), None)


@rule("jax-sharding-indivisible",
      ("should be divisible by", "is partitioned", "are not evenly divisible by the corresponding mesh axis sizes",
       "is not divisible by axis_size=", "does not evenly divide"),
      r"One of (?P<what>[\w ]{1,60}?)(?: with pytree key path (?P<path>\S{1,200}))? was given the (?:sharding|resource"
      r" assignment).{0,2000}?which implies that the (?:global )?size of its dimension (?P<dim>\d+) should be divisible by"
      r" (?P<ways>\d+), but it is equal to (?P<size>\d+)"
      r"|implies that array axis (?P<dim2>\d+) is partitioned (?P<ways2>\d+) times, but (?:the dimension size is"
      r" (?P<size2>\d+)|does not evenly divide the dimension size (?P<size3>\d+))"
      r"|(?P<shmap>shard_map applied to the function '.{0,500}' was given argument arrays with axis sizes that are not"
      r" evenly divisible by the corresponding mesh axis sizes)"
      r"|which maps array axis (?P<dim4>\d+) \(of size (?P<size4>\d+)\) to mesh (?P<axes4>axis '[^']*'|axes \([^)]*\))"
      r" \(of (?:total )?size (?P<ways4>\d+)\), but \d+ does not evenly divide \d+"
      r"|shape=\([\d, ]*\) is incompatible with mesh_shape=.{0,300}: dim_size=(?P<size5>\d+) is not divisible by"
      r" axis_size=(?P<ways5>\d+)")
def _jax_sharding(m, rec, state):
    if re.search(r"\braise\b|\bf[\"']|[(][\"']$", rec.text[:m.start()]):
        return None  # the source line that builds the message, quoted in a traceback
    if not first_time(state, ("jax_sharding",), rec.loc.line):
        return []  # shard_map's header, then one bullet per argument: one refusal
    dim, ways, size = _int(m, "dim", "dim2", "dim4"), _int(m, "ways", "ways2", "ways4", "ways5"), \
        _int(m, "size", "size2", "size3", "size4", "size5")
    mesh = re.search(r"Mesh\((?P<mesh>'[^()]*?)(?:, axis_types=|\))", rec.text)
    if m.group("shmap"):
        detail = ("shard_map's in_specs split an argument's axis over mesh axes whose total size does not divide it "
                  "(the lines below name the argument, its axis and the mesh axes)")
    elif size is not None and ways is not None:
        what = f"{m.group('what')} " if m.group("what") else ""
        where = f" ({m.group('axes4')})" if m.group("axes4") else (f" (mesh {mesh.group('mesh')})" if mesh else "")
        axis = f"dimension {dim}" if dim is not None else "a dimension"
        detail = (f"{axis} of {what}has size {size}, which the sharding splits {ways} ways{where}: {size} is not a "
                  f"multiple of {ways}")
    else:
        detail = "an array dimension is not a multiple of the number of devices its mesh axes split it over"
    text = rec.text.strip()
    exc = re.match(r"(?:\S*\.)?(?P<cls>ValueError|IndivisibleError): ", text)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="jax_sharding_indivisible", message=text[:400],
                      exc_type=exc.group("cls") if exc else "ValueError",
                      fields={"detail": detail, "dimension": dim, "ways": ways, "size": size})


PARSER = Parser(
    name="jax_tracing",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80): the ConcretizationTypeError line is this one's
    description="JAX tracing errors (ConcretizationTypeError and its Tracer*ConversionError kin, UnexpectedTracerError);"
                " arrays whose sharding the mesh axes do not divide (jit / pjit / device_put, shard_map)",
    rules=[_jax_tracer, _jax_sharding],
)
