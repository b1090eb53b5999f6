"""Which rank started it, which ranks were only collateral, and how sure we are.

Evidence tiers, strongest first (DESIGN.md):
  1. a check that fires before the collective: a loss non-finite on some ranks while the others
     are still finite at that step (first_across_ranks signatures);
  2. the first primary error (OOM, CUDA error, Python exception) before the collateral ones
     (timeouts, lost peers, SIGTERM/SIGKILL teardown);
  3. collective bookkeeping (which rank's enqueued work lags);
  4. nothing decisive: say "unknown" and what to enable next time.
Collateral findings are grouped under the finding that caused them.
"""

from __future__ import annotations

import math
from typing import Optional

from nanscope.model import Finding
from nanscope.rankset import fmt_ranks

SEVERITY_ORDER = {"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}
NEXT_TIME = ("keep one log per rank (torchrun --tee 3 --log-dir DIR, or srun --label) and decorate the "
             "entry point with @record (torch.distributed.elastic.multiprocessing.errors)")
NEXT_TIME_MPI = "mpirun --tag-output (or --output-filename DIR) so that every line names its rank"
NUMERICS_WINDOW = 2  # steps after a tier-1 NaN origin that still belong to the same incident


def _earliest(f: Finding) -> tuple:
    m = f.matches[0] if f.matches else None
    ev = m.events[0] if m else None
    ts = ev.origin.ts if ev is not None and ev.origin is not None and ev.origin.ts is not None else None
    return ts, (m.step if m else None), (f.first_loc or ("", 0))


def _before(a: Finding, b: Finding) -> bool:
    """Did a's first match happen before b's? Timestamps first, then steps, then line order."""
    ta, sa, la = _earliest(a)
    tb, sb, lb = _earliest(b)
    if ta is not None and tb is not None and ta != tb:
        return ta < tb
    if sa is not None and sb is not None and sa != sb:
        return sa < sb
    if la[0] == lb[0]:
        return la[1] < lb[1]
    return False


def attribute(findings: list[Finding], job_ranks: set, last_steps: Optional[dict] = None,
              tracebacks: Optional[list] = None) -> list[Finding]:
    """Fill initiating_rank / confidence / decided_by / collateral; return top-level findings in order.
    `last_steps` (stream key -> last step it logged) lets a handled exception be told from a crash;
    `tracebacks` (the `[rankN]: Traceback` headers of torch.distributed's excepthook, as events) say
    which rank raised right after a bare line."""
    ranks = {r for r in job_ranks if r is not None}
    tiers: dict[int, int] = {}
    for f in findings:
        tiers[id(f)] = _own_evidence(f, ranks)
    handled = _handled(findings, last_steps or {})
    findings = [f for f in findings if id(f) not in handled]

    # Tier 1 decides the other numerics findings of the same incident; symptoms group under it.
    tier1 = [f for f in findings if tiers[id(f)] == 1 and f.initiating_rank is not None]
    grouped: list = []
    for t in tier1:
        for f in findings:
            if f is t or f.category != "numerics" or tiers[id(f)] == 1:
                continue
            if f.first_step is not None and t.first_step is not None and 0 <= f.first_step - t.first_step <= NUMERICS_WINDOW:
                f.initiating_rank = t.initiating_rank
                f.confidence = "high"
                f.decided_by = f"tier 1 (from {t.id}): rank {t.initiating_rank} went non-finite first, at step {t.first_step}"
                f.collateral_ranks = sorted(set(f.ranks) - {t.initiating_rank})
                tiers[id(f)] = 1
                if f.sig.role in ("symptom", "collateral") and f not in t.collateral:
                    grouped.append((t, f))
    top_ids = {id(f) for f in findings}
    for t, f in grouped:
        if id(f) in top_ids:
            t.collateral.append(f)
            top_ids.discard(id(f))

    # Tier 2: the first primary error; collateral findings are grouped under it. A cascade
    # finding (the whole story) leads only when no specific primary finding exists.
    # A primary error no rank printed (a bare C++ print) still leads when another line names the
    # process that failed (a vLLM worker that died): that rank is where it happened.
    died_somewhere = any(f.sig.role == "collateral" and _own_failure(f) is not None for f in findings)
    primaries = [f for f in findings if f.sig.role == "primary" and (f.category != "numerics" or _raised(f))
                 and (f.ranks or len(ranks) <= 1 or died_somewhere)]
    specific = [f for f in primaries if f.sig.match["machine"] != "cascade"] or primaries
    root: Optional[Finding] = None
    for f in specific:
        if root is None or _before(f, root):
            root = f
    top = [f for f in findings if id(f) in top_ids]
    if root is not None:
        m = root.matches[0]
        root.initiating_rank = m.rank
        root.confidence = "high" if _earliest(root)[0] is not None or len(ranks) <= 1 else "medium"
        if root.sig.match["machine"] == "cascade" and tiers[id(root)] == 4:
            root.confidence = "low"  # the launcher says a process failed, not which
        elif _launcher_observed(m.events[0]):
            root.confidence = "medium"  # the launcher's order of exits, not the failure's own line
            if root.sig.match["machine"] == "cascade" and getattr(m.events[0], "signal", None) == "SIGABRT" \
                    and _watchdog_seen(findings):
                root.initiating_rank = None
                root.confidence = "low"
                root.decided_by = (f"tier 4: the launcher names rank {m.rank} as the first process to end, by SIGABRT, "
                                   f"while collectives timed out or failed: that abort is as likely the NCCL watchdog's "
                                   f"own after a stall elsewhere as a native crash of rank {m.rank}. Next time: "
                                   f"{NEXT_TIME_MPI}, and TORCH_NCCL_DUMP_ON_TIMEOUT=1")
        others = [f for f in top if f is not root and f.sig.role == "collateral"]
        when = _when(root)
        tied = _same_time_ranks(root) if root.sig.match["machine"] != "cascade" else set()
        # only for a primary line that carries no time of its own: a worker that died after a timed
        # engine error may just have been shut down by it
        died = (next((r for r in (_own_failure(f) for f in others) if r is not None), None)
                if m.rank is None and _earliest(root)[0] is None else None)
        exited = raising = None
        if died is None and m.rank is None and root.sig.match["machine"] != "cascade":
            exited = _launcher_named_failure(findings, root)
            if exited is None:
                raising = _traceback_after(root, tracebacks or [])
            died = exited if exited is not None else raising
        mismatch = _mismatch_culprit(root)
        listed = None
        if mismatch is not None:
            odd, why = mismatch
            root.initiating_rank = odd
            root.confidence = "medium" if odd is not None else "low"
            root.decided_by = why
            tied, died = set(), None
        elif len(tied) > 1:
            root.initiating_rank = None
            root.confidence = "low"
            root.decided_by = (f"tier 4: ranks {fmt_ranks(sorted(tied))} all reported {root.id} in the same second; "
                               f"the log cannot tell which was first")
        elif (alike := _summary_alike(root)) is not None:
            tied = set(alike[0])
            root.initiating_rank = None
            root.confidence = "low"
            root.decided_by = (f"tier 4: torchrun's summary lists ranks {fmt_ranks(alike[0])} all exiting with status "
                               f"{alike[1]} at {alike[2].replace('_', ' ')} and no error file: the order of its entries "
                               f"(and which one it calls the root cause) is the order the agent noticed the exits, not "
                               f"which worker failed first. Next time: {NEXT_TIME}")
        elif (listed := _listed_not_root(root)) is not None:
            listed, root_entry = listed
            if root_entry is None:
                root.initiating_rank = None
                root.confidence = "low"
                root.decided_by = (f"tier 4: torchrun's summary lists rank {listed} under `Failures:`, the failures "
                                   f"other than the first one it observed, and its `Root Cause (first observed "
                                   f"failure)` entry is not in the input: the rank that failed first is not named. "
                                   f"Next time: {NEXT_TIME}")
            else:
                root.initiating_rank = root_entry.rank
                root.confidence = "medium"
                t = (root_entry.fields or {}).get("time")
                root.decided_by = (f"tier 2: torchrun's summary prints the other failures first (rank {listed} under "
                                   f"`Failures:`) and then rank {root_entry.rank} as its `Root Cause (first observed "
                                   f"failure)`" + (f", at {t.replace('_', ' ')}" if t else "") +
                                   f": the agent saw rank {root_entry.rank} exit first")
        elif raising is not None:
            root.initiating_rank = raising
            root.confidence = "medium"
            root.decided_by = (f"tier 2: the first primary error ({root.id}){when} is a bare line (a kernel's or the "
                               f"runtime's own print, which torch's rank prefix does not cover); the traceback that "
                               f"follows it is rank {raising}'s (`[rank{raising}]: Traceback`), the process that raised")
        elif exited is not None:
            root.initiating_rank = exited
            root.confidence = "medium"
            root.decided_by = (f"tier 2: the first primary error ({root.id}){when} names no rank; the launcher's record "
                               f"names rank {exited} as the one worker that failed of its own (the others were stopped "
                               f"after it), so the error is rank {exited}'s")
        elif died is not None:
            root.initiating_rank = died
            root.confidence = "medium"
            root.decided_by = (f"tier 2: the first primary error ({root.id}){when} names no rank; rank {died} is the "
                               f"process that failed first (its own line says so)")
        if root.sig.match["machine"] != "cascade" and len(tied) <= 1 and died is None and mismatch is None \
                and listed is None:
            only = (getattr(m.events[0], "fields", None) or {}).get("only_failure")
            if m.rank is not None and only and getattr(m.events[0], "error", None) == "child_failed":
                root.decided_by = (f"tier 2: torchrun's summary lists rank {m.rank} as the only worker that failed "
                                   f"(exit status {m.events[0].exitcode}, no other failures); its own output has the error")
            elif m.rank is not None:
                root.decided_by = f"tier 2: the first primary error ({root.id}) was on rank {m.rank}{when}"
            elif (own := _sole_named_rank(root, ranks)) is not None:
                root.initiating_rank = own
                root.confidence = "medium"
                root.decided_by = (f"tier 2: the first line of {root.id}{when} names no process; the finding's own "
                                   f"evidence names rank {own}, the only rank in the input")
            elif (task := _srun_task_hit(root, ranks)) is not None:
                root.initiating_rank = task
                root.confidence = "medium"
                root.decided_by = (f"tier 2: the scheduler's first line of {root.id}{when} names no task; srun's record "
                                   f"of the same failure names task {task} (SLURM_PROCID {task}, the rank srun gave that "
                                   f"process), the only rank in the input")
            elif not ranks:
                root.decided_by = f"one process: the input has no rank prefixes (the first primary error: {root.id}{when})"
            else:
                root.decided_by = (f"tier 2: the first primary error ({root.id}){when} was printed by a process that "
                                   f"names no rank (a launcher, scheduler or server line)")
            if others:
                root.decided_by += ", before the collateral errors" + (" on the other ranks" if ranks else "")
        waited = _waited_for_by(root, others)
        if waited is not None:
            r, why = waited
            root.decided_by = (f"tier 3: rank {root.initiating_rank}'s {root.id}{when} came while it waited for rank "
                               f"{r}: {why}")
            root.initiating_rank = r
            root.confidence = "medium"
        if not root.sig.rank_evidence and root.initiating_rank is not None:
            # what every affected rank reports alike: a fault of the node or of the launch (two ranks on one GPU,
            # the node's NVSwitch fabric), or a check of the job's configuration that every rank makes (a batch
            # size the generations do not divide): the rank that printed it first is not where it started
            what = ("a fault of the node or the launch" if root.category == "distributed"
                    else "a check of the job's configuration that every rank makes")
            root.decided_by = (f"tier 4: {root.id} is reported by the ranks it affects alike (rank "
                               f"{root.initiating_rank} printed it first); it is {what}, not a fault of one rank")
            root.initiating_rank = None
            root.confidence = "low"
        tiers[id(root)] = 2
        coll = set(root.collateral_ranks)
        for f in others:
            f.initiating_rank = root.initiating_rank
            f.confidence = root.confidence
            f.decided_by = f"collateral of {root.id}" + (f" on rank {root.initiating_rank}" if root.initiating_rank is not None else "")
            coll |= set(f.ranks) - {root.initiating_rank}
            root.collateral.append(f)
        top = [f for f in top if not any(f is o for o in others)]
        root.collateral_ranks = sorted(coll | (ranks - {root.initiating_rank}) if others else coll)
    else:
        for f in top:
            if f.sig.role == "collateral" and f.initiating_rank is None:
                if _named_dead_peer(f) or _bookkeeping(f, ranks, findings):
                    tiers[id(f)] = 3
                    continue
                lone = _lone_abort(f, findings)
                stopped = (f.matches[0].events[0].fields or {}).get("others_stopped") if lone is not None else None
                if lone is not None and stopped:
                    f.decided_by = (f"tier 4: rank {lone} is the worker torchrun saw fail, by SIGABRT, while the {stopped} "
                                    f"other(s) it then stopped were still running: its process aborted itself, either "
                                    f"the NCCL watchdog after a collective timed out (then another rank stalled) or a "
                                    f"native abort in rank {lone} (a device-side assert, a C++ exception); the input "
                                    f"shows neither. Next time: rank {lone}'s own output (torchrun --tee 3 --log-dir DIR)")
                elif lone is not None:
                    f.decided_by = (f"tier 4: rank {lone} is the only worker that failed, by SIGABRT: its process aborted "
                                    f"itself, either the NCCL watchdog after a collective timed out (then another rank "
                                    f"stalled) or a native abort in rank {lone}; the input shows neither. Next time: "
                                    f"rank {lone}'s own output (torchrun --tee 3 --log-dir DIR)")
                else:
                    which = (f" (rank {f.ranks[0]})" if len(f.ranks) == 1 else f" (ranks {fmt_ranks(f.ranks)})") \
                        if f.ranks else ", naming no rank,"
                    f.decided_by = (f"tier 4: only collateral errors{which} are in the input; "
                                    f"the rank that started it is unknown{_unseen_waited_for(f, ranks)}. "
                                    f"Next time: {NEXT_TIME}")
                f.confidence = "low"
        # A tier-3 finding (who the others waited for) is the root the remaining collateral groups under.
        t3 = next((f for f in top if tiers[id(f)] == 3), None)
        if t3 is not None:
            moved = [f for f in top if f is not t3 and f.sig.role == "collateral" and tiers[id(f)] != 3]
            for f in moved:
                f.initiating_rank = t3.initiating_rank
                f.confidence = t3.confidence
                f.decided_by = f"collateral of {t3.id}" + (f" (rank {t3.initiating_rank})" if t3.initiating_rank is not None else "")
                t3.collateral.append(f)
            top = [f for f in top if not any(f is m for m in moved)]
        else:
            # No culprit in the input: a launcher-blame finding ("the failure is elsewhere") holds the victims.
            lb = next((f for f in top if f.sig.match["machine"] == "launcher_blame"), None)
            if lb is not None:
                moved = [f for f in top if f is not lb and f.sig.role == "collateral"]
                for f in moved:
                    f.decided_by = f"collateral of a failure outside this input (see {lb.id})"
                    lb.collateral.append(f)
                top = [f for f in top if not any(f is m for m in moved)]
        if all(SEVERITY_ORDER[f.severity] < SEVERITY_ORDER["medium"] for f in top):
            for f in top:
                if f.sig.role == "collateral" and tiers[id(f)] != 3:
                    # low for these ranks, but the only sign in the input that the job failed (the
                    # verdict and the exit status go by it): the failure is elsewhere
                    f.severity = "medium"
    # The launcher's blame is corrected by whatever decided the culprit above.
    for f in findings:
        if f.sig.match["machine"] == "launcher_blame" and f.matches:
            culprit = root.initiating_rank if root is not None else None
            if culprit is None:
                culprit = next((g.initiating_rank for g in findings if tiers[id(g)] == 3), None)
            if culprit is None:
                culprit = f.matches[0].extras.get("culprit")
            f.initiating_rank = culprit
            f.confidence = "medium" if culprit is not None else "low"
            blamed = f.matches[0].extras.get("blamed")
            f.decided_by = (f"torchrun named rank {blamed} as the root cause, but "
                            f"{f.matches[0].extras.get('why', 'its own errors are only collateral')}")
            f.collateral_ranks = sorted(ranks - {culprit}) if culprit is not None else []

    # A cascade (a rank died, the launcher stopped the others) whose first line is the same process death
    # another finding reads with its cause (mpirun's `exited on signal 9 (Killed)` as process-killed, torchrun's
    # `exitcode: -11` as worker-segfault) is the story around that death: the death and what caused it come first.
    # (any of the finding's deaths: a shell's `Segmentation fault (core dumped)` first, then the launcher's
    # `rank 0 exited with code 139`, which the cascade starts from, are one death)
    firsts = {ln for f in top if f.sig.match["machine"] != "cascade" and _died_of(f) for ln in _death_lines(f)}
    around = {id(f) for f in top if f.sig.match["machine"] == "cascade" and _first_line(f) in firsts}

    def order(f: Finding) -> tuple:
        t = tiers[id(f)]
        rank_key = 0 if t in (1, 2) else 1
        step = f.first_step if f.first_step is not None else math.inf
        # on the same step and severity, a symptom (grad-norm-nonfinite: "the logged loss looks finite")
        # comes after the finding that says what happened (the loss spiked at that step)
        return (rank_key, t if t in (1, 2) else 9, id(f) in around, -SEVERITY_ORDER[f.severity], step,
                f.sig.role == "symptom", f.id)

    return sorted(top, key=order)


def _first_line(f: Finding) -> tuple:
    ev = f.matches[0].events[0]
    return ev.loc.source, ev.loc.line


def _death_lines(f: Finding) -> set:
    """The lines of f's matches that are a process's death by a signal or an exit status."""
    return {(ev.loc.source, ev.loc.line) for m in f.matches for ev in m.events[:1]
            if getattr(ev, "signal", None) or getattr(ev, "exitcode", None) is not None}


def _died_of(f: Finding) -> bool:
    """The finding's first line is a process's death by a signal or an exit status."""
    ev = f.matches[0].events[0]
    return bool(getattr(ev, "signal", None)) or getattr(ev, "exitcode", None) is not None


_FAILURE_KINDS = ("peer_connection_lost", "collective_timeout", "watchdog_abort", "nccl_error", "signal_received",
                  "child_failed", "worker_failed")


def _handled(findings: list, last_steps: dict) -> set:
    """The ids of generic Python exceptions that did not end their process: the rank logged further
    steps, the other ranks trained past that step (which a data-parallel rank cannot allow while it
    is dead), and nothing in the job failed, timed out or was torn down: a caught exception whose
    traceback the script printed, not a crash (no finding). A single process is never judged so: a
    block-buffered stdout prints steps that ran before a crash after its traceback."""
    if any(getattr(ev, "error", None) in _FAILURE_KINDS for f in findings for m in f.matches for ev in m.events):
        return set()
    out = set()
    for f in findings:
        if f.sig.role != "primary" or not f.matches:
            continue
        evs = [m.events[0] for m in f.matches if m.events]
        if not evs or any(getattr(ev, "error", None) != "exception" for ev in evs):
            continue
        for ev in evs:
            fl = getattr(ev, "fields", None) or {}
            at, after = fl.get("step_at_raise"), fl.get("steps_after", 0)
            past = [k for k, s in last_steps.items() if k != ev.stream and s is not None and at is not None and s > at]
            if ev.stream is None or ev.stream[0] == "source" or at is None or after < 2 or not past:
                break
        else:
            out.add(id(f))
    return out


_BARE_SPAN = 40  # lines from a bare error line to the traceback header it belongs to


def _traceback_after(root: Finding, tracebacks: list) -> Optional[int]:
    """The rank of the first `[rankN]: Traceback` header (torch.distributed's excepthook, which
    prefixes an uncaught exception's traceback and nothing else a process prints) that follows the
    bare lines of `root` in the same file, within _BARE_SPAN lines of the last of them: a CUDA
    device-side assert, a C++ error print, then the traceback of the exception they raised. None
    when no such header follows, or when two ranks' headers follow the same line."""
    if not tracebacks or not root.first_loc:
        return None
    src, first = root.first_loc
    lines = sorted(ev.loc.line for m in root.matches for ev in m.events
                   if ev.loc.source == src and ev.rank is None and ev.loc.line >= first)
    if not lines:
        return None
    after = sorted((ev.loc.line, ev.rank) for ev in tracebacks if ev.loc.source == src and ev.loc.line > first)
    for line, rank in after:
        near = [ln for ln in lines if ln < line]
        if near and line - near[-1] <= _BARE_SPAN:
            same_line = {r for ln, r in after if ln == line}
            return rank if len(same_line) == 1 else None
        if near:
            return None  # the nearest header is too far from the bare lines to be theirs
    return None


def _launcher_named_failure(findings: list, root: Finding) -> Optional[int]:
    """The rank a launcher's record names as the one worker that failed of its own accord (torchrun's
    agent `failed (exitcode: 1) local_rank: 1`, Open MPI's `The first process to do so was`), when a
    cascade finding was built on that record: the others were stopped after it (SIGTERM, lost
    peers). A primary error line that names no process and came before that record is that
    worker's: it is what made it exit. None when no such single record exists."""
    named = set()
    for g in findings:
        if g is root or g.sig.match["machine"] != "cascade" or not g.matches:
            continue
        ev = g.matches[0].events[0] if g.matches[0].events else None
        if ev is None or ev.rank is None or getattr(ev, "error", None) not in ("child_failed", "worker_failed"):
            continue
        if _before(g, root):
            continue  # the record came first: the unnamed error may be a later one, of another process
        named.add(ev.rank)
    # (a second worker's own failed exit puts two ranks in the input: the unnamed line is then no
    # primary candidate at all, see `primaries` in attribute)
    return next(iter(named)) if len(named) == 1 else None


def _raised(f: Finding) -> bool:
    """A numerics finding made of a process's own error line (autograd anomaly mode's `Function X
    returned nan values`, a NaN check that raised) rather than of logged values: it ended the
    process the way any other primary error does, so it competes as the first primary error."""
    if tiers_ok := bool(f.matches):
        tiers_ok = all(_ends_process(m.events[0]) for m in f.matches if m.events)
    return tiers_ok and f.sig.tier != 1


def _ends_process(ev) -> bool:
    """An error line, or a logged value the loop stopped the process on (raw_fields exits_process: the
    MetricLogger loops' `Loss is nan, stopping training`, then sys.exit(1))."""
    if getattr(ev, "kind", None) == "error":
        return True
    return bool((getattr(ev, "raw_fields", None) or {}).get("exits_process"))


def _sole_named_rank(f: Finding, ranks: set) -> Optional[int]:
    """The rank of a finding whose first line names no process (a traceback's bare exception line,
    SGLang's unprefixed `Received sigquit`) when a later line of the same finding names one rank
    (`[Rank 1] NCCL watchdog thread terminated with exception: CUDA error: ...`, `[... TP3] Scheduler
    hit an exception`) and no other rank appears anywhere in the input: then no other process is
    there to have printed the first line. With more ranks in the input, None (it cannot say). Only a
    process's own line counts (its prefix, or a line that says it failed itself): a launcher's report
    that names a task (`srun: error: node: task 4: Out Of Memory`) says who was hit, not who printed
    the first line."""
    named: set = set()
    for m in f.matches:
        for ev in m.events:
            own = (getattr(ev, "fields", None) or {}).get("own_failure")
            origin = getattr(ev, "origin", None)
            if ev.rank is not None and (own or (origin is not None and origin.rank == ev.rank)):
                named.add(ev.rank)
            elif ev.rank is not None:
                return None
    if len(named) == 1 and ranks == named:
        return next(iter(named))
    return None


def _srun_task_hit(f: Finding, ranks: set) -> Optional[int]:
    """The task srun names for a failure whose first line is the scheduler's own (slurmstepd's
    `Detected 1 oom-kill event(s) in step N.0 cgroup`, no task), when srun's record of it
    (`srun: error: node: task 4: Out Of Memory`, src/srun/step_launch.c) names one task and no other
    rank is in the input: srun numbers its tasks by SLURM_PROCID, the MPI rank of a step launched
    by srun. Under a launcher that srun starts once per node (torchrun, DeepSpeed) the task is a
    node's agent, and the input then shows the workers' own ranks, so this does not apply."""
    named: set = set()
    for m in f.matches:
        for ev in m.events:
            if ev.rank is None:
                continue
            fields = getattr(ev, "fields", None) or {}
            if fields.get("source") != "srun" or len(fields.get("tasks") or ()) != 1:
                return None
            named.add(ev.rank)
    if len(named) == 1 and ranks == named:
        return next(iter(named))
    return None


def _waited_for_by(root: Finding, others: list) -> Optional[tuple[int, str]]:
    """The rank the root's own rank was waiting for when it failed: a collateral wait on that same
    rank, no later than the root's first line, whose message names the rank it waited for (a
    monitored barrier's send / recv with rank 0, a store wait for rank 0's ncclUniqueId). Then the
    root's error is that wait's consequence, and the rank it waited for is where it started."""
    me = root.initiating_rank
    if me is None:
        return None
    own = [ev for m in root.matches for ev in m.events if getattr(ev, "rank", None) == me]
    first = own[0] if own else None
    for f in others:
        for m in f.matches:
            ev = m.events[0]
            fields = getattr(ev, "fields", None) or {}
            r = fields.get("waited_for")
            if r is None or r == me or m.rank != me or getattr(ev, "error", None) != "collective_timeout":
                continue
            if first is not None and ev.loc.source == first.loc.source and ev.loc.line > first.loc.line:
                continue  # (a wait after the rank's own error is its consequence, not its cause)
            return r, fields.get("waited_why") or f"its wait names rank {r} as the rank that never answered"
    return None


def _unseen_waited_for(f: Finding, ranks: set) -> str:
    """For timeouts in a collective: the ranks below the highest reporting one that the input never
    shows at all. Ranks count from 0, so they exist, and one of them (or a rank above the highest
    shown, the world size being unknown) is the one the others waited for; a hint, never a claim."""
    if len(f.ranks) < 2 or not all(getattr(ev, "error", None) == "collective_timeout" for m in f.matches for ev in m.events[:1]):
        return ""
    unseen = sorted(set(range(max(f.ranks))) - ranks - set(f.ranks))
    if not unseen or len(unseen) > 4:
        return ""
    top = max(f.ranks)
    if len(unseen) == 1:
        return (f" (rank {unseen[0]} never appears in the input, though rank {top} does: it, or a rank above "
                f"{top}, is likely the one they waited for)")
    return (f" (ranks {fmt_ranks(unseen)} never appear in the input, though rank {top} does: the one they waited "
            f"for is likely among them, or above rank {top})")


def _when(f: Finding) -> str:
    ts, step, _ = _earliest(f)
    if step is not None:
        return f" at step {step}"
    return ""


def _named_dead_peer(f: Finding) -> bool:
    """Tier 3 for lost peers: the message itself names the one process that went away (the JAX coordination
    service's `Task /job:jax_worker/replica:0/task:N heartbeat timeout`, N the process id), and that process
    reports nothing of its own in the finding: it is where the failure started."""
    named = {(getattr(ev, "fields", None) or {}).get("dead_peer_rank") for m in f.matches for ev in m.events[:1]}
    if len(named) != 1 or None in named:
        return False
    r = next(iter(named))
    if r in f.ranks:
        return False
    why = next(((getattr(ev, "fields", None) or {}).get("dead_peer_why") for m in f.matches for ev in m.events[:1]
                if (getattr(ev, "fields", None) or {}).get("dead_peer_why")), None)
    f.initiating_rank = r
    f.confidence = "medium"
    f.decided_by = f"tier 3: {why}" if why else f"tier 3: the message names rank {r} as the process that went away"
    f.collateral_ranks = sorted(f.ranks)
    return True


def _bookkeeping(f: Finding, ranks: set, findings: Optional[list] = None) -> bool:
    """Tier 3 for collective timeouts: the rank that never reported one, or whose last enqueued
    collective lags behind everyone else's, is the one the others were waiting for."""
    if not all(getattr(ev, "error", None) == "collective_timeout" for m in f.matches for ev in m.events[:1]):
        return False
    reporting = set(f.ranks)
    # a rank whose watchdog took its process down ("Some NCCL operations have failed or timed out") had a
    # collective fail too: it is no silent rank, whether or not its timeout line is in the input
    aborted = {ev.rank for g in (findings or ()) for m in g.matches for ev in m.events
               if getattr(ev, "error", None) == "watchdog_abort" and ev.rank is not None}
    silent = sorted(ranks - reporting - aborted)
    # The message itself names the rank waited for (broadcastUniqueNCCLID: `[3] is setting up NCCL communicator
    # and retrieving ncclUniqueId from [0] ... got error: wait timeout`): that rank never published its id.
    waited = {(getattr(ev, "fields", None) or {}).get("waited_for") for m in f.matches for ev in m.events[:1]}
    waited.discard(None)
    if len(waited) == 1 and not (waited & reporting):
        r = next(iter(waited))
        f.initiating_rank = r
        f.confidence = "medium"
        # the message's own account of the wait (a monitored barrier naming the rank that never acked)
        why = next(((getattr(ev, "fields", None) or {}).get("waited_why") for m in f.matches for ev in m.events[:1]
                    if (getattr(ev, "fields", None) or {}).get("waited_why")), None)
        f.decided_by = (f"tier 3: {why}" if why else
                        f"tier 3: ranks {fmt_ranks(sorted(reporting)) or '(unnamed)'} timed out waiting in the c10d store "
                        f"for rank {r}'s ncclUniqueId: rank {r} never created its NCCL communicator (still busy, hung "
                        f"or crashed before it)")
        f.collateral_ranks = sorted(reporting)
        return True
    # The rank that waits in a different collective than all the others took another code path
    # (PyTorch 1.9 prints no SeqNum, so the op is all there is to compare).
    ops: dict = {}
    for m in f.matches:
        for ev in m.events[:1]:
            c = getattr(ev, "collective", None)
            if ev.rank is not None and c is not None and c.op is not None:
                ops.setdefault(ev.rank, c.op)
    counts: dict = {}
    for op in ops.values():
        counts[op] = counts.get(op, 0) + 1
    if len(ops) >= 3 and len(counts) == 2 and min(counts.values()) == 1:
        odd_op = min(counts, key=lambda k: counts[k])
        odd = next(r for r, op in ops.items() if op == odd_op)
        f.initiating_rank = odd
        f.confidence = "medium"
        f.decided_by = (f"tier 3: rank {odd} timed out in {odd_op} while ranks {fmt_ranks(sorted(set(ops) - {odd}))} "
                        f"timed out in {max(counts, key=lambda k: counts[k])}: rank {odd} took a different code path")
        f.collateral_ranks = sorted(set(ops) - {odd})
        return True
    # A rank reading the group's ncclUniqueId from the store waits for the group's rank 0 (broadcastUniqueNCCLID's
    # `retrieving ncclUniqueId from [0]`) and for no one else: another rank that reported nothing waited too, or
    # failed in a way the input does not show, and is no evidence of whom they waited for.
    roots = {(getattr(ev, "fields", None) or {}).get("root") for m in f.matches for ev in m.events[:1]
             if (getattr(ev, "fields", None) or {}).get("phase") == "communicator set-up"}
    id_reads_only = bool(roots) and all((getattr(ev, "fields", None) or {}).get("phase") == "communicator set-up"
                                        for m in f.matches for ev in m.events[:1])
    if len(ranks) >= 2 and len(silent) == 1 and not (id_reads_only and silent[0] not in roots):
        f.initiating_rank = silent[0]
        f.confidence = "medium"
        f.decided_by = (f"tier 3: ranks {fmt_ranks(reporting)} timed out waiting in a collective; rank {silent[0]} "
                        f"is the only rank that never reported a timeout, so it never joined that collective")
        f.collateral_ranks = sorted(reporting)
        return True
    enq: dict = {}
    for m in f.matches:
        for ev in m.events:
            c = getattr(ev, "collective", None)
            if c is not None and c.enqueued is not None and ev.rank is not None:
                enq[ev.rank] = min(enq.get(ev.rank, c.enqueued), c.enqueued)
    if len(enq) >= 2:
        low = min(enq.values())
        laggards = sorted(r for r, e in enq.items() if e == low)
        if len(laggards) == 1 and low < max(enq.values()):
            f.initiating_rank = laggards[0]
            f.confidence = "medium"
            f.decided_by = (f"tier 3: rank {laggards[0]}'s last enqueued collective ({low}) lags behind the other "
                            f"ranks' ({max(enq.values())}): it never reached the collective they wait in")
            f.collateral_ranks = sorted(set(enq) - {laggards[0]})
            return True
    return False


_WATCHDOG_ERRORS = ("collective_timeout", "watchdog_abort", "nccl_error")


def _lone_abort(f: Finding, findings: list) -> Optional[int]:
    """The rank of a lone SIGABRT exit in torchrun's summary (no other worker failed) when no line of
    the input is a watchdog's: the one case where SIGABRT is not plainly the teardown. Else None."""
    evs = [ev for m in f.matches for ev in m.events[:1]]
    if len(evs) != 1 or getattr(evs[0], "signal", None) != "SIGABRT" or evs[0].rank is None:
        return None
    fields = getattr(evs[0], "fields", None) or {}
    if not fields.get("only_failure") and not fields.get("others_stopped"):
        return None  # (the agent's first failure, logged after it stopped the workers still running, counts)
    for g in findings:
        for m in g.matches:
            if any(getattr(ev, "error", None) in _WATCHDOG_ERRORS for ev in m.events):
                return None
    return evs[0].rank


def _watchdog_seen(findings: list) -> bool:
    """Did any line of the input report a collective timeout, a watchdog abort or an NCCL error?"""
    return any(getattr(ev, "error", None) in _WATCHDOG_ERRORS for g in findings for m in g.matches for ev in m.events)


def _launcher_observed(ev) -> bool:
    """A launcher's record of the first exit it saw (Open MPI's "The first process to do so was"):
    who exited first, not why."""
    return bool((getattr(ev, "fields", None) or {}).get("first_observed"))


def _own_failure(f: Finding) -> Optional[int]:
    """The rank a collateral finding's lines say failed itself (a vLLM worker process that died, a
    watchdog that found a CUDA error on its own stream), or None."""
    for m in f.matches:
        for ev in m.events:
            fields = getattr(ev, "fields", None) or {}
            if fields.get("own_failure") and ev.rank is not None:
                return ev.rank
    return None


def _mismatch_culprit(f: Finding) -> Optional[tuple]:
    """ProcessGroupWrapper's `Rank A is running collective X, but Rank B is running collective Y` is
    printed by A about a pair: the reporter is not the culprit. The rank whose op is the odd one out
    across the reports is; with one pair nobody can tell. None when f is not a mismatch report.

    One report can still say more, from how it is made (torch/csrc/distributed/c10d/
    ProcessGroupWrapper.cpp CollectiveFingerPrint::verify_tensors): A allgathers every rank's
    fingerprint and names the first rank, in rank order, whose fingerprint differs from its own. So
    ranks 0..B-1 all run A's collective; when that is at least two ranks with A, B is the first rank
    off the sequence they share (`Rank 1 ... but Rank 7`: ranks 0-6 agree, 7 left them). `but Rank 0`
    says only that A and rank 0 differ."""
    ops: dict = {}
    seen = False
    first_off: set = set()
    for m in f.matches:
        for ev in m.events:
            fields = getattr(ev, "fields", None) or {}
            if fields.get("state") != "mismatch":
                continue
            seen = True
            pair = fields.get("mismatch_ranks") or []
            c = getattr(ev, "collective", None)
            if pair:
                ops.setdefault(pair[0], c.op if c is not None else None)
            if len(pair) > 1 and fields.get("other_op") is not None:
                ops.setdefault(pair[1], fields["other_op"])
            if len(pair) > 1 and pair[1] > 0 and len(set(range(pair[1])) | {pair[0]}) >= 2 and pair[0] != pair[1]:
                first_off.add(pair[1])
    if not seen:
        return None
    if len(first_off) == 1:
        odd = next(iter(first_off))
        return odd, (f"tier 2: the collective checker on each reporter names the first rank, in rank order, whose "
                     f"collective differs from its own: ranks 0-{odd - 1} run the reporter's collective and rank "
                     f"{odd} does not, so rank {odd} left the sequence the others share")
    counts: dict = {}
    for op in ops.values():
        counts[op] = counts.get(op, 0) + 1
    if len(ops) >= 3 and len(counts) == 2:
        odd_op = min(counts, key=lambda k: counts[k])
        odd = [r for r, op in ops.items() if op == odd_op]
        if len(odd) == 1 and counts[odd_op] < max(counts.values()):
            return odd[0], (f"tier 2: rank {odd[0]} runs {odd_op} while ranks "
                            f"{fmt_ranks(sorted(r for r in ops if r != odd[0]))} run another collective")
    return None, (f"tier 4: the mismatch report names ranks {fmt_ranks(sorted(ops))}; the reporter is not the culprit "
                  f"and the log cannot tell which side of the pair took the other code path")


def _summary_alike(f: Finding) -> Optional[tuple]:
    """(ranks, exit status, time) when f is made of torchrun's summary entries alone (ChildFailedError's
    `rank : N (local_rank: M)` blocks) for two ranks or more that all exited with the same status in the
    same second and wrote no error file: the summary then says nothing of which came first (the agent
    stamps each failure when it notices it, to the second, and lists the others in no order of time).
    None otherwise."""
    evs = [m.events[0] for m in f.matches if m.events]
    if len(evs) < 2 or any(getattr(ev, "error", None) != "child_failed" or ev.framework != "torchrun" for ev in evs):
        return None
    kinds = {(ev.exitcode, (ev.fields or {}).get("time"), (ev.fields or {}).get("error_file")) for ev in evs}
    ranks = sorted({ev.rank for ev in evs if ev.rank is not None})
    if len(kinds) != 1 or len(ranks) < 2:
        return None
    code, t, err = next(iter(kinds))
    if t is None or err is not None:
        return None
    return ranks, code, t


def _listed_not_root(f: Finding) -> Optional[tuple]:
    """(rank, root entry) when f's first match is a torchrun summary entry from the `Failures:` section:
    ChildFailedError.format_msg prints every failure but the root cause there, then the root cause in a
    section of its own (`Root Cause (first observed failure):`, the failure with the earliest timestamp),
    so the first entry in the text is one the agent saw after the root cause. The root entry is f's
    entry from that section (its event), or None where the excerpt was cut before it. None otherwise."""
    ev = f.matches[0].events[0] if f.matches and f.matches[0].events else None
    if ev is None or getattr(ev, "error", None) != "child_failed" or ev.rank is None:
        return None
    if (ev.fields or {}).get("root_cause") is not False:
        return None
    for m in f.matches:
        e = m.events[0] if m.events else None
        if e is not None and getattr(e, "error", None) == "child_failed" and (e.fields or {}).get("root_cause") \
                and e.rank is not None:
            return ev.rank, e
    return ev.rank, None


def _same_time_ranks(f: Finding) -> set:
    """Ranks whose first match of f carries the same timestamp as f's first match."""
    ts = _earliest(f)[0]
    if ts is None:
        return set()
    out = set()
    for m in f.matches:
        ev = m.events[0] if m.events else None
        if ev is not None and ev.origin is not None and ev.origin.ts == ts and m.rank is not None:
            out.add(m.rank)
    return out


def _own_evidence(f: Finding, ranks: set) -> int:
    """What the finding's own matches say about its rank. Returns the tier that decided (or 9)."""
    sig = f.sig
    machine = sig.match["machine"]
    if machine == "cascade" and f.matches:
        m = f.matches[0]
        f.initiating_rank = m.rank
        f.confidence = "high" if m.events[0].origin is not None and m.events[0].origin.ts is not None else "medium"
        f.collateral_ranks = list(m.extras.get("collateral_ranks", []))
        others = m.extras.get("others") or (f"ranks {fmt_ranks(f.collateral_ranks)}" if f.collateral_ranks else "the others")
        if m.rank is None and m.extras.get("aborted_ranks"):
            f.confidence = "low"
            f.decided_by = (f"tier 4: ranks {fmt_ranks(m.extras['aborted_ranks'])} each ended the job with MPI_Abort "
                            f"themselves (most often the same error on every rank): the order of their lines does "
                            f"not say which came first; each rank's output before its abort says why")
            return 4
        if m.rank is None:
            f.confidence = "low"
            f.decided_by = (f"tier 4: the launcher says one process failed and the job was aborted, but names no "
                            f"rank; {others} only lost their peers. Next time: {NEXT_TIME_MPI}")
            return 4
        if _launcher_observed(m.events[0]):
            f.confidence = "medium"
            f.decided_by = (f"tier 2: the launcher saw rank {m.rank} exit first ({m.extras.get('culprit', '')}); "
                            f"{others} failed or were torn down after it. The launcher's order of exits is not "
                            f"the order of failures: a rank's own error, where the log has one, decides")
            return 2
        f.decided_by = (f"tier 2: rank {m.rank} failed first ({m.extras.get('culprit', '')}); "
                        f"{others} failed or were torn down after it")
        if getattr(m.events[0], "error", None) == "mpi_abort":
            f.decided_by = (f"tier 2: rank {m.rank} ended the job itself ({m.extras.get('culprit', '')}): a "
                            f"program calls MPI_Abort after an error of its own, and the MPI runtime then kills "
                            f"{others}; that rank's output before the abort says why")
        if (getattr(m.events[0], "fields", None) or {}).get("thread"):
            f.decided_by = (f"tier 2: a thread of rank {m.rank} died first ({m.extras.get('culprit', '')}); "
                            f"{others} failed or were torn down after it: not a crash of rank {m.rank} but a hang "
                            f"that started there")
        return 2
    if machine == "launcher_blame":
        return 9
    if machine == "named_peer" and f.matches:
        m = f.matches[0]
        group = m.extras.get("group")
        f.initiating_rank = None
        f.confidence = "medium"
        f.decided_by = (f"{m.extras.get('reporters')} processes{f' on {group}' if group else ''} lost local "
                        f"rank {m.extras.get('peer')} and no other, so that process exited first; the lines name a "
                        f"local rank on that host, not the global rank (which needs the node's rank and the "
                        f"processes per node)")
        return 9  # who exited first, not why: it groups no other finding under it
    if sig.tier == 1 and f.matches:
        m = f.matches[0]
        f.initiating_rank = m.rank
        f.confidence = "high"
        f.decided_by = (f"tier 1: rank {m.rank} reported it from a check that runs before the collective, "
                        f"so the value was already bad there")
        f.collateral_ranks = sorted(ranks - {m.rank})
        return 1
    if machine == "first_across_ranks" and f.matches:
        m = f.matches[0]
        bad, good = m.extras.get("bad_ranks", []), m.extras.get("good_ranks", [])
        processes = m.extras.get("bad_processes")
        if processes:  # known by node and local rank only (`1: [default1]:` without the processes per node)
            f.initiating_rank = None
            if len(processes) == 1:
                f.confidence = "medium"
                f.decided_by = (f"tier 1: {processes[0]} had a non-finite value at step {m.step} while "
                                f"{m.extras.get('good')} were still finite; the text names that process by node "
                                f"and local rank only, so no global rank is claimed. Next time: keep torchrun's "
                                f"start-up lines (nproc_per_node) or log the global rank")
                return 1
            f.confidence = "low"
            f.decided_by = (f"tier 4: {', '.join(processes)} went non-finite at the same step {m.step}; the log "
                            f"cannot tell which was first")
            return 4
        if len(bad) == 1:
            f.initiating_rank = bad[0]
            f.confidence = "high"
            f.decided_by = (f"tier 1: rank {bad[0]} had a non-finite value at step {m.step} while ranks "
                            f"{fmt_ranks(good)} were still finite")
            f.collateral_ranks = sorted(ranks - {bad[0]})
            return 1
        f.decided_by = f"tier 4: ranks {fmt_ranks(bad)} went non-finite at the same step {m.step}; the log cannot tell which was first"
        return 4
    if not sig.rank_evidence:
        f.decided_by = ("tier 4: this line is printed once for the whole job (by rank 0), so it does not say "
                        "which rank started it. Next time: TORCH_NCCL_NAN_CHECK=1, or log the loss on every rank")
        f.confidence = "low"
        return 4
    if len(ranks) <= 1:
        only = next(iter(ranks)) if ranks else None
        if sig.role == "collateral" and _own_failure(f) is None:  # rank 0 is a rank
            # a timeout, a lost peer, an abort: the one rank shown waited on (or lost) another one
            return 9
        local = sorted({m.stream for m in f.matches if isinstance(m.stream, tuple) and m.stream[:1] == ("local",)},
                       key=str)
        if only is None and len(local) > 1:
            # `1: [default1]:` without the processes per node: several processes, no global ranks
            f.confidence = "low"
            f.decided_by = (f"tier 4: {len(local)} processes known only by node and local rank show it; the text does "
                            f"not say how many processes each node runs, so no global rank can be named. Next "
                            f"time: keep torchrun's start-up lines (nproc_per_node) or log the global rank")
            return 4
        f.initiating_rank = only
        f.confidence = "high"
        f.decided_by = "one process: the input shows a single rank" if only is not None else "one process: the input has no rank prefixes"
        return 0
    if len(f.ranks) == 1 and sig.role == "primary":
        f.initiating_rank = f.ranks[0]
        f.confidence = "medium"
        f.decided_by = f"only rank {f.ranks[0]} shows it"
        return 5
    if f.ranks:
        f.decided_by = (f"ranks {fmt_ranks(f.ranks)} all show it from step {f.first_step}; the log cannot tell which "
                        f"started it. Next time: TORCH_NCCL_NAN_CHECK=1 names the origin rank")
        f.confidence = "low"
    return 9
