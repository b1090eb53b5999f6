"""Several reports from one read (--output FORMAT[:PATH]), file modes, CI-relative paths."""

from __future__ import annotations

import json
import os
import stat
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, run_cli
from nanscope.errors import NanscopeError
from nanscope.report import FORMATS
from nanscope.report.outputs import OutputSpec, plan

NAN = ROOT / "sample_logs/torch/ddp_nan_rank2.log"


def test_four_reports_from_one_stdin_read(tmp_path):
    """stdin can be read only once: every report must come from that one read."""
    summary = tmp_path / "summary.md"
    summary.write_text("## earlier step output\n")
    p = run_cli("diagnose", "--output", "sarif:nanscope.sarif", "--output", "junit:junit.xml", "--output", "github",
                "--output", f"markdown:{summary}", "--output", "gitlab:gl-code-quality.json",
                stdin=NAN.read_bytes(), cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert p.returncode == 1, p.stderr
    out = p.stdout.decode()
    assert out.startswith("::warning ") and "nan-rank-local" in out  # github on stdout
    sarif = json.loads((tmp_path / "nanscope.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["ruleId"] == "nan-rank-local"
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert any(tc.get("name", "").startswith("nan-rank-local") and tc.find("failure") is not None
               for tc in junit.iter("testcase"))
    md = summary.read_text()
    assert md.startswith("## earlier step output\n") and "nan-rank-local" in md  # the step summary is appended to
    gl = json.loads((tmp_path / "gl-code-quality.json").read_text())
    assert gl[0]["check_name"] == "nanscope/nan-rank-local"


def test_the_logs_are_read_once(monkeypatch, tmp_path):
    """In-process: the reader opens each input once for all outputs."""
    import builtins

    from nanscope import cli

    opened = []
    real = builtins.open

    def counting_open(file, *a, **k):
        if str(file) == str(NAN):
            opened.append(file)
        return real(file, *a, **k)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["diagnose", str(NAN), "-q", "-o", "json:a.json", "-o", "sarif:a.sarif", "-o", "markdown:a.md",
                     "-o", "junit:a.xml"])
    assert code == 1
    assert len(opened) == 1, opened
    assert all((tmp_path / n).stat().st_size > 0 for n in ("a.json", "a.sarif", "a.md", "a.xml"))


def test_plain_path_keeps_its_old_meaning(tmp_path):
    p = run_cli("diagnose", str(NAN), "--format", "json", "-o", "report.json", cwd=tmp_path)
    assert p.returncode == 1
    assert p.stdout == b""  # the --format report went to the file
    assert json.loads((tmp_path / "report.json").read_text())["verdict"] == "actionable"


def test_a_format_file_alone_keeps_the_text_report_on_stdout(tmp_path):
    p = run_cli("diagnose", str(NAN), "-o", "json:r.json", cwd=tmp_path)
    assert p.stdout.decode().startswith("nanscope: ACTIONABLE")
    assert (tmp_path / "r.json").exists()


def test_quiet_still_writes_files(tmp_path):
    p = run_cli("diagnose", str(NAN), "-q", "-o", "json:r.json", cwd=tmp_path)
    assert p.stdout == b"" and p.returncode == 1
    assert json.loads((tmp_path / "r.json").read_text())["findings"]


@pytest.mark.parametrize("values, message", [
    (["json", "github"], "only one report can go to stdout"),
    (["json:a", "sarif:a"], "named twice"),
    (["jsn:a.json"], "unknown format 'jsn'"),
    (["json:"], "give a file after 'json:'"),
])
def test_bad_output_plans_are_clear_errors(values, message):
    with pytest.raises(NanscopeError, match=message):
        plan("text", values, list(FORMATS))


def test_plan_shapes():
    assert plan("text", [], list(FORMATS)) == [OutputSpec("text", None)]
    assert plan("text", ["json:r.json"], list(FORMATS)) == [OutputSpec("text", None), OutputSpec("json", "r.json")]
    assert plan("json", ["r.json"], list(FORMATS)) == [OutputSpec("json", "r.json")]
    assert plan("text", ["github", "sarif:s"], list(FORMATS)) == [OutputSpec("github", None), OutputSpec("sarif", "s")]
    assert plan("text", ["json:r.json"], list(FORMATS), stdout=False) == [OutputSpec("json", "r.json")]


def test_output_files_respect_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        p = run_cli("diagnose", str(NAN), "-q", "-o", "json:r.json", cwd=tmp_path)
        assert p.returncode == 1
        assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o644
        p = run_cli("events", str(NAN), "-o", "ev.parquet", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert stat.S_IMODE((tmp_path / "ev.parquet").stat().st_mode) == 0o644
    finally:
        os.umask(old)
    os.umask(0o077)
    try:
        run_cli("diagnose", str(NAN), "-q", "-o", "json:private.json", cwd=tmp_path)
        assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_github_annotations_are_relative_to_the_workspace(tmp_path):
    """A step with `working-directory: sub` still annotates the file by its path in the repository."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "train.log").write_bytes(NAN.read_bytes())
    sub = tmp_path / "sub"
    sub.mkdir()
    p = run_cli("diagnose", "../logs/train.log", "--format", "github", cwd=sub, env={"GITHUB_WORKSPACE": str(tmp_path)})
    first = p.stdout.decode().splitlines()[0]
    assert first.startswith("::warning file=logs/train.log,line=166,")
    # without the variable the path is relative to the working directory, and outside it there is no file=
    p = run_cli("diagnose", "../logs/train.log", "--format", "github", cwd=sub)
    assert "file=" not in p.stdout.decode().splitlines()[0]


def test_api_write_reports_from_one_report(tmp_path, capsys):
    from nanscope import api

    report = api.diagnose([str(NAN)])
    api.write_reports(report, [f"json:{tmp_path / 'r.json'}", f"gitlab:{tmp_path / 'gl.json'}", "markdown"])
    assert "nan-rank-local" in capsys.readouterr().out  # markdown on stdout
    assert json.loads((tmp_path / "r.json").read_text())["findings"][0]["id"] == "nan-rank-local"
    assert json.loads((tmp_path / "gl.json").read_text())[0]["severity"] == "major"
