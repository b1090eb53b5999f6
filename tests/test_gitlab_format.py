"""--format gitlab: GitLab Code Quality, checked against GitLab's own schema (tests/data/gitlab/)."""

from __future__ import annotations

import json

import jsonschema

from conftest import ROOT, run_cli

SCHEMA = json.loads((ROOT / "tests/data/gitlab/codeclimate.json").read_text())
# docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format: the values GitLab shows
SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def _report(*args, cwd=ROOT, env=None):
    p = run_cli("diagnose", *args, "--format", "gitlab", cwd=cwd, env=env)
    assert p.returncode in (0, 1, 3), p.stderr
    return json.loads(p.stdout)


def _check(issues):
    assert isinstance(issues, list)
    for issue in issues:
        jsonschema.validate(issue, SCHEMA)
        assert issue["severity"] in SEVERITIES
        assert issue["check_name"] and isinstance(issue["check_name"], str)
        assert isinstance(issue["location"]["path"], str) and issue["location"]["lines"]["begin"] >= 1


def test_findings_are_code_quality_issues_at_the_evidence_line():
    issues = _report("sample_logs/torch/ddp_nan_rank2.log")
    _check(issues)
    first = issues[0]
    assert first["check_name"] == "nanscope/nan-rank-local"
    assert first["severity"] == "major"  # medium
    assert first["location"] == {"path": "sample_logs/torch/ddp_nan_rank2.log", "lines": {"begin": 166}}
    assert "initiating rank 2" in first["description"]
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_fingerprint_is_stable_across_runs_and_line_moves(tmp_path):
    log = (ROOT / "sample_logs/torch/ddp_nan_rank2.log").read_text()
    (tmp_path / "train.log").write_text(log)
    a = _report("train.log", cwd=tmp_path)
    (tmp_path / "train.log").write_text("an extra line printed before the job\n" + log)
    b = _report("train.log", cwd=tmp_path)
    assert [i["fingerprint"] for i in a] == [i["fingerprint"] for i in b]
    assert a[0]["location"]["lines"]["begin"] + 1 == b[0]["location"]["lines"]["begin"]


def test_paths_relative_to_ci_project_dir(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "train.log").write_bytes((ROOT / "sample_logs/torch/ddp_nan_rank2.log").read_bytes())
    (tmp_path / "job").mkdir()
    issues = _report("../logs/train.log", cwd=tmp_path / "job", env={"CI_PROJECT_DIR": str(tmp_path)})
    assert issues[0]["location"]["path"] == "logs/train.log"


def test_clean_log_is_an_empty_report_and_severities_map():
    assert _report("sample_logs/torch/healthy.log") == []
    from nanscope.report.gitlab import SEVERITY
    from nanscope.signatures.schema import SEVERITIES as OURS

    assert set(SEVERITY) == set(OURS) and set(SEVERITY.values()) == SEVERITIES


def test_every_sample_validates():
    import io

    from nanscope import api
    from nanscope.report import RenderOptions, render

    sigs = api.load_signatures(api.Options())
    seen = 0
    for log in sorted((ROOT / "sample_logs").glob("*/*.log")):
        out = io.StringIO()
        render("gitlab", api.diagnose([str(log)], api.Options(bundled_signatures=sigs)), out, RenderOptions())
        issues = json.loads(out.getvalue())
        _check(issues)
        seen += len(issues)
    assert seen > 50
