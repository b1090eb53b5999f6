"""An attention backend that cannot apply the model's attention logit soft-capping (Gemma 2, Grok: the scores
go through softcap * tanh(scores / softcap) before the softmax). vLLM picks the backend from the GPU, the
platform and VLLM_ATTENTION_BACKEND; several backends refuse the layer when it is built (the model never
loads), and FlashAttention builds compiled without soft-capping refuse it at the first forward. One signature:
attention-softcap-unsupported.

Templates (vllm-project/vllm, quoted from source via the search index):
  vllm/attention/backends/xformers.py XFormersImpl.__init__ (V0, Volta / Turing GPUs):
      raise ValueError("XFormers does not support attention logits soft capping.")
      (same wording: XFormersCLA, ROCmFlashAttention (before CK softcap support), kunlunxinAttention; ROCm's
      Triton path: "ROCm Triton FlashAttention does not support attention logits soft capping. please try using
      the ROCm CK FA backend instead by setting the env var `VLLM_USE_TRITON_FLASH_ATTN=0`")
  vllm/attention/backends/torch_sdpa.py TorchSDPABackendImpl.__init__ (the CPU backend):
      raise ValueError("Torch SPDA does not support logits soft cap.")
      (same shape: "FlexAttention does not support logits soft cap yet.", "TRTLLM attention does not support
      logits soft cap.", "CacheOnlyAttention does not support logits soft cap yet.", "HPC attention backend does
      not support logits soft cap.", "TRITON_PAGED does not support logits soft capping yet.")
  vLLM 0.5.1-0.5.3, before its FlashAttention had soft-capping: vllm/attention/backends/flash_attn.py (and
      xformers.py, the worker's model_runner.py) refused a model whose config sets attn_logit_softcapping on any
      backend but FlashInfer (raised in the profiling run, determine_num_available_blocks):
      raise ValueError("Please use Flashinfer backend for models with logits_soft_cap (i.e., Gemma-2). Otherwise,
      the output might be wrong. Set Flashinfer backend by export VLLM_ATTENTION_BACKEND=FLASHINFER.")
      (0.5.1 concatenated "models with" "logits_soft_cap" without the space: `models withlogits_soft_cap`)
  Dao-AILab/flash-attention hopper/flash_api.cpp (and vllm-flash-attn's FA3 build) mha_fwd:
      TORCH_CHECK(params.softcap == 0.0, "This flash attention build does not support tanh softcapping.");
      (built with FLASHATTENTION_DISABLE_SOFTCAP; vLLM's Hopper default FA3 for Gemma 2, vllm#25502)
Not this failure: RBLN's `logger.warning_once("RBLN Attention Backend does not support logits soft cap.
Outputs may be slightly off.")`, which drops the soft cap and goes on. The source line of a traceback
(`raise ValueError("Torch SPDA does not support ...")`) is no message either: a name inside a string literal
is skipped.
"""

from __future__ import annotations

import re

from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.setup_checks import error_event

FW = "serving"
_IN_LITERAL = LazyPattern(r"""["'][\w .-]*$""")


@rule(
    "attention-softcap-unsupported",
    ("does not support attention logits soft capping", "does not support logits soft cap",
     "does not support tanh softcapping", "Please use Flashinfer backend for models with"),
    r"(?<![^\s:])(?P<msg>(?P<backend>[A-Za-z][\w.-]*(?: [A-Za-z][\w.-]*){0,3}) does not support "
    r"(?:attention )?logits soft[ -]?cap(?:ping)?\b"
    r"|(?P<fa>This flash attention build) does not support tanh softcapping"
    r"|(?P<fi>Please use Flashinfer backend for models with ?logits_soft_cap\b))",
)
def _softcap(m, rec, state):
    if _IN_LITERAL.search(rec.text[:m.start("msg")]) or "slightly off" in rec.text[m.end():]:
        return []  # the raise's source line in a traceback; a backend that drops the cap and goes on
    if not first_time(state, ("attention_softcap_unsupported",), rec.loc.line):
        return []  # every layer / worker says it: the first is the failure
    if m.group("fi"):
        backend = "not FlashInfer"
        detail = ("this vLLM applies the model's attention logit soft-capping only with the FlashInfer backend, and "
                  "another backend was selected (FlashInfer not installed, VLLM_ATTENTION_BACKEND not FLASHINFER, or a "
                  "platform without FlashInfer)")
    else:
        backend = "FlashAttention (a build without soft-capping)" if m.group("fa") else m.group("backend")
        detail = f"the {backend} attention backend has no attention logit soft-capping, which the model's layers use"
    return error_event(m, rec, "attention_softcap_unsupported", FW, detail, backend=backend)


PARSER = Parser(
    name="attention_softcap",
    framework=FW,
    priority=37,  # before the engines (40), whose worker / EngineCore wrappers carry it, and python's exceptions (80)
    description="vLLM / FlashAttention: an attention backend that does not support the model's logit soft-capping",
    rules=[_softcap],
)
