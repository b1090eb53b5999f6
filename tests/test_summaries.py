"""Every signature's one-line summary reads as text even when the match lacks the values it names:
no `{placeholder}` and no `None` ever reaches a report; counts in a summary agree with the
finding's occurrences."""

from __future__ import annotations

import re

import pytest

from nanscope import api
from nanscope.model import ErrorEvent, Loc, ScaleEvent, StepEvent, WarningEvent
from nanscope.signatures import loader
from nanscope.signatures.engine import Aggregate, build_finding
from nanscope.signatures.machines import Match

SIGS, _ = loader.load()
BARE = [StepEvent, WarningEvent, ErrorEvent, ScaleEvent]


@pytest.mark.parametrize("sig", SIGS, ids=[s.id for s in SIGS])
@pytest.mark.parametrize("extras", [{}, {"step": None, "last_step": None, "run": None, "value": None}])
def test_summary_with_fields_missing(sig, extras):
    for cls in BARE:
        ev = cls(loc=Loc("x.log", 1), text="", framework="x")
        agg = Aggregate(sig)
        agg.add(Match(sig.id, ("source", "x.log"), None, [ev], None, dict(extras)))
        summary = build_finding(agg).summary
        assert not re.search(r"\{[\w.]+\}", summary), (sig.id, summary)
        assert "None" not in summary, (sig.id, summary)


def test_count_in_summary_is_the_occurrences(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("".join(f"(trainer:581) WARNING: The grad norm is nan. Skipping updating the model.\n" for _ in range(5)))
    (f,) = api.diagnose([str(p)]).findings
    assert f.id == "grad-norm-nonfinite" and f.occurrences == 5
    assert "(5 logged step(s)" in f.summary
