"""A parser is declared, not coded: a name, a priority and rules (keywords + one regex + a builder).

The keywords of every rule, together, form the prefilter that the reader runs over raw bytes, so
the fast path and the events come from the same definitions. A rule is tried only on lines that
contain one of its keywords; the first rule whose regex matches and whose builder returns a
result wins the line. Builders get a per-(source, stream) state dict and may return:
  None      -> not mine after all, keep trying
  []        -> recognised, no event (e.g. a tqdm bar that only updates state)
  [events]  -> recognised, these events
A builder may park one event in state["pending"] when a later line completes it (HF's log dicts
take their step from the tqdm redraw that follows them); flush() releases it at end of input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

from nanscope.model import Event, Record

Built = Optional[Union[Event, Sequence[Event]]]
Builder = Callable[["re.Match[str]", Record, dict], Built]


@dataclass(frozen=True)
class Rule:
    name: str
    keywords: tuple[str, ...]
    regex: "re.Pattern[str]"
    build: Builder
    match_start: bool = False  # regex.match at the start of the message instead of search


@dataclass
class Parser:
    name: str
    framework: str
    rules: list[Rule]
    priority: int = 50  # lower runs first: specific formats before generic ones
    description: str = ""
    keywords: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        seen: dict[str, None] = {}
        for r in self.rules:
            for k in r.keywords:
                seen.setdefault(k, None)
        self.keywords = tuple(seen)

    def parse(self, rec: Record, state: dict) -> Optional[list[Event]]:
        return self.parse_rules(rec, state, self.rules)

    def parse_rules(self, rec: Record, state: dict, rules: Sequence[Rule]) -> Optional[list[Event]]:
        """parse() restricted to `rules` (the pipeline passes the rules whose keywords the
        prefilter saw in the line; each rule still checks its keywords exactly)."""
        text = rec.text
        for rule in rules:
            for k in rule.keywords:
                if k in text:
                    break
            else:
                continue
            m = rule.regex.match(text) if rule.match_start else rule.regex.search(text)
            if m is None:
                continue
            out = rule.build(m, rec, state)
            if out is None:
                continue
            if isinstance(out, Event):
                return [out]
            return list(out)
        return None

    def flush(self, state: dict) -> list[Event]:
        """At the end of a source: events a rule held back waiting for a later line."""
        pending = state.pop("pending", None)
        return [pending] if pending is not None else []


class LazyPattern:
    """A rule's regex, compiled when first used. A run reads a few frameworks' lines, so most of
    the ~400 rule regexes are never tried; compiling all of them cost ~30 ms at every start (a
    tenth of a small log's run). Once compiled, the pattern's methods are the instance's own
    attributes: a call costs what it costs on the re.Pattern."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("pattern", "_flags"):
            raise AttributeError(name)
        rx = re.compile(self.pattern, self._flags)
        for attr in ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "flags",
                     "groups", "groupindex"):
            setattr(self, attr, getattr(rx, attr))
        self.compiled = rx
        return getattr(rx, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"


def rule(name: str, keywords: Sequence[str], pattern: str, flags: int = 0, match_start: bool = False):
    """Decorator: turn a builder function into a Rule (its regex compiled on first use)."""

    def wrap(fn: Builder) -> Rule:
        return Rule(name, tuple(keywords), LazyPattern(pattern, flags), fn, match_start)  # type: ignore[arg-type]

    return wrap


SIGNALS = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV",
           15: "SIGTERM"}


def launcher_alone(origin) -> bool:
    """A launcher's line with no rank prefix, node label or per-node file: one node's launcher talking about its
    own workers, so the local rank it names is the global rank (torchrun's agent, Paddle's pod)."""
    return origin.node is None and origin.rank is None and origin.local_rank is None


def signal_of(exitcode: Optional[int]) -> Optional[str]:
    """torchrun reports a worker killed by signal N as exitcode -N."""
    if exitcode is None or exitcode >= 0:
        return None
    return SIGNALS.get(-exitcode, f"SIG{-exitcode}")
