"""SGLang (sgl-project/sglang) server failures: a scheduler (or detokenizer, tokenizer, DP controller) process that
raised, and its watchdog.

The per-process prefix `[2025-12-04 07:44:24 TP2 EP2] ` (configure_logger in sglang/srt/utils.py,
prefix built in sglang/srt/managers/scheduler.py run_scheduler_process) is peeled by
ingest/prefixes.py, which reads TPn as the rank when no DP / PP tag is printed.

Templates (sglang/srt/managers/scheduler.py, sglang/srt/entrypoints/engine.py, watchdog):
  run_scheduler_process:  logger.error(f"Scheduler hit an exception: {traceback}")
                          then parent_process.send_signal(signal.SIGQUIT)
  engine.py sigquit_handler: Received sigquit from a child process. It usually means the child failed.
  engine.py _launch_subprocesses (and multimodal_gen's launch_server), a scheduler that died before it said ready:
      logger.error(f"Rank {i} scheduler is dead. Please check if there are relevant logs.")
      scheduler_procs[i].join(); logger.error(f"Exit code: {scheduler_procs[i].exitcode}")
      multiprocessing's exitcode is -N for a process killed by signal N: `Exit code: -9` is a SIGKILL (the OOM
      killer, nothing of the scheduler's own in the log), -11 a segfault; a positive code is the scheduler's own
      exit (its traceback is above). `i` is the index of the scheduler this node started, not a global rank.
  Scheduler watchdog (<= 0.4):  logger.error(f"Watchdog timeout ({self.watchdog_timeout=})")
                                -> `Watchdog timeout (self.watchdog_timeout=300)`
  0.5.x watchdog refactor: `Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)`
                           (soft=True only dumps stacks and keeps serving: not a failure)

The KV / request pools running out end the scheduler the same way (the RuntimeError is what its traceback
ends with, and an excerpt often keeps only that line):
  managers/schedule_batch.py alloc_token_slots (<= 0.4; `exit(1)` in early releases, then raise):
      f"{phase_str} out of memory. Try to lower your batch size.\n"   phase_str: Prefill | Decode
  mem_cache/common.py alloc_token_slots (0.5+, also sglang-jax): f"Out of memory. Try to lower your batch size.\n"
      then `Try to allocate N tokens.` and the available/evictable counts on the next lines
  alloc_req_slots: "alloc_req_slots runs out of memory. Please set a smaller number for `--max-running-requests`. "
      (older: "Out of memory. Please set a smaller number for `--max-running-requests`.")
  model_executor/model_runner.py init_memory_pool at start-up:
      RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")
      (0.5.x adds ` Current value: {self.server_args.mem_fraction_static=}`, as GPUStack's log shows)
      This one is a memory failure at start-up (error cuda_oom, as TGI's warm-up OOM), not a scheduler bug.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule, signal_of
from nanscope.parsers.numbers import to_float

FW = "sglang"
_MEM_FRACTION = LazyPattern(r"mem_fraction_static=(?P<v>\d+(?:\.\d+)?)")


def _error(rec, kind: str, fields: dict) -> ErrorEvent:
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error=kind, message=rec.text.strip(), fields=fields)


# Every SGLang server process ends its loop the same way when it raises: logger.error(f"{Name} hit an exception:
# {traceback}"), then SIGQUIT to the parent (or kill_process_tree / sys.exit(1)), which takes the server down:
# Scheduler (managers/scheduler.py), DetokenizerManager (managers/detokenizer_manager.py), DataParallelController
# (managers/data_parallel_controller.py), TokenizerManager (print_exception_wrapper), MultiDetokenizerRouter
# (managers/multi_tokenizer_mixin.py), the overlap worker threads TpModelWorkerClient / EAGLEWorkerClient.
_PROCS = ("Scheduler", "DetokenizerManager", "DataParallelController", "TokenizerManager", "MultiDetokenizerRouter",
          "ModelWorkerClient", "EAGLEWorkerClient")


@rule(
    "scheduler-exception",
    tuple(f"{p} hit an exception" for p in _PROCS) + ("Received sigquit from a child process",),
    r"(?<![\w.])(?P<proc>Scheduler|DetokenizerManager|DataParallelController|TokenizerManager|MultiDetokenizerRouter"
    r"|(?:Tp)?ModelWorkerClient|EAGLEWorkerClient) hit an exception|Received sigquit from a child process",
)
def _scheduler(m, rec, state):
    proc = m.group("proc")
    child = proc is not None
    if not first_time(state, ("sglang_crash", child), rec.loc.line):
        return []
    fields: dict = {"reporter": "scheduler" if proc == "Scheduler" else (proc if child else "parent")}
    if child and proc != "Scheduler":
        fields["process"] = proc
        fields["detail"] = f"SGLang's {proc} process raised and the server went down with it"
    return _error(rec, "sglang_scheduler_crash", fields)


_EXIT_SPAN = 4  # lines from `Rank i scheduler is dead` to its `Exit code: N`


@rule(
    "scheduler-dead",
    ("scheduler is dead. Please check if there are relevant logs", "Exit code: "),
    r"Rank (?P<i>\d+) scheduler is dead\. Please check if there are relevant logs|(?:^|\] )Exit code: (?P<code>-?\d+)\s*$",
)
def _scheduler_dead(m, rec, state):
    if m.group("i") is not None:
        state["sglang_dead"] = (rec.loc.line, int(m.group("i")))
        return []  # what it died of is the next line's exit code: the event is made there
    dead = state.pop("sglang_dead", None)
    if dead is None or not 0 < rec.loc.line - dead[0] <= _EXIT_SPAN:
        return None  # some other program's exit code
    code = int(m.group("code"))
    sig = signal_of(code)
    if sig is None:
        if not first_time(state, ("sglang_crash", False), rec.loc.line):
            return []  # the scheduler's own `Scheduler hit an exception` above already said it
        return _error(rec, "sglang_scheduler_crash",
                      {"reporter": "parent", "scheduler": dead[1], "exitcode": code,
                       "detail": f"the launcher found scheduler {dead[1]} dead before it was ready (exit code {code})"})
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="child_failed", message=rec.text.strip(),
                      exitcode=code, signal=sig,
                      fields={"scheduler": dead[1], "detail": f"SGLang's scheduler {dead[1]} was killed by {sig}"})


@rule(
    "watchdog-timeout",
    ("Watchdog timeout (", "watchdog timeout ("),
    r"(?:Scheduler watchdog|Watchdog) timeout \((?:self\.)?watchdog_timeout=(?P<t>\d+(?:\.\d+)?)"
    r"(?:, (?:self\.)?soft=(?P<soft>True|False))?\)",
)
def _watchdog(m, rec, state):
    if not first_time(state, ("sglang_watchdog",), rec.loc.line):
        return []
    return _error(rec, "sglang_watchdog_timeout",
                  {"timeout_s": float(m.group("t")), "soft": m.group("soft") == "True"})


@rule(
    "pool-exhausted",
    ("out of memory. Try to lower your batch size", "Out of memory. Try to lower your batch size",
     "Please set a smaller number for `--max-running-requests`", "Please try to increase --mem-fraction-static"),
    r"(?P<phase>Prefill|Decode|^|[\s:\]]) ?[Oo]ut of memory\. Try to lower your batch size"
    r"|(?P<req>alloc_req_slots runs out of memory\.|Out of memory\.) Please set a smaller number for `--max-running-requests`"
    r"|(?P<init>Not enough memory)\. Please try to increase --mem-fraction-static",
)
def _pool_exhausted(m, rec, state):
    if m.group("init"):
        reason, what = "memory_pool_init", "not enough memory for the KV cache pool at start-up"
    elif m.group("req"):
        reason, what = "request_slots", "the request-slot pool ran out (--max-running-requests)"
    else:
        phase = (m.group("phase") or "").strip(" :]")
        reason = "kv_tokens"
        what = f"the KV cache pool ran out of tokens{' in ' + phase.lower() if phase in ('Prefill', 'Decode') else ''}"
    if not first_time(state, ("sglang_pool", reason), rec.loc.line):
        return []  # logger.error, then the RuntimeError with the same text
    if reason == "memory_pool_init":
        # The start-up's memory check, like TGI's warm-up OOM: after the weights, the static fraction left no room
        # for a single KV-cache token (max_total_num_tokens <= 0). A memory failure; the scheduler's crash follows.
        cur = _MEM_FRACTION.search(rec.text)
        frac = f" (--mem-fraction-static {cur.group('v')})" if cur else ""
        return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="cuda_oom", message=rec.text.strip(),
                          exc_type="RuntimeError" if "RuntimeError" in rec.text else None,
                          fields={"reason": reason, "phase": "startup", "mem_fraction_static": to_float(cur.group("v")) if cur else None,
                                  "detail": f"no GPU memory was left for SGLang's KV cache pool after loading the weights{frac}"})
    return _error(rec, "sglang_scheduler_crash", {"reporter": "scheduler", "reason": reason, "detail": what})


PARSER = Parser(
    name="sglang",
    framework=FW,
    priority=40,
    description="SGLang scheduler exceptions, a scheduler found dead (and the signal that killed it), KV / request pool exhaustion, watchdog timeouts",
    rules=[_scheduler, _scheduler_dead, _watchdog, _pool_exhausted],
)
