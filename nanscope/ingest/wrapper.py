"""A collector's stamp in front of every line, learned per input from its first lines.

Logs are often read through something that stamps each line it relays: journald / syslog
(`Dec 01 14:00:00 gpu-7 python[31337]: `, journalctl's default `short` output and RFC 3164;
`2026-12-01T14:00:00.123456+00:00 gpu-7 python[31337]: `, `-o short-iso` and rsyslog's RFC 3339
form), moreutils' `ts` (its default `%b %d %H:%M:%S `), a bracketed or bare date and time (log
shippers, CI consoles, `tee` wrappers), or a bare time of day. Such a stamp sits *outside* the
program's output: the launcher prefixes (`[default3]:`), the program's own logger stamps and the
parsers' templates all come after it, so it has to be peeled first or nothing behind it is found
where it should be (all ranks' lines fall into one stream, a rule anchored at the message start
never matches, and every line goes the slow way).

A program's own logger stamps its records the same way, so a shape is taken as the input's
wrapper only when nearly every line of the input's head starts with it (a logger does not stamp a
traceback's continuation lines, print() output or tqdm bars; a wrapper stamps them all) *and*
some stamped line goes on with what only a program's output holds: a launcher prefix, another
stamp, a traceback line, an HF metrics dict or a progress bar (a syslog line names the host and the
process, which only a relay does: that is evidence enough). Without that evidence the stamp stays
in the message, as before. The kernel's own syslog lines (`host kernel: ...`) are never peeled: the
system parsers read them with their header.

The kubectl / RFC 3339 `...T...Z ` stamp without host is not here: ingest/prefixes.py peels it
on every line already (`rfc`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from nanscope.ingest.timestamps import DAYS_BEFORE, parse_ts

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MON = "(?P<mon>" + "|".join(_MONTHS) + ")"
_ISO = r"(?P<iso>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)"
_HOST_IDENT = r" [A-Za-z0-9][\w.\-]{0,62} (?P<ident>[\w.\-/@]{1,64})(?:\[\d{1,10}\])?: "
# (name, pattern): each valid in Python's re and in RE2 (the native lane matches it over a column)
SHAPES = (
    ("syslog", _MON + r" (?P<d>[ \d]\d) (?P<t>\d\d:\d\d:\d\d(?:\.\d{1,9})?)" + _HOST_IDENT),
    ("syslog-iso", r"(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d))" + _HOST_IDENT),
    ("ts", _MON + r" (?P<d>[ \d]\d) (?P<t>\d\d:\d\d:\d\d(?:\.\d{1,9})?) "),
    ("bracketed", r"\[" + _ISO + r"\] "),
    ("date-time", _ISO + " "),
    ("time", r"\[?(?P<t>\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)\]? "),
)
_COMPILED = tuple((name, re.compile(pat)) for name, pat in SHAPES)
_BY_NAME = dict(_COMPILED)
# what only a program's output holds, after the stamp
_INSIDE = re.compile(
    r"\[[A-Za-z_]+\d+\]:|\[\d+,(?:mpirank:)?\d+(?:,[\w.\-]+)?\]<std|\d{1,5}: \S|\([A-Za-z][\w\-]*(?: rank=\d+)? pid=\d+"
    r"|[EWIF]\d{4} \d\d:\d\d:\d\d|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d|(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:"
    r"|Traceback \(most recent call last\)|\s+File \"|\{'(?:loss|eval_loss|train_runtime)'|\s*\d{1,3}%\|")
_RELAYS = ("syslog", "syslog-iso")  # a host and a process named on every line: only a relay prints that
_HEAD_LINES = 2000
_SHARE = 0.9
_EVIDENCE = 2


@dataclass(frozen=True)
class Wrapper:
    """The stamp shape an input's lines are relayed with (SHAPES[name])."""

    name: str
    pattern: str  # RE2 / re source, unanchored

    @property
    def rx(self) -> "re.Pattern[str]":
        return _BY_NAME[self.name]

    def match(self, text: str) -> Optional["re.Match[str]"]:
        """The stamp at the start of `text`; None without one, and for the kernel's own syslog
        lines (`host kernel: NVRM: Xid ...`), which the parsers read with their header."""
        m = self.rx.match(text)
        if m is not None and m.groupdict().get("ident") == "kernel":
            return None
        return m

    def seconds(self, m: "re.Match[str]") -> Optional[float]:
        """The stamp's time as parse_ts counts it (seconds within a year); None for a time of
        day alone (no day to set it against the program's own dated lines)."""
        g = m.groupdict()
        if g.get("iso"):
            return parse_ts(g["iso"])
        if g.get("mon"):
            h, mi, s = g["t"].split(":")
            return ((DAYS_BEFORE[_MONTHS.index(g["mon"])] + int(g["d"]) - 1) * 24 + int(h)) * 3600 + int(mi) * 60 + float(s)
        return None


def learn_wrapper(head: bytes) -> Optional[Wrapper]:
    """The stamp nearly every line of `head` starts with, when some stamped line shows program
    output behind it (see the module docstring); None otherwise."""
    lines = [ln for ln in head.split(b"\n", _HEAD_LINES)[:_HEAD_LINES] if ln.strip()]
    if len(lines) < 3:
        return None
    first = lines[0][:1]
    if not (first.isdigit() or first == b"[" or first[:1].isupper()):
        return None  # (every shape starts with a digit, `[` or a month's capital: most logs end here)
    for name, rx in _COMPILED:
        hits = evidence = 0
        for raw in lines:
            text = raw.decode("utf-8", "replace")
            m = rx.match(text)
            if m is None or m.groupdict().get("ident") == "kernel":
                continue
            hits += 1
            if evidence < _EVIDENCE and _INSIDE.match(text, m.end()):
                evidence += 1
        if name in _RELAYS:
            evidence = _EVIDENCE
        if hits >= _SHARE * len(lines) and evidence >= _EVIDENCE:
            return Wrapper(name, dict(SHAPES)[name])
        if hits >= _SHARE * len(lines):
            return None  # the lines' own stamp (a logger's): nothing outside the program
    return None
