"""Shared helpers: run the CLI as a user would, diagnose text, find sample logs and their truth."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"


def run_cli(*args: str, stdin: bytes | None = None, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.pop("NANSCOPE_DEBUG", None)
    for k in list(e):  # a developer's own settings (nanscope.config) must not change what the tests see
        if k.startswith("NANSCOPE_") and k not in ("NANSCOPE_UPDATE_GOLDEN", "NANSCOPE_FUZZ_EXAMPLES"):
            e.pop(k)
    for k in ("GITHUB_WORKSPACE", "GITHUB_STEP_SUMMARY", "CI_PROJECT_DIR"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "nanscope", *args], input=stdin, capture_output=True, env=e, cwd=cwd or ROOT, timeout=300,
    )


def manifest_entries() -> list[dict]:
    """Every [[log]] of every sample_logs/*/MANIFEST.toml (paths are relative to the manifest's
    folder), with the path made absolute and `path` shown as folder/file. The public corpus is
    scored as a whole by tests/test_eval.py, not held to exact reports one by one."""
    out = []
    for m in sorted(SAMPLES.glob("*/MANIFEST.toml")):
        if m.parent.name == "public":
            continue
        data = tomllib.loads(m.read_text(encoding="utf-8"))
        for entry in data.get("log", []):
            entry = dict(entry)
            entry["abspath"] = m.parent / entry["path"]
            entry["path"] = f"{m.parent.name}/{entry['path']}"
            out.append(entry)
    return out


def ids(report) -> list[str]:
    """The top-level findings' ids, in the report's order (the first is what a user reads first)."""
    return [f.id for f in report.findings]


def diagnose_lines(tmp_path: Path, lines: list[str], name: str = "job.log"):
    """The report on `lines` written as one log file (each test cites the thread they come from)."""
    from nanscope import api

    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return api.diagnose([str(p)])


def cli_report(tmp_path: Path, text: str, name: str = "job.log") -> dict:
    """The JSON report of `nanscope diagnose` run as a user runs it, on `text` written as one log file."""
    import json

    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    r = run_cli("diagnose", str(p), "--format", "json", "--exit-zero")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def all_ids(report) -> set[str]:
    """The findings a user sees at the top level (grouped collateral and superseded matches are
    part of their root finding, and are checked by tests/test_attribution.py)."""
    return {f.id for f in report.findings}


@pytest.fixture(scope="session")
def signatures():
    from nanscope.signatures.loader import load

    sigs, errors = load()
    assert not errors, "\n".join(str(e) for e in errors)
    return sigs
