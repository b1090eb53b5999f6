"""The loss scaler: runs of scale decreases / overflows, and the rate of skipped updates."""

from __future__ import annotations

import math
from typing import Any

from nanscope.lazynp import np

from nanscope.errors import SignatureError
from nanscope.model import Event
from nanscope.signatures.machines.base import Emit, Machine, field_getter
from nanscope.signatures.machines.nonfinite import _Run


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
                         that prints no scale: at the start of the log, and recovered, or one
                         window of a `windowed_loss` logger with a finite loss that ends the log); a run
                         whose step lines show the same scale on `flat_steps` or more skipped
                         steps is no calibration (a dynamic scaler halves within its hysteresis:
                         Megatron's DynamicGradScaler after `hysteresis` (2) consecutive
                         overflows, DeepSpeed's after `hysteresis` (2)): the scale is static, or
                         stuck, and the updates are simply lost (see skip_rate's `min_flat`);
      verdict "collapse" the run reached the floor (`floor_when`, or a scale at most `floor`), or,
                         not a warm-up, it ends the log having halved `min_halvings` times to a
                         scale below `low_scale` (a collapse in progress).
    Extras: run (overflows), start_scale, end_scale, halvings, halvings_left (to the floor: `floors`
    per framework, else `floor`), floor, scale_story (where the scale is, in words),
    last_step, recovered_step, until_end; fell (" from A to B", " at A" when it did not move, or ""
    when no scale was printed)
    and after ("; normal steps from step N", or that the log ends before a clean step).
    """

    name = "scale_run"
    PARAMS = {"bad": (True, "condition"), "good": (True, "condition"), "verdict": (True, "str"),
              "floor_when": (False, "condition"), "gap": (False, "int"), "high_scale": (False, "float"),
              "low_scale": (False, "float"), "floor": (False, "float"), "min_halvings": (False, "int"),
              "warmup_steps": (False, "int"), "initial_scales": (False, "table"), "windowed_loss": (False, "list"),
              "flat_steps": (False, "int"), "spoil_when": (False, "condition"), "floors": (False, "table"),
              "unfloored": (False, "list")}
    DEFAULT_EVENTS = ("step", "scale")

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.bad, self.good = self.cond("bad"), self.cond("good")
        self.vbad, self.vgood = self.vcond("bad"), self.vcond("good")
        self.floor_when = self.cond("floor_when") if "floor_when" in spec else None
        self.vfloor = self.vcond("floor_when") if "floor_when" in spec else None
        self.verdict = spec["verdict"]
        if self.verdict not in ("warmup", "collapse"):
            raise SignatureError("'verdict' is warmup or collapse")
        self.gap = int(self.num("gap", 0))
        self.high = float(self.num("high_scale", 65536.0))
        self.low = float(self.num("low_scale", 128.0))
        self.floor = float(self.num("floor", 1.0))
        self.min_halvings = int(self.num("min_halvings", 3))
        self.warmup_steps = int(self.num("warmup_steps", 64))
        self.flat_steps = int(self.num("flat_steps", 0)) or None
        # an event inside a run that says it is no calibration (see the warm-up's spoil_when)
        self.spoil = self.cond("spoil_when") if "spoil_when" in spec else None
        self.vspoil = self.vcond("spoil_when") if "spoil_when" in spec else None
        init = spec.get("initial_scales", {})
        if not isinstance(init, dict) or not all(isinstance(v, (int, float)) for v in init.values()):
            raise SignatureError("'initial_scales' is a table framework = scale")
        self.initial = {k: float(v) for k, v in init.items()}
        windowed = spec.get("windowed_loss", [])
        if not isinstance(windowed, list) or not all(isinstance(v, str) for v in windowed):
            raise SignatureError("'windowed_loss' is a list of framework names")
        self.windowed = frozenset(windowed)
        # For the words only (a run is judged at `floor` for every scaler): a scaler's own floor where
        # it is not `floor` (fairseq's --min-loss-scale 1e-4), and the scalers that have none (apex
        # halves without a bound: below `floor` the gradients overflow even unscaled, which is the
        # collapse all the same, but there is no floor to name)
        floors = spec.get("floors", {})
        if not isinstance(floors, dict) or not all(isinstance(v, (int, float)) and v > 0 for v in floors.values()):
            raise SignatureError("'floors' is a table framework = scale (> 0)")
        self.floors = {k: float(v) for k, v in floors.items()}
        unfloored = spec.get("unfloored", [])
        if not isinstance(unfloored, list) or not all(isinstance(v, str) for v in unfloored):
            raise SignatureError("'unfloored' is a list of framework names")
        self.unfloored = frozenset(unfloored)

    def _floor(self, framework: Any) -> float:
        return self.floors.get(framework, self.floor)

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
                                 "recovery": None, "step_scales": {}}
            r["run"].add(ev)
            r["recovery"] = None
            self._scale(r, ev)
            if self.spoil is not None and self.spoil(ev):
                r["spoiled"] = True
            return
        if r is not None and self.spoil is not None and self.spoil(ev):
            r["spoiled"] = True
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
        spoil = self.vspoil(b) if self.vspoil is not None else np.zeros(len(b), dtype=bool)
        floor = self.vfloor(b) if self.vfloor is not None else np.zeros(len(b), dtype=bool)
        if bad is None or good is None or spoil is None or floor is None:
            return super().feed_batch(b, emit)
        st = self._st(b.stream)
        if st["run"] is None and not bad.any():
            if good.any():
                st["good_before"] = True
            return  # the common case: clean steps, no run open
        # A row neither bad nor good (nor spoiling) changes nothing; with no run open a good row only
        # sets good_before. With a run open, a stretch of bad rows only extends it (one by one only
        # where a row prints a loss scale or the floor: _scale reads it), and a good row at or before
        # the run's last step (or within `gap` of it once the recovery is seen) changes nothing: a
        # long non-finite run, or a restart that logs its steps again below it, never goes row by row.
        rows = np.nonzero(bad | good | spoil)[0]
        bad_at = np.nonzero(bad)[0]
        not_bad = np.flatnonzero(~bad[rows])  # positions in rows
        scale = b.col("loss_scale")
        one_by_one = floor if scale is None else floor | scale[1]
        steps = b.step
        k = 0
        while k < len(rows):
            r = st["run"]
            if r is None:
                j = int(np.searchsorted(bad_at, rows[k]))
                if j == len(bad_at):
                    st["good_before"] = True  # rows[k:] are all good
                    return
                nxt = int(np.searchsorted(rows, bad_at[j]))
                if nxt > k:
                    st["good_before"] = True
                k = nxt
                self.feed(b.event(int(rows[k])), emit)  # (opens the run)
                k += 1
                continue
            if bad[rows[k]]:
                at = int(np.searchsorted(not_bad, k))
                end = int(not_bad[at]) if at < len(not_bad) else len(rows)
                run_rows = rows[k:end]
                if one_by_one[run_rows].any():
                    for i in run_rows.tolist():
                        self.feed(b.event(i), emit)
                else:
                    r["run"].add_rows(b, run_rows)
                    r["recovery"] = None
                    if spoil[run_rows].any():
                        r["spoiled"] = True
                k = end
                continue
            k = self._skip(r, rows, k, bad, good, spoil, steps)
            if k < len(rows) and not bad[rows[k]]:
                self.feed(b.event(int(rows[k])), emit)
                k += 1

    def _skip(self, r: dict, rows: np.ndarray, k: int, bad: np.ndarray, good: np.ndarray, spoil: np.ndarray,
              steps: np.ndarray) -> int:
        """With a run open, from rows[k] (not bad): the position of the next row that can change the
        run (bad, or good past the run's last step, or past `gap` after it once the recovery is
        seen); the rows before it only spoil the run if one says so. Looked for in windows that
        double, so each call costs what it skips."""
        last = r["run"].last_step
        lim = -np.inf if last is None else last if r["recovery"] is None else last + self.gap
        w = 64
        while k < len(rows):
            seg = rows[k:k + w]
            hit = np.flatnonzero(bad[seg] | (good[seg] & ~bad[seg] & (steps[seg] > lim)))
            upto = seg if not len(hit) else seg[:int(hit[0])]
            if spoil[upto].any():
                r["spoiled"] = True
            if len(hit):
                return k + int(hit[0])
            k += len(seg)
            w *= 2
        return k

    def _scale(self, r: dict, ev: Event) -> None:
        old, new = getattr(ev, "old_scale", None), getattr(ev, "new_scale", None)
        if ev.kind == "step":
            new = getattr(ev, "loss_scale", None)
            if new is not None and ev.step is not None and len(r["step_scales"]) < 64:
                r["step_scales"][ev.step] = new
        if self.floor_when is not None and self.floor_when(ev):
            r["floor"] = True
            if ev.kind == "scale" and ev.action == "minimum" and new is not None and math.isfinite(new) and new > 0:
                r["floor_value"] = new  # fairseq says its floor: "Minimum loss scale reached (0.0001)"
        if new is None or not math.isfinite(new):
            return
        if r["start"] is None:
            # the scale the run began at: the attempted one, or twice the first halved scale
            r["start"] = old if old is not None else (new * 2 if ev.kind == "scale" and ev.action == "overflow" else new)
        prev = r["scale"] if r["scale"] is not None else old
        if prev is not None and new < prev:
            ratio = prev / new if new > 0 else math.inf  # (a subnormal scale: the ratio overflows)
            r["halvings"] += max(1, round(math.log2(ratio))) if math.isfinite(ratio) else 1
        elif prev is None and ev.kind == "scale" and ev.action == "overflow":
            r["halvings"] += 1
        r["scale"] = new
        r["low"] = new if r["low"] is None else min(r["low"], new)
        if new <= self.floor and ev.kind == "scale":
            r["floor"] = True  # (judged at `floor` for every scaler: at 1 the gradients overflow unscaled)

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
            # and recovered; or one logged window at the very start that ends the log, from a logger
            # whose loss is the plain mean over its window (`windowed_loss`): had the non-finite update
            # been applied, the window's later losses would be non-finite and so would their mean, so
            # a finite mean next to it says the scaler skipped that update
            first = run.events[0]
            loss = getattr(first, "loss", None)
            lone = (until_end and run.steps == 1 and r["framework"] in self.windowed
                    and loss is not None and math.isfinite(loss))
            warmup = not r["floor"] and not deep and (r["recovery"] is not None or lone)
        else:
            warmup = not r["floor"] and not deep and (high_start or (low is not None and low >= self.low))
        if r.get("spoiled"):
            warmup = False
        scales = set(r["step_scales"].values())
        if (warmup and self.flat_steps is not None and r["halvings"] == 0 and len(scales) == 1
                and len(r["step_scales"]) >= self.flat_steps):
            warmup = False  # the same scale on every skipped step: nothing is being calibrated
        if self.verdict == "warmup":
            hit = warmup
        else:
            hit = r["floor"] or (not warmup and until_end and low is not None and low < self.low
                                 and r["halvings"] >= self.min_halvings)
        if not hit:
            return
        rec = r["recovery"]
        first = run.events[0]
        floor = r.get("floor_value") or self._floor(r["framework"])
        left = 0 if low is None or low <= floor else int(math.floor(math.log2(low / floor)))
        fell = ("" if start is None or low is None
                else f" at {start:g}" if start == low else f" from {start:g} to {low:g}")
        after = (f"; normal steps from step {rec.step}" if rec is not None and rec.step is not None
                 else ("; the log ends before a clean step" if rec is None else ""))
        emit(self.match(first, run.events + ([rec] if rec is not None else []), step=run.first_step,
                        fell=fell, after=after, floor=floor,
                        scale_story=self._story(r, start, low, floor, left),
                        run=run.steps, start_scale=start if start is not None else "?",
                        end_scale=low if low is not None else "?", halvings=r["halvings"], halvings_left=left,
                        last_step=run.last_step if run.last_step is not None else "?",
                        recovered_step=rec.step if rec is not None and rec.step is not None else "?",
                        until_end=until_end))

    def _story(self, r: dict, start: Any, low: Any, floor: float, left: int) -> str:
        """Where the scale is, in words: what it did, and how far it is from the floor (extra
        `scale_story`)."""
        if start is None or low is None:
            return "the loss scale is at its floor" if r["floor"] else "the loss scale is not printed"
        moved = f"the loss scale fell from {start:g} to {low:g}" if start != low else f"the loss scale is at {low:g}"
        if r["framework"] in self.unfloored:
            return moved + (" (this scaler has no floor; below 1 the gradients overflow even unscaled)"
                            if low < 1 else "")
        if low == floor:
            return moved + ", the floor"
        if low < floor:
            return moved + f", below the floor of {floor:g}"
        return moved + f", {left} halving(s) above the floor of {floor:g}"

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
              "min_skipped": (False, "int"), "when": (False, "condition"), "min_flat": (False, "int")}

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.total = field_getter(spec["total"]) if "total" in spec else None
        self.window = field_getter(spec["window"]) if "window" in spec else None
        self.min_fraction = float(self.num("min_fraction", 0.5))
        self.min_skipped = int(self.num("min_skipped", 10))
        # Fewer than min_skipped are enough when every update so far was skipped and the step lines
        # show one loss scale over at least min_flat of them on two lines or more: a dynamic scaler
        # would have halved (its warm-up), so the scale is static or stuck and nothing is learned.
        self.min_flat = int(self.num("min_flat", 0)) or None
        self.when = self.cond("when") if "when" in spec else None
        self.vwhen = self.vcond("when") if "when" in spec else None

    def feed(self, ev: Event, emit: Emit) -> None:
        if ev.step is None or (self.when is not None and not self.when(ev)):
            return
        st = self.state.setdefault(ev.stream, {"prev": None, "skipped": 0, "steps": 0, "first": None, "last": None})
        tot = self.total(ev) if self.total is not None else None
        st.setdefault("scales", set())
        st["lines"] = st.get("lines", 0) + 1
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
        scale = getattr(ev, "loss_scale", None)
        if scale is not None and len(st["scales"]) < 4:
            st["scales"].add(scale)
        # every update so far skipped: the finding starts at the first of them, not where the rate held
        every = bool(st["steps"]) and st["skipped"] == st["steps"]
        if not every:
            st["all_from"] = None
        elif st.get("all_from") is None:
            st["all_from"] = ev
        flat = (self.min_flat is not None and every and st["skipped"] >= self.min_flat
                and st["lines"] >= 2 and len(st["scales"]) == 1 and scale is not None)
        if flat or (st["steps"] and st["skipped"] >= self.min_skipped and st["skipped"] >= self.min_fraction * st["steps"]):
            if st["first"] is None:
                st["first"] = st["all_from"] if every and st.get("all_from") is not None else ev
            st["last"] = (ev, st["skipped"], st["steps"])

    def feed_batch(self, b: Any, emit: Emit) -> None:
        cols = [c for c, g in (("skipped_total", self.total), ("skipped_iters", self.window)) if g is not None]
        got = [b.col(c) for c in cols]
        if any(g is None for g in got) or (self.when is not None and self.vwhen(b) is None):
            return super().feed_batch(b, emit)
        has = np.zeros(len(b), dtype=bool)
        for _, present in got:
            has |= present
        if self.when is not None:
            has &= self.vwhen(b)
        rows = np.nonzero(has)[0]
        lead = int(np.argmax(b.step[rows] > 0)) if len(rows) and (b.step[rows] > 0).any() else len(rows)
        for i in rows[:lead].tolist():  # step 0 (a run's first line) one by one
            self.feed(b.event(i), emit)
        rows = rows[lead:]
        if len(rows) and self._healthy_rows(b, rows, dict(zip(cols, got))):
            return
        # a row without a counter leaves the state as it is: only the rows with one, in order
        for i in rows.tolist():
            self.feed(b.event(i), emit)

    def _healthy_rows(self, b: Any, rows: np.ndarray, got: dict) -> bool:
        """feed() over these rows in arrays when none of them can start a finding (the common
        case: a cumulative counter below the rate, or windows with no skipped iteration); False
        (nothing done) otherwise, for the rows to go one by one."""
        steps = b.step[rows]
        if (steps <= 0).any():
            return False
        tot = got.get("skipped_total")
        win = got.get("skipped_iters")
        tp = tot[1][rows] if tot is not None else np.zeros(len(rows), dtype=bool)
        wp = win[1][rows] if win is not None else np.zeros(len(rows), dtype=bool)
        st = self.state.get(b.stream)
        if tp.all():  # DeepSpeed's skipped=K: each row sets the state to (K, step)
            k = tot[0][rows]
            hit = (k >= self.min_skipped) & (k >= self.min_fraction * steps)
            if hit.any():
                return False
            st = self.state.setdefault(b.stream, {"prev": None, "skipped": 0, "steps": 0, "first": None, "last": None})
            st["skipped"], st["steps"], st["prev"] = int(k[-1]), int(steps[-1]), int(steps[-1])
            return True
        if tp.any() or not wp.all() or (win[0][rows] != 0).any():
            return False
        # Megatron's windows with nothing skipped: the count stays, the steps grow by each window
        prev = st["prev"] if st is not None else None
        if (np.diff(steps) <= 0).any() or (prev is not None and steps[0] <= prev):
            return False
        if st is not None and st["skipped"] >= self.min_skipped:
            return False  # a rate that may still hold on these rows: one by one
        st = self.state.setdefault(b.stream, {"prev": None, "skipped": 0, "steps": 0, "first": None, "last": None})
        st["steps"] += int(steps[-1]) - (int(prev) if prev is not None else int(steps[0]))
        st["prev"] = int(steps[-1])
        return True

    def finish(self, emit: Emit) -> None:
        for st in self.state.values():
            if st["first"] is None:
                continue
            last, skipped, steps = st["last"]
            first = st["first"]
            emit(self.match(first, [first] + ([last] if last is not first else []), skipped=skipped,
                            steps=steps, fraction=round(skipped / steps, 4), percent=round(100 * skipped / steps, 1),
                            last_step=last.step))
