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
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "cli"


@rule(
    "argument-rejected",
    (": error: unrecognized arguments:", ": error: the following arguments are required:", ": error: argument ",
     "error: unexpected argument '", "error: Found argument '", "error: invalid value '"),
    r"(?:^|\s)(?P<prog>[\w.-]+(?: [\w.-]+)?): error: (?P<msg>unrecognized arguments: .+"
    r"|the following arguments are required: .+"
    r"|argument (?P<arg>\S+?): (?:invalid choice: .+|expected (?:one|at least one) argument|invalid \w+ value: .+))"
    r"|(?:^|\s)error: (?P<clap>unexpected argument '[^']+' found|Found argument '[^']+' which wasn't expected"
    r"|invalid value '[^']*' for '[^']+')",
)
def _rejected(m, rec, state):
    if not first_time(state, ("cli_argument",), rec.loc.line):
        return []
    prog = m.group("prog")
    msg = (m.group("msg") or m.group("clap")).strip()
    who = f"{prog}'s argument parser" if prog else "the program's argument parser"
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="cli_argument_invalid", message=rec.text.strip(),
        exitcode=2 if prog else None,
        fields={"program": prog, "problem": msg, "detail": f"{who} rejected the command line ({msg})"},
    )


PARSER = Parser(
    name="cli_args",
    framework=FW,
    priority=45,
    description="argparse / clap: a command line the program's argument parser rejected (unknown option, bad value, missing argument)",
    rules=[_rejected],
)
