"""Consecutive lines that one metrics reader read, as columns: how vLLM's stats lines reach
streams and the engine in bulk.

A vLLM server prints a stats line every few seconds per engine; in a long log they are many, and
nothing reads most of them (a signature looks for a full KV cache with requests waiting). A
MetricsRows keeps a run of them as numpy columns (the numbers the reader read), with what is the
same on every row once (the reader's sample event, its parser, stream and state write), and
makes a row's MetricsEvent only when a machine needs it (`event(i)`): exactly the event the
per-line path makes of that line (tests/test_native.py compares them).

A run holds lines of one reader and one stream with no other candidate line between them, so it
stands where its lines stand in the event order. Any stage that cannot take a run whole (a
condition only a row can answer, a step only a row can get) takes its events one by one instead.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Optional

from nanscope.lazynp import np

from nanscope.model import Loc, Origin
from nanscope.stepbatch import Lines

_NOT_COLUMNS = ("text", "origin")  # per row, and not numbers: conditions on them go row by row
_POSITIONS: dict = {}


def _positions(cls: type) -> dict:
    """An event class's field names -> their positions in its constructor."""
    got = _POSITIONS.get(cls)
    if got is None:
        got = _POSITIONS[cls] = {f.name: k for k, f in enumerate(dataclasses.fields(cls))}
    return got


class MetricsRows:
    kind = "metrics_rows"

    def __init__(self, source: str, template: Any, parser: str, key: tuple, writes: Optional[dict], stream: Any,
                 rank: Optional[int], lines: np.ndarray, texts: Lines, origins: list, origin_at: np.ndarray,
                 ts: np.ndarray, cols: dict, step: Optional[np.ndarray] = None, step_set: Optional[np.ndarray] = None):
        self.source = source
        self.template = template  # the sample line's event: every field not in cols is as on it
        self.parser = parser  # the parser that claims these lines, and what it writes into its state
        self.key = key  # ... for the printer's stream (the state key)
        self.writes = writes
        self.stream = stream  # the events' stream, and rank
        self.rank = rank
        self.lines = lines  # int64 line numbers, ascending
        self.texts = texts
        self.origins = origins  # the distinct origins the rows' prefixes give, and each row's (index)
        self.origin_at = origin_at
        self.ts = ts  # float64 seconds per row, NaN where the message has no timestamp
        self.cols = cols  # event field ("kv_cache_usage", "fields.engine") -> (float64 values, is an int)
        n = len(lines)
        if step is None:
            step = np.full(n, template.step if template.step is not None else 0, dtype=np.int64)
            step_set = np.full(n, template.step is not None, dtype=bool)
        self.step = step  # as Pending and streams give it, where step_set
        self.step_set = step_set
        self._events: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.lines)

    def take(self, a: int, b: int) -> "MetricsRows":
        """Rows a..b (views of the columns)."""
        return MetricsRows(self.source, self.template, self.parser, self.key, self.writes, self.stream, self.rank,
                           self.lines[a:b], self.texts.slice(a, b - a), self.origins, self.origin_at[a:b],
                           self.ts[a:b], {k: (v[a:b], is_int) for k, (v, is_int) in self.cols.items()},
                           self.step[a:b], self.step_set[a:b])

    def local(self) -> bool:
        """Does any row come from a local-rank prefix of a rank stream? (Streams and Pending may
        then give it another stream's step: those rows go one by one.)"""
        return self.stream[0] == "rank" and any(o.local_rank is not None for o in self.origins)

    def vary(self, path: str) -> Optional[str]:
        """How an event field varies over the rows: "same" (every row's is row 0's), "column"
        (col(path) has it), or None (only a row can say: its text, origin, a nested value)."""
        if path in self.cols or path == "step":
            return "column"
        head = path.partition(".")[0]
        if head in _NOT_COLUMNS or path.count(".") > 1:
            return None  # (a nested value: row by row)
        if path == "fields" and any(k.startswith("fields.") for k in self.cols):
            return None  # the whole dict, some of it per row
        return "same"

    def col(self, path: str) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """(values, present) of a column, as StepBatch.col gives them to vector conditions."""
        if path == "step":
            return self.step.astype(np.float64), self.step_set
        got = self.cols.get(path)
        if got is None:
            return None
        return got[0], np.ones(len(self), dtype=bool)

    def event(self, i: int) -> Any:
        """Row i as the MetricsEvent the per-line path makes of its line (once per row). Made
        positionally from the sample's field values: a keyword call cost as much as the rest."""
        ev = self._events.get(i)
        if ev is not None:
            return ev
        t = self.template
        cls = type(t)
        at = _positions(cls)
        row = [getattr(t, name) for name in at]
        if t.fields is not None:
            row[at["fields"]] = dict(t.fields)
        for path, (v, is_int) in self.cols.items():
            x = int(v[i]) if is_int else float(v[i])
            if path.startswith("fields."):
                row[at["fields"]][path[len("fields."):]] = x
            else:
                row[at[path]] = x
        origin = self.origins[int(self.origin_at[i])]
        ts = float(self.ts[i])
        if ts == ts:  # (not NaN)
            origin = Origin(origin.rank, origin.local_rank, origin.node, ts, origin.proc)
        row[at["loc"]] = Loc(self.source, int(self.lines[i]))
        row[at["text"]] = self.texts.line(i).decode("ascii")
        row[at["origin"]] = origin
        row[at["rank"]] = self.rank
        row[at["step"]] = int(self.step[i]) if self.step_set[i] else None
        row[at["stream"]] = self.stream
        ev = self._events[i] = cls(*row)
        return ev

    def events(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self.event(i)

    def __reduce__(self) -> tuple:
        """Pickled (to the parent process) with its own lines only."""
        return MetricsRows, (self.source, self.template, self.parser, self.key, self.writes, self.stream, self.rank,
                             self.lines, self.texts.compact(), self.origins, self.origin_at, self.ts,
                             self.cols, self.step, self.step_set)
