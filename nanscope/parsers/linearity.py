"""Is a rule's regex linear in the length of the line? A structural check on the parsed pattern.

Python's `re` backtracks, and three shapes make it super-linear on a hostile line:

- **rescan**: an unanchored search tries every start; when an unbounded repeat of class A can be
  reached from starts that lie inside one another's scan (A holds a character the pattern can
  start with), a line of n such characters costs n scans of up to n characters each:
  `[A-Za-z_][\\w./]*=` on a run of letters, `\\{.*"num_updates"` on a run of `{`. A lookbehind
  that refuses a start after a character of A (`(?<![\\w./])`) leaves one start per run;
- **overlap**: two unbounded repeats in a row (with only optional items between) whose classes
  share a character split a run in n ways before failing (`[-\\d.]+\\w*`, `\\s*(...)?\\s*`);
- **nesting**: an unbounded repeat inside another unbounded repeat (exponential).

A repeat behind a longer literal is reached only where that literal occurs, which a line can
repeat only n/len times; such repeats are measured, not judged here (bench/linearity.py, numbers in
bench/README.md). `problems(pattern, flags, match_start)` names each; tests/reliability/test_linear_parsers.py holds
every bundled rule to none. A bounded repeat (`.{0,512}`) is linear by construction and is the fix
where a greedy scan must stay (the text of a CUDA assertion between its backticks).
"""

from __future__ import annotations

import re
import re._constants as C
import re._parser as sre
from typing import Optional

_UNIVERSE = [chr(c) for c in range(0x180)] + ["\u2028", "\u3000", "\uff10", "\u0660"]  # Latin, a few others
_CATS = {
    C.CATEGORY_DIGIT: str.isdigit, C.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
    C.CATEGORY_SPACE: str.isspace, C.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    C.CATEGORY_WORD: lambda c: c.isalnum() or c == "_", C.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
}
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
_ZERO_WIDTH = (C.AT, C.ASSERT, C.ASSERT_NOT)


def _in_class(items, ch: str) -> bool:
    neg = False
    hit = False
    for op, av in items:
        if op is C.NEGATE:
            neg = True
        elif op is C.LITERAL:
            hit |= ord(ch) == av
        elif op is C.RANGE:
            hit |= av[0] <= ord(ch) <= av[1]
        elif op is C.CATEGORY:
            hit |= _CATS.get(av, lambda c: True)(ch)
        else:
            hit = True  # an unknown member: assume it may match (conservative)
    return hit != neg


def charset(item, icase: bool) -> Optional[frozenset]:
    """The characters (of a sample universe) one single-character item matches; None if the item
    is not a single character."""
    op, av = item
    if op is C.LITERAL:
        test = lambda c: ord(c) == av  # noqa: E731
    elif op is C.NOT_LITERAL:
        test = lambda c: ord(c) != av  # noqa: E731
    elif op is C.ANY:
        test = lambda c: c != "\n"  # noqa: E731
    elif op is C.IN:
        test = lambda c: _in_class(av, c)  # noqa: E731
    else:
        return None
    if icase:
        return frozenset(c for c in _UNIVERSE if test(c) or any(len(v) == 1 and test(v) for v in (c.lower(), c.upper())))
    return frozenset(c for c in _UNIVERSE if test(c))


def _CATS_SET(cat) -> frozenset:  # noqa: N802
    return frozenset(c for c in _UNIVERSE if _CATS[cat](c))


def _unbounded(op, av) -> bool:
    return op in _REPEATS and av[1] is C.MAXREPEAT


def _first(seq, icase: bool) -> frozenset:
    """Characters a match of `seq` may begin with (all of them when that is not simple to say)."""
    out: set = set()
    for item in seq:
        op, av = item
        if op in _ZERO_WIDTH:
            continue
        cs = charset(item, icase)
        if cs is not None:
            return frozenset(out | cs)
        if op is C.SUBPATTERN:
            f = _first(av[3], icase)
            if _nullable(av[3]):
                out |= f
                continue
            return frozenset(out | f)
        if op is C.BRANCH:
            for alt in av[1]:
                out |= _first(alt, icase)
            if any(_nullable(alt) for alt in av[1]):
                continue
            return frozenset(out)
        if op in _REPEATS:
            out |= _first(av[2], icase)
            if av[0] == 0 or _nullable(av[2]):
                continue
            return frozenset(out)
        return frozenset(_UNIVERSE)
    return frozenset(out)


