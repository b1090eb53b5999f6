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
`Process name: N` (horovod/runner/gloo_run.py); that head line stays a Python exception.

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
from nanscope.parsers.base import SIGNALS, Parser, rule
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
    r"^\s*Process name:\s*(?:\[(?:\[\d+,\d+\]|[^\]\s@,]+@\d+),(?P<vpid>\d+)\]|(?P<bare>\d+))\s*$",
    match_start=True,
)
def _process_name(m, rec, state):
    block = state.get("ompi_block")
    if block is None or rec.loc.line - block[0] > _BLOCK_SPAN:
        return None  # another template's `Process name:` (a lost communication path, a heartbeat)
    state["ompi_proc"] = (int(m.group("vpid") or m.group("bare")), rec.loc.line)
    return []


@rule("exit-code", ("Exit code:",), r"^\s*Exit code:\s*(?P<code>-?\d+)\s*$", match_start=True)
def _exit_code(m, rec, state):
    proc = state.pop("ompi_proc", None)
    block = state.pop("ompi_block", None)
    if proc is None or block is None or rec.loc.line - proc[1] > 2:
        return None
    code = int(m.group("code"))
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="openmpi", error="worker_failed",
        message=f"exit code {code}: the first process {block[1]} saw exit non-zero", exitcode=code, rank=proc[0],
        fields={"source": "openmpi", "launcher": block[1], "first_observed": True},
    )


@rule(
    "proc-aborted-signal",
    ("exited on signal",),
    r"(?P<tool>[\w.\-]{1,64}) noticed that (?:process|job) rank (?P<rank>\d+) with PID (?P<pid>\S+) on node "
    r"\"?(?P<node>[^\"\s]+)\"? exited on signal (?P<num>\d+)(?: \((?P<name>[^)]*)\))?",
)
def _proc_aborted(m, rec, state):
    num = int(m.group("num"))
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="openmpi", error="worker_failed", message=m.group(0),
        signal=SIGNALS.get(num, f"SIG{num}"), rank=int(m.group("rank")),
        fields={"source": "openmpi", "launcher": m.group("tool"), "node": m.group("node"),
                "pid": int(m.group("pid")) if m.group("pid").isdigit() else None, "signal_name": m.group("name"),
                "first_observed": True},
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


_STALL_OPS = re.compile(r"\[(?P<kind>ready|missing) ranks: (?P<ranks>\d+(?:, \d+)*)")
_STALL_SPAN = 64  # lines from the stall warning's head to its last per-tensor line


def _stall_event(loc, text: str, secs: int, groups: list[tuple[str, frozenset]], listed: bool = False) -> ErrorEvent:
    if not groups and not listed:
        # The check's head alone, no stalled tensor named: Horovod prints it once whenever a collective
        # waits past the threshold, and a run that goes on after it was only slow there (the warning
        # says "may indicate"). It becomes a timeout when the tensors or ranks follow, or it repeats.
        return ErrorEvent(loc=loc, text=text, framework="horovod", error="collective_stall", message=text.strip(),
                          fields={"source": "horovod", "stall_seconds": secs, "tensors": 0})
    sets = {ranks for _kind, ranks in groups}
    missing = {r for kind, ranks in groups if kind == "missing" for r in ranks}
    fields: dict = {"source": "horovod", "stall_seconds": secs, "tensors": len(groups)}
    error = "collective_timeout"
    if len(sets) > 1:
        error = "collective_desync"  # the ranks submitted different tensors
    elif len(missing) == 1:
        fields["waited_for"] = next(iter(missing))
        fields["waited_why"] = (f"Horovod's stall check: rank {fields['waited_for']} never submitted the tensors "
                                f"the other ranks were waiting in for more than {secs} s")
    return ErrorEvent(loc=loc, text=text, framework="horovod", error=error, message=text.strip(), fields=fields)


@rule(
    "horovod-stall",
    ("were submitted to be reduced, gathered or broadcasted by subset of ranks",),
    r"One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and "
    r"are waiting for remainder of ranks for more than (?P<secs>\d+) seconds",
)
def _horovod_stall(m, rec, state):
    secs = int(m.group("secs"))
    held = state.pop("pending", None)
    out = [held] if held is not None else []
    # The check repeats every HOROVOD_STALL_CHECK_TIME_SECONDS while the ranks stay stalled: a second
    # head makes the first one a timeout even when neither listed its tensors.
    repeat = state.get("hvd_stall") is not None
    if held is not None and held.error == "collective_stall":
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
                          "listed": repeat}
    return out


def _stall_update(rec, state) -> bool:
    stall = state.get("hvd_stall")
    if stall is None or rec.loc.line - stall["line"] > _STALL_SPAN or state.get("pending") is None:
        return False
    stall["line"] = rec.loc.line
    # The held event was placed (text, origin, stream) on the head's line: update it, do not replace it.
    held = state["pending"]
    now = _stall_event(stall["loc"], stall["text"], stall["secs"], stall["groups"], stall["listed"])
    held.error, held.fields = now.error, now.fields
    return True


@rule("horovod-stall-missing", ("[missing ranks:", "[ready ranks:"), r"\[(?P<kind>missing|ready) ranks: (?P<ranks>\d+(?:, \d+)*)\]")
def _horovod_stall_missing(m, rec, state):
    stall = state.get("hvd_stall")
    if stall is None or state.get("pending") is None or rec.loc.line - stall["line"] > _STALL_SPAN:
        return None
    stall["groups"].append((m.group("kind"), frozenset(int(r) for r in m.group("ranks").split(", "))))
    return [] if _stall_update(rec, state) else None


# v0.18+ (horovod/common/stall_inspector.cc): `Missing ranks:` and then a line per rank, `0: [tensor, ...]`
# (`0!` when that rank had already shut down). Those lines start like srun's `N: ` label, so the header
# is what says the check listed the ranks it waits for.
@rule("horovod-stall-missing-ranks", ("Missing ranks:",), r"^\s*Missing ranks:\s*$", match_start=True)
def _horovod_stall_missing_ranks(m, rec, state):
    stall = state.get("hvd_stall")
    if stall is None or state.get("pending") is None or rec.loc.line - stall["line"] > _STALL_SPAN:
        return None
    stall["listed"] = True
    return [] if _stall_update(rec, state) else None


PARSER = Parser(
    name="openmpi",
    framework="openmpi",
    priority=12,
    description="Open MPI / PRRTE launcher messages (first non-zero exit, exit on signal, job aborted), Horovod's shutdown and stall check",
    rules=[_head, _process_name, _exit_code, _proc_aborted, _job_aborted, _horovod_shut_down, _horovod_stall,
           _horovod_stall_missing, _horovod_stall_missing_ranks, _mpi_init_failed, _btl_tcp_peer, _btl_tcp_peer_host],
)
