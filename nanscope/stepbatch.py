"""Step lines of one stream as columns: how step events reach streams and the engine in bulk.

A training log is mostly step lines. Turning each into a Python object and passing it through
every machine is what made nanscope slow; a StepBatch keeps them as numpy columns (one row per
line, in line order, all from one (node, rank) stream) so streams and machines work on whole
arrays, and a row becomes a StepEvent only when a finding needs it as evidence (`event(i)`).

Two kinds: the native lane's (nanscope/ingest/native.py: the numbers were read in RE2; `skipped`
is 1.0 / 0.0 there, the int fields are floats; a row's
event is made by re-reading that one line with the ordinary parsers, so evidence is exactly what
the per-line path gives) and the engine's (`from_events`: step events of the per-line path,
gathered so that the machines still work on arrays).

A number a line did not print is absent (`present` False), never 0; NaN is a printed nan.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from nanscope.lazynp import np

from nanscope.columns import _take
from nanscope.model import Loc, Origin, StepEvent
from nanscope.parsers.numbers import to_float

NUMERIC = ("loss", "grad_norm", "lr", "loss_scale", "tokens_per_s", "epoch")
INTS = ("nan_iters", "skipped_iters", "skipped_total")
_OTHER = ("skipped",) + INTS  # set only by some parsers


class StepBatch:
    kind = "steps"

    def __init__(self, source: str, stream: Any, origin: Optional[Origin], framework: Optional[str],
                 lines: np.ndarray, step: np.ndarray, step_set: np.ndarray, cols: dict,
                 texts: Any = None, parsers: tuple = (), base: Optional[Origin] = None,
                 evs: Optional[list] = None, unset: frozenset = frozenset(_OTHER), order: Optional[np.ndarray] = None):
        self.source = source
        self.stream = stream
        self.origin = origin  # the same on every row (None: rows differ, e.g. in timestamps)
        self.rank = stream[2] if stream is not None and stream[0] == "rank" else None
        self.framework = framework  # None: rows of several frameworks
        self.lines = lines  # int64 line numbers
        # where each row's event comes out on the per-line path (an HF dict: at the next bar)
        self.order = lines if order is None else order
        self.step = step  # int64; meaningful where step_set (streams fill the rest)
        self.step_set = step_set
        self.cols = cols  # field -> (float64 values, bool present); raw_fields.KEY too
        self.texts = texts  # native: the lines as printed (Lines)
        self.parsers = parsers  # native: names of the parsers selected for this input
        self.base = base  # native: the origin the file name implies
        self.evs = evs  # from_events: the events themselves
        self.unset = unset  # StepEvent fields that are None on every row
        # rows whose step streams counted (the log printed none: Event.step_counted); None: no row
        self.counted: Optional[np.ndarray] = None
        self._events: dict[int, StepEvent] = {}

    @classmethod
    def from_events(cls, evs: list) -> "StepBatch":
        n = len(evs)
        cols = {}
        for name in NUMERIC:
            vals = [getattr(e, name) for e in evs]
            present = np.fromiter((v is not None for v in vals), dtype=bool, count=n)
            cols[name] = (np.fromiter((v if v is not None else np.nan for v in vals), dtype=np.float64, count=n), present)
        unset = frozenset(f for f in _OTHER if all(getattr(e, f) is None for e in evs))
        steps = [e.step for e in evs]
        step_set = np.fromiter((s is not None for s in steps), dtype=bool, count=n)
        origins = {e.origin for e in evs}
        frameworks = {e.framework for e in evs}
        e0 = evs[0]
        return cls(e0.loc.source, e0.stream, origins.pop() if len(origins) == 1 else None,
                   frameworks.pop() if len(frameworks) == 1 else None,
                   np.fromiter((e.loc.line for e in evs), dtype=np.int64, count=n),
                   np.fromiter((s if s is not None else 0 for s in steps), dtype=np.int64, count=n), step_set, cols,
                   evs=evs, unset=unset)

    @classmethod
    def concat(cls, parts: list) -> "StepBatch":
        """Consecutive batches of one stream as one (columns joined; rows keep their events)."""
        if len(parts) == 1:
            return parts[0]
        out = Joined(parts)
        return out

    def __len__(self) -> int:
        return len(self.lines)

    _parent: Optional["StepBatch"] = None  # a slice reads its parent's columns when asked
    _at = 0

    def col(self, name: str) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """(values, present) of a numeric field; None when this batch cannot say in an array."""
        got = self.cols.get(name)
        if got is not None:
            return got
        if self._parent is not None:
            whole = self._parent.col(name)
            if whole is None:
                return None
            a, b = self._at, self._at + len(self)
            got = self.cols[name] = (whole[0][a:b], whole[1][a:b])
            return got
        if name == "step":
            return self.step.astype(np.float64), self.step_set
        if name in NUMERIC or name in self.unset:
            got = self.cols[name] = (np.full(len(self), np.nan), np.zeros(len(self), dtype=bool))
            return got
        if name.startswith("raw_fields."):
            if self.evs is not None:
                got = self.cols[name] = self._raw(name[len("raw_fields."):])
                return got
            return np.full(len(self), np.nan), np.zeros(len(self), dtype=bool)  # native: every key is a column
        return None

    def _raw(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        vals = [to_float(str(v)) if v is not None and not isinstance(v, bool) else None
                for v in ((e.raw_fields or {}).get(key) for e in self.evs)]  # type: ignore[union-attr]
        present = np.array([v is not None for v in vals], dtype=bool)
        return np.array([v if v is not None else np.nan for v in vals], dtype=np.float64), present

    def __getstate__(self) -> dict:
        """Pickled (to the parent process) with its own rows only, never a parent's."""
        state = dict(self.__dict__)
        if self._parent is not None:
            for name in list(self._parent.cols):
                self.col(name)
            state = dict(self.__dict__)
            state.pop("_parent", None)
            state.pop("_at", None)
        if self.texts is not None:
            state["texts"] = self.texts.compact()
        return state

    def slice(self, a: int, b: int) -> "StepBatch":
        """Rows a..b; columns are cut when first read (a batch is cut at every event of its stream
        in between, so this must be cheap)."""
        out = StepBatch(self.source, self.stream, self.origin, self.framework, self.lines[a:b], self.step[a:b],
                        self.step_set[a:b], {}, self.texts.slice(a, b - a) if self.texts is not None else None,
                        self.parsers, self.base, self.evs[a:b] if self.evs is not None else None, self.unset,
                        self.order[a:b])
        if self.counted is not None:
            out.counted = self.counted[a:b]
        out._parent, out._at = (self._parent, self._at + a) if self._parent is not None else (self, a)
        return out

    def event(self, i: int) -> StepEvent:
        """Row i as the StepEvent the per-line path makes of it (its step as streams set it)."""
        if self.evs is not None:
            return self.evs[i]
        ev = self._events.get(i)
        if ev is None:
            ev = self._events[i] = self.ref(i).event()
            if self.counted is not None and self.counted[i]:
                ev.step_counted = True
        return ev

    def events(self):
        for i in range(len(self)):
            yield self.event(i)

    def ref(self, i: int) -> Any:
        """Row i, kept for later without keeping the batch: the event itself when there is one,
        else what it takes to make it (a machine's window must not pin a whole batch)."""
        if self.evs is not None:
            return self.evs[i]
        got = self._events.get(i)
        if got is not None:
            return got
        return RowRef(self.texts.line(i), int(self.lines[i]), self.source, self.base, self.parsers,
                      int(self.step[i]) if self.step_set[i] else None, self.framework, self.origin, self.stream,
                      self.counted is not None and bool(self.counted[i]))

    def fill_steps(self, step: np.ndarray, counted: np.ndarray) -> None:
        """Streams' steps for the rows that printed none (and which of them it counted): every
        row then has its step, as the events of the per-line path get theirs."""
        printed = self.step_set
        self.step = step
        self.step_set = np.ones(len(self), dtype=bool)
        unprinted = np.flatnonzero(~printed)
        self.counted = counted if counted.any() else None
        for i, ev in self._events.items():  # (rows already made events)
            ev.step = int(step[i])
            ev.step_counted = bool(counted[i])
        if self.evs is not None:  # (the engine's batch of events: each gets its step as process() gives it)
            for i in unprinted.tolist():
                ev = self.evs[i]
                ev.step = int(step[i])
                ev.step_counted = bool(counted[i])


