"""One pass over the events: each event goes only to the machines subscribed to its kind.

Matches are folded into per-signature aggregates as they arrive (counts, ranks, the first few
matches as evidence), so memory depends on the number of signatures and ranks, not on the log.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from nanscope.lazynp import np

from nanscope.model import Diagnostic, Event, Evidence, Finding
from nanscope.rankset import fmt_ranks, rank_phrase  # noqa: F401 - fmt_ranks also imported from here by older code
from nanscope.signatures.machines import Match
from nanscope.signatures import predicates
from nanscope.signatures.schema import Signature
from nanscope.stepbatch import StepBatch

MATCHES_KEPT = 32
EVIDENCE_PER_FINDING = 6
HOLD_STEPS = 1024  # step rows gathered per stream into one StepBatch
HOLD_TOTAL = 8192  # ... and over all streams, before every stream's are fed
FEW_ROWS = 8  # held steps fed to a machine one by one (Machine.feed) up to this many
REGEX_TIMEOUTS_BEFORE_DISABLE = predicates.REGEX_TIMEOUTS_BEFORE_GIVING_UP


@dataclass
class Aggregate:
    sig: Signature
    count: int = 0
    ranks: set = field(default_factory=set)
    streams: set = field(default_factory=set)
    matches: list = field(default_factory=list)  # the earliest MATCHES_KEPT, by (step, line)
    also: list = field(default_factory=list)  # superseded signatures that matched too

    def add(self, m: Match) -> None:
        self.count += 1
        if m.rank is not None:
            self.ranks.add(m.rank)
        self.streams.add(m.stream)
        self.matches.append(m)
        if len(self.matches) > MATCHES_KEPT * 2:
            self.matches.sort(key=_match_order)
            del self.matches[MATCHES_KEPT:]

    def ordered(self) -> list[Match]:
        self.matches.sort(key=_match_order)
        return self.matches[:MATCHES_KEPT]


def _match_order(m: Match) -> tuple:
    ev = m.events[0]
    ts = ev.origin.ts if ev.origin is not None and ev.origin.ts is not None else math.inf
    step = m.step if m.step is not None else math.inf
    return (step, ts, ev.loc.source, ev.loc.line)


def _joined_runs(items: list, fed: list, start: int) -> list:
    """The held items with each run of single step events from `start` on made one StepBatch, cut
    where a machine has been fed up to (`fed`: positions in `items`, moved to the new list; those
    before `start` stay)."""
    if not any(it.kind == "step" for it in items[start:]):
        return items
    cuts = set(fed)
    out: list = items[:start]
    moved: dict = {}
    run: list = []
    for k in range(start, len(items)):
        it = items[k]
        if k in cuts:
            if run:
                out.append(StepBatch.from_events(run))
                run = []
            moved[k] = len(out)
        if it.kind == "step":
            run.append(it)
        else:
            if run:
                out.append(StepBatch.from_events(run))
                run = []
            out.append(it)
    if run:
        out.append(StepBatch.from_events(run))
    moved[len(items)] = len(out)
    for i, at in enumerate(fed):
        if at >= start:
            fed[i] = moved[at]
    return out


class Engine:
    def __init__(self, signatures: Iterable[Signature], batch_steps: bool = True):
        predicates.new_run()
        self.signatures = {s.id: s for s in signatures}
        self.subscribers: dict[str, list] = defaultdict(list)
        self._machines = []
        for sig in self.signatures.values():
            m = sig.new_machine()
            self._machines.append(m)
            for kind in m.events:
                self.subscribers[kind].append(m)
        self.aggregates: dict[str, Aggregate] = {}
        self.diagnostics: list[Diagnostic] = []
        self._timeouts: dict[str, int] = defaultdict(int)
        self._disabled: set[str] = set()
        self.batch_steps = batch_steps  # False: every step event alone, through Machine.feed (tests compare)
        # stream -> [step events and batches not yet fed to every machine, rows, how far each of the
        # machines that read steps has been fed (a position in the first list), how far the single
        # step events in the first list have been joined into batches]
        self._held: dict[Any, list] = {}
        self._held_rows = 0
        self._steppers = list(self.subscribers.get("step", ()))
        # the other kinds that machines reading steps read: their events must not overtake held steps,
        # but only the machines that read both need the held steps before such an event
        self._with_steps = {k for m in self._steppers for k in m.events} - {"step"}
        self._readers = {k: [i for i, m in enumerate(self._steppers) if k in m.events] for k in self._with_steps}
        self._gates = [(m, m.gate()) for m in self.subscribers.get("error", ())]
        self._by_error: dict = {}

    def apart_from_steps(self, kinds: frozenset) -> frozenset:
        """Those of `kinds` that no machine reading steps reads: their order relative to the step
        rows of their stream matters to no signature (only to the step streams give them)."""
        return frozenset(kinds - self._with_steps - {"step"})

    def _emit(self, m: Match) -> None:
        agg = self.aggregates.get(m.signature)
        if agg is None:
            agg = self.aggregates[m.signature] = Aggregate(self.signatures[m.signature])
        agg.add(m)

    def feed(self, ev: Event) -> None:
        """One event, or a StepBatch. Step events are held per stream and reach the machines as
        batches (array work instead of a call per event per machine) before the next event of
        their stream, so every stream's machines still see its events in line order."""
        kind = ev.kind
        if not self.batch_steps and kind == "steps":
            for row in ev.events():  # type: ignore[attr-defined]
                self.feed(row)
            return
        if (kind == "step" or kind == "steps") and ev.stream is not None and self.batch_steps:
            held = self._held.get(ev.stream)
            if held is None:
                held = self._held[ev.stream] = [[], 0, [0] * len(self._steppers), 0]
            held[0].append(ev)
            n = len(ev) if kind == "steps" else 1  # type: ignore[arg-type]
            held[1] += n
            self._held_rows += n
            if held[1] >= HOLD_STEPS:
                self._release(ev.stream)
            elif self._held_rows >= HOLD_TOTAL:  # many streams (a thousand ranks): memory first
                for stream in list(self._held):
                    self._release(stream)
            return
        if kind == "metrics_rows":
            return self.feed_rows(ev)
        if self._held and kind in self._with_steps:
            self._release(ev.stream, kind)  # a machine that reads steps reads this too: keep the order
        if kind == "steps":
            return self.feed_batch(ev)  # type: ignore[arg-type]
        subs = self.subscribers.get(kind, ()) if kind != "error" else self._error_readers(ev.error)  # type: ignore[attr-defined]
        for machine in subs:
            if machine.sig in self._disabled:
                continue
            machine.feed(ev, self._emit)
            if predicates.TIMED_OUT:
                self._timed_out(machine.sig)

    def _error_readers(self, error: Any) -> list:
        """The machines an error event with this `error` can change, in subscription order: most
        signatures match one error kind (Machine.gate), and a log dense with handled exceptions
        would otherwise ask all of them about each."""
        got = self._by_error.get(error)
        if got is None:
            got = self._by_error[error] = [m for m, g in self._gates if g is None or error in g]
        return got

    def flush(self) -> None:
        """Feed every held step to the machines now (live mode: the input may pause for long)."""
        for stream in list(self._held):
            self._release(stream)

    def peek(self) -> dict:
        """signature id -> Aggregate of what the machines that decide at the end would decide now
        (live mode), apart from the real aggregates; nothing changes."""
        out: dict = {}

        def emit(m: Match) -> None:
            agg = out.get(m.signature)
            if agg is None:
                agg = out[m.signature] = Aggregate(self.signatures[m.signature])
            agg.add(m)

        for machine in self._machines:
            if machine.LIVE and machine.sig not in self._disabled:
                machine.live(emit)
        return out

    def _release(self, stream: Any, kind: Optional[str] = None) -> None:
        """Feed the held steps of `stream`: to the machines that read `kind` as well (an event of
        that kind arrives next), or to every machine when kind is None. A machine that does not read
        the arriving kind gets its steps later, in one larger batch: an fp16 run whose scale changes
        every few dozen steps, or a log dense with handled exceptions, no longer cuts every step
        machine's batches at each such event."""
        held = self._held.get(stream)
        if not held:
            return
        items, _, fed, done = held
        who = range(len(self._steppers)) if kind is None else self._readers.get(kind, ())
        todo = [i for i in who if fed[i] < len(items)]
        if todo:
            items = held[0] = _joined_runs(items, fed, done)
            held[3] = len(items)  # (joined up to here)
            batches: dict = {}
            for i in todo:
                at = fed[i]
                b = batches.get(at)
                if b is None:
                    b = batches[at] = StepBatch.concat(items[at:])
                machine = self._steppers[i]
                fed[i] = len(items)
                if machine.sig in self._disabled:
                    continue
                if len(b) <= FEW_ROWS:  # array calls on a row or two cost more than they save
                    for k in range(len(b)):
                        machine.feed(b.event(k), self._emit)
                else:
                    machine.feed_batch(b, self._emit)
                if predicates.TIMED_OUT:
                    self._timed_out(machine.sig)
        if kind is None or min(fed) == len(items):
            self._held.pop(stream, None)
            self._held_rows -= held[1]

    def feed_batch(self, b: Any) -> None:
        """A StepBatch: each machine subscribed to step events takes the whole batch."""
        for machine in self.subscribers.get("step", ()):
            if machine.sig in self._disabled:
                continue
            machine.feed_batch(b, self._emit)
            if predicates.TIMED_OUT:
                self._timed_out(machine.sig)

    def feed_rows(self, rows: Any) -> None:
        """A MetricsRows, as its events one after the other would be fed: a machine that says
        which rows can change it (Machine.rows_mask) gets only those rows' events."""
        if not self.batch_steps:
            for ev in rows.events():
                self.feed(ev)
            return
        if self._held and "metrics" in self._with_steps:
            self._release(rows.stream, "metrics")
        for machine in self.subscribers.get("metrics", ()):
            if machine.sig in self._disabled:
                continue
            mask = machine.rows_mask(rows)
            for i in (range(len(rows)) if mask is None else np.flatnonzero(mask).tolist()):
                ev = rows.event(i)
                machine.feed(ev, self._emit)
                if predicates.TIMED_OUT:
                    self._timed_out(machine.sig)
                    if machine.sig in self._disabled:
                        break

    def _timed_out(self, sig_id: str) -> None:
        """Report the searches of `sig_id`'s regexes that ran out of time, each with its own line."""
        for pattern, ev in predicates.TIMED_OUT:
            self._regex_timeout(sig_id, pattern, ev)
        predicates.TIMED_OUT.clear()

    def _regex_timeout(self, sig_id: str, pattern: str, ev: Event) -> None:
        self._timeouts[sig_id] += 1
        n = self._timeouts[sig_id]
        sig = self.signatures[sig_id]
        msg = f"signature {sig_id} ({sig.path}): regex {pattern!r} timed out on this line"
        if n >= REGEX_TIMEOUTS_BEFORE_DISABLE:
            self._disabled.add(sig_id)
            msg += f"; disabled after {n} timeouts"
        if n <= REGEX_TIMEOUTS_BEFORE_DISABLE:
            self.diagnostics.append(Diagnostic("NS-PATTERN-TIMEOUT", msg, ev.loc.source, ev.loc.line))

    def finish(self) -> list[Finding]:
        for stream in list(self._held):
            self._release(stream)
        for machine in self._machines:
            if machine.sig not in self._disabled:
                machine.finish(self._emit)
        self._apply_supersedes()
        for agg in self.aggregates.values():
            for m in agg.matches:
                if m.step_from_event:
                    m.step = m.events[0].step
        return [build_finding(agg) for agg in self.aggregates.values()]

    def _apply_supersedes(self) -> None:
        for sid in list(self.aggregates):
            agg = self.aggregates.get(sid)
            if agg is None:
                continue
            for other in agg.sig.supersedes:
                victim = self.aggregates.get(other)
                if victim is not None and (victim.streams & agg.streams or not victim.ranks):
                    del self.aggregates[other]
                    agg.also.append(other)


