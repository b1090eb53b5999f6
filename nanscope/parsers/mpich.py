"""The MPICH family's launchers: HPE Cray PALS mpiexec, MPICH2's mpd, and Hydra's mpiexec.

Their reports of a process that ended abnormally (the rank is the MPI_COMM_WORLD rank):

HPE Cray PALS (the mpiexec / aprun of Cray EX systems: Polaris, Aurora, Sunspot), one line per process
the launcher saw die, `<host>: ` first (seen verbatim in pmodels/mpich#7569, #7605, E3SM-Project/E3SM#6985,
saforem2/ezpz#210; PALS is not open source, so the threads are the template's only source):
  x3102c0s25b1n0.hsn.cm.polaris.alcf.anl.gov: rank 96 died from signal 11 and dumped core
  x4001c5s4b0n0.hsn.cm.aurora.alcf.anl.gov: rank 0 died from signal 15
  (without the host when the launcher's prefix is off or cut: `rank 0 died from signal 11 and dumped core`)
  After the first death PALS stops the others: they die from SIGTERM (15) or SIGKILL (9), in order after it.
  A process that exits (rather than dies of a signal) is reported with its exit status (intel/pti-gpu#69,
  `mpiexec -n 2 -ppn 2 --pmi=pmix`, a wrapper script between PALS and Python):
  hostname: rank 0 exited with code 139
  hostname: rank 1 died from signal 15
  A shell in between turns a signal N into the status 128 + N (139: SIGSEGV), as for Hydra's EXIT CODE below.

MPICH2 mpd (src/pm/mpd/mpiexec.py, 1.0 - 1.4; `job_aborted_early`):
  print 'rank %d in job %s caused collective abort of all ranks' % (msg['rank'], msg['jobid'])
  print '  exit status of rank %d: killed by signal %d ' % (msg['rank'], killed_status)
  print '  exit status of rank %d: return code %d ' % (msg['rank'], exit_status)
  (the job id carries the mpd host and port: `rank 3 in job 1958  bb36_58821   caused collective abort ...`)

MPICH Hydra (src/pm/hydra/ui/mpich/mpiexec.c, 1.1+), after its banner (pmiserv: the first process that ended
badly; MPICH 3.x prints its PID and host, Intel MPI's Hydra and MPICH 4 its rank and the signal):
  =   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
  =   PID 4774 RUNNING AT IIPLab-WS1                       |  =   RANK 1 PID 27494 RUNNING AT node1
  =   EXIT CODE: 139                                       |  =   KILLED BY SIGNAL: 11 (Segmentation fault)
  =   CLEANING UP REMAINING PROCESSES
  =   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
  YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)     (3.x+)
  APPLICATION TERMINATED WITH THE EXIT STRING: Hangup (signal 1)                      (1.x - 2.x)
The banner's EXIT CODE of a process a signal ended is the signal's number (`EXIT CODE: 9` then `Killed (signal
9)`, `EXIT CODE: 11` then `Segmentation fault (signal 11)` in the threads), 128 + N when a shell in between
reported it (139, 134); other small codes are the program's own exit status.

The first death a launcher reports with a signal a process gets from its own fault (SIGSEGV, SIGBUS, SIGFPE,
SIGILL, SIGABRT) is marked `first_observed`, as Open MPI's aborted-job report is (openmpi.py): the launcher
saw it first, and the SIGTERM / SIGKILL / SIGINT / SIGHUP deaths after it are its teardown (a `teardown`
lifecycle event, as torchrun's `Sending process N closing signal SIGTERM`). A SIGKILL before any fault stays a
failure of its own (the OOM killer's, most often) unless a fault follows it in the same report: a launcher lists
the deaths in the order their reports reached it (mpd's come from every host's daemon), so a SIGKILL printed
before the first fault is its teardown as well (pmodels/mpich#981: rank 3 killed by signal 9, then ranks 2, 1, 0
by signal 11).
"""

from __future__ import annotations

from typing import Optional

from nanscope.model import ErrorEvent, LifecycleEvent
from nanscope.parsers.base import SIGNALS, Parser, rule

FW = "mpich"
_OWN_FAULT = ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT")
_TEARDOWN = ("SIGTERM", "SIGKILL", "SIGINT", "SIGHUP")


def _teardown(loc, text, launcher: str, sig: str, rank: int, fields: dict) -> LifecycleEvent:
    # the launcher stopping the others after the first fault: its teardown, not a failure of their own
    # (no event rank, as torchrun's `closing signal SIGTERM` lines: a stopped worker is never a candidate)
    return LifecycleEvent(loc=loc, text=text, framework=FW, action="teardown",
                          fields={"source": launcher, "signal": sig, "stopped_rank": rank, "process_failed": False,
                                  **fields})


