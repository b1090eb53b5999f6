"""Cross-rank reasoning on real logs (sample_logs/public, threads named in its MANIFEST.toml): which
evidence decided the initiating rank, with what confidence, and where the log cannot tell."""

from __future__ import annotations

import json

from conftest import SAMPLES, run_cli

PUBLIC = SAMPLES / "public"


def _findings(name: str) -> list:
    p = run_cli("diagnose", str(PUBLIC / name), "--format", "json", "--exit-zero")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["findings"]


def _top(name: str) -> dict:
    return _findings(name)[0]


def test_torchrun_summary_with_no_other_failures_names_the_only_failed_worker():
    # hiyouga/LlamaFactory#6040: only torchrun's ChildFailedError block, rank 1 exit 1, <NO_OTHER_FAILURES>
    top = _top("220.log")
    assert (top["id"], top["initiating_rank"]) == ("uncaught-exception", 1)
    assert "the only worker that failed" in top["decided_by"]


def test_mpirun_exit_on_signal_names_the_killed_rank():
    # horovod/horovod#469: 8 Keras ranks, mpirun notes rank 7 exited on signal 9
    found = [(f["id"], f["initiating_rank"]) for f in _findings("800.log")]
    assert found == [("rank-crash-cascade", 7), ("process-killed", 7)]
