"""--baseline: only what is new or worse than a known-good run counts."""

from __future__ import annotations

import json

from conftest import run_cli

NAN = "sample_logs/torch/ddp_nan_rank2.log"
HEALTHY = "sample_logs/torch/ddp_healthy.log"


def test_everything_is_new_against_a_healthy_log():
    p = run_cli("diagnose", NAN, "--baseline", HEALTHY, "--format", "json")
    assert p.returncode == 1
    r = json.loads(p.stdout)
    assert r["baseline"]["new_findings"] == ["nan-rank-local", "nan-skip-recover"]
    assert all(f["baseline_status"] == "new" for f in r["findings"])
    worse = {(w["rank"], w["field"]) for w in r["baseline"]["worse"]}
    assert (2, "nonfinite_steps") in worse


def test_known_findings_do_not_fail_the_build(tmp_path):
    base = tmp_path / "good.json"
    assert run_cli("diagnose", NAN, "--format", "json", "-o", str(base)).returncode == 1
    p = run_cli("diagnose", NAN, "--baseline", str(base), "--format", "json")
    assert p.returncode == 0
    r = json.loads(p.stdout)
    assert r["baseline"]["new_findings"] == [] and r["baseline"]["worse"] == []
    assert {f["baseline_status"] for f in r["findings"]} == {"known"}


def test_a_fixed_problem_is_listed_as_resolved(tmp_path):
    base = tmp_path / "bad.json"
    run_cli("diagnose", NAN, "--format", "json", "-o", str(base))
    r = json.loads(run_cli("diagnose", HEALTHY, "--baseline", str(base), "--format", "json").stdout)
    assert r["baseline"]["resolved_findings"] == ["nan-rank-local", "nan-skip-recover"]


def test_a_bad_baseline_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    p = run_cli("diagnose", NAN, "--baseline", str(bad))
    assert p.returncode == 2
    assert b"not a nanscope JSON report" in p.stderr and b"Traceback" not in p.stderr