_REPORT_SPAN = 16  # lines of one launcher report (mpd prints two per process)


def _death(rec, state, rank: int, num: int, launcher: str, **fields):
    sig = SIGNALS.get(num, f"SIG{num}")
    seen = state.get("mpich_fault_seen")
    if seen and sig in _TEARDOWN:
        return _teardown(rec.loc, rec.text, launcher, sig, rank, fields)
    first = sig in _OWN_FAULT and not seen
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="worker_failed", message=rec.text.strip(),
                    signal=sig, rank=rank, fields={"source": launcher, "first_observed": first, **fields})
    if sig == "SIGKILL" and not seen and "pending" not in state:
        # A SIGKILL listed before any fault: the launcher prints the deaths in the order their reports reached
        # it, not the order they happened (mpd's `job_aborted_early` messages come from every host's mpd), and
        # it SIGKILLs the rest after the first fault. Held: a fault later in the same report makes it that
        # teardown; alone it stays a kill of its own (the OOM killer's, most often).
        state["pending"] = ev
        state["mpich_kill_held"] = rec.loc.line
        return []
    out = [ev]
    if sig in _OWN_FAULT:
        state["mpich_fault_seen"] = True
        held_line = state.pop("mpich_kill_held", None)
        held = state.get("pending")
        if held_line is not None and held is not None and rec.loc.line - held_line <= _REPORT_SPAN:
            state.pop("pending", None)
            out.append(_teardown(held.loc, held.text, launcher, "SIGKILL", held.rank,
                                 {k: v for k, v in (held.fields or {}).items() if k not in ("source", "first_observed")}))
    return out


@rule("pals-rank-died", ("died from signal",),
      r"(?:^|: )rank (?P<rank>\d+) died from signal (?P<sig>\d+)(?P<core> and dumped core)?\s*$")
def _pals_died(m, rec, state):
    host = rec.text[: m.start()].strip() or None
    return _death(rec, state, int(m.group("rank")), int(m.group("sig")), "pals",
                  node=host or rec.origin.node, core_dumped=m.group("core") is not None)


@rule("pals-rank-exited", ("exited with code",),
      r"(?:^|: )rank (?P<rank>\d+) exited with code (?P<code>\d+)\s*$")
def _pals_exited(m, rec, state):
    code = int(m.group("code"))
    if code == 0:
        return []  # a clean exit
    host = rec.text[: m.start()].strip() or None
    rank = int(m.group("rank"))
    if code > 128 and code - 128 in SIGNALS:
        return _death(rec, state, rank, code - 128, "pals", node=host or rec.origin.node, exit_status=code)
    first = not state.get("mpich_fault_seen")
    state["mpich_fault_seen"] = True
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="worker_failed", message=rec.text.strip(),
                      exitcode=code, rank=rank, fields={"source": "pals", "first_observed": first,
                                                        "node": host or rec.origin.node})


@rule("mpd-collective-abort", ("caused collective abort of all ranks",),
      r"^rank (?P<rank>\d+) in job (?P<job>\d+)(?: +\S+)? +caused collective abort of all ranks\s*$", match_start=True)
def _mpd_abort(m, rec, state):
    state["mpd_abort"] = (int(m.group("rank")), rec.loc.line, m.group("job"))
    return []


@rule("mpd-exit-status", ("exit status of rank",),
      r"^\s*exit status of rank (?P<rank>\d+): (?:killed by signal (?P<sig>\d+)|return code (?P<code>-?\d+))\s*$",
      match_start=True)
def _mpd_exit(m, rec, state):
    head = state.pop("mpd_abort", None)
    rank = int(m.group("rank"))
    if head is None or head[0] != rank or rec.loc.line - head[1] > 2:
        return None
    if m.group("sig") is not None:
        return _death(rec, state, rank, int(m.group("sig")), "mpd", job=head[2])
    first = not state.get("mpich_fault_seen")
    state["mpich_fault_seen"] = True
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="worker_failed", message=rec.text.strip(),
                      exitcode=int(m.group("code")), rank=rank,
                      fields={"source": "mpd", "job": head[2], "first_observed": first})


_BANNER_SPAN = 4  # lines from BAD TERMINATION to its EXIT CODE / KILLED BY SIGNAL
_RAW_SIGNALS = (4, 6, 7, 8, 9, 11, 15)  # EXIT CODE values read as the signal that ended the process


@rule("hydra-bad-termination", ("BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",),
      r"^=\s+BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\s*$", match_start=True)
