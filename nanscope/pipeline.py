"""From sources to ordered events: read -> candidate lines -> prefixes -> parsers -> streams.

Everything here is a generator; nothing holds more than one chunk of one input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

from nanscope.errors import InputError
from nanscope.ingest.prefixes import origin_from_path, peel, strip_ansi
from nanscope.ingest.reader import MAX_LINE_BYTES, Source, open_binary, scan
from nanscope.ingest.timestamps import parse_ts
from nanscope.model import Diagnostic, Event, InputInfo, Loc, Record, StepEvent
from nanscope.parsers.base import Parser
from nanscope.parsers.registry import keyword_regex, select
from nanscope.streams import stream_key


@dataclass
class ScanOptions:
    parsers: Optional[Sequence[str]] = None  # --parser: force these
    max_line_bytes: int = MAX_LINE_BYTES


@dataclass
class ScanResult:
    inputs: list = field(default_factory=list)
    diagnostics: list = field(default_factory=list)


def scan_source(source: Source, parsers: Sequence[Parser], info: InputInfo, result: ScanResult,
                max_line: int = MAX_LINE_BYTES) -> Iterator[Event]:
    """Events of one input, in line order."""
    keywords = keyword_regex(parsers)
    stream, size = open_binary(source)
    info.size = size
    base = origin_from_path(None if source.is_stdin else source.name)
    states: dict = {}
    by_name = {p.name: p for p in parsers}
    name = source.name
    try:
        for lineno, raw in scan(stream, keywords, info, max_line=max_line):
            text = raw.decode("utf-8", "replace")
            if "\ufffd" in text:
                info.replaced_bytes += text.count("\ufffd")
            text = strip_ansi(text)
            msg, origin = peel(text, base)
            rec = Record(Loc(name, lineno), msg, origin, text)
            key = stream_key(origin, name)
            for p in parsers:
                st = states.get((p.name, key))
                if st is None:
                    st = states[(p.name, key)] = {}
                events = p.parse(rec, st)
                pending = st.get("pending")
                if pending is not None and pending.stream is None:
                    _place(pending, text, msg, origin, key)
                if events is not None:
                    info.formats[p.name] = info.formats.get(p.name, 0) + 1
                    break
            else:
                continue
            if events:
                info.event_lines += 1
            for ev in events:
                if ev.stream is None:
                    _place(ev, text, msg, origin, key)
                yield ev
        for (pname, key), st in states.items():
            for ev in by_name[pname].flush(st):
                yield ev
    finally:
        if not source.is_stdin:
            try:
                stream.close()
            except OSError:
                pass
    if info.long_lines:
        result.diagnostics.append(Diagnostic(
            "NS-IO-LONG-LINE", f"{info.long_lines} line(s) longer than {max_line} bytes were cut to that length", name))
    if info.nul_bytes:
        result.diagnostics.append(Diagnostic(
            "NS-IO-BINARY-REGION", f"{info.nul_bytes} NUL byte(s) in the input (a crashed writer or a binary file); they were read as line breaks", name))
    if info.replaced_bytes:
        result.diagnostics.append(Diagnostic(
            "NS-IO-INVALID-UTF8", f"{info.replaced_bytes} invalid UTF-8 sequence(s) replaced with U+FFFD", name))
    if not info.complete:
        result.diagnostics.append(Diagnostic("NS-IO-INCOMPLETE", info.error or "input ends early", name))


def _place(ev: Event, text: str, msg: str, origin, key: tuple) -> None:
    """Give an event its line as printed, its origin, its rank and its stream (once)."""
    ev.text = text  # evidence shows the line as printed, prefixes included
    ev.origin = origin
    if ev.rank is None:
        ev.rank = origin.rank
    ev.stream = key if ev.rank == origin.rank else ("rank", origin.node, ev.rank)
    if not isinstance(ev, StepEvent):
        ts = parse_ts(msg)
        if ts is not None:
            ev.origin = type(origin)(origin.rank, origin.local_rank, origin.node, ts)


def scan_all(sources: Sequence[Source], options: ScanOptions, result: ScanResult) -> Iterator[Event]:
    """Events of every input, one input after the other. Unreadable inputs are reported and skipped."""
    parsers = select(options.parsers)
    for src in sources:
        info = InputInfo(path=src.name, size=None)
        result.inputs.append(info)
        try:
            yield from scan_source(src, parsers, info, result, options.max_line_bytes)
        except InputError as e:
            info.complete = False
            info.error = e.message
            result.diagnostics.append(Diagnostic("NS-IO-UNREADABLE", e.message, src.name))
        except OSError as e:
            info.complete = False
            info.error = e.strerror or str(e)
            result.diagnostics.append(Diagnostic("NS-IO-UNREADABLE", info.error, src.name))
