"""xFormers' memory_efficient_attention with no kernel for its inputs. The dispatcher tries each operator of its
priority list (flash, cutlass, ck, triton, small_k ...) and, when none accepts the inputs, raises with the inputs'
shapes and dtypes and, per operator, why it refused: most often `xFormers wasn't build with CUDA support` /
`operator wasn't built` (a wheel that does not match the installed torch / CUDA, or a CPU-only build), a dtype the
kernels lack (float32 for the flash operator), a GPU too old (`requires device with capability > (8, 0)`), a head
size above the kernels' limit, an attn_bias type. vLLM's XFormers attention backend (V0 on Volta / Turing, vision
encoders) and diffusers / ComfyUI call it. One signature: xformers-no-operator.

Templates (facebookresearch/xformers):
  xformers/ops/fmha/dispatch.py `_run_priority_list` (0.0.17+):
      msg = f\"\"\"No operator found for `{name}` with inputs:
      {textwrap.indent(_format_inputs_description(inp), '     ')}\"\"\"
      + per operator: f"`{op.NAME}` is not supported because:" and its reasons; raise NotImplementedError(msg)
      (name: memory_efficient_attention_forward / _backward / _forward_requires_grad / _decoder ...)
  xformers/ops/common.py `get_xformers_operator` (an op the build does not have):
      raise RuntimeError(f"No such operator xformers::{name} - did you forget to build xformers with `python
      setup.py develop`?")
The reason lines follow the message; the rule reads the message's first line, behind any prefix (vLLM V0's
`Error in model execution (input dumped to ...): `, torchrun's `[rankN]: `).
"""

from __future__ import annotations

from nanscope.parsers.base import Parser, rule
from nanscope.parsers.setup_checks import error_event

FW = "xformers"


@rule(
    "xformers-no-operator",
    ("No operator found for `", "No such operator xformers::"),
    r"(?<![\"'])(?P<msg>No operator found for `(?P<op>\w+)` with inputs"
    r"|No such operator xformers::(?P<missing>\w+))",
)
def _no_operator(m, rec, state):
    if m.group("missing"):
        detail = f"the installed xFormers build has no {m.group('missing')} operator (built without its CUDA kernels)"
    else:
        detail = (f"xFormers found no {m.group('op')} kernel that accepts these inputs (a build without CUDA for this "
                  "torch, or a dtype / GPU / head size its kernels do not support)")
    return error_event(m, rec, "xformers_no_operator", FW, detail, op=m.group("op") or m.group("missing"))


PARSER = Parser(
    name="xformers",
    framework=FW,
    priority=37,  # before the engines (40), whose 'Error in model execution' wraps it, and python's exceptions (80)
    description="xFormers: memory_efficient_attention has no operator for the inputs",
    rules=[_no_operator],
)