def _hydra_banner(m, rec, state):
    state["hydra_banner"] = {"line": rec.loc.line, "rank": None, "pid": None, "node": None}
    return []


@rule("hydra-running-at", ("RUNNING AT",),
      r"^=\s+(?:RANK (?P<rank>\d+) )?PID (?P<pid>\d+) RUNNING AT (?P<node>\S+)\s*$", match_start=True)
def _hydra_running_at(m, rec, state):
    banner = state.get("hydra_banner")
    if banner is None or rec.loc.line - banner["line"] > _BANNER_SPAN:
        return None
    banner.update(rank=int(m.group("rank")) if m.group("rank") else None, pid=int(m.group("pid")), node=m.group("node"))
    return []


@rule("hydra-banner-exit", ("=   EXIT CODE:", "=   KILLED BY SIGNAL:"),
      r"^=\s+(?:EXIT CODE: (?P<code>\d+)|KILLED BY SIGNAL: (?P<sig>\d+)(?: \((?P<name>[^)]*)\))?)\s*$", match_start=True)
def _hydra_banner_exit(m, rec, state):
    banner = state.pop("hydra_banner", None)
    if banner is None or rec.loc.line - banner["line"] > _BANNER_SPAN:
        return None
    state["hydra_reported"] = rec.loc.line
    extra = {"node": banner["node"], "pid": banner["pid"]}
    if m.group("sig") is not None:
        num = int(m.group("sig"))
    else:
        code = int(m.group("code"))
        num = code - 128 if code > 128 and code - 128 in SIGNALS else code if code in _RAW_SIGNALS else None
        if num is None:
            first = not state.get("mpich_fault_seen")
            state["mpich_fault_seen"] = True
            return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="worker_failed", message=rec.text.strip(),
                              exitcode=code, rank=banner["rank"], fields={"source": "hydra", "first_observed": first, **extra})
    if banner["rank"] is None:
        sig = SIGNALS.get(num, f"SIG{num}")
        return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="worker_failed", message=rec.text.strip(),
                          signal=sig, fields={"source": "hydra", "first_observed": False, **extra})
    return _death(rec, state, banner["rank"], num, "hydra", **extra)


@rule("hydra-exit-string", ("TERMINATED WITH THE EXIT STRING",),
      r"^(?:YOUR )?APPLICATION TERMINATED WITH THE EXIT STRING: (?P<what>.*?) \(signal (?P<sig>\d+)\)\s*$",
      match_start=True)
def _hydra_exit(m, rec, state):
    reported = state.get("hydra_reported")
    if reported is not None and 0 <= rec.loc.line - reported <= 8:
        return []  # mpiexec's own exit after the banner that already named the process's end
    num = int(m.group("sig"))
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="worker_failed", message=rec.text.strip(),
                      signal=SIGNALS.get(num, f"SIG{num}"),
                      fields={"source": "hydra", "signal_name": m.group("what"), "first_observed": False})


@rule("mpich-mpi-abort", ("application called MPI_Abort(",),
      r"application called MPI_Abort\((?P<comm>[^,()]+), (?P<code>-?\d+)\) - process (?P<rank>\d+)")
def _mpi_abort(m, rec, state):
    return mpi_abort_event(rec, state, FW, m.group("comm"), int(m.group("rank")), int(m.group("code")))


def mpi_abort_event(rec, state, framework: str, comm: str, rank: int, code: Optional[int]):
    """A process's own MPI_Abort (MPICH's and Open MPI's wordings): the rank only where the communicator
    is MPI_COMM_WORLD (elsewhere the number is the rank in another communicator), else the line's own
    prefix rank; one event per rank (PMI2_Abort and MPICH 4's `Abort(1) on node` repeat the line)."""
    world = comm.strip() == "MPI_COMM_WORLD"
    who = rank if world else rec.origin.rank
    seen = state.setdefault("mpi_abort_ranks", set())
    if (who, comm) in seen:
        return []
    seen.add((who, comm))
    fields = {"source": framework, "communicator": comm.strip(), "comm_rank": rank, "ends_job": True}
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=framework, error="mpi_abort", message=rec.text.strip(),
                      exitcode=code, rank=who, fields=fields)


PARSER = Parser(
    name="mpich",
    framework=FW,
    priority=12,
    description="MPICH-family launchers: HPE Cray PALS `rank N died from signal S` / `exited with code C`, mpd's collective abort, Hydra's BAD TERMINATION banner and exit string, a process's own MPI_Abort",
    rules=[_mpi_abort, _pals_died, _pals_exited, _mpd_abort, _mpd_exit, _hydra_banner, _hydra_running_at, _hydra_banner_exit, _hydra_exit],
)
