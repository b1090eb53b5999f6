"""A prompt longer than the engine's (or generate()'s) maximum length, raised into a job: an evaluation harness, an
RL rollout, a script, a wrapper's model worker. The job stops (or every long request fails). Behind a server's
request handling the same check is one rejected request (vllm.py's request-rejected rule claims those lines first:
this parser runs after vLLM's). One signature: prompt-exceeds-max-length.

Templates (quoted from source via the search index and from the threads):
  vllm-project/vllm vllm/engine/llm_engine.py _validate_model_input (V0), later vllm/v1/engine/processor.py:
      raise ValueError(f"The {prompt_type} prompt (length {len(prompt_ids)}) is longer than the maximum model
      length of {max_prompt_len}. Make sure that `max_model_len` is no smaller than the number of text tokens[ plus
      multimodal tokens. For image inputs, ...].")       prompt_type: decoder | encoder
  sgl-project/sglang tokenizer_manager.py _validate_one_request (the offline Engine raises it into the caller):
      raise ValueError(f"The input ({input_token_num} tokens) is longer than the model's context length
      ({self.context_len} tokens).")
  huggingface/transformers src/transformers/generation/utils.py _validate_generated_length (raised since 4.38;
      before, and for max_length set by default, a logger warning with the same words, which is no failure):
      ValueError(f"Input length of {input_ids_string} is {input_ids_length}, but `max_length` is set to
      {generation_config.max_length}. This can lead to unexpected behavior. You should consider increasing
      `max_length` or, better yet, setting `max_new_tokens`.")
      (a paste through markdown can lose the backticks around max_length: they are optional)
  abetlen/llama-cpp-python llama.py _create_completion: raise ValueError(f"Requested tokens ({n}) exceed context
      window of {n_ctx}") (its server prints the same as `Exception: ...` and answers the request: no failure).
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "serving"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)r?)(?::[ \t]|\(')")


@rule(
    "prompt-too-long",
    ("prompt (length ", "is longer than the model's context length", "Input length of ", "exceed context window of "),
    r"The (?:decoder|encoder) prompt \(length (?P<vn>\d+)\) is longer than the maximum model length of (?P<vmax>\d+)"
    r"|The input \((?P<sn>\d+) tokens\) is longer than the model's context length \((?P<smax>\d+) tokens\)"
    r"|(?P<hexc>ValueError): Input length of \w+ is (?P<hn>\d+), but `{0,2}max_length`{0,2} is set to (?P<hmax>\d+)"
    r"|(?P<lexc>ValueError): Requested tokens \((?P<ln>\d+)\) exceed context window of (?P<lmax>\d+)",
)
def _too_long(m, rec, state):
    if not first_time(state, ("prompt_too_long",), rec.loc.line):
        return []  # one per long prompt: the first says it
    if m.group("vn"):
        n, limit, what = m.group("vn"), m.group("vmax"), "vLLM's max_model_len"
    elif m.group("sn"):
        n, limit, what = m.group("sn"), m.group("smax"), "SGLang's context length"
    elif m.group("hn"):
        n, limit, what = m.group("hn"), m.group("hmax"), "generate()'s max_length"
    else:
        n, limit, what = m.group("ln"), m.group("lmax"), "llama.cpp's context window (n_ctx)"
    exc = _EXC.search(rec.text)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="prompt_too_long", message=rec.text.strip(),
        exc_type=exc.group("type") if exc else None,
        fields={"prompt_tokens": int(n), "limit": int(limit), "limit_name": what,
                "detail": f"a prompt of {n} tokens is longer than {what} ({limit})"},
    )


PARSER = Parser(
    name="prompt_length",
    framework=FW,
    priority=41,  # after vllm.py (40), whose request-rejected rule claims a server's rejection of one request
    description="vLLM / SGLang / transformers / llama-cpp-python: a prompt longer than the maximum length, raised into a job",
    rules=[_too_long],
)
