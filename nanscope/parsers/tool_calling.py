"""Tool calling (function calling) misconfigured on a vLLM OpenAI server: a tool-call parser name the release
does not have, --enable-auto-tool-choice without a parser, a server started without tool calling that gets
tool_choice="auto" requests (every agent's request then fails with a 400, which its OpenAI client raises as
BadRequestError), a parser whose start / end tokens the model's tokenizer does not have (a parser for another
model family). One signature: tool-calling-misconfigured.

Templates (vllm-project/vllm, quoted from source via the search index, across releases):
  vllm/entrypoints/openai/api_server.py validate_api_server_args (0.6.4+; `valide_tool_parses` before):
      raise KeyError(f"invalid tool call parser: {args.tool_call_parser} "
                     f"(chose from {{ {','.join(valid_tool_parses)} }})")
      (0.6.2-0.6.3 had argparse choices: `error: argument --tool-call-parser: invalid choice: ...`, which the
      cli_args parser reads as cli-argument-invalid)
  vllm/entrypoints/openai/serving_chat.py OpenAIServingChat.__init__:
      raise TypeError("Error: --enable-auto-tool-choice requires --tool-call-parser")
      raise TypeError("Error: --enable-auto-tool-choice requires "
                      f"tool_parser:'{tool_parser}' which has not been registered") from e
  vllm/entrypoints/openai/tool_parsers/abstract_tool_parser.py ToolParserManager.get_tool_parser:
      raise KeyError(f"tool helper: '{name}' not found in tool_parsers")
  serving_chat.py create_chat_completion (the 400's message; a client logs it inside its error JSON):
      '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
      (later, vllm#30613: 'tool_choice="required" requires --tool-call-parser to be set' and the named-tool form)
  vllm/entrypoints/openai/tool_parsers/<model>_tool_parser.py __init__ (the parser's tokens are not in the
      model's vocabulary):
      raise RuntimeError("Hermes 2 Pro Tool parser could not locate tool call start/end tokens in the tokenizer!")
      (same wording: DeepSeek-V3, Kimi-K2, MiniMax M2, Qwen3 XML ... Tool parser)
SGLang (sgl-project/sglang python/sglang/srt/function_call/function_call_parser.py FunctionCallParser.__init__,
built per request that carries tools; `openai_api/adapter.py` before the function_call package):
      raise ValueError(f"Unsupported tool_call_parser: {tool_call_parser}")   (None: the server has no
      --tool-call-parser; later `{tool_call_parser!r}. Available: [...]`)
      raise ValueError("Tool Call Parser Not Given!")
  the request fails with it ('Error in request: Unsupported tool_call_parser: None', a client's 400 / 500).
A message inside a string literal (the raise's source line in a traceback) is skipped.
"""

from __future__ import annotations

import re

from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.setup_checks import error_event

FW = "vllm"
_IN_LITERAL = LazyPattern(r"""["'(][\w .-]*$""")


@rule(
    "tool-calling-misconfigured",
    ("invalid tool call parser: ", "--enable-auto-tool-choice requires", "not found in tool_parsers",
     "tool choice requires --enable-auto-tool-choice", "requires --tool-call-parser to be set",
     "Tool parser could not locate tool call start/end tokens", "Unsupported tool_call_parser: ",
     "Tool Call Parser Not Given!"),
    r"(?P<msg>invalid tool call parser: (?P<bad>[\w.-]+) \(cho"
    r"|--enable-auto-tool-choice requires (?:--tool-call-parser\b(?P<none>)|tool_parser:'(?P<unreg>[^']*)' which)"
    r"|tool helper: '(?P<helper>[^'{}]+)' not found in tool_parsers"
    r"|(?P<choice>\\?\"auto\\?\" tool choice|tool_choice=\\?\"?(?:required|auto)\\?\"?|[Nn]amed tool choice) requires "
    r"(?:--enable-auto-tool-choice and )?--tool-call-parser"
    r"|Unsupported tool_call_parser: '?(?P<sg>[\w.-]+)'?(?![\w{])|(?P<sgnone>Tool Call Parser Not Given!)"
    r"|(?<![^\s:])(?P<model>[A-Za-z][\w.-]{0,40}(?: [\w.-]{1,40}){0,3}) Tool parser could not locate tool call start/end tokens)",
)
def _tool_calling(m, rec, state):
    if m.group("model") is not None and _IN_LITERAL.search(rec.text[:m.start("msg")]):
        return []  # the parser's raise, quoted in a traceback's source line
    if not first_time(state, ("tool_calling_misconfigured",), rec.loc.line):
        return []  # every request (or every process) repeats it: the first says it
    sglang = m.group("sg") is not None or m.group("sgnone") is not None
    if m.group("sgnone") or m.group("sg") == "None":
        return error_event(m, rec, "tool_calling_misconfigured", "sglang",
                           "a request with tools reached an SGLang server started without --tool-call-parser, so it "
                           "cannot parse tool calls and fails every such request", kind="not_enabled", parser=None)
    name = m.group("bad") or m.group("unreg") or m.group("helper") or m.group("sg")
    if name is not None:
        kind = "unknown_parser"
        detail = (f"--tool-call-parser {name} is not a tool-call parser this {'SGLang' if sglang else 'vLLM'} release "
                  "has (a name from another release, or from another engine)")
    elif m.group("none") is not None:
        kind = "parser_missing"
        detail = "--enable-auto-tool-choice was given without --tool-call-parser"
    elif m.group("choice"):
        kind = "not_enabled"
        detail = ("a request asked for tool calls (tool_choice auto / required) but the server was started without "
                  "--enable-auto-tool-choice and --tool-call-parser, so it refuses every such request (HTTP 400)")
    else:
        kind = "parser_model_mismatch"
        detail = (f"the {m.group('model')} tool parser's start / end tokens are not in this model's tokenizer: the "
                  "parser is for another model family")
    return error_event(m, rec, "tool_calling_misconfigured", "sglang" if sglang else FW, detail, kind=kind, parser=name)


PARSER = Parser(
    name="tool_calling",
    framework=FW,
    priority=37,  # before the engines (40) and python's exception reader (80): the exception line is this
    description="vLLM / SGLang: tool calling misconfigured (parser name, --enable-auto-tool-choice, the parser's tokens)",
    rules=[_tool_calling],
)