def _nullable(seq) -> bool:
    """Can `seq` match the empty string somewhere other than at the start of the line? (`^` as
    an alternative, `(?:^|[\\s,])`, matches only at the one start and does not count.)"""
    if list(seq) == [(C.AT, C.AT_BEGINNING)]:
        return False
    for op, av in seq:
        if op in _ZERO_WIDTH:
            continue
        if op is C.SUBPATTERN and _nullable(av[3]):
            continue
        if op is C.BRANCH and any(_nullable(alt) for alt in av[1]):
            continue
        if op in _REPEATS and (av[0] == 0 or _nullable(av[2])):
            continue
        return False
    return True


def _single(body, icase: bool) -> Optional[frozenset]:
    """The class of a repeat whose body is one character (possibly in a group), else None."""
    items = list(body)
    while len(items) == 1 and items[0][0] is C.SUBPATTERN:
        items = list(items[0][1][3])
    return charset(items[0], icase) if len(items) == 1 else None


def problems(pattern: str, flags: int = 0, match_start: bool = False) -> list[str]:
    """What makes the pattern super-linear (see the module docstring); [] when nothing does."""
    tree = sre.parse(pattern, flags)
    icase = bool(tree.state.flags & re.I)
    out: list[str] = []
    seq = list(tree)
    anchored = match_start
    guard: frozenset = frozenset()
    for op, av in seq:  # leading zero-width items: an anchor, or a lookbehind refusing some starts
        if op is C.AT and av in (C.AT_BEGINNING, C.AT_BEGINNING_STRING):
            anchored = True
        elif op is C.ASSERT_NOT and av[0] == -1:
            guard |= _single(av[1], icase) or frozenset()
        elif op is C.AT and av is C.AT_BOUNDARY:  # a start inside a run of word characters is refused
            guard |= _CATS_SET(C.CATEGORY_WORD)
        elif op not in _ZERO_WIDTH:
            break
    _walk(seq, [], icase, out, frozenset(), True, guard, anchored, outer=False, pre=0)
    return sorted(set(out))


def _minlen(seq) -> int:
    n = 0
    for op, av in seq:
        if op in _ZERO_WIDTH:
            continue
        if op is C.SUBPATTERN:
            n += _minlen(av[3])
        elif op is C.BRANCH:
            n += min(_minlen(alt) for alt in av[1])
        elif op is C.ATOMIC_GROUP:
            n += _minlen(av)
        elif op in _REPEATS:
            n += av[0] * _minlen(av[2])
        elif op is C.GROUPREF:
            continue
        else:
            n += 1
    return n


DENSE = 1  # a repeat at most this many characters after the start is reached from dense starts


