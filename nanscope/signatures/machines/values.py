"""Machines over a metric's values: spikes, trends, one rank's outlier among ranks, and the
rolling windows they share."""

from __future__ import annotations

import math
import statistics
from collections import deque
from typing import Any

from nanscope.lazynp import np

from nanscope.errors import SignatureError
from nanscope.model import Event
from nanscope.signatures.machines.base import Emit, Machine, field_getter, field_vector, resolve


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
    """A finite value more than `factor` times the median of the previous `window` values; with
    `hold`, only when the median of the `hold` values after it is still above that (or the input
    ends first), or with `returned` only when it is back at or below it: a small batch's per-step
    loss is noisy enough to reach many times its median for one step and come straight back (a
    real HF Trainer run, batch 8, has such one-step outliers up to 28 times its median), while a
    spike that hurt the weights stays up.

    With fewer than `min_history` values before it (an excerpt, a log that prints every few hundred
    steps), a value counts only with `short_factor` set: at least `short_factor` times the median of
    the values so far, on a step whose grad norm is non-finite or at least `short_grad_factor` times
    the median of the grad norms so far. Two logged points are enough when the gradient says the
    same thing by orders of magnitude; a small loss that merely changes scale (an RL objective near
    zero) has no such gradient."""

    name = "spike"
    PARAMS = {"field": (True, "str"), "factor": (False, "float"), "window": (False, "int"),
              "min_history": (False, "int"), "when": (False, "condition"), "short_factor": (False, "float"),
              "short_grad_factor": (False, "float"), "hold": (False, "int"), "returned": (False, "bool")}

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.factor = float(self.num("factor", 3.0))
        self.window = int(self.num("window", 20))
        self.min_history = int(self.num("min_history", 10))
        self.short_factor = float(self.num("short_factor", 0.0))  # 0: no spike before min_history
        self.short_grad_factor = float(self.num("short_grad_factor", 100.0))
        self.hold = int(self.num("hold", 0))  # 0: a spike counts at once
        self.returned = spec.get("returned", False)
        if not isinstance(self.returned, bool) or (self.returned and self.hold <= 0):
            raise SignatureError("'returned' is true or false, and needs 'hold'")

    def _state(self, stream: Any) -> dict:
        return self.state.setdefault(stream, {"hist": deque(maxlen=self.window), "cool": 0, "grads": [],
                                              "pending": None})

    def _short(self, st: dict, ev: Event, v: float, emit: Emit) -> None:
        """The check of a value with a short history (see the class doc)."""
        grads = st["grads"]
        g = getattr(ev, "grad_norm", None)
        if st["cool"] > 0:
            st["cool"] -= 1
        elif st["hist"]:
            med = statistics.median(st["hist"])
            before = [x for x in grads if x is not None and math.isfinite(x)]
            gmed = statistics.median(before) if before else None
            jump = (g is not None and gmed is not None and gmed > 0
                    and (not math.isfinite(g) or g >= self.short_grad_factor * gmed))
            if med > 0 and v > self.short_factor * med and jump:
                emit(self.match(ev, [ev], value=v, baseline=med, ratio=v / med))
                st["cool"] = self.window
        grads.append(g)

    def feed_value(self, ev: Event, v: float, emit: Emit) -> None:
        st = self._state(ev.stream)
        hist = st["hist"]
        if st["pending"] is not None:  # a value after a spike that waits for `hold` of them
            st["pending"][3].append(v)
            if len(st["pending"][3]) >= self.hold:
                self._decide(st, emit)
        elif len(hist) < self.min_history and self.short_factor > 0:
            self._short(st, ev, v, emit)
        elif st["cool"] > 0:
            st["cool"] -= 1
        elif len(hist) >= self.min_history:
            med = statistics.median(hist)
            if med > 0 and v > self.factor * med:
                if self.hold:
                    st["pending"] = [ev, v, med, []]
                else:
                    emit(self.match(ev, [ev], value=v, baseline=med, ratio=v / med))
                    st["cool"] = self.window
        hist.append(v)

    def _decide(self, st: dict, emit: Emit) -> bool:
        """A spike held for the values after it: reported if they stay up (or there are none: the
        input ended at it); with `returned`, only if they came back within the trend (a lone
        outlier)."""
        ev, v, med, after = st["pending"]
        st["pending"] = None
        back = bool(after) and statistics.median(after) <= self.factor * med
        if back != self.returned:
            return False
        emit(self.match(ev, [ev], value=v, baseline=med, ratio=v / med))
        st["cool"] = max(0, self.window - len(after))
        return True

    def finish(self, emit: Emit) -> None:
        for st in self.state.values():
            if st["pending"] is not None:
                self._decide(st, emit)

    def feed_values(self, b: Any, rows: Any, xs: Any, emit: Emit) -> None:
        st = self._state(b.stream)
        hist = st["hist"]
        taken = 0  # the first values, the ones a spike held from the batch before waits for
        if st["pending"] is not None:
            taken = min(len(xs), self.hold - len(st["pending"][3]))
            st["pending"][3].extend(xs[:taken].tolist())
            if len(st["pending"][3]) >= self.hold:
                self._decide(st, emit)
            st["cool"] += taken  # (skipped below as the values the cool-down skips)
        if self.short_factor > 0 and len(hist) < self.min_history:
            # the first values of a stream, one by one (at most min_history of them)
            k = min(len(xs), self.min_history - len(hist))
            for j in range(k):
                self.feed_value(b.event(int(rows[j])), float(xs[j]), emit)
            rows, xs = rows[k:], xs[k:]
            if not len(xs):
                return
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
            if j < free or st["pending"] is not None:
                continue
            v, base = float(xs[j]), float(med[j])
            ev = b.event(int(rows[j]))
            if not self.hold:
                emit(self.match(ev, [ev], value=v, baseline=base, ratio=v / base))
                free = j + w + 1
                continue
            after = xs[j + 1: j + 1 + self.hold].tolist()
            st["pending"] = [ev, v, base, after]
            if len(after) < self.hold:
                free = m  # (the next batch's first values decide it)
                continue
            free = j + 1 + (w if self._decide(st, emit) else self.hold)
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
            at = _after(i_min, len(hist), lambda i: resolve(hist[i][1]).step)
            st["onset"] = hist[at][1]

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
                lo_w = end - w + 1
                at = lo_w + _after(int(np.argmin(win)), w,
                                   lambda i: self._step(lo_w + i, h0, hist, b, rows))
                st["onset"] = self._ref(at, h0, hist, b, rows)
        tail = list(zip(allv[-w:].tolist(), refs[-w:]))
        hist.clear()
        hist.extend(tail)

    @staticmethod
    def _ref(at: int, h0: int, hist: Any, b: Any, rows: Any) -> Any:
        return hist[at][1] if at < h0 else b.ref(int(rows[at - h0]))

    @staticmethod
    def _step(at: int, h0: int, hist: Any, b: Any, rows: Any) -> Any:
        return resolve(hist[at][1]).step if at < h0 else int(b.step[int(rows[at - h0])])

    def finish(self, emit: Emit) -> None:
        for st in self.state.values():
            best, med = st["best"], st["med"]
            if best is None or best <= 0 or med < self.min_ratio * best:
                continue
            onset, last = resolve(st["onset"]), resolve(st["last"])
            emit(self.match(onset, [onset, last], step=onset.step, best=best, value=med,
                            ratio=med / best, now_step=last.step))


def _after(i_min: int, n: int, step_of: Any) -> int:
    """The window index of the first value after the lowest one (i_min) logged at a later step:
    a line printed twice (two log handlers, a tqdm redraw) repeats the lowest step, and the climb
    starts after it. The lowest itself when nothing follows it."""
    base = step_of(i_min)
    for j in range(i_min + 1, n):
        if base is None or step_of(j) != base:
            return j
    return i_min


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