class Lines:
    """A native batch's lines as printed: rows `idx` of the Arrow binary array they were read
    from (all of it when idx is None). A copy per stream and batch cost more than the batch's
    columns, and only the few lines that become evidence are ever read; a batch sent to another
    process takes its own rows then (compact())."""

    __slots__ = ("arr", "idx")

    def __init__(self, arr: Any, idx: Optional[np.ndarray] = None):
        self.arr = arr
        self.idx = idx

    def __len__(self) -> int:
        return len(self.arr) if self.idx is None else len(self.idx)

    def slice(self, a: int, n: int) -> "Lines":
        return Lines(self.arr.slice(a, n)) if self.idx is None else Lines(self.arr, self.idx[a:a + n])

    def line(self, i: int) -> bytes:
        return self.arr[i if self.idx is None else int(self.idx[i])].as_py()

    def compact(self) -> "Lines":
        arr = self.arr
        if self.idx is not None:
            arr = _take(arr, self.idx)
        elif arr.get_total_buffer_size() > 2 * arr.nbytes + 4096:
            arr = _take(arr, np.arange(len(arr)))
        return Lines(arr)

    def __reduce__(self) -> tuple:
        return Lines, (self.compact().arr,)


class Joined(StepBatch):
    """StepBatch.concat: a column is the parts' columns end to end (None if any part cannot say)."""

    def __init__(self, parts: list):
        first = parts[0]
        same = lambda attr: getattr(first, attr) if all(getattr(q, attr) == getattr(first, attr) for q in parts) else None  # noqa: E731
        super().__init__(first.source, first.stream, same("origin"), same("framework"),
                         np.concatenate([q.lines for q in parts]), np.concatenate([q.step for q in parts]),
                         np.concatenate([q.step_set for q in parts]), {},
                         unset=frozenset.intersection(*[q.unset for q in parts]),
                         order=np.concatenate([q.order for q in parts]))
        if any(q.counted is not None for q in parts):
            self.counted = np.concatenate([q.counted if q.counted is not None else np.zeros(len(q), dtype=bool)
                                           for q in parts])
        self.parts = parts
        self.offsets = np.cumsum([0] + [len(q) for q in parts])

    def col(self, name: str) -> Optional[tuple[np.ndarray, np.ndarray]]:
        got = self.cols.get(name)
        if got is None:
            pieces = [q.col(name) for q in self.parts]
            if any(x is None for x in pieces):
                return None
            got = self.cols[name] = (np.concatenate([v for v, _ in pieces]), np.concatenate([p for _, p in pieces]))  # type: ignore[misc]
        return got

    def slice(self, a: int, b: int) -> "StepBatch":
        raise NotImplementedError("a joined batch is only read by the engine")

    def event(self, i: int) -> StepEvent:
        k = int(np.searchsorted(self.offsets, i, side="right")) - 1
        return self.parts[k].event(i - int(self.offsets[k]))

    def ref(self, i: int) -> Any:
        k = int(np.searchsorted(self.offsets, i, side="right")) - 1
        return self.parts[k].ref(i - int(self.offsets[k]))


