"""Counting events: n of a kind within a window; the first rank to show something."""

from __future__ import annotations

from collections import deque
from typing import Any

from nanscope.lazynp import np

from nanscope.model import Event
from nanscope.rankset import fmt_ranks
from nanscope.signatures.predicates import compile_rows
from nanscope.signatures.machines.base import EVIDENCE_PER_MATCH, Emit, Machine, field_getter


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
    """The process(es) where `bad` first happened while the others were still `good` at that
    step. Needs step numbers and at least two processes; emits once, at the end of the input.
    A process is a global rank, or, where the text shows only node and local rank (`1: [default1]:`
    without the processes per node), that pair: the pair still names where the value went bad."""

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

    def _state(self, stream: Any, rank: Any, lo: int, hi: int) -> Any:
        """This stream's state; None for a stream that is no process (one whole input)."""
        st = self.state.get(stream)
        if st is None:
            if rank is None and not _is_local(stream):
                return None
            st = self.state[stream] = {"lo": lo, "hi": hi, "first_bad": None, "rank": rank}
        st["lo"] = min(st["lo"], lo)
        st["hi"] = max(st["hi"], hi)
        return st

    def feed_batch(self, b: Any, emit: Emit) -> None:
        if b.rank is None and not _is_local(b.stream):
            return
        bad = self.vbad(b)
        if bad is None:
            return super().feed_batch(b, emit)
        st = self._state(b.stream, b.rank, int(b.step.min()), int(b.step.max()))
        if st["first_bad"] is None:
            idx = np.nonzero(bad)[0]
            if len(idx):
                st["first_bad"] = b.event(int(idx[0]))

    def feed(self, ev: Event, emit: Emit) -> None:
        if ev.step is None:
            return
        st = self._state(ev.stream, ev.rank, ev.step, ev.step)
        if st is not None and st["first_bad"] is None and self.bad(ev):
            st["first_bad"] = ev

    def finish(self, emit: Emit) -> None:
        bads = [st["first_bad"] for st in self.state.values() if st["first_bad"] is not None]
        if not bads or len(self.state) < 2:
            return
        s = min(ev.step for ev in bads)
        first = sorted((ev for ev in bads if ev.step == s), key=lambda e: (_order(e.stream), e.loc.line))
        first_streams = {ev.stream for ev in first}
        good = sorted(
            (stream for stream, st in self.state.items()
             if stream not in first_streams and st["lo"] <= s <= st["hi"]
             and (st["first_bad"] is None or st["first_bad"].step > s)), key=_order)
        if not good:
            return
        ranked = all(self.state[k]["rank"] is not None for k in (*good, *first_streams))
        for ev in first:
            if ranked:
                emit(self.match(ev, [ev], step=s, good_ranks=[self.state[k]["rank"] for k in good],
                                bad_ranks=[e.rank for e in first], process=f"rank {ev.rank}",
                                good=f"ranks {fmt_ranks([self.state[k]['rank'] for k in good])}"))
            else:  # known by node and local rank only: no global rank is claimed
                emit(self.match(ev, [ev], step=s, good_ranks=[], bad_ranks=[], process=_who(ev.stream),
                                good=", ".join(_who(k) for k in good), bad_processes=[_who(e.stream) for e in first]))


def _is_local(stream: Any) -> bool:
    return isinstance(stream, tuple) and stream[:1] == ("local",)


def _order(stream: Any) -> tuple:
    return (str(stream[1]), stream[2]) if _is_local(stream) else ("", stream[2] if isinstance(stream, tuple) else 0)


def _who(stream: Any) -> str:
    """A process named as the text names it (see streams' labels)."""
    if _is_local(stream):
        return f"{stream[1] or 'node ?'} local rank {stream[2]}"
    return f"rank {stream[2]}"
