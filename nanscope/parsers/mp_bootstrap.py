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

Without the message (an excerpt that stops inside the child's traceback) the frames say it: the child's
spawn.py `prepare` -> `_fixup_main_from_path(data['init_main_from_path'])` re-runs the main module through runpy,
and a frame right after it starts processes again: vLLM's `entrypoints/llm.py ... in __init__` (LLM() at module
level), its engines' from_engine_args, or multiprocessing's own `process.py ... in start`. The re-import alone
(an import error in the re-run module) is no evidence.
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


_REIMPORT_WINDOW = 40  # lines from the child's re-import frame to the frame that starts processes again


@rule("spawn-reimport", ("_fixup_main_from_path(data",), r"^\s*_fixup_main_from_path\(data\[['\"]init_main_from_path")
def _reimport(m, rec, state):
    state["spawn_reimport"] = rec.loc.line
    return []


@rule(
    "spawn-reimport-starts-again",
    ("vllm/entrypoints/llm.py", "multiprocessing/process.py", "async_llm_engine.py"),
    r'^\s*File "[^"]*(?:/vllm/entrypoints/llm\.py", line \d+, in __init__'
    r'|/vllm/engine/async_llm_engine\.py", line \d+, in from_engine_args'
    r'|/multiprocessing/process\.py", line \d+, in start)',
)
def _starts_again(m, rec, state):
    seen = state.get("spawn_reimport")
    if seen is None or rec.loc.line - seen > _REIMPORT_WINDOW:
        return None
    state.pop("spawn_reimport", None)
    if not first_time(state, ("multiprocessing_main_guard_missing",), rec.loc.line):
        return []
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="multiprocessing_main_guard_missing",
        message=rec.text.strip()[:400], exc_type=None,
        fields={"detail": "a spawned child process re-ran the main module (spawn.py _fixup_main_from_path), whose "
                          "module-level code starts the engine / processes again (no `if __name__ == '__main__':` "
                          "guard around the entry code)"},
    )


PARSER = Parser(
    name="mp_bootstrap",
    framework=FW,
    priority=39,  # before the engines (40), whose frames these are, and python's exception reader (80)
    description="Python multiprocessing: a spawned child re-imports a main module that starts processes (no __main__ guard)",
    rules=[_bootstrapping, _reimport, _starts_again],
)