def _walk(seq, follow: list, icase: bool, out: list, lead: frozenset, lead_open: bool, guard: frozenset,
          anchored: bool, outer: bool, pre: int) -> None:
    """Check the items of `seq`, which `follow` follows. `lead`: what a match may start with, as
    far as the items before `seq` say; `lead_open`: those items may match nothing (then the
    match may also start inside `seq`); `pre`: how many characters they consume at least."""
    items = list(seq)
    for i, (op, av) in enumerate(items):
        rest = items[i + 1:] + follow
        before = items[:i]
        if i:
            pre += _minlen(items[i - 1:i])
        starts = lead | (_first(before, icase) if lead_open else frozenset())
        open_here = lead_open and _nullable(before)
        if op is C.SUBPATTERN:
            _walk(av[3], rest, icase, out, starts, open_here, guard, anchored, outer, pre)
        elif op is C.BRANCH:
            for alt in av[1]:
                if list(alt) == [(C.AT, C.AT_BEGINNING)]:
                    continue  # `(?:^|...)`: one start only
                _walk(alt, rest, icase, out, starts, open_here, guard, anchored, outer, pre)
        elif op is C.ATOMIC_GROUP:
            _walk(av, rest, icase, out, starts, open_here, guard, anchored, True, pre)
        elif op in _REPEATS:
            unb = av[1] is C.MAXREPEAT
            cls = _single(av[2], icase)
            if unb and outer and op is not C.POSSESSIVE_REPEAT:
                out.append("nested: an unbounded repeat inside another unbounded repeat")
            if unb and cls is not None and op is not C.POSSESSIVE_REPEAT:
                begin = starts if not open_here else starts | cls
                if pre <= DENSE and not anchored and not _ends(rest) and (cls & begin) and not cls <= guard:
                    out.append(f"rescan: an unbounded repeat of {_show(cls)} is reached from overlapping starts "
                               f"(the pattern may start with one of its characters); guard the start with a lookbehind, "
                               "anchor it or bound the repeat")
                clash = [c for c, final in _next_repeat_classes(rest, icase, cls) if c & cls and not final]
                if clash:
                    out.append(f"overlap: an unbounded repeat of {_show(cls)} is followed by another one that shares "
                               f"characters with it ({_show(clash[0])}) with only optional items between")
            nests = unb and not _delimited(av[2], icase)
            _walk(av[2], [], icase, out, starts, open_here, guard, anchored, outer or nests, pre)


def _ends(rest) -> bool:
    """Nothing that can fail comes after (only `$`, `\\Z` or nothing)."""
    return all(op is C.AT and av in (C.AT_END, C.AT_END_STRING) for op, av in rest)


def _delimited(body, icase: bool) -> bool:
    """Does a run split into passes of a repeated body one way only? True when the body has a
    mandatory character D that no unbounded repeat before it can take and that no repeat after
    it can take the body's first character S (`(?:\\w+\\.)*`, `(?:\\[[^\\]]*\\]\\s*)*`)."""
    items = list(body)
    while len(items) == 1 and items[0][0] is C.SUBPATTERN:
        items = list(items[0][1][3])
    if not items:
        return False
    first = charset(items[0], icase)
    for k, item in enumerate(items):
        d = charset(item, icase)
        if d is None:
            continue
        ahead = [_single(av[2], icase) for op, av in items[:k] if op in _REPEATS]
        after = [_single(av[2], icase) for op, av in items[k + 1:] if op in _REPEATS]
        if all(c is not None and not (c & d) for c in ahead) and all(
                c is not None and first is not None and not (c & first) for c in after):
            return True
    return False


def _next_repeat_classes(rest, icase: bool, cls: frozenset) -> list:
    """(class, final) of the unbounded single-character repeats a match can reach next after a
    repeat of `cls`, skipping optional items (and looking into groups). final: a repeat of every
    character but newline with nothing after it that can fail (`.*$`): it never gives back. A
    lookahead that refuses every character of `cls` (`(?![\\d.])` after a number, `(?=word)` after
    spaces) ends the search: a character given back cannot pass it."""
    out: list = []
    for k, (op, av) in enumerate(rest):
        if op is C.ASSERT_NOT and av[0] == 1:
            refused = _single(av[1], icase)
            if refused is not None and cls <= refused:
                return out
            continue
        if op is C.ASSERT and av[0] == 1:
            if not (_first(list(av[1]), icase) & cls):
                return out
            continue
        if op in _ZERO_WIDTH:
            continue
        after = rest[k + 1:]
        if op in _REPEATS:
            nxt = _single(av[2], icase)
            if nxt is not None and av[1] is C.MAXREPEAT:
                out.append((nxt, _ends(after) and len(nxt) >= len(set(_UNIVERSE)) - 1))
                if av[0] == 0:
                    continue
                return out
            if av[0] == 0:
                out.extend(_next_repeat_classes(list(av[2]) + after, icase, cls))
                continue
            return out
        if op is C.SUBPATTERN:
            return out + _next_repeat_classes(list(av[3]) + after, icase, cls)
        return out
    return out


def _show(cls: frozenset) -> str:
    chars = "".join(sorted(c for c in cls if c.isprintable() and ord(c) < 0x7f))
    return f"[{chars[:24]}{'...' if len(chars) > 24 else ''}]"
