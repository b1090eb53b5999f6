"""A model whose architecture the engine (or the installed transformers) does not implement.

Every serving engine looks the checkpoint's architecture up in its own table and refuses one it does not
know, each in its own words:

  llama.cpp src/llama-arch.cpp / llama-model-loader (llama-server, Ollama's runner):
      throw std::runtime_error(format("unknown model architecture: '%s'", name))
      -> llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'phi3'
      (Ollama: `llama-server process has terminated: exit status 1: error loading model: unknown model architecture: 'mllama'`)
  vLLM vllm/model_executor/models/registry.py _raise_for_unsupported (SGLang's registry copies the words):
      f"Model architectures {architectures} are not supported for now. Supported architectures: {...}"
      (0.10+ behind pydantic's `Value error, `)
  TGI server/text_generation_server/models/__init__.py get_model:
      raise ValueError(f"Unsupported model type {model_type}")
  transformers models/auto/configuration_auto.py AutoConfig.from_pretrained (TensorRT-LLM's and every HF-based
  loader's first step):
      f"The checkpoint you are trying to load has model type `{model_type}` but Transformers does not recognize this
      architecture. ..."

vLLM's `Model architectures [...] failed to be inspected` is not read here: the architecture is in vLLM's
table but importing its module failed (a broken install, a missing dependency, an unsupported platform).
parsers/vllm.py's registry-inspect rule reads the registry's own `Error in inspecting model architecture`
line as model-architecture-unsupported with a detail that says so.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "serving"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): ")


def _event(rec, state, arch: str, engine: str) -> list[ErrorEvent]:
    if not first_time(state, ("model_arch", arch), rec.loc.line):
        return []  # the loader's line, the runner's exit, the exception's re-print
    exc = _EXC.search(rec.text)
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="model_arch_unsupported",
                       message=rec.text.strip(), exc_type=exc.group("type") if exc else None,
                       fields={"architecture": arch, "engine": engine,
                               "detail": f"{engine} does not implement the model's architecture {arch}"})]


@rule(
    "unsupported-architecture",
    ("unknown model architecture: '", "are not supported for now", "Unsupported model type ",
     "but Transformers does not recognize this architecture"),
    r"unknown model architecture: '(?P<gguf>[^']+)'"
    r"|Model architectures (?P<reg>\[[^\]]*\]) are not supported for now"
    r"|Unsupported model type (?P<tgi>[\w.-]+)"
    r"|has model type `(?P<hf>[^`]+)` but Transformers does not recognize this architecture",
)
def _unsupported(m, rec, state):
    if m.group("gguf"):
        return _event(rec, state, f"'{m.group('gguf')}'", "llama.cpp")
    if m.group("reg"):
        return _event(rec, state, m.group("reg"), "the engine's model registry (vLLM / SGLang)")
    if m.group("tgi"):
        return _event(rec, state, m.group("tgi"), "text-generation-inference")
    return _event(rec, state, f"`{m.group('hf')}`", "the installed transformers")


PARSER = Parser(
    name="architecture",
    framework=FW,
    priority=37,  # before tensorrt_llm (38), whose executor line may carry this error, and python's exceptions
    description="A model architecture the serving engine or transformers does not implement",
    rules=[_unsupported],
)
