"""Runs of non-finite values: a NaN/inf that recovers (transient) or stays (persistent)."""

from __future__ import annotations

from typing import Any, Optional

from nanscope.lazynp import np

from nanscope.errors import SignatureError
from nanscope.model import Event
from nanscope.signatures.machines.base import EVIDENCE_PER_MATCH, Emit, _stepkey, Machine


class _Run:
    __slots__ = ("events", "steps", "last", "first_step", "last_step")

    def __init__(self) -> None:
        self.events: list = []
        self.steps = 0
        self.last: Any = object()
        self.first_step: Optional[int] = None
        self.last_step: Optional[int] = None

    def add(self, ev: Event) -> None:
        k = _stepkey(ev)
        if k != self.last:
            self.steps += 1
            self.last = k
        if ev.step is not None:
            if self.first_step is None:
                self.first_step = ev.step
            self.last_step = ev.step
        if len(self.events) < EVIDENCE_PER_MATCH - 1:
            self.events.append(ev)

    def add_row(self, b: Any, i: int) -> None:
        """add() for row i of a StepBatch (its event is made only while evidence is still wanted)."""
        step = int(b.step[i])
        if step != self.last:
            self.steps += 1
            self.last = step
        if self.first_step is None:
            self.first_step = step
        self.last_step = step
        if len(self.events) < EVIDENCE_PER_MATCH - 1:
            self.events.append(b.event(i))

    def add_rows(self, b: Any, rows: np.ndarray) -> None:
        """add_row() for each of `rows` (ascending, not empty) at once."""
        steps = b.step[rows]
        first, last = int(steps[0]), int(steps[-1])
        self.steps += int(np.count_nonzero(steps[1:] != steps[:-1])) + (first != self.last)
        self.last = last
        if self.first_step is None:
            self.first_step = first
        self.last_step = last
        for i in rows[: max(0, EVIDENCE_PER_MATCH - 1 - len(self.events))].tolist():
            self.events.append(b.event(i))


class Transient(Machine):
    """A run of `bad` events over min_run..max_run distinct steps that ends in a `good` event.

    gap: good steps within `gap` steps of the last bad one do not end the run (an fp16 warm-up
    interleaves overflows with normal prints). position: "after_start" (the run begins more than
    start_window steps after the stream's first step: a recovery in the middle of training),
    "start" (a warm-up burst), or "any"; a run with a bad event that is `anywhere_when` passes any
    position (a non-finite loss at the start is no loss-scale warm-up: the scale never touches the
    forward pass).
    """

    name = "transient"
    PARAMS = {"bad": (True, "condition"), "good": (True, "condition"), "min_run": (False, "int"),
              "max_run": (False, "int"), "position": (False, "str"), "gap": (False, "int"),
              "start_window": (False, "int"), "anywhere_when": (False, "condition")}

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.bad, self.good = self.cond("bad"), self.cond("good")
        self.vbad, self.vgood = self.vcond("bad"), self.vcond("good")
        self.min_run, self.max_run = int(self.num("min_run", 1)), int(self.num("max_run", 3))
        self.gap = int(self.num("gap", 0))
        self.start_window = int(self.num("start_window", 5))
        self.position = spec.get("position", "after_start")
        if self.position not in ("start", "after_start", "any"):
            raise SignatureError("'position' is one of start, after_start, any")
        self.anywhere = self.cond("anywhere_when") if "anywhere_when" in spec else None

    def feed(self, ev: Event, emit: Emit) -> None:
        st = self.state.get(ev.stream)
        if st is None:
            st = self.state[ev.stream] = {"first_step": ev.step, "good_before": False, "run": None, "recovery": None}
        if st["first_step"] is None:
            st["first_step"] = ev.step
        run: Optional[_Run] = st["run"]
        if self.bad(ev):
            if run is None:
                run = st["run"] = _Run()
                st["run_after_good"] = st["good_before"]
                st["anywhere"] = False
            run.add(ev)
            if self.anywhere is not None and self.anywhere(ev):
                st["anywhere"] = True
            st["recovery"] = None
            return
        if not self.good(ev):
            return
        if run is not None:
            if st["recovery"] is None:
                st["recovery"] = ev
            if ev.step is not None and run.last_step is not None and ev.step <= run.last_step + self.gap:
                return  # still inside the run
            self._close(st, emit)
        st["good_before"] = True

    def feed_batch(self, b: Any, emit: Emit) -> None:
        bad, good = self.vbad(b), self.vgood(b)
        if bad is None or good is None:
            return super().feed_batch(b, emit)
        steps = b.step
        st = self.state.get(b.stream)
        if st is None:
            st = self.state[b.stream] = {"first_step": int(steps[0]), "good_before": False, "run": None, "recovery": None}
        if st["first_step"] is None:
            st["first_step"] = int(steps[0])
        bad_idx = np.nonzero(bad)[0]
        good_idx = np.nonzero(good & ~bad)[0]
        n = len(b)
        pos = 0
        while pos < n:
            run: Optional[_Run] = st["run"]
            if run is None:  # quiet until the next bad row: only whether a good one came first
                k = int(np.searchsorted(bad_idx, pos))
                nxt = int(bad_idx[k]) if k < len(bad_idx) else n
                g = int(np.searchsorted(good_idx, pos))
                if g < len(good_idx) and good_idx[g] < nxt:
                    st["good_before"] = True
                if nxt >= n:
                    break
                run = st["run"] = _Run()
                st["run_after_good"] = st["good_before"]
                st["anywhere"] = False
                run.add_row(b, nxt)
                self._anywhere_row(st, b, nxt)
                st["recovery"] = None
                pos = nxt + 1
                continue
            if bad[pos]:
                run.add_row(b, pos)
                self._anywhere_row(st, b, pos)
                st["recovery"] = None
            elif good[pos]:
                if st["recovery"] is None:
                    st["recovery"] = b.event(pos)
                if not (run.last_step is not None and int(steps[pos]) <= run.last_step + self.gap):
                    self._close(st, emit)
                    st["good_before"] = True
            pos += 1

    def _anywhere_row(self, st: dict, b: Any, i: int) -> None:
        if self.anywhere is not None and not st.get("anywhere") and self.anywhere(b.event(i)):
            st["anywhere"] = True

    def _close(self, st: dict, emit: Emit) -> None:
        run: _Run = st["run"]
        rec = st["recovery"]
        if rec is not None and self._position_ok(st, run) and self.min_run <= run.steps <= self.max_run:
            first = run.events[0]
            emit(self.match(first, run.events + [rec], step=run.first_step, run=run.steps,
                            recovered_step=rec.step, last_bad_step=run.last_step))
        st["run"] = st["recovery"] = None

    def finish(self, emit: Emit) -> None:
        for st in self.state.values():
            if st["run"] is not None:
                self._close(st, emit)  # recovered only if a good event followed the last bad one

    def _position_ok(self, st: dict, run: _Run) -> bool:
        """At the start: nothing good came before the run, or the log begins at the start of
        training (its first step is within start_window) and the run within start_window of it.
        An excerpt that begins at step 23 is not the start of training."""
        if self.position == "any" or st.get("anywhere"):
            return True
        at_start = not st.get("run_after_good", False)
        first = st["first_step"]
        if not at_start and first is not None and run.first_step is not None:
            at_start = first <= self.start_window and run.first_step <= first + self.start_window
        return at_start == (self.position == "start")


