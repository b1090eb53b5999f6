"""Per-rank curves for the pictures: loss, grad norm and loss scale over steps, kept as a bounded,
downsampled series while the run reads the log (the HTML report's plots, the text report's
sparklines).

Each stream keeps at most CAP buckets of equal step width: per bucket the min and max of each
value (finite values only), how many rows fell in it, and the first step in it that printed a
non-finite value or skipped its update. When a step falls outside the range the buckets can
cover, the width doubles and neighbouring buckets merge, so memory is a few arrays per stream
whatever the log's length, and a NaN or a skip is never dropped: its bucket keeps the mark and the
exact step of the first one. The decisive events of each stream (its first non-finite value,
errors, exits, teardowns) are kept for the timeline, a few per kind.

Fed with what nanscope.streams yields (StepBatch columns, step and scale events, errors), so it
reads what the ledger reads, in the same pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from nanscope.lazynp import np

CAP = 512  # buckets per stream: about one per pixel of a plot
MAX_STREAMS = 512  # streams with a curve; later ones are counted only
EVENTS_PER_KIND = 4  # timeline events kept per stream and kind
PENDING = 4096  # single step events a curve gathers before adding them
VALUES = ("loss", "grad_norm", "loss_scale")
_NONE = (1 << 63) - 1  # "no mark in this bucket" (int64 max)


@dataclass
class TimelineEvent:
    kind: str  # nonfinite | error | timeout | exit | teardown | end | skip
    step: Optional[int]
    label: str  # short, from the event's normalized fields (the report escapes it)
    source: str
    line: int
    ts: Optional[float] = None


@dataclass
class Buckets:
    """The merged view of a stream: one entry per non-empty bucket, in step order."""

    lo: np.ndarray  # first step the bucket covers (int64)
    hi: np.ndarray  # last step it covers
    count: np.ndarray
    mins: dict  # value name -> float64 (NaN: none finite in the bucket)
    maxs: dict
    nonfinite: dict  # value name -> first step in the bucket where it was non-finite, or -1
    skipped: np.ndarray  # first skipped step, or -1
    cols: np.ndarray  # the column (0..n-1) of each entry


@dataclass
class RankSeries:
    label: str
    rank: Optional[int]
    node: Optional[str]
    origin: int  # step at bucket 0
    width: int  # steps per bucket
    count: Optional[np.ndarray]  # None: a stream with no steps (only events)
    mins: dict
    maxs: dict
    nonfinite: dict  # value name -> first non-finite step per bucket (_NONE: none)
    skipped: Optional[np.ndarray]
    first_step: Optional[int] = None
    last_step: Optional[int] = None
    events: list = field(default_factory=list)  # TimelineEvent, in feed order

    def has(self, name: str) -> bool:
        return name in self.mins and bool(np.isfinite(self.mins[name]).any())

    def nonfinite_steps(self, name: str) -> list[int]:
        arr = self.nonfinite.get(name)
        return [] if arr is None else [int(s) for s in arr if s != _NONE]

    def skipped_steps(self) -> list[int]:
        return [] if self.skipped is None else [int(s) for s in self.skipped if s != _NONE]

    def buckets(self, lo: int, hi: int, n: int) -> Buckets:
        """The series over steps lo..hi in at most n equal buckets (the plot's pixel columns)."""
        if self.count is None:
            used = np.zeros(0, dtype=np.int64)
        else:
            used = np.flatnonzero((self.count > 0) | (self.nonfinite != _NONE) | (self.skipped != _NONE))
        if len(used) == 0 or n <= 0:
            z = np.zeros(0, dtype=np.int64)
            return Buckets(z, z, z, {k: np.zeros(0) for k in self.mins}, {k: np.zeros(0) for k in self.maxs},
                           {k: z for k in self.nonfinite}, z, z)
        start = self.origin + used * self.width
        span = max(1, hi - lo + 1)
        col = np.clip(((start - lo) * n) // span, 0, n - 1)
        cols, at = np.unique(col, return_index=True)
        red = lambda f, a, fill: f.reduceat(np.where(np.isnan(a), fill, a), at) if len(a) else a  # noqa: E731
        mins = {k: red(np.fmin, v[used], np.nan) for k, v in self.mins.items()}
        maxs = {k: red(np.fmax, v[used], np.nan) for k, v in self.maxs.items()}
        nf = {k: np.minimum.reduceat(v[used], at) for k, v in self.nonfinite.items()}
        sk = np.minimum.reduceat(self.skipped[used], at)
        return Buckets(lo=lo + (cols * span) // n, hi=lo + ((cols + 1) * span) // n - 1,
                       count=np.add.reduceat(self.count[used], at), mins=mins, maxs=maxs,
                       nonfinite={k: np.where(v == _NONE, -1, v) for k, v in nf.items()}, skipped=np.where(sk == _NONE, -1, sk),
                       cols=cols)


class _Curve:
    """One stream's buckets while the log is read."""

    __slots__ = ("origin", "width", "count", "mins", "maxs", "nonfinite", "skipped", "lo", "hi", "events", "kinds",
                 "pending")

    def __init__(self) -> None:
        self.origin: Optional[int] = None
        self.width = 1
        # the buckets' arrays come with the first step (_fit): a stream with only events (an error, a
        # teardown) needs none, and a log with no steps then never imports numpy (nanscope.lazynp)
        self.count: Optional[np.ndarray] = None
        self.mins: dict[str, np.ndarray] = {}
        self.maxs: dict[str, np.ndarray] = {}
        self.nonfinite: dict[str, np.ndarray] = {}
        self.skipped: Optional[np.ndarray] = None
        self.lo: Optional[int] = None
        self.hi: Optional[int] = None
        self.events: list[TimelineEvent] = []
        self.kinds: dict[str, int] = {}
        # single step events not yet added: (step, loss, grad_norm, loss_scale, skipped, source, line, ts);
        # added together (SeriesRecorder._flush): one array call per value instead of one per event
        self.pending: list[tuple] = []

    def _fit(self, lo: int, hi: int) -> None:
        """Widen (and move) the buckets until steps lo..hi fit."""
        if self.origin is None:
            self.origin = lo
            self.count = np.zeros(CAP, dtype=np.int64)
            self.skipped = np.full(CAP, _NONE, dtype=np.int64)
        o, w = self.origin, self.width
        if lo >= o and hi < o + CAP * w:
            return
        keep = self._occupied()
        a = min(lo, o)
        b = max(hi, o + (int(np.flatnonzero(keep)[-1]) + 1) * w - 1 if keep.any() else hi)
        nw = w
        while (b // nw) - (a // nw) >= CAP:
            nw *= 2
        no = (a // nw) * nw
        # old bucket i covers o + i*w .. o + (i+1)*w - 1; with o and no multiples of w, and nw a
        # multiple of w, it falls in one new bucket
        if o % w:
            raise AssertionError("bucket origin not aligned")
        j = (o + np.arange(CAP) * w - no) // nw
        jk = j[keep]
        count = np.zeros(CAP, dtype=np.int64)
        np.add.at(count, jk, self.count[keep])
        for name in list(self.mins):
            mn = np.full(CAP, np.nan)
            mx = np.full(CAP, np.nan)
            np.fmin.at(mn, jk, self.mins[name][keep])
            np.fmax.at(mx, jk, self.maxs[name][keep])
            self.mins[name], self.maxs[name] = mn, mx
        for name in list(self.nonfinite):
            self.nonfinite[name] = _remap(self.nonfinite[name], jk, keep)
        self.skipped = _remap(self.skipped, jk, keep)
        self.count, self.origin, self.width = count, no, nw

    def _occupied(self) -> np.ndarray:
        got = (self.count > 0) | (self.skipped != _NONE)
        for arr in self.nonfinite.values():
            got |= arr != _NONE
        return got

    def add(self, steps: np.ndarray, values: dict, skipped: np.ndarray) -> bool:
        """Rows of one stream: steps (int64), value name -> (float64, present), skipped (bool).
        True when a value was non-finite."""
        if len(steps) == 0:
            return
        lo, hi = int(steps.min()), int(steps.max())
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)
        self._fit(lo, hi)
        k = (steps - self.origin) // self.width
        np.add.at(self.count, k, 1)
        bad_any = False
        for name, (v, p) in values.items():
            fin = np.isfinite(v)
            ok = p & fin
            if ok.any():
                if name not in self.mins:
                    self.mins[name] = np.full(CAP, np.nan)
                    self.maxs[name] = np.full(CAP, np.nan)
                np.fmin.at(self.mins[name], k[ok], v[ok])
                np.fmax.at(self.maxs[name], k[ok], v[ok])
            bad = p & ~fin
            if bad.any():
                bad_any = True
                arr = self.nonfinite.get(name)
                if arr is None:
                    arr = self.nonfinite[name] = np.full(CAP, _NONE, dtype=np.int64)
                np.minimum.at(arr, k[bad], steps[bad])
        if skipped.any():
            np.minimum.at(self.skipped, k[skipped], steps[skipped])
        return bad_any

    def event(self, ev: TimelineEvent) -> None:
        n = self.kinds.get(ev.kind, 0)
        if n < EVENTS_PER_KIND:
            self.kinds[ev.kind] = n + 1
            self.events.append(ev)


def _remap(arr: np.ndarray, jk: np.ndarray, keep: np.ndarray) -> np.ndarray:
    out = np.full(CAP, _NONE, dtype=np.int64)
    np.minimum.at(out, jk, arr[keep])
    return out


def _label(key: Any) -> tuple[str, Optional[int], Optional[str]]:
    from nanscope.streams import _label as stream_label

    rank = key[2] if key[0] == "rank" else None
    node = key[1] if key[0] != "source" else None
    return stream_label(key), rank, node


def _error_kind(ev: Any) -> str:
    if "timeout" in (ev.error or ""):
        return "timeout"
    if ev.exitcode is not None or ev.signal or ev.error in ("child_failed", "signal_received", "worker_failed"):
        return "exit"
    return "error"


class SeriesRecorder:
    """Feed it every event streams yield; `series()` gives the per-rank curves at the end."""

    def __init__(self) -> None:
        self._curves: dict[Any, _Curve] = {}
        self.dropped_streams = 0

    def _curve(self, key: Any) -> Optional[_Curve]:
        c = self._curves.get(key)
        if c is None and key is not None:
            if len(self._curves) >= MAX_STREAMS:
                self.dropped_streams += 1
                return None
            c = self._curves[key] = _Curve()
        return c

    def feed(self, e: Any) -> None:
        kind = e.kind
        if kind == "step":
            self._step(e)
            return
        c = self._curves.get(e.stream)
        if c is not None and c.pending:
            self._flush(c)  # what came before this event goes in first, as it was read
        if kind == "steps":
            self._batch(e)
        elif kind == "scale":
            if e.action in ("overflow", "decrease", "minimum") and e.step is not None:
                c = self._curve(e.stream)
                if c is not None and e.action != "minimum":
                    s = np.array([e.step], dtype=np.int64)
                    c.add(s, {}, np.ones(1, dtype=bool))
                    c.count[(e.step - c.origin) // c.width] -= 1  # a mark, not a row
                if c is not None:
                    label = f"loss scale {e.action}" + (f" to {e.new_scale:g}" if e.new_scale is not None else "")
                    c.event(TimelineEvent("skip", e.step, label, e.loc.source, e.loc.line, e.origin.ts))
        elif kind == "error":
            c = self._curve(e.stream)
            if c is not None:
                what = e.exc_type or e.error
                if e.exitcode is not None:
                    what += f" (exit code {e.exitcode})"
                elif e.signal:
                    what += f" ({e.signal})"
                c.event(TimelineEvent(_error_kind(e), e.step, what, e.loc.source, e.loc.line, e.origin.ts))
        elif kind == "lifecycle" and e.action in ("end", "teardown", "restart"):
            c = self._curve(e.stream)
            if c is not None:
                c.event(TimelineEvent("teardown" if e.action == "teardown" else e.action, e.step, e.action,
                                      e.loc.source, e.loc.line, e.origin.ts))

    def _step(self, e: Any) -> None:
        if e.step is None:
            return
        c = self._curve(e.stream)
        if c is None:
            return
        c.pending.append((e.step, e.loss, e.grad_norm, e.loss_scale, bool(e.skipped) or bool(e.skipped_iters),
                          e.loc.source, e.loc.line, e.origin.ts))
        if len(c.pending) >= PENDING:
            self._flush(c)

    def _flush(self, c: _Curve) -> None:
        """Add a curve's pending step events at once (its buckets start at the first one's step, as
        they would one by one), and mark the first of them with a non-finite value."""
        rows, c.pending = c.pending, []
        if c.origin is None:
            c._fit(rows[0][0], rows[0][0])
        steps = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        values = {}
        for j, name in enumerate(VALUES, start=1):
            got = [r[j] for r in rows]
            present = np.fromiter((v is not None for v in got), dtype=bool, count=len(got))
            if present.any():
                values[name] = (np.array([np.nan if v is None else v for v in got], dtype=np.float64), present)
        skipped = np.fromiter((r[4] for r in rows), dtype=bool, count=len(rows))
        if c.add(steps, values, skipped):
            bad = np.zeros(len(rows), dtype=bool)
            for v, p in values.values():
                bad |= p & ~np.isfinite(v)
            r = rows[int(np.argmax(bad))]
            self._first_bad(c, r[0], r[5], r[6], r[7])

    def _batch(self, b: Any) -> None:
        n = len(b)
        if n == 0:
            return
        c = self._curve(b.stream)
        if c is None:
            return
        if not b.step_set.all():
            for ev in b.events():
                self._step(ev)
            return
        values = {}
        for name in VALUES:
            got = b.col(name)
            if got is not None and got[1].any():
                values[name] = got
        skipped = np.zeros(n, dtype=bool)
        for name in ("skipped", "skipped_iters"):
            got = b.col(name)
            if got is not None:
                v, p = got
                skipped |= p & (v > 0)
        if c.add(b.step, values, skipped) and "nonfinite" not in c.kinds:
            bad = np.zeros(n, dtype=bool)
            for v, p in values.values():
                bad |= p & ~np.isfinite(v)
            i = int(np.argmax(bad))
            self._first_bad(c, int(b.step[i]), b.source, int(b.lines[i]), None)

    def _first_bad(self, c: _Curve, step: int, source: str, line: int, ts: Optional[float]) -> None:
        if "nonfinite" not in c.kinds:
            c.event(TimelineEvent("nonfinite", step, "first non-finite value", source, line, ts))

    def series(self) -> list[RankSeries]:
        out = []
        for c in self._curves.values():
            if c.pending:
                self._flush(c)
        for key, c in self._curves.items():
            if c.origin is None and not c.events:
                continue
            label, rank, node = _label(key)
            out.append(RankSeries(label=label, rank=rank, node=node, origin=c.origin or 0, width=c.width,
                                  count=None if c.count is None else c.count.copy(), mins=dict(c.mins),
                                  maxs=dict(c.maxs), nonfinite=c.nonfinite.copy(),
                                  skipped=None if c.skipped is None else c.skipped.copy(),
                                  first_step=c.lo, last_step=c.hi, events=list(c.events)))
        return sorted(out, key=lambda s: (s.rank is None, s.node or "", s.rank if s.rank is not None else -1, s.label))
