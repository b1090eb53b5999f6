"""--format json: the shipped schema validates every report, and NaN survives strict parsers."""

from __future__ import annotations

import json
import shutil
import subprocess

import jsonschema
import pytest

from conftest import manifest_entries, run_cli
from nanscope.schema import report_schema

_ENTRIES = manifest_entries()


def _strict_loads(s: str):
    def no_constants(name):
        raise ValueError(f"bare {name} in JSON")

    return json.loads(s, parse_constant=no_constants)


@pytest.mark.parametrize("entry", _ENTRIES, ids=[e["path"] for e in _ENTRIES])
def test_every_sample_report_validates(entry):
    p = run_cli("diagnose", str(entry["abspath"]), "--format", "json", "--exit-zero")
    assert p.returncode == 0, p.stderr
    jsonschema.validate(_strict_loads(p.stdout.decode()), report_schema())


def test_nan_is_a_string_not_a_bare_constant():
    p = run_cli("diagnose", "sample_logs/torch/nan_persistent.log", "--format", "json")
    report = _strict_loads(p.stdout.decode())
    assert report["ranks"][0]["last_loss"] == "NaN"


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq not installed")
def test_nan_survives_jq():
    p = run_cli("diagnose", "sample_logs/torch/nan_persistent.log", "--format", "json")
    out = subprocess.run(["jq", "-r", ".ranks[0].last_loss"], input=p.stdout, capture_output=True, check=True)
    assert out.stdout.decode().strip() == "NaN"


def test_output_file_is_written_atomically(tmp_path):
    out = tmp_path / "report.json"
    p = run_cli("diagnose", "sample_logs/torch/ddp_nan_rank2.log", "--format", "json", "-o", str(out))
    assert p.returncode == 1
    assert p.stdout == b""
    report = json.loads(out.read_text())
    assert report["findings"][0]["id"] == "nan-rank-local"
    assert [x.name for x in tmp_path.iterdir()] == ["report.json"]


def test_schema_command_prints_the_shipped_schema():
    p = run_cli("schema")
    assert p.returncode == 0
    assert json.loads(p.stdout) == report_schema()
