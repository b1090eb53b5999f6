"""Every parser is linear in line length (issue 20, item 2): no rule regex, and no pattern a
builder runs, has a shape that makes Python's backtracking `re` super-linear (a rescan from
overlapping starts, adjacent repeats that share characters, nested repeats). Checked on the
parsed patterns, not timed: bench/linearity.py measures them (numbers in bench/README.md)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import nanscope.parsers as pkg
from nanscope.api import Options, diagnose_sources
from nanscope.ingest.reader import Source
from nanscope.parsers.linearity import problems
from nanscope.parsers.registry import all_parsers

# module-level patterns the builders call with .match (anchored at the start of their text)
MATCHED = {"EXC_LINE", "_FIELD", "_FIELD_V1"}


def _all_patterns():
    for p in all_parsers():
        for r in p.rules:
            yield f"{p.name}/{r.name}", r.regex, r.match_start
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for name, v in sorted(vars(mod).items()):
            if isinstance(v, re.Pattern):
                yield f"{info.name}.{name}", v, name in MATCHED


@pytest.mark.parametrize("name,rx,match_start", list(_all_patterns()), ids=lambda x: x if isinstance(x, str) else "")
def test_pattern_is_linear(name, rx, match_start):
    assert problems(rx.pattern, rx.flags, match_start) == []


@pytest.mark.parametrize("pattern,kind", [
    (r"(?P<key>[A-Za-z_][\w./]*)[ \t]*[:=][ \t]*(?P<val>\d+)", "rescan"),  # the step parser before the fix
    (r"\{.*\"num_updates\":", "rescan"),
    (r"(?P<file>\S+\.cuh?):(?P<line>\d+)", "rescan"),
    (r"MnRtt/Rnk: [-\d.]+\w*/\d+ \|", "overlap"),
    (r"\bEpoch\s*(?:\[(?P<ep>\d+)\])?\s*\[", "overlap"),
    (r"(?P<what>.+?)\s*$", "overlap"),
    (r"^(a+)+$", "nested"),
])
def test_the_check_finds_the_shapes_that_were_slow(pattern, kind):
    assert any(p.startswith(kind) for p in problems(pattern)), problems(pattern)


@pytest.mark.parametrize("pattern", [
    r"(?<![\w./])(?P<key>[A-Za-z_][\w./]*)[ \t]*[:=][ \t]*(?P<val>\d+)",
    r"(?:^|[\s,])(?P<k>[A-Za-z_][\w/.]*)=(?P<v>[^,\s\]]+)",
    r"^(?:\w+\.)*\w+Error(?::[ \t]*(?P<msg>.*))?$",
    r"loss:\s*(?P<loss>\d+)(?![\d.])(?P<rest>.*\btps:)",
])
def test_the_check_accepts_the_fixed_shapes(pattern):
    assert problems(pattern) == []


def test_step_parser_still_reads_pairs_after_a_long_word():
    # issue 20's line, shorter: the pairs before the run of x are still read, the run is not a key
    data = b"[default0]:step=1, loss=2.0 " + b"x" * 5000 + b"\n[default0]:step=2, loss=nan " + b"x" * 5000 + b"\n"
    report = diagnose_sources([Source("x.log", None, data)], Options())
    assert report.ranks and report.ranks[0].steps == 2 and report.ranks[0].nonfinite_steps == 1
