"""How a crash spreads: a root error followed by collateral on other ranks (cascade), and a
launcher that blames a rank the log shows was only collateral."""

from __future__ import annotations

from typing import Any, Optional

from nanscope.lazynp import np

from nanscope.model import Event
from nanscope.rankset import fmt_ranks
from nanscope.signatures.machines.base import EVIDENCE_PER_MATCH, Emit, Machine, Match, happened_before, _describe


_LAUNCHER_EXITS = ("child_failed", "worker_failed")
# A process's record of ending the whole job itself (MPI_Abort): like a launcher's exit record it is a
# first failure only where that rank shows no collateral error of its own (a rank may abort after its
# collective failed), and it takes the others down by itself (`fields.ends_job`).
_EXIT_RECORDS = _LAUNCHER_EXITS + ("mpi_abort",)
_LOST_PEER = ("peer_connection_lost", "collective_timeout")


class Cascade(Machine):
    """One rank failed first (a `primary` error) and the other ranks then failed or were torn
    down (`collateral` errors). The first primary error is the earliest by timestamp, else by
    step, else by position in the same file. `teardown` (optional): launcher lines that stop the
    other workers without naming their ranks (torchrun's `Sending process N closing signal
    SIGTERM` names a pid); they count as the others being torn down, never as ranks."""

    name = "cascade"
    PARAMS = {"primary": (True, "condition"), "collateral": (True, "condition"), "teardown": (False, "condition")}
    LIVE = True
    DEFAULT_EVENTS = ("error", "lifecycle")

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.primary, self.collateral = self.cond("primary"), self.cond("collateral")
        self.teardown = self.cond("teardown") if "teardown" in spec else None
        self.first: Optional[Event] = None
        self.coll_ranks: set = set()
        self.coll_events: list = []
        self.torn_down: list = []
        self.exits: list = []
        self.coll_unnamed: list = []  # collateral lines that name no rank (Horovod's shut-down without a tag)
        self.own_unranked = False  # a process's own primary error on a line that names no rank

    def feed(self, ev: Event, emit: Emit) -> None:
        if ev.rank is None:
            if self.teardown is not None and self.teardown(ev):
                self.torn_down.append(ev)
            elif (len(self.coll_unnamed) < EVIDENCE_PER_MATCH - 1 and self.collateral(ev)
                  and getattr(ev, "error", None) in _LOST_PEER):
                # only a lost peer says it is another process's failure; an NCCL error naming no rank may be
                # a process's own
                self.coll_unnamed.append(ev)
            elif self.primary(ev) and getattr(ev, "error", None) not in _EXIT_RECORDS:
                self.own_unranked = True
            return
        if self.primary(ev):
            if getattr(ev, "error", None) in _EXIT_RECORDS:
                # A launcher's record of an exit says that the worker ended, not why: it is a first
                # failure only if that rank shows no collateral error of its own (decided at finish).
                if len(self.exits) < 64:
                    self.exits.append(ev)
            elif self.first is None or happened_before(ev, self.first):
                self.first = ev
        elif self.collateral(ev):
            if ev.rank not in self.coll_ranks and len(self.coll_events) < EVIDENCE_PER_MATCH - 1:
                self.coll_events.append(ev)
            self.coll_ranks.add(ev.rank)

    def finish(self, emit: Emit) -> None:
        first = self.first
        if first is None:
            for ev in self.exits:
                if ev.rank not in self.coll_ranks and (first is None or happened_before(ev, first)):
                    first = ev
        if first is None:
            # A launcher line that says a process failed without naming it (Open MPI's "1 process
            # returned a non-zero exit code ... the job has been aborted") over ranks that only lost
            # their peers: a cascade whose first rank the input does not show.
            said = next((e for e in self.torn_down if (getattr(e, "fields", None) or {}).get("process_failed")), None)
            if said is None or not (self.coll_ranks or self.coll_unnamed) or self.own_unranked:
                return  # (a process's own error in the log is the finding: a cascade could name no rank to add)
            # (over collateral lines that name no rank too: Horovod's "has been shut down" on every survivor
            # under an mpirun without --tag-output)
            others = sorted(self.coll_ranks)
            emit(self.match(said, [said] + (self.coll_events or self.coll_unnamed), collateral_ranks=others,
                            culprit="a process the launcher does not name",
                            others=f"ranks {fmt_ranks(others)}" if others else "the other processes (not named in the log)",
                            who="A process"))
            return
        aborted = sorted({e.rank for e in self.exits if getattr(e, "error", None) == "mpi_abort"})
        if getattr(first, "error", None) == "mpi_abort" and len(aborted) > 1:
            # several processes each ended the job themselves (every rank hit the same error, most often):
            # the order their lines reached the log says nothing of which came first
            evidence = [e for e in self.exits if getattr(e, "error", None) == "mpi_abort"]
            emit(Match(self.sig, first.stream, None, evidence[:EVIDENCE_PER_MATCH], first.step,
                       {"collateral_ranks": [], "aborted_ranks": aborted, "who": "Several processes",
                        "culprit": f"ranks {fmt_ranks(aborted)} each called MPI_Abort",
                        "others": "the job's other processes"}, step_from_event=True))
            return
        others = sorted(self.coll_ranks - {first.rank})
        # Teardown lines count only where the launcher's lines are all the evidence (the first
        # failure is its exit record), and only those of the same launcher (same source).
        torn = ([e for e in self.torn_down if e.loc.source == first.loc.source]
                if getattr(first, "error", None) in _EXIT_RECORDS and not others else [])
        ends_job = bool((getattr(first, "fields", None) or {}).get("ends_job"))
        if not others and not torn and not ends_job:
            return
        evidence = [first] + [e for e in self.coll_events if e.rank != first.rank]
        evidence += torn[:max(0, EVIDENCE_PER_MATCH - len(evidence))]
        parts = []
        if others:
            parts.append(f"ranks {fmt_ranks(others)}")
        if torn:
            named = {r for e in torn for r in ((getattr(e, "fields", None) or {}).get("stopped_ranks") or ())}
            count = len(named - {first.rank}) + sum(
                1 for e in torn if not (getattr(e, "fields", None) or {}).get("stopped_ranks"))
            parts.append(f"{count or len(torn)} other worker(s) (stopped by the launcher)")
        elif ends_job and not others:
            parts.append("the job's other processes (MPI_Abort ends them all)")
        # the ranks a launcher's teardown lines name (srun's `tasks 1-3: Killed`, mpd's / PALS' stopped ranks) are
        # collateral too
        stopped = set()
        for e in torn:
            fields = getattr(e, "fields", None) or {}
            stopped.update(r for r in (fields.get("stopped_ranks") or ()) if isinstance(r, int))
            if isinstance(fields.get("stopped_rank"), int):
                stopped.add(fields["stopped_rank"])
        emit(self.match(first, evidence, collateral_ranks=sorted(set(others) | (stopped - {first.rank})),
                        culprit=_describe(first), others=" and ".join(parts), who=f"Rank {first.rank}"))


