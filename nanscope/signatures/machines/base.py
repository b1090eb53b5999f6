"""What every machine shares: the Match it emits, the Machine base class, the line machine,
field getters, event order across ranks, and how a match describes its events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional

from nanscope.lazynp import np

from nanscope.errors import SignatureError
from nanscope.model import EVENT_KINDS, Event
from nanscope.signatures.predicates import Pred, compile_condition, compile_rows, compile_vector, required_values


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

    def gate(self) -> Optional[frozenset]:
        """The `error` values of the error events that can change this machine (the engine gives
        it no other error event), or None: every error event (always correct)."""
        return None

    def finish(self, emit: Emit) -> None:
        pass

    LIVE: ClassVar[bool] = False  # finish() only reads the state: live mode may ask it early

    def live(self, emit: Emit) -> None:
        """What finish() would emit now (live mode, `diagnose --follow`); changes nothing."""
        if self.LIVE:
            self.finish(emit)


class Line(Machine):
    """Every event that satisfies `when` is a match. `sole_evidence` (optional): a match on an
    event that satisfies it stands only if every event fed satisfies it too (a launcher's record
    of an exit is the failure only when it is all the input says; decided at finish)."""

    name = "line"
    PARAMS = {"when": (True, "condition"), "sole_evidence": (False, "condition")}
    DEFAULT_EVENTS = ("error",)

    def __init__(self, sig_id: str, spec: dict):
        super().__init__(sig_id, spec)
        self.when = self.cond("when")
        self.vwhen = self.vcond("when")
        self.rwhen = compile_rows(self.spec["when"])
        self.sole = self.cond("sole_evidence") if "sole_evidence" in spec else None
        self.held: list = []
        self.other = False

    def feed(self, ev: Event, emit: Emit) -> None:
        if self.sole is not None:
            if self.sole(ev):
                if self.when(ev) and len(self.held) < EVIDENCE_PER_MATCH:
                    self.held.append(ev)
                return
            self.other = True
        if self.when(ev):
            emit(self.match(ev, [ev]))

    def finish(self, emit: Emit) -> None:
        if not self.other:
            for ev in self.held:
                emit(self.match(ev, [ev]))

    def rows_mask(self, rows: Any) -> Any:
        return self.rwhen(rows)  # a row that fails `when` is no match

    def gate(self) -> Optional[frozenset]:
        # an event that fails `when` changes nothing, unless sole_evidence watches every event
        return required_values(self.spec["when"], "error") if self.sole is None else None

    def feed_batch(self, b: Any, emit: Emit) -> None:
        m = self.vwhen(b)
        if m is None:
            return super().feed_batch(b, emit)
        for i in np.nonzero(m)[0].tolist():
            ev = b.event(i)
            emit(self.match(ev, [ev]))


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


def resolve(ref: Any) -> Event:
    """An event kept by a machine: an Event, or a StepBatch row reference made into one when needed."""
    return ref if isinstance(ref, Event) else ref.event()


def _describe(ev: Event) -> str:
    err = getattr(ev, "error", None) or ev.kind
    exc = getattr(ev, "exc_type", None)
    msg = (getattr(ev, "message", "") or "").strip()
    head = f"{exc.rsplit('.', 1)[-1]}: {msg}" if exc else (msg or err)
    thread = (getattr(ev, "fields", None) or {}).get("thread")
    if thread:
        head = f"in thread {thread}, which died while the process went on: {head}"
    return head if len(head) <= 200 else head[:199] + "…"
