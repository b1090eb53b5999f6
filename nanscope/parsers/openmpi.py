"""Open MPI's launcher (mpirun / mpiexec / prterun) and Horovod over it.

The launcher's help templates (Open MPI <= 4.x: orte/tools/orterun/help-orterun.txt and
orte/mca/errmgr/default_hnp; Open MPI 5 / PRRTE: src/tools/prun/help-prun.txt), `%s` being the
launcher's own name (mpirun, mpirun.real, mpiexec, prterun):

  [orterun:non-zero-exit] / [prun:non-zero-exit]
    %s detected that one or more processes exited with non-zero status, thus causing
    the job to be terminated. The first process to do so was:

      Process name: %s          ORTE: [[jobid,1],vpid]   PRRTE: [prterun-host-pid@1,vpid]
      Exit code:    %d
  [orterun:proc-aborted-strsignal] (and [proc-aborted] without the signal's name)
    %s noticed that process rank %lu with PID %lu on node %s exited on signal %d (%s).
  errmgr's normal-termination-but, the job being torn down:
    Primary job  terminated normally, but 1 process returned
    a non-zero exit code. Per user-direction, the job has been aborted.   (<= 3.x: "code.. Per")

The vpid and "process rank" are the rank in MPI_COMM_WORLD, which is Horovod's hvd.rank(). The
"first process to do so" is the first abnormal exit the launcher saw, as torchrun's Root Cause is:
evidence of who exited first, weaker than a rank's own error (attribution weighs it so). The
"noticed that process rank N ... exited on signal S" template is the same report for a job aborted
by a signal: orte/runtime/orte_quit.c orte_print_aborted_job prints one of them, for the job's
ORTE_JOB_ABORTED_PROC (the process whose abnormal end made the launcher abort the job; the others
are killed after it and not reported). So that exit, even on SIGABRT, is the first one, not a
teardown (signatures read `fields.first_observed`).

Horovod (horovod/common/common.h SHUT_DOWN_ERROR; before 0.16 "This has been caused by an
exception on one of the rank ..."): every surviving rank's collective then fails with
  Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt
  to allreduce, allgather or broadcast a tensor after one of the ranks finished execution. ...
which is a lost peer, not this rank's own failure (the message says so itself). Horovod's gloo
launcher raises the same "detected that one or more processes exited" text with a bare
`Process name: N` (horovod/runner/gloo_run.py launch_gloo, 0.19+; 'Gloo job detected ...' in 0.18), or in
elastic mode the worker's alias `host[local_rank]` (gloo_run.py launch_gloo_elastic:
`Process name: elastic-test-worker-1[0]`): a node and its local rank, not a rank. That head line stays a
Python exception. The exit code there is the worker shell's status, 128 + N for a worker killed by
signal N (`Exit code: 137`: SIGKILL). A log collector that orders lines by a timestamp to the second
(Determined's trial logs) may print `Exit code:` before `Process name:`: within the block, either
order is read.

Horovod's stall check (v0.13 - 0.14 horovod/common/operations.cc, 0.15 - 0.17 the same with the
missing ranks, 0.18+ horovod/common/stall_inspector.cc), when some ranks submitted a tensor and the
others did not for more than HOROVOD_STALL_CHECK_TIME_SECONDS:
  One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are
  waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are
  trying to submit different tensors or that only subset of ranks is submitting tensors, which will
  cause deadlock. <then>
    v0.13: Stalled ops: <tensor> [ready ranks: 2, 0, 1], <tensor> [ready ranks: 3], ...   (one line)
    v0.15: Stalled ops:\n<tensor> [missing ranks: 0]\n...                          (a line per tensor)
    v0.18: Missing ranks:\n0: [<tensor>, <tensor> ...]\n...   (a line per rank; "0!" when it shut down)
Ready sets that differ between tensors mean the ranks submitted different tensors (a desync); one
rank missing from every tensor is the rank the others wait for (read only from "missing ranks").
The head alone, once, with no tensor or rank after it, is not a hang (the check fires whenever one
collective waits past the threshold, and the run may go on): it becomes a timeout when the tensors or
`Missing ranks:` follow, or when the head repeats (horovod/horovod#2843: one warning, then "Everything
is OK").
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent, LifecycleEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, SIGNALS, Parser, rule, signal_of
from nanscope.parsers.mpich import mpi_abort_event
from nanscope.parsers.numbers import to_int
from nanscope.parsers.python import EXC_LINE

_BLOCK_SPAN = 8  # lines from the head to `Exit code:` (wrapped head, blank line, separators)


@rule(
    "nonzero-exit-head",
    ("exited with non-zero status",),
    r"(?P<tool>[\w.\-]{1,64}) detected that one or more processes exited with non-zero status",
)
def _head(m, rec, state):
    state["ompi_block"] = (rec.loc.line, m.group("tool"))
    state.pop("ompi_proc", None)
    # Horovod's gloo launcher raises this text as a Python exception: let the python parser have it.
    return None if EXC_LINE.match(rec.text) else []


@rule(
    "process-name",
    ("Process name:",),
    r"^\s*Process name:\s*(?:\[(?:\[\d+,\d+\]|[^\]\s@,]+@\d+),(?P<vpid>\d+)\]|(?P<bare>\d+)"
    r"|(?P<alias>[A-Za-z0-9][\w.\-]{0,127})\[(?P<alias_lr>\d+)\])\s*$",
    match_start=True,
)
def _process_name(m, rec, state):
    block = state.get("ompi_block")
    if block is None or rec.loc.line - block[0] > _BLOCK_SPAN:
        return None  # another template's `Process name:` (a lost communication path, a heartbeat)
    n = m.group("vpid") or m.group("bare")
    proc = (int(n) if n is not None else None, rec.loc.line, m.group("alias"), to_int(m.group("alias_lr")))
    early = state.pop("ompi_exit_first", None)
    if early is not None and rec.loc.line - early[1] <= 2:
        state.pop("ompi_block", None)
        return _first_exit(rec, early[0], proc, block[1])
    state["ompi_proc"] = proc
    return []


@rule("exit-code", ("Exit code:",), r"^\s*Exit code:\s*(?P<code>-?\d+)\s*$", match_start=True)
def _exit_code(m, rec, state):
    code = int(m.group("code"))
    proc = state.pop("ompi_proc", None)
    block = state.get("ompi_block")
    if proc is None and block is not None and rec.loc.line - block[0] <= _BLOCK_SPAN:
        state["ompi_exit_first"] = (code, rec.loc.line)  # `Process name:` may follow (a re-ordered paste)
        return []
    state.pop("ompi_block", None)
    if proc is None or block is None or rec.loc.line - proc[1] > 2:
        return None
    return _first_exit(rec, code, proc, block[1])


def _first_exit(rec, code, proc, launcher):
    # A negative code is a launcher's own signal report; 129-159 is a shell's status for a child killed by
    # signal code-128 (Horovod's Gloo workers run under a shell).
    signal = signal_of(code) or (SIGNALS.get(code - 128) if 128 < code < 160 else None)
    rank, _, alias, local = proc
    fields = {"source": "openmpi", "launcher": launcher, "first_observed": True}
    where = "the first process"
    if alias is not None:
        fields.update(node=alias, local_rank=local)
        where = f"the first process ({alias}[{local}])"
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="openmpi", error="worker_failed",
        message=f"exit code {code}: {where} {launcher} saw exit non-zero", exitcode=code, signal=signal, rank=rank,
        fields=fields,
    )


# Open MPI's own fault handler, in every process mpirun / srun starts with Open MPI loaded (Horovod,
# nccl-tests, an mpi4py job; opal_signal defaults to 6,7,8,11): open-mpi/ompi opal/util/stacktrace.c
# show_stackframe (v1.x .. v5.x; openpmix/prrte src/util/stacktrace.c the same), HOSTFORMAT "[%s:%05d] ":
#     [host:pid] *** Process received signal ***
#     [host:pid] Signal: %s (%d)                   strsignal(signo), signo: `Signal: Segmentation fault (11)`;
#                                                  macOS' strsignal: `Signal: Segmentation fault: 11 (11)`;
#                                                  built without strsignal: `Signal: 11`
#     [host:pid] Signal code: %s (%d)              `Address not mapped (1)`, `Invalid permissions (2)`
#     [host:pid] Failing at address: %p
#     [host:pid] [ 0] <frame> ...  [host:pid] *** End of error message ***
# A paste may indent the report as a markdown code block (four spaces, horovod/horovod#107): up to 8 blanks
# before the `[host:pid]` are read.
# mpirun --tag-output / horovodrun put `[1,2]<stderr>:` (job, rank) before each line; the tag gives the
# rank. Without it, the launcher's own report of the job's end names the process by the same PID
# (`mpirun noticed that process rank 0 with PID 19474 on node lhx-910 exited on signal 11`): the report
# is held until the input ends (or another held event comes) and takes that rank. Only the fault
# signals: `Signal: Aborted (6)` follows an abort() whose cause (a C++ `terminate called ... what():`, an
# assertion) was printed before it.
_OPAL_SPAN = 400  # lines from a process's own report to mpirun's line about the same PID
_FAULT_SIGNALS = {4: "SIGILL", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}


@rule(
    "opal-fault-signal",
    ("] Signal: ",),
    r"^[ \t]{0,8}\[(?P<host>[^\]\s:]+):(?P<pid>\d+)\] Signal: (?:(?P<desc>.+?) \((?P<num>\d+)\)|(?P<bare>\d+))\s*$",
)
def _opal_fault_signal(m, rec, state):
    signal = _FAULT_SIGNALS.get(int(m.group("num") or m.group("bare")))
    seen = state.setdefault("opal_signal_pids", set())
    if len(seen) < 4096:
        seen.add(int(m.group("pid")))  # this report's signal is in view (the end line below then says nothing)
    if signal is None:
        return None
    if not first_time(state, ("opal_fault", signal), rec.loc.line):
        return []
    pid = int(m.group("pid"))
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework="openmpi", error="worker_failed", message=rec.text.strip(),
                    signal=signal, fields={"source": "openmpi", "self_reported": True, "signal_name": m.group("desc") or signal,
                                           "shm_suspect": signal == "SIGBUS", "host": m.group("host"), "pid": pid})
    if rec.origin.rank is not None:
        return ev  # mpirun's tag already says which rank
    held = state.pop("pending", None)
    state["pending"] = ev
    state["opal_fault"] = (rec.loc.line, pid, m.group("host"))
    return [held] if held is not None else []


# The same report whose head (`*** Process received signal ***`, `Signal: ...`) the input does not have: the
# backtrace frames and show_stackframe's last line, `[host:pid] *** End of error message ***`, which only the
# fault handler prints. The process died of one of the signals it handles (opal_signal: SIGABRT, SIGBUS,
# SIGFPE, SIGSEGV by default), and the input does not say which: one exit whose signal is unseen, counted by
# worker-segfault only where nothing else in the input is an error (an abort's cause, `terminate called ...
# what():` or an assertion, is one). A report whose Signal: line was read (any signal) is left to that line.
@rule(
    "opal-report-end",
    ("*** End of error message ***",),
    r"^[ \t]{0,8}\[(?P<host>[^\]\s:]+):(?P<pid>\d+)\] \*\*\* End of error message \*\*\*\s*$",
)
def _opal_report_end(m, rec, state):
    pid = int(m.group("pid"))
    if pid in state.get("opal_signal_pids", ()):
        return []
    if not first_time(state, ("opal_report_end", pid), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="openmpi", error="worker_failed", message=rec.text.strip(),
                      fields={"source": "openmpi", "self_reported": True, "signal_unseen": True,
                              "host": m.group("host"), "pid": pid})


@rule(
    "proc-aborted-signal",
    ("exited on signal",),
    r"(?P<tool>[\w.\-]{1,64}) noticed that (?:process|job) rank (?P<rank>\d+) with PID (?P<pid>\S+) on node "
    r"\"?(?P<node>[^\"\s]+)\"? exited on signal (?P<num>\d+)(?: \((?P<name>[^)]*)\))?",
)
def _proc_aborted(m, rec, state):
    num = int(m.group("num"))
    fault = state.get("opal_fault")
    held = state.get("pending")
    if (fault is not None and held is not None and held.fields and held.fields.get("pid") == fault[1]
            and m.group("pid") == str(fault[1]) and rec.loc.line - fault[0] <= _OPAL_SPAN):
        # the process's own fault report (held) is this rank's: mpirun names it by the same PID
        state.pop("opal_fault", None)
        held.rank = int(m.group("rank"))
        held.stream = ("rank", held.origin.node if held.origin is not None else None, held.rank)
        held.fields["rank_from"] = "mpirun's report of the same PID"
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="openmpi", error="worker_failed", message=m.group(0),
        signal=SIGNALS.get(num, f"SIG{num}"), rank=int(m.group("rank")),
        fields={"source": "openmpi", "launcher": m.group("tool"), "node": m.group("node"),
                "pid": int(m.group("pid")) if m.group("pid").isdigit() else None, "signal_name": m.group("name"),
                "first_observed": True},
    )


# A process's own MPI_Abort (ompi/mpi/help-mpi-api.txt [mpi-abort], 1.x - 4.x; Open MPI 5 prints `Proc:` and
# `Errorcode:` lines under the head instead of `with errorcode N.`):
#   MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD
#   with errorcode 1.
#   NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.
# The rank is the caller's in that communicator (the world rank for MPI_COMM_WORLD). The program ended the job
# after its own error; the others are killed after it (mpich.mpi_abort_event, shared with MPICH's wording).
@rule("ompi-mpi-abort", ("MPI_ABORT was invoked on rank",),
      r"MPI_ABORT was invoked on rank (?P<rank>\d+) in communicator (?P<comm>\S+)")
def _ompi_mpi_abort(m, rec, state):
    return mpi_abort_event(rec, state, "openmpi", m.group("comm"), int(m.group("rank")), None)


# A process that ended without MPI_Finalize, or called abort with session directories off (orte/tools/orterun/
# help-orterun.txt [orterun:proc-exit-no-sync] and [orterun:proc-called-abort], 1.x - 4.x; PRRTE's help-prun.txt
# the same with `prterun`), the head split by the help text over two lines:
#   mpirun has exited due to process rank 1 with PID 4017 on
#   node clsockeyev1 exiting improperly. There are three reasons this could occur:
#   ...
#   This may have caused other processes in the application to be
#   terminated by signals sent by mpirun (as reported here).
# (`node  exiting improperly` with the host empty; `calling "abort"` for the abort variant.) The launcher's
# record of the first process it saw end badly, as its "The first process to do so was": the others are stopped
# after it.
_NO_SYNC_SPAN = 2


@rule(
    "proc-exit-no-sync-head",
    ("has exited due to process rank",),
    r"(?P<tool>[\w.\-]{1,64}) has exited due to process rank (?P<rank>\d+) with PID (?P<pid>\d+) on"
    r"(?:\s+node (?P<node>\S*)\s*(?P<how>exiting improperly|calling \"abort\"))?",
)
def _proc_exit_no_sync_head(m, rec, state):
    head = (int(m.group("rank")), int(m.group("pid")), m.group("tool"), rec.loc.line)
    if m.group("how"):
        return _no_sync_exit(rec, head, m.group("node"), m.group("how"))
    state["ompi_no_sync"] = head
    return []


@rule("proc-exit-no-sync-node", ("exiting improperly", 'calling "abort"'),
      r"^\s*node (?P<node>\S*?)\s*(?P<how>exiting improperly|calling \"abort\")", match_start=True)
def _proc_exit_no_sync_node(m, rec, state):
    head = state.pop("ompi_no_sync", None)
    if head is None or rec.loc.line - head[3] > _NO_SYNC_SPAN:
        return None
    return _no_sync_exit(rec, head, m.group("node"), m.group("how"))


def _no_sync_exit(rec, head, node, how):
    rank, pid, tool, _ = head
    what = "called abort" if how.startswith("calling") else "exited without MPI_Finalize"
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="openmpi", error="worker_failed",
        message=f"rank {rank} {what}: {tool} has exited due to process rank {rank} {how}", rank=rank,
        fields={"source": "openmpi", "launcher": tool, "node": node or None, "pid": pid, "first_observed": True,
                "exit_improper": True, "ends_job": True},
    )


@rule("job-aborted", ("Per user-direction, the job has been aborted",), r"a non-zero exit code\.{1,2} Per user-direction, the job has been aborted")
def _job_aborted(m, rec, state):
    # The launcher stops the other processes because one returned non-zero: the teardown, no rank.
    return LifecycleEvent(loc=rec.loc, text=rec.text, framework="openmpi", action="teardown",
                          fields={"source": "openmpi", "signal": None, "process_failed": True})


@rule(
    "horovod-shut-down",
    ("Horovod has been shut down",),
    r"Horovod has been shut down\. This (?:was|has been) caused by an exception on one of the ranks?",
)
def _horovod_shut_down(m, rec, state):
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="horovod", error="peer_connection_lost",
        message=rec.text.strip(), exc_type=(EXC_LINE.match(rec.text).group("type") if EXC_LINE.match(rec.text) else None),
        fields={"source": "horovod", "peer": None},
    )


# MPI itself could not start in this process (Open MPI ompi/errhandler/errhandler_predefined.c,
# ompi/runtime/help-mpi-runtime.txt and ompi_mpi_init.c; MPICH src/mpi/errhan):
#   *** An error occurred in MPI_Init_thread          (or MPI_Init)
#   *** on a NULL communicator
#   [host1:71142] Local abort before MPI_INIT completed completed successfully, but am not able to ...
#       (2.x - 4.x; 1.x "... completed successfully; not able to aggregate error messages")
#   It looks like MPI_INIT failed for some reason; your parallel process is
#   ompi_mpi_init: ompi_rte_init failed / ompi_mpi_init: orte_init failed
#   Fatal error in MPI_Init: Other MPI error, error stack:       (MPICH; PMPI_Init_thread)
# The runtime under the launcher did not come up: mismatched MPI builds between the launcher, the
# library Horovod / mpi4py was built against and the other hosts, or the network (PMIx, PSM, ssh).
@rule(
    "mpi-init-failed",
    ("An error occurred in MPI_Init", "Local abort before MPI_INIT completed", "It looks like MPI_INIT failed",
     "ompi_mpi_init: ", "Fatal error in MPI_Init", "Fatal error in PMPI_Init"),
    r"An error occurred in (?P<fn>MPI_Init(?:_thread)?)\b|Local abort before MPI_INIT completed|It looks like MPI_INIT failed"
    r"|ompi_mpi_init: (?:ompi_rte_init|orte_init|ompi_rte_wait_for_debugger) failed|Fatal error in P?MPI_Init(?:_thread)?",
)
def _mpi_init_failed(m, rec, state):
    if not first_time(state, ("mpi_init",), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="openmpi", error="mpi_init_failed",
                      message=rec.text.strip(" *\t"), fields={"source": "mpi", "call": m.group("fn")})


# Open MPI's TCP transport between the ranks (opal/mca/btl/tcp/help-mpi-btl-tcp.txt, v2.x .. v5.x;
# 1.10: ompi/mca/btl/tcp), printed by the process whose peer went away or could not be reached:
#   [peer hung up]
#     An MPI communication peer process has unexpectedly disconnected.  This
#     usually indicates a failure in the peer process (e.g., a crash or ...
#       Local host: %s / Local PID:  %d / Peer host:  %s
#   [client connect fail] (two wordings in the same file)
#     WARNING: Open MPI failed to TCP connect to a peer MPI process.  This
#     WARNING: Open MPI failed to TCP connect to a peer MPI process via
#       Local host: %s / PID: %d / Message: %s / Error: %s (%d)
# The printing process is a victim (the text says the root cause is the peer's failure); `Peer host:`
# names the peer's node, not its rank.
_PEER_SPAN = 16  # lines from the help text's head to its `Peer host:` line


@rule(
    "btl-tcp-peer",
    ("peer process has unexpectedly disconnected", "Open MPI failed to TCP connect to a peer MPI process"),
    r"An MPI communication peer process has unexpectedly disconnected\.|"
    r"(?P<connect>Open MPI failed to TCP connect to a peer MPI process)",
)
def _btl_tcp_peer(m, rec, state):
    kind = "connect_failed" if m.group("connect") else "peer_hung_up"
    if not first_time(state, ("btl_tcp", kind), rec.loc.line):
        return []
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework="openmpi", error="peer_connection_lost",
                    message=rec.text.strip(), fields={"source": "openmpi", "transport": "tcp", "kind": kind, "peer": None})
    state["btl_peer"] = (rec.loc.line, ev)
    return ev


@rule("btl-tcp-peer-host", ("Peer host:",), r"^\s*Peer host:\s*(?P<host>\S+)\s*$", match_start=True)
def _btl_tcp_peer_host(m, rec, state):
    held = state.get("btl_peer")
    if held is None or rec.loc.line - held[0] > _PEER_SPAN:
        return None
    state.pop("btl_peer", None)
    held[1].fields["peer_host"] = m.group("host")
    held[1].message = f"{held[1].message} (peer host {m.group('host')})"
    return []


_STALL_OPS = LazyPattern(r"\[(?P<kind>ready|missing) ranks: (?P<ranks>\d+(?:, \d+)*)")
_STALL_SPAN = 64  # lines from the stall warning's head to its last per-tensor line


def _stall_event(loc, text: str, secs: int, groups: list[tuple[str, frozenset]], listed: bool = False) -> ErrorEvent:
    if not groups and not listed:
        # The check's head alone, no stalled tensor named: Horovod prints it once whenever a collective
        # waits past the threshold, and a run that goes on after it was only slow there (the warning
        # says "may indicate"). It becomes a timeout when the tensors or ranks follow, or it repeats.
        return ErrorEvent(loc=loc, text=text, framework="horovod", error="collective_stall", message=text.strip(),
                          fields={"source": "horovod", "stall_seconds": secs, "tensors": 0})
    # per-tensor groups (`<tensor> [ready ranks: ...]`, `<tensor> [missing ranks: ...]`) can differ between
    # tensors (a desync); v0.18+'s per-rank lines (`N: [tensors]`) name one waiting-for rank each
    sets = {ranks for kind, ranks in groups if kind != "rank"}
    missing = {r for kind, ranks in groups if kind in ("missing", "rank") for r in ranks}
    fields: dict = {"source": "horovod", "stall_seconds": secs, "tensors": sum(kind != "rank" for kind, _r in groups)}
    error = "collective_timeout"
    if len(sets) > 1:
        error = "collective_desync"  # the ranks submitted different tensors
    elif len(missing) == 1:
        fields["waited_for"] = next(iter(missing))
        waited = f"for more than {secs} s" if secs else "past the stall check's threshold"
        fields["waited_why"] = (f"Horovod's stall check: rank {fields['waited_for']} never submitted the tensors "
                                f"the other ranks were waiting in {waited}")
    return ErrorEvent(loc=loc, text=text, framework="horovod", error=error, message=text.strip(), fields=fields)


@rule(
    "horovod-stall",
    ("were submitted to be reduced, gathered or broadcasted by subset of ranks",),
    # (the head wrapped by a terminal or a paste ends before its seconds: `... waiting for remaind`)
    r"One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks"
    r"(?: and are waiting for remainder of ranks for more than (?P<secs>\d+) seconds)?",
)
def _horovod_stall(m, rec, state):
    secs = int(m.group("secs") or 0)
    held = state.pop("pending", None)
    out = [held] if held is not None else []
    # The check repeats every HOROVOD_STALL_CHECK_TIME_SECONDS while the ranks stay stalled: a second
    # head makes the first one a timeout even when neither listed its tensors.
    repeat = state.get("hvd_stall") is not None
    if held is not None and held.error == "collective_stall" and held is (state.get("hvd_stall") or {}).get("ev"):
        held.error = "collective_timeout"
    groups = [(g.group("kind"), frozenset(int(r) for r in g.group("ranks").split(", ")))
              for g in _STALL_OPS.finditer(rec.text, m.end())]
    if groups:  # v0.13: the stalled tensors on the same line
        state["hvd_stall"] = {"line": rec.loc.line, "loc": rec.loc, "text": rec.text, "secs": secs,
                              "groups": groups, "listed": True}
        return out + [_stall_event(rec.loc, rec.text, secs, groups)]
    # v0.13 (pasted a tensor a line) / v0.15+: the tensors follow, one a line; the event waits for them
    # (flushed at the end otherwise)
    state["pending"] = _stall_event(rec.loc, rec.text, secs, [], listed=repeat)
    state["hvd_stall"] = {"line": rec.loc.line, "loc": rec.loc, "text": rec.text, "secs": secs, "groups": [],
                          "listed": repeat, "ev": state["pending"]}
    return out


def _holds_stall(state, stall) -> bool:
    """The parser's held event is this stall's (another rule's held event, an Open MPI fault report, is not)."""
    held = state.get("pending")
    return held is not None and held is stall.get("ev")


def _stall_update(rec, state) -> bool:
    stall = state.get("hvd_stall")
    if stall is None or rec.loc.line - stall["line"] > _STALL_SPAN or not _holds_stall(state, stall):
        return False
    stall["line"] = rec.loc.line
    # The held event was placed (text, origin, stream) on the head's line: update it, do not replace it.
    held = state["pending"]
    now = _stall_event(stall["loc"], stall["text"], stall["secs"], stall["groups"], stall["listed"])
    held.error, held.fields = now.error, now.fields
    return True


def _orphan_stall(rec, state) -> list:
    """Stall-check output lines with no head before them (an excerpt cut below it): the lines are printed
    only by the stall check, so they open a stall of their own (the head's wait time unknown)."""
    held = state.pop("pending", None)
    state["pending"] = _stall_event(rec.loc, rec.text, 0, [], listed=True)
    state["hvd_stall"] = {"line": rec.loc.line, "loc": rec.loc, "text": rec.text, "secs": 0, "groups": [],
                          "listed": True, "ev": state["pending"]}
    return [held] if held is not None else []


@rule("horovod-stall-missing", ("[missing ranks:", "[ready ranks:"), r"\[(?P<kind>missing|ready) ranks: (?P<ranks>\d+(?:, \d+)*)\]")
def _horovod_stall_missing(m, rec, state):
    stall = state.get("hvd_stall")
    out = []
    if stall is None or not _holds_stall(state, stall) or rec.loc.line - stall["line"] > _STALL_SPAN:
        out = _orphan_stall(rec, state)
        stall = state["hvd_stall"]
    stall["groups"].append((m.group("kind"), frozenset(int(r) for r in m.group("ranks").split(", "))))
    _stall_update(rec, state)
    return out


# v0.18+ (horovod/common/stall_inspector.cc CheckForStalledTensors): after the head, `Missing ranks:`
# (0.18's first release: `Stalled ranks:`) and a line per rank that has not submitted, `N: [t1, t2, ...
# t6 ...]`, `N!: [...]` for a rank stalled past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, then
# `One or more rank (marked by "!") is stalled for longer than N seconds. Will shutdown.` The rank lines
# start like srun's `N: ` label (or follow mpirun's `[1,0]<stderr>:` tag), so their rank is read from the
# line as printed; the tensor names (Horovod's own `allreduce.<param>`, `broadcast.<param>`,
# `horovod_allreduce.N`, TensorFlow's `HorovodAllreduce_...` / `DistributedGradientTape_Allreduce/...`)
# are what makes such a line a candidate.
@rule("horovod-stall-missing-ranks", ("Missing ranks:", "Stalled ranks:", "is stalled for longer than"),
      r"(?:^|\s)(?:Missing|Stalled) ranks:\s*$|(?P<shutdown>One or more rank \(marked by \"!\"\) is stalled for longer than)")
def _horovod_stall_missing_ranks(m, rec, state):
    stall = state.get("hvd_stall")
    out = []
    if stall is None or not _holds_stall(state, stall) or rec.loc.line - stall["line"] > _STALL_SPAN:
        out = _orphan_stall(rec, state)  # only the stall check prints these
    state["hvd_stall"]["listed"] = True
    _stall_update(rec, state)
    return out


_RANK_LINE = LazyPattern(r"(?:^|[\s>:\]])(?P<rank>\d+)(?P<bang>!)?: \[(?P<tensors>[^\[\]]*)\]\s*$")


@rule("horovod-stall-rank-line",
      ("allreduce.", "broadcast.", "allgather.", "alltoall.", "reducescatter.", "Horovod", "_Allreduce"),
      r"\]\s*$")
def _horovod_stall_rank_line(m, rec, state):
    stall = state.get("hvd_stall")
    if stall is None or not stall.get("listed") or not _holds_stall(state, stall) or rec.loc.line - stall["line"] > _STALL_SPAN:
        return None
    r = _RANK_LINE.search(rec.raw)
    if r is None:
        return None
    stall["groups"].append(("rank", frozenset({int(r.group("rank"))})))
    _stall_update(rec, state)
    return []


PARSER = Parser(
    name="openmpi",
    framework="openmpi",
    priority=12,
    description="Open MPI / PRRTE launcher messages (first non-zero exit, exit on signal, job aborted), Horovod's shutdown and stall check",
    rules=[_head, _process_name, _exit_code, _opal_fault_signal, _opal_report_end, _proc_aborted, _ompi_mpi_abort, _proc_exit_no_sync_head, _proc_exit_no_sync_node, _job_aborted, _horovod_shut_down, _horovod_stall,
           _horovod_stall_missing, _horovod_stall_missing_ranks, _horovod_stall_rank_line, _mpi_init_failed, _btl_tcp_peer, _btl_tcp_peer_host],
)