class LauncherBlame(Machine):
    """The launcher's "Root Cause" names a rank whose own errors are only collateral (a timeout, a
    lost peer, a teardown signal), while another rank failed first or never reported at all."""

    name = "launcher_blame"
    PARAMS = {"blame": (True, "condition"), "primary": (True, "condition"), "collateral": (True, "condition")}
    LIVE = True
    DEFAULT_EVENTS = ("error", "step", "lifecycle")

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.blame, self.primary, self.collateral = self.cond("blame"), self.cond("primary"), self.cond("collateral")
        self.vmasks = [self.vcond("blame"), self.vcond("primary"), self.vcond("collateral")]
        self.blamed: list = []  # one Root Cause per launcher (per node)
        self.first_primary: Optional[Event] = None
        self.primary_ranks: set = set()
        self.reporting: set = set()
        self.ranks: set = set()
        self.exits: dict = {}  # rank -> (signal, time, error_file) of its entry in the launcher's summary
        self.own_primary: set = set()  # ranks whose own output shows a primary error (not only the summary)
        self.crashed_blamed: set = set()  # Root Cause ranks whose exit is itself a primary (a native crash, SIGKILL)

    def feed(self, ev: Event, emit: Emit) -> None:
        if ev.rank is None:
            return
        self.ranks.add(ev.rank)
        if getattr(ev, "error", None) == "child_failed" and len(self.exits) < 4096:
            f = ev.fields or {}
            self.exits.setdefault(ev.rank, (ev.signal, f.get("time"), f.get("error_file")))
        if self.blame(ev):
            if all(b.rank != ev.rank for b in self.blamed):
                self.blamed.append(ev)
            if self.primary(ev):
                self.crashed_blamed.add(ev.rank)
            return
        if self.primary(ev):
            self.primary_ranks.add(ev.rank)
            if getattr(ev, "error", None) != "child_failed":
                self.own_primary.add(ev.rank)
            if self.first_primary is None or happened_before(ev, self.first_primary):
                self.first_primary = ev
        elif self.collateral(ev):
            self.reporting.add(ev.rank)

    def feed_batch(self, b: Any, emit: Emit) -> None:
        if b.rank is None:
            return
        masks = [m(b) for m in self.vmasks]
        if any(m is None for m in masks):
            return super().feed_batch(b, emit)
        self.ranks.add(b.rank)
        for i in np.nonzero(masks[0] | masks[1] | masks[2])[0].tolist():
            self.feed(b.event(i), emit)

    def _all_alike(self, b: Event) -> Optional[str]:
        """Every exit in the summary the same signal in the same second, and no error file: the Root
        Cause is only the order in which the agent noticed the exits (ChildFailedError sorts by
        time, to the second). Says so, or None. The summary's other entries do not count against it:
        torchrun lists them in no order of time."""
        if len(self.exits) < 2 or b.signal is None or self.own_primary:
            return None
        kinds = set(self.exits.values())
        if len(kinds) != 1:
            return None
        sig, t, err = next(iter(kinds))
        if sig != b.signal or t is None or err is not None:
            return None
        return (f"every worker in the summary (ranks {fmt_ranks(sorted(self.exits))}) died of {sig} at {t.replace('_', ' ')} "
                f"and none wrote an error file: which one is called the root cause is the order in which the agent "
                f"noticed the exits, not evidence of who failed first")

    def finish(self, emit: Emit) -> None:
        for b in self.blamed:
            if b.rank in self.primary_ranks:
                continue
            alike = self._all_alike(b)
            if alike is not None:
                emit(self.match(b, [b], blamed=b.rank, culprit=None, why=alike, arbitrary=True))
                continue
            if b.rank in self.crashed_blamed:
                continue  # the Root Cause crashed itself (a native signal, SIGKILL): no victim's name
            culprit: Optional[int] = None
            if self.first_primary is not None:
                culprit, why = self.first_primary.rank, f"rank {self.first_primary.rank} failed first ({_describe(self.first_primary)})"
            else:
                silent = sorted(self.ranks - self.reporting - {b.rank})
                if len(silent) == 1 and b.rank in self.reporting:
                    culprit, why = silent[0], f"rank {silent[0]} is the only rank that reported no error: it stopped joining collectives"
                elif b.rank in self.reporting:
                    why = (f"rank {b.rank}'s own errors are only collateral (a lost peer or a timeout): the failure "
                           f"started on a rank whose log is not in this input (another node?)")
                else:
                    continue
            emit(self.match(b, [b], blamed=b.rank, culprit=culprit, why=why))
