"""Normalized events out: JSON Lines (one object per event, strict JSON)."""

from __future__ import annotations

import dataclasses
import json
from typing import IO, Iterable

from nanscope.model import Collective, Event
from nanscope.redact import redact
from nanscope.report.base import number

EVENT_SCHEMA_VERSION = 1


def event_record(ev: Event, redact_text: bool = True) -> dict:
    rec: dict = {"v": EVENT_SCHEMA_VERSION, "kind": ev.kind, "source": ev.loc.source, "line": ev.loc.line,
                 "rank": ev.rank, "local_rank": ev.origin.local_rank if ev.origin else None,
                 "node": ev.origin.node if ev.origin else None, "ts": ev.origin.ts if ev.origin else None,
                 "framework": ev.framework, "step": ev.step}
    for f in dataclasses.fields(ev):
        if f.name in ("loc", "origin", "stream", "text", "rank", "step", "framework"):
            continue
        v = getattr(ev, f.name)
        if isinstance(v, Collective):
            v = dataclasses.asdict(v)
        elif isinstance(v, dict):
            v = {k: number(x) for k, x in v.items()}
        rec[f.name] = number(v)
    rec["text"] = redact(ev.text) if redact_text else ev.text
    return rec


def write_jsonl(events: Iterable[Event], out: IO[str], redact_text: bool = True) -> int:
    n = 0
    for ev in events:
        out.write(json.dumps(event_record(ev, redact_text), allow_nan=False, ensure_ascii=False) + "\n")
        n += 1
    return n
