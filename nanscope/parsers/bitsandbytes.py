"""bitsandbytes could not load a CUDA build of its native library: 8-bit / 4-bit training cannot start.

bitsandbytes-foundation/bitsandbytes bitsandbytes/cextension.py (and cuda_setup/main.py), by release:
- 0.38-0.42: `raise RuntimeError('''` + `        CUDA Setup failed despite GPU being available. Please run the
  following command to get more information:` (the message on its own line after `RuntimeError:`); 0.35-0.37:
  `CUDA Setup failed despite GPU being available. Inspect the CUDA SETUP outputs above to fix your environment!`;
  their set-up log `CUDA SETUP: Setup Failed!` / `CUDA SETUP: Something unexpected happened. Please compile from
  source:`.
- 0.43+: `Could not find the bitsandbytes CUDA binary at PosixPath('.../libbitsandbytes_cuda124.so')` and
  `Could not load bitsandbytes native library: {error}` (logged before the traceback).
- afterwards, the first 8-bit optimizer step with no native library: `AttributeError: 'NoneType' object has no
  attribute 'cadam32bit_grad_fp32'` (the library handle is None).
A source line shown in rich's box (`│ ❱ 20 │ raise RuntimeError('''` ... `│  21 │ CUDA Setup failed ...`) is the
code, not the error: a line with the box's bar is not read. One failure, many lines: one event.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers._repeats import first_time


@rule("bnb-cuda-setup", ("CUDA Setup failed despite GPU being available", "CUDA SETUP: Setup Failed!",
                         "Could not find the bitsandbytes CUDA binary at ", "Could not load bitsandbytes native library: ",
                         "object has no attribute 'cadam32bit_grad_fp32'"),
      r"(?<![\"'])(?P<msg>CUDA Setup failed despite GPU being available|CUDA SETUP: Setup Failed!"
      r"|Could not find the bitsandbytes CUDA binary at (?P<bin>\S+)"
      r"|Could not load bitsandbytes native library: (?P<why>.{1,300})"
      r"|'NoneType' object has no attribute 'cadam32bit_grad_fp32')")
def _bnb_setup(m, rec, state):
    if "│" in rec.text:
        return []  # rich's box showing cextension.py's source
    if not first_time(state, ("bnb_setup",), rec.loc.line):
        return []
    if m.group("bin"):
        detail = f"bitsandbytes has no CUDA build at {m.group('bin')[:200]} (BNB_CUDA_VERSION, or a source checkout never built for this CUDA)"
    elif m.group("why"):
        detail = f"bitsandbytes could not load its native library ({m.group('why').strip()[:200]})"
    elif "cadam32bit" in m.group("msg"):
        detail = "an 8-bit optimizer step ran without bitsandbytes' native CUDA library (it failed to load earlier)"
    else:
        detail = "bitsandbytes found a GPU but could not load a CUDA build of its library (no build for this CUDA runtime, or libcudart not found)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="bitsandbytes", error="bitsandbytes_setup_failed",
                      message=rec.text[m.start("msg"):].strip()[:400], exc_type=None, fields={"detail": detail})


PARSER = Parser(
    name="bitsandbytes",
    framework="bitsandbytes",
    priority=40,  # before the generic exception parser (python, 80)
    description="bitsandbytes failing to load its CUDA library (CUDA Setup failed, native library not found)",
    rules=[_bnb_setup],
)