def _unregistered(*args: Any, **kwargs: Any) -> list:
    raise RuntimeError("nanscope.pipeline registers the per-line parser (import it first)")


# The per-line parser (nanscope.pipeline.parse_line), registered by the pipeline when it is
# imported: it sits a floor above the batch types, which must not import it.
REPARSE: Callable[..., list] = _unregistered


class RowRef:
    """A native row, enough to make its StepEvent later: the per-line path on that one line."""

    __slots__ = ("raw", "line", "source", "base", "parsers", "step", "framework", "origin", "stream", "counted")

    def __init__(self, raw: bytes, line: int, source: str, base: Any, parsers: tuple, step: Optional[int],
                 framework: Optional[str], origin: Optional[Origin], stream: Any, counted: bool = False):
        self.raw, self.line, self.source, self.base, self.parsers = raw, line, source, base, parsers
        self.step, self.framework, self.origin, self.stream = step, framework, origin, stream
        self.counted = counted

    def event(self) -> StepEvent:
        raw = self.raw.rsplit(b"\r", 1)[-1]  # an HF progress line: its event is the dict's
        got = [e for e in REPARSE(raw, self.line, self.source, self.base, self.parsers, held=True)
               if isinstance(e, StepEvent)]
        if got:
            ev = got[0]
        else:  # cannot happen for a row the native lane claimed; keep what is known
            ev = StepEvent(loc=Loc(self.source, self.line), text=self.raw.decode("utf-8", "replace"),
                           framework=self.framework or "", origin=self.origin or Origin(),
                           rank=self.stream[2] if self.stream and self.stream[0] == "rank" else None, stream=self.stream)
        if self.step is not None:
            ev.step = self.step
            ev.step_counted = self.counted
        return ev
