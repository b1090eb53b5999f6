"""A configuration check that every rank makes (rank_evidence = false) names no initiating rank,
even when the paste shows it under one rank's prefix: that rank printed it, it did not start it."""

from __future__ import annotations

from conftest import ROOT, cli_report


def test_grpo_batch_check_under_one_rank_prefix_names_no_rank(tmp_path):
    # real paste: `[rank1]: ValueError: The global train batch size (7 x 1) must be evenly divisible ...`
    text = (ROOT / "sample_logs/public/2483.log").read_text(encoding="utf-8")
    (f,) = [f for f in cli_report(tmp_path, text)["findings"] if f["id"] == "grpo-batch-generations-mismatch"]
    assert f["initiating_rank"] is None
    assert "a check of the job's configuration that every rank makes" in f["decided_by"]


def test_a_rank_local_failure_under_a_rank_prefix_keeps_its_rank(tmp_path):
    # the same prefix on a failure of one rank's own (a CUDA OOM on rank 11) still names that rank
    text = (ROOT / "sample_logs/cuda/oom_rank11_multinode_excerpt.log").read_text(encoding="utf-8")
    (f,) = [f for f in cli_report(tmp_path, text)["findings"] if f["id"] == "cuda-oom"]
    assert f["initiating_rank"] == 11