# {name} or {name|default}: the default stands in for a value the match does not have (a summary
# whose usual wording one kind of evidence cannot claim: process-killed's "was SIGKILLed" where the
# launcher's line with the signal is not in the input)
_PLACEHOLDER = re.compile(r"\{([\w.]+)(?:\|([^{}|]*))?\}")


def _fmt_num(v: Any) -> Any:
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:g}"
    return v


def _short(s: str, n: int = 240) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def render(template: str, values: dict, missing: Optional[str] = None) -> str:
    """Fill {name} placeholders that we know; leave any other brace (JSON in a fix text) alone.
    With `missing` (the summary), a placeholder the match has no value for (or None) becomes that
    text instead: no `{grad_norm}` or `None` ever reaches a report's one-line summary. `{name|text}`
    becomes `text` where the match has no value for `name`."""
    def sub(m: "re.Match[str]") -> str:
        k = m.group(1)
        v = values.get(k)
        if v is None and m.group(2) is not None:
            return m.group(2)
        if v is None:
            return m.group(0) if missing is None else missing
        return str(_fmt_num(v))

    return _PLACEHOLDER.sub(sub, template)


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _step_words(step: Optional[int], last: Optional[int], counted: bool) -> dict:
    """The {at_step} / {step_from} / {step_through} of a summary. A step the log never printed
    (streams counted its step lines) is said as a count, not as a step number."""
    if step is None:
        return {"at_step": "", "step_from": "", "step_through": ""}
    if not counted:
        # a run's span, for summaries that must read whole without a logged step (a stop message)
        if last is not None and last == step:
            return {"at_step": f" at step {step}", "step_from": f" at step {step}", "step_through": ""}
        return {"at_step": f" at step {step}", "step_from": f" from step {step}",
                "step_through": f" through step {last}" if last is not None else ""}
    note = " (the log prints no step numbers)"
    at = f" after the {_ordinal(step - 1)} step line{note}" if step > 1 else f" before the first step line{note}"
    if last is not None and last != step:
        return {"at_step": at, "step_from": f" from the {_ordinal(step)}", "step_through": f" through the {_ordinal(last)} step line{note}"}
    return {"at_step": at, "step_from": f" at the {_ordinal(step)} step line{note}", "step_through": ""}


