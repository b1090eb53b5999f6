"""Which candidate lines could any rule claim at all, decided in RE2 over a whole chunk.

A keyword only says a rule *might* want a line (`iteration` is in Megatron's step lines and in
PyTorch's reducer warning alike); the rule's regex decides. For most rules the regex itself
requires one of the rule's keywords (checked here on the parsed pattern), so "the regex matches
somewhere in the line" implies "the rule is tried, and may claim it". The union of those regexes
and of the other rules' keywords is a necessary condition for any rule to claim a line: a
candidate that fails it goes no further. The union is taken per set of keywords found in a line,
over the rules those keywords lead to.

Lines this cannot judge exactly stay candidates: those with control bytes (\\r pieces, NUL, ANSI
escapes, \\v), non-ASCII bytes (Python's \\w and \\s are wider than RE2's there) or over-long ones.
"""

from __future__ import annotations

import re
import re._constants as C  # noqa: N812
import re._parser as sre  # the stdlib's own pattern parser
from typing import Callable, Optional, Sequence

from nanscope.parsers.base import Parser


class Claimable:
    """The union per set of keywords found in a line, over the rules Dispatch.plan would try on
    such a line (the only ones that can claim it): a small union is a small, fast DFA.

    A rule's alternatives are worked out when a line first leads to it: translating and checking
    a rule's regex costs ~0.5 ms (all of them: ~0.15 s a run), and a log reaches a few of them."""

    def __init__(self, parsers: Sequence[Parser], plan: Callable[[tuple], tuple]):
        self.parsers = parsers  # every rule has a keyword (see usable)
        self.plan = plan  # Dispatch.plan: (parser index, parser, its rules or None: all) to try
        self._alts: dict[int, list[str]] = {}  # id(rule) -> its RE2 alternatives (rule_alternatives)
        self._unions: dict[tuple, Optional[str]] = {}

    @staticmethod
    def usable(parsers: Sequence[Parser]) -> bool:
        """Can lines be excluded at all? Not when some rule has no keyword (it may claim any line)."""
        return not any(k == "" for p in parsers for r in p.rules for k in r.keywords)

    def union_for(self, found: tuple) -> Optional[str]:
        """The RE2 union for lines where `found` were found; None: no rule can claim such a line."""
        got = self._unions.get(found, False)
        if got is False:
            alts = [alt for _, p, rules in self.plan(found) for r in (p.rules if rules is None else rules)
                    for alt in self._rule(r)]
            got = self._unions[found] = "|".join(dict.fromkeys(alts)) if alts else None
        return got  # type: ignore[return-value]

    def _rule(self, rule) -> list[str]:
        got = self._alts.get(id(rule))
        if got is None:
            got = self._alts[id(rule)] = rule_alternatives(rule)
        return got


def rule_alternatives(rule) -> list[str]:
    """A rule's RE2 alternatives: its regex in RE2 when the regex implies one of the rule's
    keywords, else the keywords themselves (every rule has one: Claimable.usable)."""
    re2 = _to_re2(rule.regex) if _implies_keyword(rule.regex, rule.keywords) else None
    return [f"(?:{re2})"] if re2 is not None else [_literal(k) for k in rule.keywords]


def _implies_keyword(rx: "re.Pattern[str]", keywords: Sequence[str]) -> bool:
    if rx.flags & re.I:
        return False  # a case-folded literal does not imply the keyword's exact case
    try:
        return _implies(sre.parse(rx.pattern, rx.flags), keywords)
    except Exception:  # noqa: BLE001 - an unexpected pattern shape: be conservative
        return False


def _implies(sub, keywords: Sequence[str]) -> bool:
    """Does every match of `sub` contain one of the keywords?"""
    run: list[str] = []
    for op, av in list(sub) + [(None, None)]:
        if op is C.LITERAL:
            run.append(chr(av))
            continue
        text = "".join(run)
        run = []
        if text and any(k in text for k in keywords):
            return True
        if op is C.SUBPATTERN and _implies(av[3], keywords):
            return True
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT) and av[0] >= 1 and _implies(av[2], keywords):
            return True
        if op is C.ATOMIC_GROUP and _implies(av, keywords):
            return True
        if op is C.BRANCH and all(_implies(alt, keywords) for alt in av[1]):
            return True
    return False


_LOOKAROUND = re.compile(r"\(\?<?[=!]")


def _to_re2(rx: "re.Pattern[str]") -> Optional[str]:
    """The pattern in RE2 syntax, matching at least what it matches in Python (on ASCII text):
    names dropped, lookarounds removed (a looser pattern); None if RE2 cannot take it."""
    pat = rx.pattern
    if "(?P=" in pat or re.search(r"\\[1-9]|\\Z", pat):
        return None
    pat = re.sub(r"\(\?P<\w+>", "(?:", pat)
    pat = _drop_start_anchors(pat)  # rules see the message after the launcher prefixes, RE2 the line
    while True:
        m = _LOOKAROUND.search(pat)
        if m is None:
            break
        end = _group_end(pat, m.start())
        if end is None:
            return None
        pat = pat[: m.start()] + pat[end + 1:]
    if rx.flags & re.X:
        return None
    try:
        from nanscope.ingest.reader import _arrow

        pa, pc, _ = _arrow()
        pc.match_substring_regex(pa.array([b""]), pat)
    except Exception:  # noqa: BLE001 - RE2 rejects the syntax
        return None
    return pat


def _tokens(pat: str):
    """(position, token, inside a character class) for each token of a pattern: a backslash
    escape is one token; a class's opening `[`, `[^` and a `]` right after them are taken as one."""
    i = 0
    in_class = False
    while i < len(pat):
        c = pat[i]
        if c == "\\":
            yield i, pat[i: i + 2], in_class
            i += 2
            continue
        if not in_class and c == "[":
            j = i + 1 + (pat[i + 1: i + 2] == "^")
            j += pat[j: j + 1] == "]"
            yield i, pat[i:j], False
            in_class = True
            i = j
            continue
        if in_class and c == "]":
            in_class = False
        yield i, c, in_class
        i += 1


def _drop_start_anchors(pat: str) -> str:
    """Remove `^` and `\\A` outside character classes (a looser pattern)."""
    return "".join(t for _, t, in_class in _tokens(pat) if in_class or t not in ("^", "\\A"))


def _group_end(pat: str, start: int) -> Optional[int]:
    """Where the group that opens at `start` closes."""
    depth = 0
    for i, t, in_class in _tokens(pat[start:]):
        if in_class:
            continue
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
            if depth == 0:
                return start + i
    return None


def _literal(word: str) -> str:
    return "".join(c if c.isalnum() else f"\\x{ord(c):02x}" for c in word.encode().decode("latin-1"))
