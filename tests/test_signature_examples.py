"""Every [[examples]] entry of every bundled signature runs as its own test."""

from __future__ import annotations

import pytest

from nanscope.signatures.loader import load
from nanscope.signatures.selftest import check_example, lint

_SIGS, _ERRORS = load()
_CASES = [(s, ex) for s in _SIGS for ex in s.examples]


def test_library_loads_without_errors():
    assert not _ERRORS, "\n".join(str(e) for e in _ERRORS)


def test_lint_is_clean():
    assert lint() == []


def test_every_signature_has_a_match_and_a_near_miss():
    for s in _SIGS:
        kinds = {e.expect for e in s.examples}
        assert {"match", "no-match"} <= kinds, s.id


@pytest.mark.parametrize("sig,example", _CASES, ids=[f"{s.id}: {ex.name}" for s, ex in _CASES])
def test_example(sig, example):
    assert check_example(sig, example, _SIGS) is None
