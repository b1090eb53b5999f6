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
The HF Trainer's own check of the bitsandbytes release (huggingface/transformers src/transformers/trainer.py
Trainer.__init__, 4.26-4.35): a model loaded in 8-bit (or 4-bit) whose `_is_quantized_training_enabled` is not set,
which from_pretrained sets only when bitsandbytes>=0.37.0 is installed: `ValueError: The model you want to train is
loaded in 8-bit precision.  if you want to fine-tune an 8-bit model, please make sure that you have installed
`bitsandbytes>=0.37.0`. ` (a remote-code model quantized by its own code never gets the flag either).
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


@rule("trainer-bnb-too-old", ("The model you want to train is loaded in 8-bit precision",),
      r"(?<![\"'])(?P<msg>The model you want to train is loaded in 8-bit precision\.)")
def _trainer_bnb_check(m, rec, state):
    if not first_time(state, ("bnb_setup",), rec.loc.line):
        return []
    detail = ("the Trainer will not fine-tune the 8-bit / 4-bit model: from_pretrained did not enable quantized training, "
              "which it does only with bitsandbytes>=0.37.0 (an older bitsandbytes, or a remote-code model that quantized itself)")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="hf", error="bitsandbytes_setup_failed",
                      message=rec.text[m.start("msg"):].strip()[:400], exc_type="ValueError" if "ValueError" in rec.text else None,
                      fields={"detail": detail})


PARSER = Parser(
    name="bitsandbytes",
    framework="bitsandbytes",
    priority=40,  # before the generic exception parser (python, 80)
    description="bitsandbytes failing to load its CUDA library (CUDA Setup failed, native library not found), the Trainer's check for bitsandbytes>=0.37",
    rules=[_bnb_setup, _trainer_bnb_check],
)
