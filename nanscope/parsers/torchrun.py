"""torchrun / torch.distributed.elastic: the agent's failure lines and the ChildFailedError block.

torch/distributed/elastic/multiprocessing/api.py (old and new logging):
  ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 123) of binary: /usr/bin/python
  E1105 12:00:00.123000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 4 (pid: 99) of binary: ...
  W1105 12:00:00.123000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 99 closing signal SIGTERM
torch/distributed/elastic/multiprocessing/errors/__init__.py (ChildFailedError.format_msg):
  Root Cause (first observed failure):
  [0]:
    time      : 2024-11-29_19:37:42
    host      : node-0
    rank      : 1 (local_rank: 1)
    exitcode  : 1 (pid: 123)
    error_file: <N/A>
    traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html

torch/distributed/elastic/agent/server/api.py (SimpleElasticAgent.run), the agent itself got a signal
(torch 1.9-2.1: log.warning(f"Received {e.sigval} death signal, ..."); >= 2.2: logger.warning("Received %s
death signal, shutting down workers", e.sigval); newest torch prints the Signals enum):
  WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting down workers
  W0920 09:10:41.194000 84933 torch/distributed/elastic/agent/server/api.py:719] Received 1 death signal, shutting down workers
  W0616 00:37:22.830000 4015698 torch/distributed/elastic/agent/server/api.py:719] Received Signals.SIGTERM death signal, shutting down workers
torch 2.1-2.2 print the logger's name in their own format; the rules search, so they read it too:
  [2024-05-28 14:04:28,584] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 2 (pid: 60554) of binary: ...
A vendor build (Alibaba PAI-DLC's torch, shihao1895/MemoryVLA#20) words the same two lines
  ... [ERROR] failed (exitcode: -9) for binary located at /env/bin/python3.10 with local_rank: 0 (process ID: 71)
  ... [WARNING] Sending process 73 the closing signal SIGTERM

The block's rank is the rank the failure is about (the agent prints it). Without an error file
(`error_file: <N/A>`) the "Root Cause" is only the first exit the agent noticed, not evidence.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent, LifecycleEvent, Origin
from nanscope.parsers.base import Parser, launcher_alone, rule, signal_of
from nanscope.parsers.numbers import to_int
from nanscope.parsers.python import classify, no_device_fields


@rule(
    "agent-failed",
    ("exitcode:",),
    r"failed \(exitcode: (?P<code>-?\d+)\) (?:local_rank: (?P<lr>\d+) \(pid: (?P<pid>\d+)\)"
    r"|for binary located at \S+ with local_rank: (?P<lr2>\d+) \(process ID: (?P<pid2>\d+)\))",
)
def _agent_failed(m, rec, state):
    code = int(m.group("code"))
    # The agent names a local rank. An agent line with no prefix and no per-node file is one
    # node's agent talking about its own workers: there the local rank is the global rank.
    o = rec.origin
    lr = int(m.group("lr") or m.group("lr2"))
    single_node = launcher_alone(o)
    pid = int(m.group("pid") or m.group("pid2"))
    ev = ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error="worker_failed", message=rec.text,
        exitcode=code, signal=signal_of(code), rank=lr if single_node else None,
        fields={"local_rank": lr, "pid": pid},
    )
    # PContext._poll (torch/distributed/elastic/multiprocessing/api.py) notices the failed workers, calls
    # close() - `Sending process P closing signal SIGTERM` for every worker still running - and only then
    # logs the first failure: the workers it just stopped were alive when this one had exited on its own
    stopped = state.pop("closing_pids", None)
    if stopped and pid not in stopped:
        ev.fields["others_stopped"] = len(stopped)
    if o.rank is not None and o.local_rank is None and o.node is None:
        # A launcher label in front of the agent's own line (`1: E... failed (exitcode: -11)
        # local_rank: 0`, srun --label with one torchrun per node): the agent is not a worker, so the
        # label is its node (sample_logs/multinode), and the line is about that node's local rank.
        node = f"node{o.rank}"
        ev.origin = Origin(local_rank=lr, node=node, ts=o.ts, proc=o.proc)
        ev.stream = ("local", node, lr)  # set here, so the pipeline does not put the label back as a rank
        ev.text = rec.raw  # evidence shows the line as printed, label included
        ev.fields["node"] = node
    return ev


# torch 1.9 - 1.10's record() wrapper (torch/distributed/elastic/multiprocessing/errors/__init__.py): on a
# ChildFailedError with no error file it warns with _no_error_file_warning_msg(rank, failure), `rank, failure =
# e.get_first_failure()` (the failure with the earliest timestamp, as the later Root Cause entry), in a box of
# asterisks:
#   CHILD PROCESS FAILED WITH NO ERROR_FILE
#   Child process {failure.pid} (local_rank {rank}) FAILED (exitcode {failure.exitcode})
#   Error msg: {failure.message}
# The number it calls local_rank is ChildFailedError's failures key (the agent's worker.global_rank): the
# global rank, whatever label the launcher's line carries (srun's task in front of it is the node's launcher).
@rule(
    "no-error-file-child",
    ("FAILED (exitcode",),
    r"^\s*Child process (?P<pid>\d+) \(local_rank (?P<r>\d+)\) FAILED \(exitcode (?P<code>-?\d+)\)\s*$",
    match_start=True,
)
def _no_error_file_child(m, rec, state):
    code = int(m.group("code"))
    r = int(m.group("r"))
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error="worker_failed", message=rec.text.strip(),
        exitcode=code, signal=signal_of(code), rank=r,
        fields={"global_rank": r, "pid": int(m.group("pid")), "first_failure": True},
    )


_SIGNUM = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 6: "SIGABRT", 9: "SIGKILL", 10: "SIGUSR1", 12: "SIGUSR2",
           15: "SIGTERM"}


@rule("death-signal", ("death signal",), r"Received (?:(?P<num>\d+)|Signals\.(?P<name>SIG\w+)) death signal, shutting down workers")
def _death_signal(m, rec, state):
    # Not a worker's failure: the agent process was sent a signal from outside (a closed terminal,
    # the scheduler, an orchestrator, a person) and forwards it to its workers.
    num = to_int(m.group("num"))
    sig = m.group("name") or _SIGNUM.get(num, f"SIG{num}")
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error="signal_received", message=m.group(0),
        signal=sig, fields={"source": "agent", "signum": num},
    )


# The same signal as the exception it raises in the agent: torch/distributed/elastic/multiprocessing/api.py
# _terminate_process_handler (installed by PContext.start in the agent's main process, torch 1.9 ..
# 2.x): `raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)`; the
# f-string formats the Signals IntEnum as its number:
#   torch.distributed.elastic.multiprocessing.api.SignalException: Process 2920830 got signal: 1
# Only at the start of a line: a worker's own error.json (its `message`, quoted inside the
# ChildFailedError table) may hold the same text for the SIGTERM the agent sent it.
@rule(
    "signal-exception",
    ("got signal: ",),
    r"^\s*(?:torch\.distributed\.elastic\.multiprocessing\.api\.)?SignalException: Process (?P<pid>\d+) "
    r"got signal: (?:(?P<num>\d+)|Signals\.(?P<name>SIG\w+))\s*$",
)
def _signal_exception(m, rec, state):
    num = to_int(m.group("num"))
    sig = m.group("name") or _SIGNUM.get(num, f"SIG{num}")
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error="signal_received", message=m.group(0).strip(),
        exc_type="SignalException", signal=sig, fields={"source": "agent", "signum": num, "pid": int(m.group("pid"))},
    )


# torch.multiprocessing.spawn (mp.spawn / start_processes, one process per GPU on this host): a process that
# died with no Python error queued (torch/multiprocessing/spawn.py ProcessContext.join):
#   >= 1.8: raise ProcessExitedException("process %d terminated with signal %s" % (error_index, name), ...)
#   1.0 - 1.7: raise Exception("process %d terminated with signal %s" % (error_index, name))
#     torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL
#     Exception: process 1 terminated with signal SIGSEGV
# The index is the spawned process's (the local rank of this host's workers); with no prefix and no
# per-node file it is the rank, as the agent's `local_rank:` is. SIGKILL is a kill with no reason of its
# own (most often the OOM killer); a fault signal is a crash; others stay the Python exception.
_SPAWN_FAULTS = ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL")


@rule(
    "spawn-signal",
    ("terminated with signal SIG",),
    r"^\s*(?:torch\.multiprocessing\.spawn\.ProcessExitedException|Exception): process (?P<idx>\d+) "
    r"terminated with signal (?P<sig>SIG[A-Z0-9]+)\s*$",
)
def _spawn_signal(m, rec, state):
    sig = m.group("sig")
    if sig != "SIGKILL" and sig not in _SPAWN_FAULTS:
        return None
    o = rec.origin
    idx = int(m.group("idx"))
    single_node = launcher_alone(o)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error="killed" if sig == "SIGKILL" else "worker_failed",
        message=m.group(0).strip(), exc_type="ProcessExitedException", signal=sig, rank=idx if single_node else None,
        fields={"source": "mp.spawn", "local_rank": idx},
    )


# The agent stopping its workers. SubprocessContext._close (a script entrypoint, torchrun's usual case):
#   logger.warning("Sending process %s closing signal %s", handler.proc.pid, death_sig.name)
# MultiprocessContext._close (a function entrypoint: start_processes / elastic_launch from Python, e.g.
# nvidia-resiliency-ext, notebook launchers; torch 1.9 .. 2.x, same file):
#   logger.warning("Closing process %s via signal %s", proc.pid, death_sig.name)
@rule("closing-signal", ("closing signal", "via signal "),
      r"Sending process (?P<pid>\d+) (?:the )?closing signal (?P<sig>SIG\w+)|Closing process (?P<pid2>\d+) via signal (?P<sig2>SIG\w+)")
def _closing(m, rec, state):
    state.setdefault("closing_pids", set()).add(int(m.group("pid") or m.group("pid2")))
    return LifecycleEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", action="teardown",
        fields={"pid": int(m.group("pid") or m.group("pid2")), "signal": m.group("sig") or m.group("sig2")},
    )


@rule("block-section", ("Root Cause", "Failures:"), r"^\s*(?P<sec>Root Cause \(first observed failure\)|Failures):", match_start=True)
def _section(m, rec, state):
    state["cf_section"] = "root" if m.group("sec").startswith("Root") else "other"
    if state["cf_section"] == "other":
        state.pop("cf_no_other", None)
    state.pop("cf_entry", None)
    return []


@rule("block-no-other", ("<NO_OTHER_FAILURES>",), r"^\s*<NO_OTHER_FAILURES>\s*$", match_start=True)
def _no_other(m, rec, state):
    # ChildFailedError.format_msg: the "Failures:" section before the Root Cause lists every other
    # failed worker, or this placeholder: then the Root Cause is the only worker that failed.
    if state.get("cf_section") in ("other", None):  # an excerpt may start below "Failures:"
        state["cf_no_other"] = rec.loc.line
    return []


@rule("block-time", ("time      :",), r"^\s*time\s{6}:\s*(?P<t>\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)\s*$", match_start=True)
def _block_time(m, rec, state):
    # An entry's first row (_FAILURE_FORMAT_TEMPLATE): when the agent recorded that exit, to the second.
    state["cf_time"] = (m.group("t"), rec.loc.line)
    return []


@rule("block-rank", ("local_rank:",), r"^\s*rank\s*:\s*(?P<rank>-?\d+) \(local_rank: (?P<lr>-?\d+)\)", match_start=True)
def _block_rank(m, rec, state):
    # `rank : N (local_rank: M)` is the block's own shape; an excerpt may start below the section header.
    state.setdefault("cf_section", "unknown")
    t = state.pop("cf_time", None)
    state["cf_entry"] = {"rank": int(m.group("rank")), "local_rank": int(m.group("lr")), "line": rec.loc.line,
                         "time": t[0] if t is not None and rec.loc.line - t[1] <= 2 else None}
    return []


@rule("block-exitcode", ("exitcode",), r"^\s*exitcode\s*:\s*(?P<code>-?\d+)(?: \((?P<sig>SIG\w+)\))?(?: \(pid: (?P<pid>\d+)\))?", match_start=True)
def _block_exitcode(m, rec, state):
    entry = state.get("cf_entry")
    if entry is None:
        return None
    entry["exitcode"] = to_int(m.group("code"))
    entry["pid"] = to_int(m.group("pid"))
    return []


@rule("block-error-file", ("error_file",), r"^\s*error_file\s*:\s*(?P<f>.*)$", match_start=True)
def _block_error_file(m, rec, state):
    entry = state.get("cf_entry")
    if entry is None:
        return None
    f = m.group("f").strip()
    entry["error_file"] = None if f in ("<N/A>", "") else f
    return []


@rule("block-traceback", ("traceback",), r"^\s*traceback\s*:\s*(?P<tb>.*)$", match_start=True)
def _block_traceback(m, rec, state):
    entry = state.pop("cf_entry", None)
    if entry is None:
        return None
    code = entry.get("exitcode")
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error="child_failed",
        message=m.group("tb").strip(), exitcode=code, signal=signal_of(code), rank=entry["rank"],
        fields={
            "root_cause": state.get("cf_section") == "root" if state.get("cf_section") != "unknown" else None,
            "only_failure": state.get("cf_section") == "root" and state.get("cf_no_other") is not None,
            "error_file": entry.get("error_file"),
            "local_rank": entry["local_rank"],
            "block_line": entry["line"],
            "time": entry.get("time"),
        },
    )


# torch/distributed/elastic/multiprocessing/errors/error_handler.py (ErrorHandler.record_exception, torch
# 1.9+): when the agent itself raises, it logs the error file's JSON, indented, under the module's logger:
#   ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{
#   [ERROR] 2021-09-13 22:18:26,678 error_handler: {
#     "message": {
#       "message": "RendezvousTimeoutError: ",
# The inner "message" is f"{type(e).__name__}: {e}"; py_callstack follows as one escaped string, so no
# traceback of it is parsed elsewhere.
_EH_SPAN = 3


@rule("error-handler-head", ("error_handler",), r"error_handler:\s?\{\s*$")
def _error_handler_head(m, rec, state):
    state["eh_line"] = rec.loc.line
    return []


@rule(
    "error-handler-message",
    ('"message": "',),
    r'^\s*"message": "(?P<type>[A-Za-z_]\w*(?:Error|Exception)): ?(?P<msg>.*?)",?\s*$',
    match_start=True,
)
def _error_handler_message(m, rec, state):
    head = state.get("eh_line")
    if head is None or rec.loc.line - head > _EH_SPAN:
        return None
    del state["eh_line"]
    exc_type, msg = m.group("type"), m.group("msg").strip()
    kind = "rendezvous_closed" if exc_type.startswith("RendezvousClosed") else classify(exc_type, msg)
    fields = {"agent_error": True, **(no_device_fields(msg) if kind == "cuda_no_device" else {})}
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="torchrun", error=kind, message=msg or exc_type,
        exc_type=exc_type, fields=fields,
    )


# torch/distributed/elastic/rendezvous/api.py RendezvousClosedError (torch 1.9+; raised bare by
# dynamic_rendezvous.py's _DistributedRendezvousOpExecutor.run and etcd_rendezvous.py), torchelastic's
# torchelastic.rendezvous.api.RendezvousClosedException (0.2): a node asked to join a rendezvous that an
# agent already closed (the job's end, or an agent that failed or left and closed it behind it). The
# last line of the agent's traceback prints the qualified name alone; the error handler's JSON has
# "RendezvousClosedError: " (handled with the other agent errors below). A bare class name in a
# `raise RendezvousClosedError()` source line is not the exception.
@rule(
    "rendezvous-closed",
    ("RendezvousClosed",),
    r"^\s*(?:torch\.distributed\.elastic|torchelastic)\.rendezvous(?:\.api)?\.(?P<type>RendezvousClosed(?:Error|Exception))\b:?(?P<msg>.*)$",
)
def _rendezvous_closed(m, rec, state):
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="torchrun", error="rendezvous_closed",
                      message=m.group("msg").strip() or m.group("type"), exc_type=m.group("type"),
                      fields={"agent_error": True})


PARSER = Parser(
    name="torchrun",
    framework="torchrun",
    priority=10,
    description="torchrun / torch.distributed.elastic agent lines and ChildFailedError blocks",
    rules=[_agent_failed, _no_error_file_child, _death_signal, _signal_exception, _spawn_signal, _closing, _section, _no_other, _block_time, _block_rank, _block_exitcode, _block_error_file, _block_traceback,
           _error_handler_head, _error_handler_message, _rendezvous_closed],
)
