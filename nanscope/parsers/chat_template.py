"""A chat request to a model whose tokenizer (or processor) defines no chat template. transformers stopped
falling back to a class-level default template (4.43 deprecated it, 4.44 removed it), so a base model or a
checkpoint whose tokenizer_config.json lacks `chat_template` cannot format messages: every chat request
fails (vLLM / SGLang answer 400, a script's apply_chat_template raises) while plain completions still work.
One signature: chat-template-missing.

Templates (quoted from source via the search index):
  huggingface/transformers src/transformers/tokenization_utils_base.py get_chat_template (4.43+):
      raise ValueError("Cannot use chat template functions because tokenizer.chat_template is not set and no
      template argument was passed! For information about writing templates and setting the
      tokenizer.chat_template attribute, please see the documentation at https://huggingface.co/docs/...")
      (4.42-4.43 apply_chat_template: "Cannot use apply_chat_template() because tokenizer.chat_template is not
      set and no template argument was passed! ...")
  src/transformers/processing_utils.py ProcessorMixin.apply_chat_template (multimodal processors):
      raise ValueError("Cannot use apply_chat_template because this processor does not have a chat template.")
      (later: "No chat template is set for this processor. Please either set the `chat_template` attribute,
      or provide a chat template as an argument.")
  vllm-project/vllm vllm/entrypoints/chat_utils.py (later vllm/renderers/hf.py safe_apply_chat_template,
      raising ChatTemplateResolutionError): "As of transformers v4.44, default chat template is no longer
      allowed, so you must provide a chat template if the tokenizer does not define one." (the OpenAI server
      returns it as the 400's message, so a client's openai.BadRequestError carries it too)
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

FW = "hf"
_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): ")


@rule(
    "chat-template-missing",
    ("because tokenizer.chat_template is not set", "because this processor does not have a chat template",
     "No chat template is set for this processor", "default chat template is no longer allowed"),
    r"Cannot use (?P<fn>chat template functions|apply_chat_template\(\)) because tokenizer\.chat_template is not set"
    r"|(?P<proc>Cannot use apply_chat_template because this processor does not have a chat template"
    r"|(?<![\"'])No chat template is set for this processor\b)"  # (not the source line that raises it)
    r"|(?P<vllm>As of transformers v4\.44, default chat template is no longer allowed)",
)
def _missing(m, rec, state):
    if not first_time(state, ("chat_template_missing",), rec.loc.line):
        return []  # one per request: the first says it
    owner = "processor" if m.group("proc") else "tokenizer"
    exc = _EXC.search(rec.text)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="chat_template_missing", message=rec.text.strip(),
        exc_type=exc.group("type") if exc else None,
        fields={"owner": owner, "server": "vllm" if m.group("vllm") else None,
                "detail": f"the model's {owner} defines no chat template, so chat messages cannot be formatted"},
    )


PARSER = Parser(
    name="chat_template",
    framework=FW,
    priority=37,  # before the engines (40) and python's exception reader (80): the exception line is this
    description="transformers / vLLM: a chat request to a model whose tokenizer or processor has no chat template",
    rules=[_missing],
)
