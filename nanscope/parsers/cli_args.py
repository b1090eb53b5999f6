"""A command line the program's argument parser rejected: the server (or script) never started. The option does
not exist in this release, a value is not one of the choices, a required argument is missing. One signature:
cli-argument-invalid.

Templates:
  Python argparse (Lib/argparse.py ArgumentParser.error: prints the usage, then
      `%(prog)s: error: %(message)s` and exits with status 2), the messages of parse_args / _get_values:
      unrecognized arguments: %s        the following arguments are required: %s
      argument %(argument_name)s: invalid choice: %(value)r (choose from %(choices)s)
      argument %s: expected one argument        argument %s: invalid %s value: %r
      (prog is the script or entry point: `vllm`, `vllm serve`, `api_server.py`, `launch_server.py`, `train.py`)
  Rust clap 4 (text-generation-launcher / router, trtllm-serve's Rust tools, ...): `error: unexpected argument
      '--x' found`, `error: invalid value 'x' for '--y <Y>'`; clap 2/3: `error: Found argument '--x' which wasn't
      expected, or isn't valid in this context`.
  ggml-org/llama.cpp common/arg.cpp common_params_parse_ex (llama-server, llama-cli, Ollama's and llamafile's
      builds of it): throw std::invalid_argument(string_format("error: invalid argument: %s", arg.c_str())) for an
      option it does not have, and for a value its handler refused
      "error while handling argument \"%s\": %s\n\nusage:\n%s\n\nto show complete usage, run with -h";
      the older common/common.cpp gpt_params_parse printed `error: unknown argument: %s`.
  Go's flag package (src/flag/flag.go FlagSet.failf, Ollama's runner, exit status 2): `flag provided but not defined:
      -%s`; cobra (the ollama CLI): `Error: unknown flag: --%s`, `Error: unknown shorthand flag: 'x' in -x`.
  These print at the start of the line (behind a collector's or docker compose's prefix at most): the same words
  inside another message (`CUDA error: invalid argument`) are no command line.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "cli"


@rule(
    "argument-rejected",
    (": error: unrecognized arguments:", ": error: the following arguments are required:", ": error: argument ",
     "error: unexpected argument '", "error: Found argument '", "error: invalid value '",
     "error: invalid argument: ", "error: unknown argument: ", 'error while handling argument "',
     "flag provided but not defined: -", "Error: unknown flag: ", "Error: unknown shorthand flag: "),
    r"(?:^|\s)(?P<prog>[\w.-]+(?: [\w.-]+)?): error: (?P<msg>unrecognized arguments: .+"
    r"|the following arguments are required: .+"
    r"|argument (?P<arg>\S+?): (?:invalid choice: .+|expected (?:one|at least one) argument|invalid \w+ value: .+))"
    r"|(?:^|\s)error: (?P<clap>unexpected argument '[^']+' found|Found argument '[^']+' which wasn't expected"
    r"|invalid value '[^']*' for '[^']+')"
    r"|(?:^|[|\]]\s+)(?P<other>error: (?:invalid|unknown) argument: \S+|error while handling argument \"[^\"]+\": .+"
    r"|flag provided but not defined: -\S+|Error: unknown (?:shorthand )?flag: .+)",
)
def _rejected(m, rec, state):
    if not first_time(state, ("cli_argument",), rec.loc.line):
        return []
    prog = m.group("prog")
    msg = (m.group("msg") or m.group("clap") or m.group("other")).strip()
    who = f"{prog}'s argument parser" if prog else "the program's argument parser"
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="cli_argument_invalid", message=rec.text.strip(),
        exitcode=2 if prog or (m.group("other") or "").startswith("flag provided") else None,
        fields={"program": prog, "problem": msg, "detail": f"{who} rejected the command line ({msg})"},
    )


PARSER = Parser(
    name="cli_args",
    framework=FW,
    priority=45,
    description="argparse / clap / llama.cpp / Go flag and cobra: a command line the program's argument parser rejected (unknown option, bad value, missing argument)",
    rules=[_rejected],
)