class Persistent(Machine):
    """`bad` events over at least min_run distinct steps with no `reset` event in between
    (and, with `require`, at least one bad event of the run satisfying it).

    A run that is still open at the end of the input (nothing reset it: the last logged steps are
    bad) fires from `min_run_at_end` steps on, when one of its bad events satisfies `require_at_end`
    (if given): a log whose last one or two steps are NaN did not recover in view, and an excerpt
    or a run that stopped itself on the first NaN (TerminateOnNaN, `Loss is nan, stopping
    training`) never prints a third. With `before_at_end`, such a short run at the end also needs
    the step logged right before it (the last reset event) to satisfy that condition."""

    name = "persistent"
    PARAMS = {"bad": (True, "condition"), "reset": (True, "condition"), "min_run": (False, "int"),
              "require": (False, "condition"), "min_run_at_end": (False, "int"),
              "require_at_end": (False, "condition"), "before_at_end": (False, "condition"),
              "soft_reset": (False, "condition"), "hard_when": (False, "condition")}

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.bad, self.reset = self.cond("bad"), self.cond("reset")
        self.vbad, self.vreset = self.vcond("bad"), self.vcond("reset")
        self.min_run = int(self.num("min_run", 3))
        self.require = self.cond("require") if "require" in spec else None
        self.vrequire = self.vcond("require") if "require" in spec else None
        self.min_run_at_end = int(self.num("min_run_at_end", self.min_run))
        self.require_at_end = self.cond("require_at_end") if "require_at_end" in spec else None
        self.vrequire_at_end = self.vcond("require_at_end") if "require_at_end" in spec else None
        self.before_at_end = self.cond("before_at_end") if "before_at_end" in spec else None
        # soft_reset ends a run too, unless one of its bad events is `hard_when`: a loss scaler's
        # skip explains a non-finite gradient norm, never a non-finite loss (the forward pass)
        self.soft_reset = self.cond("soft_reset") if "soft_reset" in spec else None
        self.hard = self.cond("hard_when") if "hard_when" in spec else None
        self.vhard = self.vcond("hard_when") if "hard_when" in spec else None

    def _new_state(self) -> dict:
        return {"run": None, "last": None, "required": False, "required_end": False, "reset_step": None,
                "before": None, "reset_ev": None, "hard": False}

    def _close(self, stream: Any, st: dict, emit: Emit, until_end: bool) -> None:
        run: Optional[_Run] = st.get("run")
        # (a short run at the end whose first step also had a reset printed before its step line,
        # e.g. DeepSpeed's OVERFLOW for that very step, was reset: that update was skipped)
        long_enough = run is not None and (
            run.steps >= self.min_run
            or (until_end and run.steps >= self.min_run_at_end
                and (self.require_at_end is None or st.get("required_end"))
                and (self.before_at_end is None or (st.get("before") is not None and self.before_at_end(st["before"])))
                and (run.first_step is None or run.first_step != st.get("reset_step"))))
        if long_enough and (self.require is None or st.get("required")):
            first = run.events[0]
            between = (", with no finite step between them; the loss scaler's skipped updates among them do not"
                       " explain a non-finite loss" if st.get("soft_skipped") else
                       ", with no skipped update or finite step between them")
            emit(self.match(first, run.events + ([st["last"]] if st["last"] not in run.events else []),
                            step=first.step, run=run.steps, last_step=st["last"].step, until_end=until_end,
                            between=between))
        st["run"] = None
        st["required"] = False
        st["required_end"] = False
        st["hard"] = False
        st["soft_skipped"] = False

    def feed(self, ev: Event, emit: Emit) -> None:
        st = self.state.setdefault(ev.stream, self._new_state())
        if self.bad(ev):
            if st["run"] is None:
                st["run"] = _Run()
                st["before"] = st.get("reset_ev")
            st["run"].add(ev)
            st["last"] = ev
            if self.require is not None and not st["required"] and self.require(ev):
                st["required"] = True
            if self.require_at_end is not None and not st["required_end"] and self.require_at_end(ev):
                st["required_end"] = True
            if self.hard is not None and not st.get("hard") and self.hard(ev):
                st["hard"] = True
        elif self.reset(ev) or (self.soft_reset is not None and not st.get("hard") and self.soft_reset(ev)):
            st["reset_step"] = ev.step
            if self.before_at_end is not None:
                st["reset_ev"] = ev
            if st["run"] is not None:
                self._close(ev.stream, st, emit, until_end=False)
        elif self.soft_reset is not None and st["run"] is not None and self.soft_reset(ev):
            st["soft_skipped"] = True  # a skip inside a run of non-finite losses: kept, and said

    def feed_batch(self, b: Any, emit: Emit) -> None:
        bad, reset = self.vbad(b), self.vreset(b)
        req = self.vrequire(b) if self.vrequire is not None else None
        req_end = self.vrequire_at_end(b) if self.vrequire_at_end is not None else None
        hard = self.vhard(b) if self.vhard is not None else None
        if bad is None or reset is None or (self.vrequire is not None and req is None) or (
                self.vrequire_at_end is not None and req_end is None) or (self.vhard is not None and hard is None):
            return super().feed_batch(b, emit)
        # (a soft reset is a scale event, never a row of a step batch: the rows reset as before)
        st = self.state.setdefault(b.stream, self._new_state())
        resets = np.nonzero(reset & ~bad)[0]
        bads = np.nonzero(bad)[0]
        # the bad rows with a reset row before them (after the bad row before, or the batch start)
        # start a new run: the rows between two such are one run's
        if len(resets) and len(bads):
            cut = np.flatnonzero(np.searchsorted(resets, bads) > np.searchsorted(resets, np.concatenate(([-1], bads[:-1]))))
        else:
            cut = np.zeros(0, dtype=np.int64)
        bounds = [0] + cut.tolist() + [len(bads)]
        for j in range(len(bounds) - 1):
            a, z = bounds[j], bounds[j + 1]
            if a == z:
                continue
            if j > 0:  # a reset row before this run's first row (segment 0 is empty if cut[0] == 0)
                if st["run"] is not None:
                    if a > 0:
                        st["last"] = b.event(int(bads[a - 1]))
                    self._close(b.stream, st, emit, until_end=False)
            if st["run"] is None:
                st["run"] = _Run()
                if self.before_at_end is not None:
                    # the reset row right before this run's first bad row, or the one of an earlier batch
                    k = int(np.searchsorted(resets, bads[a])) - 1
                    st["before"] = b.event(int(resets[k])) if k >= 0 else st.get("reset_ev")
            rows = bads[a:z]
            st["run"].add_rows(b, rows)
            if req is not None and not st["required"] and req[rows].any():
                st["required"] = True
            if req_end is not None and not st["required_end"] and req_end[rows].any():
                st["required_end"] = True
            if hard is not None and not st.get("hard") and hard[rows].any():
                st["hard"] = True
        prev = int(bads[-1]) if len(bads) else -1
        if len(resets):
            st["reset_step"] = int(b.step[int(resets[-1])])
            if self.before_at_end is not None:
                st["reset_ev"] = b.event(int(resets[-1]))
        if prev >= 0:
            st["last"] = b.event(prev)
        if st["run"] is not None and len(resets) and int(resets[-1]) > prev:
            self._close(b.stream, st, emit, until_end=False)

    def finish(self, emit: Emit) -> None:
        for stream, st in self.state.items():
            self._close(stream, st, emit, until_end=True)
