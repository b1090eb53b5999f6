"""mpirun / prterun (Open MPI, PRRTE): the launcher's report of the process that ended the job.

Templates (openpmix/prrte src/tools/prte/help-prun.txt, the same text as Open MPI 4's
orte/tools/orterun/help-orterun.txt; `%s` is the launcher's name, mpirun or prterun):
  [prun:non-zero-exit]
    mpirun detected that one or more processes exited with non-zero status, thus causing
    the job to be terminated. The first process to do so was:

      Process name: [[29973,1],0]            (Open MPI 4: [[jobid,step],rank]; PRRTE: [prterun-host-1234@1,0])
      Exit code:    1
  [prun:proc-aborted-strsignal]
    mpirun noticed that process rank 0 with PID 12345 on node gpu-01 exited on signal 9 (Killed).
  [prun:proc-aborted]  the same without `(name)`.
Before the block Open MPI prints `Primary job  terminated normally, but 1 process returned` /
`a non-zero exit code. Per user-direction, the job has been aborted.`: the other processes were
stopped by the launcher (a teardown).

The rank in these lines is the MPI rank (the vpid), the rank `--tag-output` prints as `[1,R]<stderr>:`.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent, LifecycleEvent
from nanscope.parsers.base import Parser, rule, signal_of

_WHO = r"(?P<who>mpirun|mpiexec|orterun|prterun|prun)"


@rule("non-zero-exit", ("detected that one or more processes exited with non-zero status",),
      _WHO + r" detected that one or more processes exited with non-zero status")
def _non_zero(m, rec, state):
    state["mpi_exit"] = {"who": m.group("who"), "line": rec.loc.line}
    return []


@rule("process-name", ("Process name:",),
      r"^\s*Process name:\s+\[(?:\[\d+,\d+\],(?P<rank>\d+)|\S*@\d+,(?P<rank2>\d+))\]\s*$", match_start=True)
def _process_name(m, rec, state):
    entry = state.get("mpi_exit")
    if entry is None or rec.loc.line - entry["line"] > 6:
        return None
    entry["rank"] = int(m.group("rank") or m.group("rank2"))
    return []


@rule("exit-code", ("Exit code:",), r"^\s*Exit code:\s+(?P<code>-?\d+)\s*$", match_start=True)
def _exit_code(m, rec, state):
    entry = state.pop("mpi_exit", None)
    if entry is None or rec.loc.line - entry["line"] > 8:
        return None
    code = int(m.group("code"))
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="mpi", error="worker_failed", message=f"the first process to exit non-zero (exit code {code})",
        exitcode=code, signal=signal_of(code), rank=entry.get("rank"),
        fields={"launcher": entry["who"], "first_observed": True},
    )


@rule("proc-aborted", ("noticed that process rank",),
      _WHO + r" noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<node>\S+) exited on signal "
      r"(?P<sig>\d+)(?: \((?P<name>[^)]*)\))?")
def _proc_aborted(m, rec, state):
    sig = int(m.group("sig"))
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="mpi", error="worker_failed", message=m.group(0),
        exitcode=-sig, signal=signal_of(-sig), rank=int(m.group("rank")),
        fields={"launcher": m.group("who"), "pid": int(m.group("pid")), "node": m.group("node"),
                "signal_name": m.group("name")},
    )


@rule("job-aborted", ("the job has been aborted",), r"Per user-direction, the job has been aborted\.")
def _job_aborted(m, rec, state):
    return LifecycleEvent(loc=rec.loc, text=rec.text, framework="mpi", action="teardown", fields={"launcher": "mpirun"})


PARSER = Parser(
    name="mpi",
    framework="mpi",
    priority=10,
    description="mpirun / prterun reports of the process that ended the job",
    rules=[_non_zero, _process_name, _exit_code, _proc_aborted, _job_aborted],
)
