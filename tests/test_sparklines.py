"""The text report's sparkline rows: one per rank on the job's common step axis, the NaN in the
column of its step, skipped steps and the loss scale where it changes; plain ASCII when the
terminal cannot take block characters (NO_COLOR, TERM=dumb, a stream that is not UTF-8)."""

from __future__ import annotations

import io

import pytest

from conftest import ROOT, run_cli
from nanscope import api
from nanscope.report import RenderOptions, render
from nanscope.report.spark import ASCII, BLOCKS, LOSS_W


def _rows(out: str) -> dict[str, str]:
    block = out.split("loss", 1)[1] if "\nloss" in out else ""
    rows = {}
    for line in out.split("\n"):
        if line.startswith("rank ") and ".." in line and "  " in line[6:]:
            label, rest = line[:6].strip(), line[6:].strip()
            rows[label] = rest.split("  ")[0]
    assert block
    return rows


def test_nan_sits_in_the_column_of_its_step_on_the_rank_that_had_it():
    out = run_cli("diagnose", "sample_logs/torch/ddp_nan_rank2.log").stdout.decode("utf-8")
    assert "loss by step 0..59 (× non-finite, s skipped)" in out
    rows = _rows(out)
    assert set(rows) == {"rank 0", "rank 1", "rank 2", "rank 3"}
    assert all(len(r) == LOSS_W for r in rows.values())
    # 60 steps over 40 columns: step 40 is column 40*40//60 = 26; only rank 2's loss was NaN
    assert [i for i, c in enumerate(rows["rank 2"]) if c == "×"] == [26]
    assert all("×" not in rows[r] for r in ("rank 0", "rank 1", "rank 3"))
    assert set(rows["rank 0"]) <= set(BLOCKS)


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}, {"PYTHONIOENCODING": "latin-1"}])
def test_plain_ascii_when_the_terminal_cannot_show_blocks(env):
    p = run_cli("diagnose", "sample_logs/torch/amp_skip_recover.log", env=env)
    out = p.stdout.decode("latin-1")
    assert "loss | loss scale by step 0..59 (x non-finite, s skipped)" in out
    line = next(ln for ln in out.split("\n") if ln.startswith("amp_skip_recover.log "))
    loss, scale = line.split("|")
    assert "s" in loss.split()[1] and "s" in scale.split()[0]  # the skipped step, on both curves
    assert set(loss.split()[1]) <= set(ASCII + "xs") and not set(BLOCKS) & set(line)


def test_loss_scale_row_only_where_the_scale_changes():
    flat = api.diagnose([str(ROOT / "sample_logs/megatron/healthy_iterations_leonardo_excerpt.log")])
    out = io.StringIO()
    render("text", flat, out, RenderOptions())
    assert "loss by step 50..350" in out.getvalue() and "loss scale by step" not in out.getvalue()
