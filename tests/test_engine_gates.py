"""The engine gives an error event only to the machines whose `when` its `error` value can satisfy
(signatures.predicates.required_values, Machine.gate): the same findings, fewer questions."""

from __future__ import annotations

import pytest

from nanscope.signatures.engine import Engine
from nanscope.signatures.loader import load_or_raise
from nanscope.signatures.predicates import required_values


@pytest.mark.parametrize("cond, want", [
    ("error == 'cuda_oom'", {"cuda_oom"}),
    ("error in ['child_failed', 'worker_failed']", {"child_failed", "worker_failed"}),
    (["error in ['a', 'b']", "signal == 'SIGKILL'"], {"a", "b"}),
    (["error in ['a', 'b']", "error == 'b'"], {"b"}),
    ({"any": ["error == 'a'", ["error == 'b'", "fields.x == 1"]]}, {"a", "b"}),
    ({"any": ["error == 'a'", "warning == 'w'"]}, None),  # the second part pins no error
    ("error != 'a'", None),
    ("message ~ 'boom'", None),
    ("error == @fields.kind", None),
])
def test_the_error_values_a_condition_pins(cond, want):
    got = required_values(cond, "error")
    assert (None if got is None else set(got)) == want


def test_a_one_class_signature_is_gated_and_the_catch_alls_are_not():
    eng = Engine(load_or_raise())
    gates = {m.sig: m.gate() for m in eng.subscribers["error"]}
    assert gates["cuda-oom"] and "cuda_oom" in gates["cuda-oom"]
    assert gates["uncaught-exception"] is None  # it reads every exception
    # sole_evidence watches every event, so it can never be gated
    assert all(g is None for sig, g in gates.items() if getattr(next(m for m in eng.subscribers["error"] if m.sig == sig), "sole", None) is not None)
