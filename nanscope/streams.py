"""Per-(node, rank) streams: fill in what one line cannot know, and keep the per-rank ledger.

- A step-less event (an overflow, an exception) gets the step in progress: the stream's last
  logged step + 1.
- A step line whose printed loss scale fell below the previous one yields a derived ScaleEvent
  (GradScaler prints nothing when it skips a step; the halved scale is the trace it leaves).
- The ledger per rank: steps seen, first/last step, non-finite steps, skipped steps, scale range.
Memory is a few numbers per stream, whatever the log size.
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional

from nanscope.lazynp import np

from nanscope.model import ErrorEvent, Event, RankSummary, ScaleEvent, StepEvent
from nanscope.stepbatch import StepBatch


SMALL_BATCH = 16  # rows: below this, plain Python is cheaper than array calls
# Step lines after an exception that can still belong before it: a block-buffered stdout (8 KiB
# in CPython) flushes at most a few hundred step lines after the traceback on stderr. A stream
# that logs more steps than this after an exception survived it (a handled exception, printed
# with its traceback): the exception keeps the step it was printed at.
FATAL_HORIZON = 1024


class _Stream:
    __slots__ = ("summary", "step", "scale", "steps_seen", "overflows", "cum_skipped", "fatal", "counted")

    def __init__(self, summary: RankSummary):
        self.summary = summary
        self.step: Optional[int] = None
        self.scale: Optional[float] = None
        self.steps_seen = 0
        self.overflows = 0  # explicit overflow lines (DeepSpeed)
        self.cum_skipped = 0  # the largest cumulative skip counter printed (DeepSpeed skipped=K)
        # exceptions whose step later step lines may still correct: [event, step lines left, its step]
        self.fatal: list[list] = []
        self.counted = False  # every step so far is a count of step lines: the log printed no step number


# torchrun's records of its workers (the agent's `failed (exitcode: N) local_rank: M` line, its ChildFailedError
# table's `rank      : N (local_rank: M)` entries): once one is in the input, srun's tasks are the nodes' agents
# (srun starting one torchrun per node), so srun's `task N` that follows is a node's launcher, not rank N.
_AGENT_RECORDS = ("child_failed", "worker_failed")


class Streams:
    def __init__(self) -> None:
        self._streams: dict[Any, _Stream] = {}
        self._elastic_agent = False  # a torchrun agent's record of a worker was read

    def _get(self, ev: Event) -> _Stream:
        st = self._streams.get(ev.stream)
        if st is None:
            kind = ev.stream[0]
            rank = ev.stream[2] if kind == "rank" else None
            node = ev.stream[1] if kind != "source" else None
            label = _label(ev.stream)
            st = self._streams[ev.stream] = _Stream(RankSummary(rank=rank, node=node, label=label))
        return st

    def process(self, ev: Event) -> Iterator[Event]:
        if ev.kind == "steps":
            yield from self.process_batch(ev)  # type: ignore[arg-type]
            return
        if ev.kind == "metrics_rows":
            yield from self.process_rows(ev)
            return
        if ev.kind != "step":
            self._srun_under_agent(ev)
        st = self._get(ev)
        if isinstance(ev, StepEvent):
            st.steps_seen += 1
            if ev.step is None:
                if st.step is None:
                    st.counted = True
                ev.step = st.step + 1 if st.step is not None else st.steps_seen
                ev.step_counted = st.counted
            else:
                st.counted = False
            new_step = ev.step != st.step
            if st.fatal:
                for f in st.fatal:
                    # A block-buffered stdout flushes step lines after the traceback on stderr: those
                    # steps ran before the exception, which belongs to the step after them.
                    err = f[0]
                    if err.step is not None and ev.step >= err.step:
                        err.step = ev.step + 1
                    if new_step and err.fields is not None:
                        # counted for attribution: a rank that logs on may have handled the exception
                        err.fields["steps_after"] = err.fields.get("steps_after", 0) + 1
                    f[1] -= 1
                st.fatal = _pending(st.fatal)
            st.step = ev.step
            derived = self._ledger(st, ev, new_step)
            yield ev
            if derived is not None:
                yield derived
            return
        if st.step is None and ev.origin is not None and ev.origin.local_rank is not None and ev.stream[0] == "rank":
            # "[default1]:[rank3]: Traceback" on node1: the steps were logged under the local rank.
            local = self._streams.get(("local", ev.stream[1], ev.origin.local_rank))
            if local is not None:
                st.step = local.step
                if isinstance(ev, ErrorEvent) and ev.exc_type:
                    printed_at = ev.step if ev.step is not None else (local.step + 1 if local.step is not None else None)
                    local.fatal.append([ev, FATAL_HORIZON, printed_at])
        if ev.step is None and st.step is not None:
            # A step-less line (an overflow, an exception, a teardown) happens during the step in
            # progress: the one after the last step this stream logged.
            ev.step = st.step + 1
            ev.step_counted = st.counted
            if isinstance(ev, ErrorEvent) and ev.exc_type and len(st.fatal) < 8:
                ev.fields = {**(ev.fields or {}), "step_at_raise": ev.step}
                st.fatal.append([ev, FATAL_HORIZON, ev.step])
        if isinstance(ev, ScaleEvent) and ev.action in ("overflow", "decrease", "minimum"):
            if ev.action == "overflow":
                st.overflows += 1
            if ev.new_scale is not None:
                _scale_range(st.summary, ev.new_scale)
        yield ev

    def _srun_under_agent(self, ev: Event) -> None:
        """srun numbers its tasks by SLURM_PROCID, a rank only when srun starts the workers themselves. After
        a torchrun agent's record of a worker (its table, its `failed (exitcode ...)` line) srun's task is a
        node's agent (`srun: error: host: task 0: Exited with exit code 1` is node 0's torchrun exiting after
        its worker failed): the task number goes to `fields.agent_task(s)`, the event names no rank."""
        fields = getattr(ev, "fields", None)
        if ev.framework == "torchrun":
            if getattr(ev, "error", None) in _AGENT_RECORDS:
                self._elastic_agent = True
            return
        if not self._elastic_agent or not fields or fields.get("source") != "srun":
            return
        if ev.kind == "error" and ev.rank is not None:
            ev.fields = {**fields, "agent_task": ev.rank}
            ev.rank = None
        elif fields.get("stopped_ranks"):
            ev.fields = {**fields, "agent_tasks": fields["stopped_ranks"], "stopped_ranks": []}

    def process_batch(self, b: StepBatch) -> Iterator[Any]:
        """process() for a whole StepBatch: the same ledger, in array operations. Yields the batch
        (cut after each row whose loss scale changed, with the derived ScaleEvent in between)."""
        st = self._get(b)  # type: ignore[arg-type]
        n = len(b)
        if n == 0:
            return
        if any(b.col(f) is None for f in ("skipped", "skipped_total", "skipped_iters")):
            for ev in b.events():  # rare: a batch that cannot say these in arrays
                yield from self.process(ev)
            return
        if b.step_set.all():
            st.counted = False  # (every row printed its step)
        else:
            _fill_steps(st, b)
        if st.fatal:
            self._correct_fatal(st, b.step, st.step)
        if n <= SMALL_BATCH:
            yield from self._process_rows(st, b)
            return
        s = st.summary
        steps = b.step
        st.steps_seen += n
        new = np.empty(n, dtype=bool)
        new[0] = st.step is None or int(steps[0]) != st.step
        np.not_equal(steps[1:], steps[:-1], out=new[1:])
        s.steps += int(new.sum())
        lo, hi = int(steps.min()), int(steps.max())
        s.first_step = lo if s.first_step is None else min(s.first_step, lo)
        s.last_step = hi if s.last_step is None else max(s.last_step, hi)
        lv, lp = b.col("loss")  # type: ignore[misc]
        gv, gp = b.col("grad_norm")  # type: ignore[misc]
        if lp.any():
            s.last_loss = float(lv[np.nonzero(lp)[0][-1]])
        s.nonfinite_steps += int(((lp & ~np.isfinite(lv)) | (gp & ~np.isfinite(gv))).sum())
        kv, kp = b.col("skipped")  # type: ignore[misc]
        skipped = kp & (kv != 0)
        s.skipped_steps += int(skipped.sum())
        tv, tp = b.col("skipped_total")  # type: ignore[misc]
        if tp.any():
            st.cum_skipped = max(st.cum_skipped, int(tv[tp].max()))
        iv, ip = b.col("skipped_iters")  # type: ignore[misc]
        if ip.any():
            s.skipped_steps += int(iv[ip].sum())
        st.step = int(steps[-1])
        sv, sp = b.col("loss_scale")  # type: ignore[misc]
        fin = np.nonzero(sp & np.isfinite(sv))[0]
        if len(fin) == 0:
            yield b
            return
        vals = sv[fin]
        _scale_range(s, float(vals.min()))
        _scale_range(s, float(vals.max()))
        before = np.empty(len(vals))
        before[0] = st.scale if st.scale is not None else vals[0]
        before[1:] = vals[:-1]
        changed = np.nonzero(vals != before)[0]
        st.scale = float(vals[-1])
        start = 0
        for c in changed.tolist():
            row = int(fin[c])
            old, now = float(before[c]), float(vals[c])
            decrease = now < old
            if decrease and not skipped[row]:
                s.skipped_steps += 1  # a scaler halves its scale exactly when it skips a step
            yield b.slice(start, row + 1)
            yield _derived(b.event(row), b.stream, old, now)
            start = row + 1
        if start < n:
            yield b.slice(start, n) if start else b

    @staticmethod
    def _correct_fatal(st: _Stream, steps: np.ndarray, prev: Optional[int]) -> None:
        """process()'s correction of the exceptions' steps, for a batch of step rows at once: row
        by row an exception's step becomes x + 1 for each row x >= it, so after the rows it is the
        largest x + 1 if that x reached it (the first row holding the largest x always does)."""
        new_steps = int(np.count_nonzero(steps[1:] != steps[:-1])) + int(prev is None or int(steps[0]) != prev)
        for f in st.fatal:
            err, left = f[0], f[1]
            if err.fields is not None and left > 0:  # as process() counts them, for attribution
                err.fields["steps_after"] = err.fields.get("steps_after", 0) + new_steps
            if err.step is not None and left > 0:
                top = int(steps[:left].max())
                if top >= err.step:
                    err.step = top + 1
            f[1] = left - len(steps)
        st.fatal = _pending(st.fatal)

    def process_rows(self, rows: Any) -> Iterator[Any]:
        """process() for a MetricsRows: a step-less row gets the step in progress (its stream's
        last + 1). Rows that may read a local-rank stream's step go one by one."""
        st = self._get(rows)
        if st.step is None and rows.local():
            for ev in rows.events():
                yield from self.process(ev)
            return
        if st.step is not None:
            rows.step[~rows.step_set] = st.step + 1
            rows.step_set[:] = True
        yield rows

    def _ledger(self, st: _Stream, ev: StepEvent, new_step: bool = True) -> Optional[ScaleEvent]:
        change = self._count(st, ev.step, ev.loss, ev.grad_norm, ev.loss_scale, ev.skipped, ev.skipped_total,
                             ev.skipped_iters, new_step)
        if change is None:
            return None
        return _derived(ev, ev.stream, *change)

    def _count(self, st: _Stream, step: int, loss: Optional[float], grad: Optional[float], scale: Optional[float],
               skipped: Any, skipped_total: Optional[int], skipped_iters: Optional[int], new_step: bool
               ) -> Optional[tuple[float, float]]:
        """The ledger for one step row; (old, new) loss scale when the scale changed."""
        s = st.summary
        if new_step:  # two prints of the same step (DeepSpeed's step=N and the script's own) count once
            s.steps += 1
        if s.first_step is None or step < s.first_step:
            s.first_step = step
        if s.last_step is None or step > s.last_step:
            s.last_step = step
        if loss is not None:
            s.last_loss = loss
        if (loss is not None and not math.isfinite(loss)) or (grad is not None and not math.isfinite(grad)):
            s.nonfinite_steps += 1
        if skipped:
            s.skipped_steps += 1
        if skipped_total is not None:
            st.cum_skipped = max(st.cum_skipped, skipped_total)
        if skipped_iters:
            s.skipped_steps += skipped_iters
        change = None
        if scale is not None and math.isfinite(scale):
            _scale_range(s, scale)
            if st.scale is not None and scale != st.scale:
                if scale < st.scale and not skipped:
                    s.skipped_steps += 1  # a scaler halves its scale exactly when it skips a step
                change = (st.scale, scale)
            st.scale = scale
        return change

    def _process_rows(self, st: _Stream, b: StepBatch) -> Iterator[Any]:
        """process_batch for a few rows (a batch cut short by other events of its stream): the
        same ledger, row by row on plain numbers (array calls cost more than they save here)."""
        n = len(b)
        cols = {}
        for f in ("loss", "grad_norm", "loss_scale", "skipped", "skipped_total", "skipped_iters"):
            if f in b.unset:
                cols[f] = [None] * n
                continue
            v, p = b.col(f)  # type: ignore[misc]
            cols[f] = [x if ok else None for x, ok in zip(v.tolist(), p.tolist())]
        start = 0
        for i, step in enumerate(b.step.tolist()):
            st.steps_seen += 1
            new_step = step != st.step
            st.step = step
            tot, its = cols["skipped_total"][i], cols["skipped_iters"][i]
            change = self._count(st, step, cols["loss"][i], cols["grad_norm"][i], cols["loss_scale"][i],
                                 cols["skipped"][i], int(tot) if tot is not None else None,
                                 int(its) if its is not None else None, new_step)
            if change is not None:
                yield b.slice(start, i + 1)
                yield _derived(b.event(i), b.stream, *change)
                start = i + 1
        if start < n:
            yield b.slice(start, n) if start else b

    def last_steps(self) -> dict:
        """Each stream's last logged step, by stream key (attribution: a process that logs on after
        an exception survived it; a stream known only by node and local rank counts as well)."""
        return {key: st.summary.last_step for key, st in self._streams.items() if st.summary.last_step is not None}

    def summaries(self) -> list[RankSummary]:
        out = []
        for st in self._streams.values():
            s = st.summary
            s.skipped_steps = max(s.skipped_steps, st.overflows, st.cum_skipped)
            if s.steps or s.skipped_steps:
                out.append(s)
        return sorted(out, key=lambda s: (s.rank is None, s.node or "", s.rank if s.rank is not None else -1, s.label))


