"""How a finding says its step: a step the log printed by its number, a step the log never printed
(streams count the step lines) as a count, never as if the log had printed that number."""

from __future__ import annotations

from conftest import ROOT, cli_report


def _findings(tmp_path, public: str) -> dict:
    text = (ROOT / "sample_logs/public" / public).read_text(encoding="utf-8")
    return {f["id"]: f for f in cli_report(tmp_path, text)["findings"]}


def test_hf_dicts_without_a_step_read_as_counted_step_lines(tmp_path):
    # four Trainer log dicts with grad_norm nan and no step anywhere in the paste
    f = _findings(tmp_path, "1020.log")
    s = f["nan-persistent"]["summary"]
    assert "from the 1st through the 4th step line (the log prints no step numbers)" in s
    assert "from step 1" not in s
    assert f["grad-norm-nonfinite"]["summary"].startswith("Step 1 (counted: the log prints no step numbers):")


def test_a_one_step_run_reads_at_that_step(tmp_path):
    # one non-finite logged step, at the step the log printed
    s = _findings(tmp_path, "1007.log")["nan-persistent"]["summary"]
    assert "at step 2137:" in s and "through step" not in s


def test_printed_steps_keep_their_numbers(tmp_path):
    s = _findings(tmp_path, "1409.log")["nan-persistent"]["summary"]
    assert "from step 440 through step 880" in s and "counted" not in s
