"""JAX's NaN/inf checker (jax_debug_nans / jax_debug_infs): the primitive that produced the value.

jax-ml/jax, by release (jax/interpreters/xla.py `_check_nans` / `_check_special`, later
jax/_src/dispatch.py `_check_special` and api_util.InternalFloatingPointError):
  FloatingPointError: invalid value (nan) encountered in xla_call              (<= 0.2.x)
  FloatingPointError: invalid value (nan) encountered in mul                   (the de-optimized re-run)
  FloatingPointError: invalid value (inf) encountered in jit(convert_element_type). Because
    jax_config.debug_nans.value and/or config.jax_debug_infs is set, the de-optimized function ...
  jax._src.source_info_util.JaxStackTraceBeforeTransformation: FloatingPointError: invalid value (nan) encountered in mul
  Exception has occurred: FloatingPointError invalid value (nan) encountered in jit(...)  (VS Code's title)
The message stands alone where a front end prints the exception's type apart: VS Code's debugger
(`Exception has occurred: FloatingPointError`, the message on the next line), a Jupyter error record
(`"name": "FloatingPointError",` then `"message": "invalid value (nan) encountered in jit(...)...`).
So the message is read wherever it is; the source line in a traceback (`raise FloatingPointError(f"invalid
value (nan) encountered in {name}")`) names no op and is not read.
and, printed before the backward pass is re-run without jit (interpreters/ad.py, pjit.py, shard_map.py):
  Invalid nan value encountered in the backward pass of a jax.jit function. Calling the de-optimized backward pass.
  (older: "... of a C++-jit/pmap function. ..."; "... of a shard_map function. ...")
The `(nan)` / `(inf)` is JAX's own: numpy's `RuntimeWarning: invalid value encountered in divide` has
none, and is not this (a numpy warning says nothing about where a training run's NaN came from).
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule


@rule(
    "debug-nans",
    ("invalid value (nan) encountered in", "invalid value (inf) encountered in"),
    r"invalid value \((?P<ty>nan|inf)\) encountered in (?P<op>[\w.\-]+(?:\([^()]*\))?)",
)
def _debug_nans(m, rec, state):
    op = m.group("op").rstrip(".")
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="jax", error="nan_op", exc_type="FloatingPointError",
        message=rec.text[m.start():].split(". Because ", 1)[0].strip(),
        fields={"op": op, "value": m.group("ty"), "checker": f"jax_debug_{m.group('ty')}s"},
    )


@rule(
    "debug-nans-backward",
    ("value encountered in the backward pass of a",),
    r"^Invalid (?:nan )?value encountered in the backward pass of a .+ function\. Calling the de-optimized backward pass",
    match_start=True,
)
def _debug_nans_backward(m, rec, state):
    return []  # the FloatingPointError of the de-optimized re-run names the primitive: that is the event


PARSER = Parser(
    name="jax",
    framework="jax",
    priority=60,  # before python's generic exception reader (80): the exception line is this one's
    description="JAX debug_nans / debug_infs FloatingPointError (the primitive that produced NaN/inf)",
    rules=[_debug_nans, _debug_nans_backward],
)