def _fill_steps(st: _Stream, b: StepBatch) -> None:
    """process()'s steps for the rows of a batch that printed none, in arrays: such a row's step
    is the one before it + 1 (the stream's last step before the batch, or, with none, the count
    of its step lines), and it is counted (Event.step_counted) while no row of the stream has
    printed a step number."""
    n = len(b)
    idx = np.arange(n)
    printed = b.step_set
    last = np.where(printed, idx, -1)
    np.maximum.accumulate(last, out=last)
    step = b.step.copy()
    after = ~printed & (last >= 0)
    step[after] = step[last[after]] + (idx[after] - last[after])
    lead = last < 0  # (all unprinted: the rows before the batch's first printed step)
    base = st.step if st.step is not None else st.steps_seen
    step[lead] = base + idx[lead] + 1
    counted_lead = st.counted or st.step is None
    counted = lead & counted_lead
    st.counted = bool(counted_lead) if not printed.any() else False
    b.fill_steps(step, counted)


def _pending(fatal: list) -> list:
    """The exceptions still within FATAL_HORIZON; one past it was survived, and goes back to the
    step it was printed at."""
    out = []
    for f in fatal:
        if f[1] > 0:
            out.append(f)
        elif f[2] is not None:
            f[0].step = f[2]
    return out


def _derived(ev: StepEvent, stream: Any, old: float, new: float) -> ScaleEvent:
    """GradScaler prints nothing when it skips a step; the changed scale is the trace it leaves."""
    return ScaleEvent(
        loc=ev.loc, text=ev.text, framework=ev.framework, origin=ev.origin, rank=ev.rank, step=ev.step,
        stream=stream, action="decrease" if new < old else "increase", old_scale=old, new_scale=new,
    )


def _scale_range(s: RankSummary, v: float) -> None:
    s.loss_scale_min = v if s.loss_scale_min is None else min(s.loss_scale_min, v)
    s.loss_scale_max = v if s.loss_scale_max is None else max(s.loss_scale_max, v)


def _label(key: tuple) -> str:
    if key[0] == "rank":
        return f"rank {key[2]}" if key[1] is None else f"rank {key[2]} ({key[1]})"
    if key[0] == "local":
        return f"{key[1] or 'node ?'} local rank {key[2]}"
    return str(key[1])
