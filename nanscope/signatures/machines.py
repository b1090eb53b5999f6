"""The closed set of machines a signature can name. Each sees only events (never raw text),
keeps bounded state per stream (one stream = one rank of one node, or one rank-less source), and
emits Matches. A new kind of fingerprint is a new machine here; a new failure is a TOML file.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional

import numpy as np

from nanscope.errors import SignatureError
from nanscope.model import EVENT_KINDS, Event
from nanscope.signatures.predicates import Pred, compile_condition, compile_rows, compile_vector

EVIDENCE_PER_MATCH = 4


@dataclass
class Match:
    signature: str
    stream: Any
    rank: Optional[int]
    events: list  # evidence events, at most EVIDENCE_PER_MATCH
    step: Optional[int]
    extras: dict = field(default_factory=dict)
    step_from_event: bool = False  # the step is the first event's, which may still be corrected


Emit = Callable[[Match], None]


def _stepkey(ev: Event) -> Any:
    return ev.step if ev.step is not None else (ev.loc.source, ev.loc.line)


class Machine:
    name: ClassVar[str] = ""
    # parameter -> (required, kind) where kind is "condition", "int", "float", "str", "events"
    PARAMS: ClassVar[dict[str, tuple[bool, str]]] = {}
    DEFAULT_EVENTS: ClassVar[tuple[str, ...]] = ("step",)

    def __init__(self, sig_id: str, spec: dict):
        self.sig = sig_id
        unknown = set(spec) - set(self.PARAMS) - {"machine", "events"}
        if unknown:
            raise SignatureError(f"machine '{self.name}' does not take {', '.join(sorted(unknown))} (takes: events, {', '.join(self.PARAMS)})")
        for key, (required, _kind) in self.PARAMS.items():
            if required and key not in spec:
                raise SignatureError(f"machine '{self.name}' needs '{key}'")
        events = spec.get("events", list(self.DEFAULT_EVENTS))
        if isinstance(events, str):
            events = [events]
        bad = [e for e in events if e not in EVENT_KINDS]
        if bad:
            raise SignatureError(f"unknown event kind {', '.join(bad)} (known: {', '.join(EVENT_KINDS)})")
        self.events = set(events)
        self.spec = spec
        self.state: dict[Any, Any] = {}

    def cond(self, key: str, default: Any = None) -> Pred:
        return compile_condition(self.spec.get(key, default))

    def num(self, key: str, default: float) -> float:
        v = self.spec.get(key, default)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise SignatureError(f"'{key}' must be a number, not {v!r}")
        return v

    def match(self, ev: Event, events: list, step: Optional[int] = None, **extras: Any) -> Match:
        return Match(self.sig, ev.stream, ev.rank, events[:EVIDENCE_PER_MATCH],
                     step if step is not None else ev.step, extras, step_from_event=step is None)

    def vcond(self, key: str, default: Any = None) -> Any:
        return compile_vector(self.spec.get(key, default))

    def feed(self, ev: Event, emit: Emit) -> None:
        raise NotImplementedError

    def feed_batch(self, b: Any, emit: Emit) -> None:
        """A StepBatch (one stream's step rows in line order): the same as feeding its rows one by
        one. Machines override this with array operations; this fallback is always correct."""
        for ev in b.events():
            self.feed(ev, emit)

    def rows_mask(self, rows: Any) -> Any:
        """For a MetricsRows: which rows can change this machine (a bool mask; the others are
        skipped), or None: every row, one by one (always correct)."""
        return None

    def finish(self, emit: Emit) -> None:
        pass

    LIVE: ClassVar[bool] = False  # finish() only reads the state: live mode may ask it early

    def live(self, emit: Emit) -> None:
        """What finish() would emit now (live mode, `diagnose --follow`); changes nothing."""
        if self.LIVE:
            self.finish(emit)


class Line(Machine):
    """Every event that satisfies `when` is a match."""

    name = "line"
    PARAMS = {"when": (True, "condition")}
    DEFAULT_EVENTS = ("error",)

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.when = self.cond("when")
        self.vwhen = self.vcond("when")
        self.rwhen = compile_rows(self.spec["when"])

    def feed(self, ev: Event, emit: Emit) -> None:
        if self.when(ev):
            emit(self.match(ev, [ev]))

    def rows_mask(self, rows: Any) -> Any:
        return self.rwhen(rows)  # a row that fails `when` is no match

    def feed_batch(self, b: Any, emit: Emit) -> None:
        m = self.vwhen(b)
        if m is None:
            return super().feed_batch(b, emit)
        for i in np.nonzero(m)[0].tolist():
            ev = b.event(i)
            emit(self.match(ev, [ev]))


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
    "start" (a warm-up burst), or "any".
    """

    name = "transient"
    PARAMS = {"bad": (True, "condition"), "good": (True, "condition"), "min_run": (False, "int"),
              "max_run": (False, "int"), "position": (False, "str"), "gap": (False, "int"),
              "start_window": (False, "int")}

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
            run.add(ev)
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
                run.add_row(b, nxt)
                st["recovery"] = None
                pos = nxt + 1
                continue
            if bad[pos]:
                run.add_row(b, pos)
                st["recovery"] = None
            elif good[pos]:
                if st["recovery"] is None:
                    st["recovery"] = b.event(pos)
                if not (run.last_step is not None and int(steps[pos]) <= run.last_step + self.gap):
                    self._close(st, emit)
                    st["good_before"] = True
            pos += 1

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
        if self.position == "any":
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
    training`) never prints a third."""

    name = "persistent"
    PARAMS = {"bad": (True, "condition"), "reset": (True, "condition"), "min_run": (False, "int"),
              "require": (False, "condition"), "min_run_at_end": (False, "int"),
              "require_at_end": (False, "condition")}

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

    def _new_state(self) -> dict:
        return {"run": None, "last": None, "required": False, "required_end": False, "reset_step": None}

    def _close(self, stream: Any, st: dict, emit: Emit, until_end: bool) -> None:
        run: Optional[_Run] = st.get("run")
        # (a short run at the end whose first step also had a reset printed before its step line,
        # e.g. DeepSpeed's OVERFLOW for that very step, was reset: that update was skipped)
        long_enough = run is not None and (
            run.steps >= self.min_run
            or (until_end and run.steps >= self.min_run_at_end
                and (self.require_at_end is None or st.get("required_end"))
                and (run.first_step is None or run.first_step != st.get("reset_step"))))
        if long_enough and (self.require is None or st.get("required")):
            first = run.events[0]
            emit(self.match(first, run.events + ([st["last"]] if st["last"] not in run.events else []),
                            step=first.step, run=run.steps, last_step=st["last"].step, until_end=until_end))
        st["run"] = None
        st["required"] = False
        st["required_end"] = False

    def feed(self, ev: Event, emit: Emit) -> None:
        st = self.state.setdefault(ev.stream, self._new_state())
        if self.bad(ev):
            if st["run"] is None:
                st["run"] = _Run()
            st["run"].add(ev)
            st["last"] = ev
            if self.require is not None and not st["required"] and self.require(ev):
                st["required"] = True
            if self.require_at_end is not None and not st["required_end"] and self.require_at_end(ev):
                st["required_end"] = True
        elif self.reset(ev):
            st["reset_step"] = ev.step
            if st["run"] is not None:
                self._close(ev.stream, st, emit, until_end=False)

    def feed_batch(self, b: Any, emit: Emit) -> None:
        bad, reset = self.vbad(b), self.vreset(b)
        req = self.vrequire(b) if self.vrequire is not None else None
        req_end = self.vrequire_at_end(b) if self.vrequire_at_end is not None else None
        if bad is None or reset is None or (self.vrequire is not None and req is None) or (
                self.vrequire_at_end is not None and req_end is None):
            return super().feed_batch(b, emit)
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
            rows = bads[a:z]
            st["run"].add_rows(b, rows)
            if req is not None and not st["required"] and req[rows].any():
                st["required"] = True
            if req_end is not None and not st["required_end"] and req_end[rows].any():
                st["required_end"] = True
        prev = int(bads[-1]) if len(bads) else -1
        if len(resets):
            st["reset_step"] = int(b.step[int(resets[-1])])
        if prev >= 0:
            st["last"] = b.event(prev)
        if st["run"] is not None and len(resets) and int(resets[-1]) > prev:
            self._close(b.stream, st, emit, until_end=False)

    def finish(self, emit: Emit) -> None:
        for stream, st in self.state.items():
            self._close(stream, st, emit, until_end=True)


class ScaleRun(Machine):
    """A run of fp16 loss-scale overflows (`bad` events with no `good` step after the last one,
    within `gap` steps), judged at its end by where the scale is and where in training it fell.

    The overflow lines say the scale (DeepSpeed: attempted and new; apex, fairseq: the new one,
    each overflow halves it; a step line its `loss_scale`), so a run is judged even when the log
    ends in it or holds one or two steps:
      verdict "warmup"   the run began at an initial scale (at least `high_scale`, or the
                         framework's `initial_scales` default) or stayed at or above `low_scale`,
                         with no clean step before it and within `warmup_steps` of the start
                         (as far as the log shows steps), and never reached the floor (a run
                         that prints no scale: at the start of the log, and recovered);
      verdict "collapse" the run reached the floor (`floor_when`, or a scale at most `floor`), or,
                         not a warm-up, it ends the log having halved `min_halvings` times to a
                         scale below `low_scale` (a collapse in progress).
    Extras: run (overflows), start_scale, end_scale, halvings, halvings_left (to `floor`),
    last_step, recovered_step, until_end; fell (" from A to B", or "" when no scale was printed)
    and after ("; normal steps from step N", or that the log ends before a clean step).
    """

    name = "scale_run"
    PARAMS = {"bad": (True, "condition"), "good": (True, "condition"), "verdict": (True, "str"),
              "floor_when": (False, "condition"), "gap": (False, "int"), "high_scale": (False, "float"),
              "low_scale": (False, "float"), "floor": (False, "float"), "min_halvings": (False, "int"),
              "warmup_steps": (False, "int"), "initial_scales": (False, "table")}
    DEFAULT_EVENTS = ("step", "scale")

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.bad, self.good = self.cond("bad"), self.cond("good")
        self.vbad, self.vgood = self.vcond("bad"), self.vcond("good")
        self.floor_when = self.cond("floor_when") if "floor_when" in spec else None
        self.verdict = spec["verdict"]
        if self.verdict not in ("warmup", "collapse"):
            raise SignatureError("'verdict' is warmup or collapse")
        self.gap = int(self.num("gap", 0))
        self.high = float(self.num("high_scale", 65536.0))
        self.low = float(self.num("low_scale", 128.0))
        self.floor = float(self.num("floor", 1.0))
        self.min_halvings = int(self.num("min_halvings", 3))
        self.warmup_steps = int(self.num("warmup_steps", 64))
        init = spec.get("initial_scales", {})
        if not isinstance(init, dict) or not all(isinstance(v, (int, float)) for v in init.values()):
            raise SignatureError("'initial_scales' is a table framework = scale")
        self.initial = {k: float(v) for k, v in init.items()}

    def _st(self, stream: Any) -> dict:
        st = self.state.get(stream)
        if st is None:
            st = self.state[stream] = {"good_before": False, "run": None}
        return st

    def feed(self, ev: Event, emit: Emit) -> None:
        st = self._st(ev.stream)
        r = st["run"]
        if self.bad(ev):
            if r is None:
                r = st["run"] = {"run": _Run(), "after_good": st["good_before"], "start": None, "scale": None,
                                 "low": None, "halvings": 0, "floor": False, "framework": ev.framework,
                                 "recovery": None}
            r["run"].add(ev)
            r["recovery"] = None
            self._scale(r, ev)
            return
        if not self.good(ev):
            return
        if r is not None:
            run: _Run = r["run"]
            if ev.step is not None and run.last_step is not None and ev.step <= run.last_step:
                return  # a step before the run's last overflow (a held-back print): no recovery
            if r["recovery"] is None:
                r["recovery"] = ev
            if ev.step is not None and run.last_step is not None and ev.step <= run.last_step + self.gap:
                return  # still inside the run
            self._close(st, emit, until_end=False)
        st["good_before"] = True

    def feed_batch(self, b: Any, emit: Emit) -> None:
        bad, good = self.vbad(b), self.vgood(b)
        st = self._st(b.stream)
        if bad is not None and good is not None and st["run"] is None and not bad.any():
            if good.any():
                st["good_before"] = True
            return  # the common case: clean steps, no run open
        super().feed_batch(b, emit)

    def _scale(self, r: dict, ev: Event) -> None:
        old, new = getattr(ev, "old_scale", None), getattr(ev, "new_scale", None)
        if ev.kind == "step":
            new = getattr(ev, "loss_scale", None)
        if self.floor_when is not None and self.floor_when(ev):
            r["floor"] = True
        if new is None or not math.isfinite(new):
            return
        if r["start"] is None:
            # the scale the run began at: the attempted one, or twice the first halved scale
            r["start"] = old if old is not None else (new * 2 if ev.kind == "scale" and ev.action == "overflow" else new)
        prev = r["scale"] if r["scale"] is not None else old
        if prev is not None and new < prev:
            r["halvings"] += max(1, round(math.log2(prev / new))) if new > 0 else 1
        elif prev is None and ev.kind == "scale" and ev.action == "overflow":
            r["halvings"] += 1
        r["scale"] = new
        r["low"] = new if r["low"] is None else min(r["low"], new)
        if new <= self.floor and ev.kind == "scale":
            r["floor"] = True

    def _close(self, st: dict, emit: Emit, until_end: bool) -> None:
        r = st["run"]
        st["run"] = None
        run: _Run = r["run"]
        start, low = r["start"], r["low"]
        deep = r["after_good"] or (run.first_step is not None and run.first_step > self.warmup_steps)
        init = self.initial.get(r["framework"], self.high)
        high_start = start is not None and start >= min(init, self.high)
        if start is None and low is None:
            # no scale printed (a non-finite grad norm on the step lines): at the start of the log,
            # and recovered
            warmup = not r["floor"] and not deep and r["recovery"] is not None
        else:
            warmup = not r["floor"] and not deep and (high_start or (low is not None and low >= self.low))
        if self.verdict == "warmup":
            hit = warmup
        else:
            hit = r["floor"] or (not warmup and until_end and low is not None and low < self.low
                                 and r["halvings"] >= self.min_halvings)
        if not hit:
            return
        rec = r["recovery"]
        first = run.events[0]
        left = 0 if low is None or low <= self.floor else int(math.floor(math.log2(low / self.floor)))
        fell = f" from {start:g} to {low:g}" if start is not None and low is not None else ""
        after = (f"; normal steps from step {rec.step}" if rec is not None and rec.step is not None
                 else ("; the log ends before a clean step" if rec is None else ""))
        emit(self.match(first, run.events + ([rec] if rec is not None else []), step=run.first_step,
                        fell=fell, after=after,
                        run=run.steps, start_scale=start if start is not None else "?",
                        end_scale=low if low is not None else "?", halvings=r["halvings"], halvings_left=left,
                        last_step=run.last_step if run.last_step is not None else "?",
                        recovered_step=rec.step if rec is not None and rec.step is not None else "?",
                        until_end=until_end))

    def finish(self, emit: Emit) -> None:
        for st in self.state.values():
            if st["run"] is not None:
                self._close(st, emit, until_end=st["run"]["recovery"] is None)


class SkipRate(Machine):
    """Most optimizer updates skipped: per stream, the skipped updates over the steps they are
    out of reach `min_fraction` (at least `min_skipped` of them). Reads the cumulative counter
    (DeepSpeed `step=N, skipped=M`: `total` = skipped_total over step) and per-window counts
    (Megatron `number of skipped iterations` over the iterations since the previous line: `window`
    = skipped_iters). Reported once, at the end, at the first line where the rate held."""

    name = "skip_rate"
    PARAMS = {"total": (False, "str"), "window": (False, "str"), "min_fraction": (True, "float"),
              "min_skipped": (False, "int"), "when": (False, "condition")}

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.total = field_getter(spec["total"]) if "total" in spec else None
        self.window = field_getter(spec["window"]) if "window" in spec else None
        self.min_fraction = float(self.num("min_fraction", 0.5))
        self.min_skipped = int(self.num("min_skipped", 10))
        self.when = self.cond("when") if "when" in spec else None

    def feed(self, ev: Event, emit: Emit) -> None:
        if ev.step is None or (self.when is not None and not self.when(ev)):
            return
        st = self.state.setdefault(ev.stream, {"prev": None, "skipped": 0, "steps": 0, "first": None, "last": None})
        tot = self.total(ev) if self.total is not None else None
        win = self.window(ev) if self.window is not None else None
        if tot is not None and ev.step > 0:
            st["skipped"], st["steps"] = int(tot), ev.step  # cumulative since step 0
        elif win is not None and st["prev"] is not None and ev.step > st["prev"]:
            st["skipped"] += int(win)
            st["steps"] += ev.step - st["prev"]
        elif win is not None and st["prev"] is None and ev.step > 0 and int(win) >= ev.step:
            st["skipped"], st["steps"] = int(win), ev.step  # the first window, from iteration 0
        if tot is None and win is None:
            return
        st["prev"] = ev.step
        if st["steps"] and st["skipped"] >= self.min_skipped and st["skipped"] >= self.min_fraction * st["steps"]:
            if st["first"] is None:
                st["first"] = ev
            st["last"] = (ev, st["skipped"], st["steps"])

    def feed_batch(self, b: Any, emit: Emit) -> None:
        cols = [c for c, g in (("skipped_total", self.total), ("skipped_iters", self.window)) if g is not None]
        if all(b.col(c) is not None and not b.col(c)[1].any() for c in cols):
            return  # no counter on these rows
        super().feed_batch(b, emit)

    def finish(self, emit: Emit) -> None:
        for st in self.state.values():
            if st["first"] is None:
                continue
            last, skipped, steps = st["last"]
            first = st["first"]
            emit(self.match(first, [first] + ([last] if last is not first else []), skipped=skipped,
                            steps=steps, fraction=round(skipped / steps, 4), percent=round(100 * skipped / steps, 1),
                            last_step=last.step))


class CountWithin(Machine):
    """At least min_count `when` events within window_steps steps (once per stream).
    max_step limits it to the start of a run (e.g. a warm-up)."""

    name = "count_within"
    PARAMS = {"when": (True, "condition"), "min_count": (True, "int"), "window_steps": (False, "int"),
              "max_step": (False, "int"), "weight": (False, "str")}

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.when = self.cond("when")
        self.vwhen = self.vcond("when")
        self.rwhen = compile_rows(self.spec["when"])
        self.min_count = int(self.num("min_count", 2))
        # weight: a field that says how many occurrences one line stands for (a cumulative counter)
        self.weight = field_getter(spec["weight"]) if "weight" in spec else None
        self.window = self.num("window_steps", 0) or None
        self.max_step = spec.get("max_step")

    def feed(self, ev: Event, emit: Emit) -> None:
        if not self.when(ev):
            return
        if self.max_step is not None and (ev.step is None or ev.step > self.max_step):
            return
        st = self.state.setdefault(ev.stream, {"q": deque(), "fired": False, "first": []})
        if st["fired"]:
            return
        q = st["q"]
        q.append(ev)
        if self.window is not None and ev.step is not None:
            while q and q[0].step is not None and ev.step - q[0].step >= self.window:
                q.popleft()
        count = len(q)
        if self.weight is not None:
            count = max(count, max((int(self.weight(e) or 0) for e in q), default=0))
        if count >= self.min_count:
            st["fired"] = True
            emit(self.match(q[0], list(q)[: EVIDENCE_PER_MATCH - 1] + [ev], step=q[0].step, count=count))
            q.clear()

    def feed_batch(self, b: Any, emit: Emit) -> None:
        m = self.vwhen(b)
        if m is None:
            return super().feed_batch(b, emit)
        for i in np.nonzero(m)[0].tolist():
            self.feed(b.event(i), emit)

    def rows_mask(self, rows: Any) -> Any:
        return self.rwhen(rows)  # only `when` events are counted


class FirstAcrossRanks(Machine):
    """The rank(s) where `bad` first happened while the other ranks were still `good` at that
    step. Needs step numbers and at least two ranks; emits once, at the end of the input."""

    name = "first_across_ranks"
    PARAMS = {"bad": (True, "condition")}
    LIVE = True

    def live(self, emit: Emit) -> None:
        """Decided once every rank has logged the first bad step (none can still be bad there)."""
        bads = [st["first_bad"].step for st in self.state.values() if st["first_bad"] is not None]
        if bads and all(st["hi"] >= min(bads) for st in self.state.values()):
            self.finish(emit)

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.bad = self.cond("bad")
        self.vbad = self.vcond("bad")

    def feed_batch(self, b: Any, emit: Emit) -> None:
        if b.rank is None:
            return
        bad = self.vbad(b)
        if bad is None:
            return super().feed_batch(b, emit)
        lo, hi = int(b.step.min()), int(b.step.max())
        st = self.state.get(b.stream)
        if st is None:
            st = self.state[b.stream] = {"lo": lo, "hi": hi, "first_bad": None, "rank": b.rank}
        st["lo"] = min(st["lo"], lo)
        st["hi"] = max(st["hi"], hi)
        if st["first_bad"] is None:
            idx = np.nonzero(bad)[0]
            if len(idx):
                st["first_bad"] = b.event(int(idx[0]))

    def feed(self, ev: Event, emit: Emit) -> None:
        if ev.step is None or ev.rank is None:
            return
        st = self.state.get(ev.stream)
        if st is None:
            st = self.state[ev.stream] = {"lo": ev.step, "hi": ev.step, "first_bad": None, "rank": ev.rank}
        st["lo"] = min(st["lo"], ev.step)
        st["hi"] = max(st["hi"], ev.step)
        if st["first_bad"] is None and self.bad(ev):
            st["first_bad"] = ev

    def finish(self, emit: Emit) -> None:
        bads = [st["first_bad"] for st in self.state.values() if st["first_bad"] is not None]
        if not bads or len(self.state) < 2:
            return
        s = min(ev.step for ev in bads)
        first = sorted((ev for ev in bads if ev.step == s), key=lambda e: (e.rank, e.loc.line))
        first_streams = {ev.stream for ev in first}
        good = sorted(
            st["rank"] for stream, st in self.state.items()
            if stream not in first_streams and st["lo"] <= s <= st["hi"]
            and (st["first_bad"] is None or st["first_bad"].step > s)
        )
        if not good:
            return
        for ev in first:
            emit(self.match(ev, [ev], step=s, good_ranks=good, bad_ranks=[e.rank for e in first]))


def order_key(ev: Event) -> tuple:
    """When did this happen, as far as the log tells: timestamp, then step, then file position.
    Comparable across ranks only when both lines carry the same kind of evidence."""
    ts = ev.origin.ts if ev.origin is not None else None
    return (ts, ev.step, ev.loc.source, ev.loc.line)


def happened_before(a: Event, b: Event) -> bool:
    ta, sa, fa, la = order_key(a)
    tb, sb, fb, lb = order_key(b)
    if ta is not None and tb is not None and ta != tb:
        return ta < tb
    if sa is not None and sb is not None and sa != sb:
        return sa < sb
    if fa == fb:
        return la < lb
    return (ta is not None) and tb is None  # a timed line beats an untimed one


_LAUNCHER_EXITS = ("child_failed", "worker_failed")


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

    def feed(self, ev: Event, emit: Emit) -> None:
        if ev.rank is None:
            if self.teardown is not None and self.teardown(ev):
                self.torn_down.append(ev)
            return
        if self.primary(ev):
            if getattr(ev, "error", None) in _LAUNCHER_EXITS:
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
            return
        others = sorted(self.coll_ranks - {first.rank})
        # Teardown lines count only where the launcher's lines are all the evidence (the first
        # failure is its exit record), and only those of the same launcher (same source).
        torn = ([e for e in self.torn_down if e.loc.source == first.loc.source]
                if getattr(first, "error", None) in _LAUNCHER_EXITS and not others else [])
        if not others and not torn:
            return
        evidence = [first] + [e for e in self.coll_events if e.rank != first.rank]
        evidence += torn[:max(0, EVIDENCE_PER_MATCH - len(evidence))]
        parts = []
        if others:
            from nanscope.signatures.engine import fmt_ranks  # engine imports this module
            parts.append(f"ranks {fmt_ranks(others)}")
        if torn:
            parts.append(f"{len(torn)} other worker(s) (stopped by the launcher)")
        emit(self.match(first, evidence, collateral_ranks=others, culprit=_describe(first),
                        others=" and ".join(parts)))


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

    def feed(self, ev: Event, emit: Emit) -> None:
        if ev.rank is None:
            return
        self.ranks.add(ev.rank)
        if self.blame(ev):
            if all(b.rank != ev.rank for b in self.blamed):
                self.blamed.append(ev)
            return
        if self.primary(ev):
            self.primary_ranks.add(ev.rank)
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

    def finish(self, emit: Emit) -> None:
        for b in self.blamed:
            if b.rank in self.primary_ranks:
                continue
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


class _ValueMachine(Machine):
    """The machines that follow one numeric `field` (with an optional `when`): the field and the
    condition are read here, per event and per batch; subclasses see finite values only."""

    NEEDS_RANK = False

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.get = field_getter(spec["field"])
        self.vget = field_vector(spec["field"])
        self.when = self.cond("when") if "when" in spec else None
        self.vwhen = self.vcond("when") if "when" in spec else None

    def feed(self, ev: Event, emit: Emit) -> None:
        if (self.NEEDS_RANK and ev.rank is None) or (self.when is not None and not self.when(ev)):
            return
        v = self.get(ev)
        if v is not None and math.isfinite(v):
            self.feed_value(ev, v, emit)

    def feed_batch(self, b: Any, emit: Emit) -> None:
        if self.NEEDS_RANK and b.rank is None:
            return
        rows, xs = _finite_values(self, b)
        if rows is None:
            return super().feed_batch(b, emit)  # a field or condition arrays cannot give: row by row
        if len(rows):
            self.feed_values(b, rows, xs, emit)

    def feed_value(self, ev: Event, v: float, emit: Emit) -> None:
        raise NotImplementedError

    def feed_values(self, b: Any, rows: Any, xs: Any, emit: Emit) -> None:
        raise NotImplementedError


class Spike(_ValueMachine):
    """A finite value more than `factor` times the median of the previous `window` values."""

    name = "spike"
    PARAMS = {"field": (True, "str"), "factor": (False, "float"), "window": (False, "int"),
              "min_history": (False, "int"), "when": (False, "condition")}

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.factor = float(self.num("factor", 3.0))
        self.window = int(self.num("window", 20))
        self.min_history = int(self.num("min_history", 10))

    def feed_value(self, ev: Event, v: float, emit: Emit) -> None:
        st = self.state.setdefault(ev.stream, {"hist": deque(maxlen=self.window), "cool": 0})
        hist = st["hist"]
        if st["cool"] > 0:
            st["cool"] -= 1
        elif len(hist) >= self.min_history:
            med = statistics.median(hist)
            if med > 0 and v > self.factor * med:
                emit(self.match(ev, [ev], value=v, baseline=med, ratio=v / med))
                st["cool"] = self.window
        hist.append(v)

    def feed_values(self, b: Any, rows: Any, xs: Any, emit: Emit) -> None:
        st = self.state.setdefault(b.stream, {"hist": deque(maxlen=self.window), "cool": 0})
        hist = st["hist"]
        h0, w = len(hist), self.window
        allv = np.concatenate([np.fromiter(hist, dtype=np.float64, count=h0), xs])
        m = len(xs)
        have = np.minimum(np.arange(h0, h0 + m), w)  # history length before each new value
        med = np.full(m, np.nan)
        full = np.arange(max(0, w - h0), m)  # rows with a whole window before them
        if len(full):
            lo, hi = h0 + int(full[0]) - w, h0 + m - w  # the windows before rows `full`
            windows = np.lib.stride_tricks.sliding_window_view(allv, w)[lo:hi]  # (a view)
            if self.factor > 0:
                # The median is at least the window's minimum: a value at most `factor` times
                # that cannot be a spike, and most rows of a healthy curve are not; their
                # medians (a sort per row) are not needed.
                with np.errstate(invalid="ignore"):
                    maybe = xs[full] > self.factor * rolling_min(allv[lo: hi + w - 1], w)
                full, windows = full[maybe], windows[maybe]
            if len(full):
                med[full] = rolling_median(windows)
        for j in np.nonzero((h0 + np.arange(m) < w) & (have >= self.min_history))[0].tolist():
            med[j] = statistics.median(allv[h0 + j - have[j]: h0 + j].tolist())
        with np.errstate(invalid="ignore"):
            cand = np.nonzero((have >= self.min_history) & (med > 0) & (xs > self.factor * med))[0]
        free = st["cool"]  # the first index checked again
        for j in cand.tolist():
            if j < free:
                continue
            v, base = float(xs[j]), float(med[j])
            ev = b.event(int(rows[j]))
            emit(self.match(ev, [ev], value=v, baseline=base, ratio=v / base))
            free = j + w + 1
        st["cool"] = max(0, free - m)
        hist.clear()
        hist.extend(allv[-w:].tolist())


class Trend(_ValueMachine):
    """A value that climbed and stayed up: at the end of the input, the median of the last
    `window` values is at least `min_ratio` times the best (lowest) rolling median seen. A spike
    that came back down is not a trend. Reported at the step after the lowest value of the best
    window (the onset of the climb)."""

    name = "trend"
    PARAMS = {"field": (True, "str"), "window": (False, "int"), "min_ratio": (False, "float"),
              "when": (False, "condition")}

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.window = int(self.num("window", 10))
        self.min_ratio = float(self.num("min_ratio", 1.5))

    def feed_value(self, ev: Event, v: float, emit: Emit) -> None:
        st = self.state.get(ev.stream)
        if st is None:
            st = self.state[ev.stream] = {"hist": deque(maxlen=self.window), "best": None, "onset": None, "med": None}
        hist = st["hist"]
        hist.append((v, ev))
        if len(hist) < self.window:
            return
        med = statistics.median(x for x, _ in hist)
        st["med"], st["last"] = med, ev
        if st["best"] is None or med < st["best"]:
            st["best"] = med
            i_min = min(range(len(hist)), key=lambda i: hist[i][0])
            st["onset"] = hist[i_min + 1][1] if i_min + 1 < len(hist) else hist[i_min][1]

    def feed_values(self, b: Any, rows: Any, xs: Any, emit: Emit) -> None:
        st = self.state.get(b.stream)
        if st is None:
            st = self.state[b.stream] = {"hist": deque(maxlen=self.window), "best": None, "onset": None, "med": None}
        hist, w = st["hist"], self.window
        h0 = len(hist)
        allv = np.concatenate([np.fromiter((v for v, _ in hist), dtype=np.float64, count=h0), xs])
        refs = [r for _, r in hist] + [b.ref(int(i)) for i in rows.tolist()[-w:]]
        ends = np.arange(max(h0, w - 1), len(allv))  # windows that end at a new value
        if len(ends):
            wins = np.lib.stride_tricks.sliding_window_view(allv, w)[int(ends[0]) - w + 1:]  # (a view)
            st["med"], st["last"] = float(rolling_median(wins[-1:])[0]), b.ref(int(rows[-1]))
            # Only a window whose minimum is below the best median so far can have a lower
            # median (a median is at least the minimum): the others need no sort.
            lo = int(ends[0]) - w + 1
            maybe = np.arange(len(wins)) if st["best"] is None else np.flatnonzero(rolling_min(allv[lo:], w) < st["best"])
            meds = rolling_median(wins[maybe]) if len(maybe) else np.zeros(0)
            k = int(np.argmin(meds)) if len(meds) else -1
            if k >= 0 and (st["best"] is None or meds[k] < st["best"]):
                st["best"] = float(meds[k])
                end = int(ends[maybe[k]])
                win = allv[end - w + 1: end + 1]
                i_min = int(np.argmin(win))
                at = end - w + 1 + (i_min + 1 if i_min + 1 < w else i_min)
                st["onset"] = self._ref(at, h0, hist, b, rows)
        tail = list(zip(allv[-w:].tolist(), refs[-w:]))
        hist.clear()
        hist.extend(tail)

    @staticmethod
    def _ref(at: int, h0: int, hist: Any, b: Any, rows: Any) -> Any:
        return hist[at][1] if at < h0 else b.ref(int(rows[at - h0]))

    def finish(self, emit: Emit) -> None:
        for st in self.state.values():
            best, med = st["best"], st["med"]
            if best is None or best <= 0 or med < self.min_ratio * best:
                continue
            onset, last = resolve(st["onset"]), resolve(st["last"])
            emit(self.match(onset, [onset, last], step=onset.step, best=best, value=med,
                            ratio=med / best, now_step=last.step))


class OutlierAcrossRanks(_ValueMachine):
    """A rank whose recent typical (median) value is `factor` times the median of the other ranks'
    and at least `min_excess` above it (e.g. data-loading time): the straggler. Needs three ranks.
    Reported at the step where its trailing run of slow values began."""

    name = "outlier_across_ranks"
    PARAMS = {"field": (True, "str"), "factor": (False, "float"), "min_samples": (False, "int"),
              "min_excess": (False, "float"), "when": (False, "condition")}
    WINDOW = 64
    NEEDS_RANK = True

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.factor = float(self.num("factor", 2.0))
        self.min_excess = float(self.num("min_excess", 0.0))
        self.min_samples = int(self.num("min_samples", 5))

    def feed_value(self, ev: Event, v: float, emit: Emit) -> None:
        st = self.state.setdefault(ev.stream, deque(maxlen=self.WINDOW))
        st.append((v, ev))

    def feed_values(self, b: Any, rows: Any, xs: Any, emit: Emit) -> None:
        st = self.state.setdefault(b.stream, deque(maxlen=self.WINDOW))
        st.extend(zip(xs[-self.WINDOW:].tolist(), [b.ref(int(i)) for i in rows[-self.WINDOW:].tolist()]))

    def finish(self, emit: Emit) -> None:
        meds = {k: statistics.median(v for v, _ in q) for k, q in self.state.items() if len(q) >= self.min_samples}
        if len(meds) < 3:
            return
        for k, m in meds.items():
            base = statistics.median(v for kk, v in meds.items() if kk != k)
            threshold = max(self.factor * base, base + self.min_excess)
            if m < threshold or m <= 0:
                continue
            q = list(self.state[k])
            i = len(q)
            while i > 0 and q[i - 1][0] >= threshold:
                i -= 1
            onset = resolve(q[i][1] if i < len(q) else q[-1][1])
            last = resolve(q[-1][1])
            emit(self.match(onset, [onset, last], step=onset.step, value=m, baseline=base,
                            ratio=(m / base) if base > 0 else math.inf))


def field_getter(path: "str | list[str]") -> Callable[[Event], Optional[float]]:
    """A numeric field of an event: `loss`, or a printed extra like `raw_fields.data_time`. A
    list names alternatives; the first one the event has is used."""
    from nanscope.parsers.numbers import to_float
    from nanscope.signatures.predicates import _getter

    paths = [path] if isinstance(path, str) else list(path)
    if not paths or not all(isinstance(p, str) for p in paths):
        raise SignatureError("'field' is a field name or a list of field names")
    getters = []
    for p in paths:  # "raw_fields.data_time*1000": a unit conversion
        name, _, mult = p.partition("*")
        try:
            factor = float(mult) if mult else 1.0
        except ValueError:
            raise SignatureError(f"bad field {p!r}: use NAME or NAME*NUMBER") from None
        getters.append((_getter(name.strip()), factor))

    def value(ev: Event) -> Optional[float]:
        for get, factor in getters:
            v = get(ev)
            if v is None or isinstance(v, bool):
                continue
            f = float(v) if isinstance(v, (int, float)) else to_float(str(v))
            if f is not None:
                return f * factor
        return None

    return value


def field_vector(path: "str | list[str]") -> Callable[[Any], Any]:
    """field_getter over a StepBatch: (values, present) per row, or None when a named field is not
    a column of the batch (the machine then reads the rows one by one)."""
    paths = [path] if isinstance(path, str) else list(path)
    alts = []
    for p in paths:
        name, _, mult = p.partition("*")
        alts.append((name.strip(), float(mult) if mult else 1.0))

    def value(b: Any) -> Any:
        vals = np.full(len(b), np.nan)
        present = np.zeros(len(b), dtype=bool)
        for name, factor in alts:
            got = b.col(name)
            if got is None:
                return None
            v, p = got
            fill = p & ~present
            vals[fill] = v[fill] * factor
            present |= fill
        return vals, present

    return value


def _finite_values(machine: Any, b: Any) -> tuple:
    """The rows of a batch a value machine reads (its `when` holds and the value is finite) and
    their values; (None, None) when that cannot be said in arrays."""
    got = machine.vget(b)
    if got is None:
        return None, None
    vals, present = got
    sel = present & np.isfinite(vals)
    if machine.vwhen is not None:
        m = machine.vwhen(b)
        if m is None:
            return None, None
        sel &= m
    rows = np.nonzero(sel)[0]
    return rows, vals[rows]


def rolling_median(windows: Any) -> Any:
    """statistics.median of each row, bit for bit: the middle value, or the mean of the two."""
    n = windows.shape[1]
    s = np.sort(windows, axis=1)
    if n % 2:
        return s[:, n // 2]
    return (s[:, n // 2 - 1] + s[:, n // 2]) / 2


def rolling_min(values: Any, w: int) -> Any:
    """The minimum of each window of w consecutive values (len(values) - w + 1 of them), as
    sliding_window_view(values, w).min(axis=1) gives it, in about log2(w) whole-array passes
    (minima of 1, 2, 4, ... values, the last two overlapping) instead of a reduction per window."""
    m, span = values, 1
    while span * 2 <= w:
        m = np.minimum(m[:-span], m[span:])
        span *= 2
    if span < w:  # two windows of `span` values cover w: [j, j + span) and [j + w - span, j + w)
        m = np.minimum(m[: len(m) - (w - span)], m[w - span:])
    return m


def resolve(ref: Any) -> Event:
    """An event kept by a machine: an Event, or a StepBatch row reference made into one when needed."""
    return ref if isinstance(ref, Event) else ref.event()


def _describe(ev: Event) -> str:
    err = getattr(ev, "error", None) or ev.kind
    exc = getattr(ev, "exc_type", None)
    msg = (getattr(ev, "message", "") or "").strip()
    head = f"{exc.rsplit('.', 1)[-1]}: {msg}" if exc else (msg or err)
    return head if len(head) <= 160 else head[:159] + "…"


MACHINES: dict[str, type[Machine]] = {m.name: m for m in (
    Line, Transient, Persistent, ScaleRun, SkipRate, CountWithin, FirstAcrossRanks, Cascade, LauncherBlame, Spike, Trend,
    OutlierAcrossRanks,
)}