def _subject(ranks: list) -> str:
    if not ranks:
        return "ranks (not named in the log)"
    return rank_phrase(ranks)


def build_finding(agg: Aggregate) -> Finding:
    sig = agg.sig
    matches = agg.ordered()
    first = matches[0]
    ev0 = first.events[0]
    ranks = sorted(agg.ranks)
    values = dict(first.extras)
    values.setdefault("count", agg.count)  # a machine that counts (count_within) says what it counted
    values.update(
        rank=first.rank if first.rank is not None else "?",
        ranks=fmt_ranks(ranks) if ranks else "(not named in the log)",  # never "ranks ?"
        step=(first.step if first.step is None or not getattr(ev0, "step_counted", False)
              else f"{first.step} (counted: the log prints no step numbers)") if first.step is not None else "?",
        nranks=len(ranks),
        where=(f" on rank {ranks[0]}" if len(ranks) == 1 else f" on ranks {fmt_ranks(ranks)}") if ranks else "",
        # `{Subject} timed out`: the ranks as a subject that agrees in number ("Rank 3", "Ranks 0-3")
        subject=_subject(ranks), Subject=_subject(ranks).capitalize(),
        **_step_words(first.step, first.extras.get("last_step"), getattr(ev0, "step_counted", False)),
    )
    for k in ("good_ranks", "bad_ranks"):
        if k in values and isinstance(values[k], list):
            values[k] = fmt_ranks(values[k])
    for attr in ("loss", "grad_norm", "loss_scale", "old_scale", "new_scale", "message", "error", "exc_type",
                 "exitcode", "signal", "lr", "warning"):
        v = getattr(ev0, attr, None)
        if v is not None and attr not in values:
            values[attr] = _short(v) if isinstance(v, str) else v
    if "exc_type" not in values and getattr(ev0, "exitcode", None) is not None:
        values["exc_type"] = f"exit status {ev0.exitcode}"  # a launcher's record of the exit, no traceback
    for k, v in (getattr(ev0, "fields", None) or {}).items():
        values[f"fields.{k}"] = _short(v) if isinstance(v, str) else v
        if k in ("loss", "grad_norm", "loss_scale") and values.get(k) is None:
            values[k] = v  # a warning that names the value (ESPnet's `The grad norm is nan`)
    evidence: list[Evidence] = []
    seen = set()
    for m in matches:
        for ev in m.events:
            k = (ev.loc.source, ev.loc.line)
            if k in seen:
                continue
            seen.add(k)
            evidence.append(Evidence(ev.loc.source, ev.loc.line, ev.text, ev.rank))
        if len(evidence) >= EVIDENCE_PER_FINDING:
            break
    evidence = evidence[:EVIDENCE_PER_FINDING]
    f = Finding(
        id=sig.id, revision=sig.revision, severity=sig.severity, title=sig.title,
        summary=render(sig.summary, values, missing="?"), category=sig.category, retryable=sig.retryable,
        benign=sig.benign, ranks=ranks, first_step=first.step, first_ts=ev0.origin.ts if ev0.origin else None,
        evidence=evidence, root_cause=sig.root_cause.strip(), fix=render(sig.fix.strip(), values),
        verify=render(sig.verify.strip(), values),
        benign_when=sig.benign_when.strip(), references=list(sig.references), related=list(sig.related),
        occurrences=agg.count, first_loc=(ev0.loc.source, ev0.loc.line),
    )
    f.also_matched = list(agg.also)
    f.matches = matches
    f.sig = sig
    return f
