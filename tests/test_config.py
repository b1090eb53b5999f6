"""Settings from a config file, NANSCOPE_* variables and flags (nanscope.config; `nanscope config`)."""

from __future__ import annotations

import json
import pytest

from conftest import ROOT, run_cli
from nanscope.config import ConfigError, describe, find_config_file, resolve

NAN = str(ROOT / "sample_logs/torch/ddp_nan_rank2.log")  # a MEDIUM nan-rank-local and a LOW nan-skip-recover


def test_pyproject_tool_table_is_found_walking_up(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.nanscope]\nfail-on = "high"\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    cfg = resolve({}, env={}, cwd=deep)
    assert cfg["fail-on"] == "high"
    assert cfg.source("fail-on") == "../../pyproject.toml:5"
    # from a subfolder the run obeys it: a MEDIUM finding no longer fails the job
    assert run_cli("diagnose", NAN, "-q", cwd=deep).returncode == 0
    assert run_cli("diagnose", NAN, "-q", cwd=ROOT).returncode == 1


def test_pyproject_without_the_table_is_passed_over_as_ruff_does(tmp_path):
    (tmp_path / "nanscope.toml").write_text('select = ["numerics"]\n')
    inner = tmp_path / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    assert find_config_file(inner) == (tmp_path / "nanscope.toml").resolve()
    assert resolve({}, env={}, cwd=inner)["select"] == ["numerics"]


def test_nanscope_toml_wins_over_pyproject_in_the_same_folder(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.nanscope]\nfail-on = "low"\n')
    (tmp_path / "nanscope.toml").write_text('fail-on = "critical"\n')
    assert resolve({}, env={}, cwd=tmp_path)["fail-on"] == "critical"


def test_precedence_flags_over_env_over_file_over_defaults(tmp_path):
    (tmp_path / "nanscope.toml").write_text('fail-on = "high"\nformat = "json"\njobs = 2\n')
    env = {"NANSCOPE_FAIL_ON": "low", "NANSCOPE_FORMAT": "markdown"}
    cfg = resolve({"fail-on": "critical"}, env=env, cwd=tmp_path)
    assert (cfg["fail-on"], cfg.source("fail-on")) == ("critical", "--fail-on")
    assert (cfg["format"], cfg.source("format")) == ("markdown", "NANSCOPE_FORMAT")
    assert (cfg["jobs"], cfg.source("jobs")) == (2, "nanscope.toml:3")
    assert (cfg["color"], cfg.source("color")) == ("auto", "default")


def test_env_and_flag_through_the_cli(tmp_path):
    (tmp_path / "nanscope.toml").write_text('fail-on = "never"\n')
    assert run_cli("diagnose", NAN, "-q", cwd=tmp_path).returncode == 0  # file
    assert run_cli("diagnose", NAN, "-q", cwd=tmp_path, env={"NANSCOPE_FAIL_ON": "low"}).returncode == 1  # env > file
    p = run_cli("diagnose", NAN, "-q", "--fail-on", "never", cwd=tmp_path, env={"NANSCOPE_FAIL_ON": "low"})
    assert p.returncode == 0  # flag > env


def test_paths_in_the_file_are_relative_to_the_file(tmp_path):
    (tmp_path / "nanscope.toml").write_text('signatures = ["ci/pack"]\nbaseline = "good.json"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    cfg = resolve({}, env={}, cwd=sub)
    assert cfg["signatures"] == [str(tmp_path / "ci" / "pack")]
    assert cfg["baseline"] == str(tmp_path / "good.json")


def test_unknown_key_names_file_and_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.nanscope]\nselect = ["numerics"]\nfail_on = "high"\n')
    with pytest.raises(ConfigError) as e:
        resolve({}, env={}, cwd=tmp_path)
    assert str(e.value).startswith(f"{tmp_path / 'pyproject.toml'}:6: unknown key 'fail_on'")
    assert "did you mean 'fail-on'" in str(e.value)
    p = run_cli("diagnose", NAN, cwd=tmp_path)
    assert p.returncode == 2
    assert "pyproject.toml:6: unknown key 'fail_on'" in p.stderr.decode()


def test_an_unknown_sub_table_names_its_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.nanscope]\nfail-on = "high"\n\n[tool.nanscope.lint]\nx = 1\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml:4: unknown key 'lint' in \[tool.nanscope\]"):
        resolve({}, env={}, cwd=tmp_path)
    (tmp_path / "nanscope.toml").write_text('select = ["numerics"]\n[rules]\n')
    with pytest.raises(ConfigError, match=r"nanscope.toml:2: unknown key 'rules'"):
        resolve({}, env={}, cwd=tmp_path)


def test_a_bad_value_names_file_and_line(tmp_path):
    (tmp_path / "nanscope.toml").write_text('\n# gate\nfail-on = "severe"\n')
    p = run_cli("config", cwd=tmp_path)
    assert p.returncode == 2
    assert "nanscope.toml:3: 'fail-on' takes one of info, low, medium, high, critical, never" in p.stderr.decode()


def test_a_bad_environment_value_names_the_variable(tmp_path):
    p = run_cli("config", cwd=tmp_path, env={"NANSCOPE_EXIT_ZERO": "perhaps"})
    assert p.returncode == 2
    assert "NANSCOPE_EXIT_ZERO" in p.stderr.decode()


def test_config_command_prints_each_setting_and_its_source(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.nanscope]\nfail-on = "high"\nselect = ["numerics", "memory"]\n')
    p = run_cli("config", cwd=tmp_path, env={"NANSCOPE_JOBS": "4"})
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert out.splitlines()[0] == "# config file: pyproject.toml [tool.nanscope]"
    lines = {ln.split("=")[0].strip(): ln for ln in out.splitlines()[1:]}
    assert '"high"' in lines["fail-on"] and lines["fail-on"].endswith("# pyproject.toml:2")
    assert '["numerics", "memory"]' in lines["select"] and "# pyproject.toml:3" in lines["select"]
    assert "4" in lines["jobs"] and "# NANSCOPE_JOBS" in lines["jobs"]
    assert "# default" in lines["format"]


def test_output_from_the_config_file_writes_the_artifact(tmp_path):
    (tmp_path / "nanscope.toml").write_text('output = ["json:nanscope.json"]\nexit-zero = true\n')
    p = run_cli("diagnose", NAN, cwd=tmp_path)
    assert p.returncode == 0
    assert b"nan-rank-local" in p.stdout  # the text report still on stdout
    assert json.loads((tmp_path / "nanscope.json").read_text())["findings"][0]["id"] == "nan-rank-local"


def test_no_config_file_says_so(tmp_path):
    cfg = resolve({}, env={}, cwd=tmp_path)
    assert cfg.file is None
    assert describe(cfg).startswith("# config file: none found")
    assert all(s.source == "default" for s in cfg.settings.values())
