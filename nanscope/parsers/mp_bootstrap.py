"""A spawned child process that re-imports a main module which starts processes at import time. With the `spawn`
(or `forkserver`) start method the child runs the parent's main module again to rebuild its state; a script that
builds a vLLM engine (LLM(...), AsyncLLMEngine), a DataLoader with workers or a Pool at module level, with no
`if __name__ == '__main__':` guard, starts another process from inside that re-import and multiprocessing refuses.
vLLM starts its workers / V1 engine core with spawn whenever CUDA is already initialised (and always on Windows
and macOS), so its users meet this most. One signature: multiprocessing-main-guard-missing.

Template (CPython Lib/multiprocessing/spawn.py `_check_not_importing_main`, every 3.x release; the last paragraph
added in 3.12):
      raise RuntimeError('''
        An attempt has been made to start a new process before the
        current process has finished its bootstrapping phase.

        This probably means that you are not using fork to start your
        child processes and you have forgotten to use the proper idiom
        in the main module:
        ...
        To fix this issue, refer to the "Safe importing of main module"
        section in https://docs.python.org/3/library/multiprocessing.html
        ''')
The message starts on the line after `RuntimeError:` (its text begins with a newline), so the type line alone
says nothing; the rule reads the message's own lines (any of its first three, for an excerpt whose head is cut)
and reports it once.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "python"


@rule(
    "multiprocessing-main-guard-missing",
    ("start a new process before the", "finished its bootstrapping phase", "you are not using fork to start your"),
    r"(?<![\"'])(?P<msg>An attempt has been made to start a new process before the"
    r"|current process has finished its bootstrapping phase"
    r"|This probably means that you are not using fork to start your)",
)
def _bootstrapping(m, rec, state):
    if not first_time(state, ("multiprocessing_main_guard_missing",), rec.loc.line):
        return []  # the message's next lines
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="multiprocessing_main_guard_missing",
        message=rec.text.strip()[:400], exc_type="RuntimeError",
        fields={"detail": "a spawned child process re-ran the main module, which started another process at import "
                          "time (no `if __name__ == '__main__':` guard around the entry code)"},
    )


PARSER = Parser(
    name="mp_bootstrap",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80)
    description="Python multiprocessing: a spawned child re-imports a main module that starts processes (no __main__ guard)",
    rules=[_bootstrapping],
)
