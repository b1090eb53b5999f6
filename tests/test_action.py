"""The GitHub Action (action.yml): its steps' scripts run here as the runner would run them.

The runner runs a composite step's `run:` with `bash --noprofile --norc -eo pipefail FILE`, after
substituting `${{ ... }}` expressions; it sets GITHUB_ACTION_PATH (the action's checkout at its
ref), RUNNER_TEMP, GITHUB_WORKSPACE, GITHUB_STEP_SUMMARY and GITHUB_OUTPUT. The install step's
Python is a stand-in that records the pip command (no network, no wheel build here) and makes a
`nanscope` that runs this checkout; every other command runs for real.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import ROOT

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
NAN = ROOT / "sample_logs/torch/ddp_nan_rank2.log"

STAND_IN = f"""#!{sys.executable}
import os, sys
from pathlib import Path
args = sys.argv[1:]
if args[:2] == ["-m", "venv"]:
    venv = Path(args[2]) / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text(open(__file__).read())
    (venv / "python").chmod(0o755)
    (venv / "nanscope").write_text("#!/bin/sh\\nPYTHONPATH={ROOT} exec {sys.executable} -m nanscope \\"$@\\"\\n")
    (venv / "nanscope").chmod(0o755)
elif args[:3] == ["-m", "pip", "install"]:
    with open(os.environ["PIP_LOG"], "a") as f:
        f.write(" ".join(args) + "\\n")
else:
    sys.exit("unexpected: " + " ".join(args))
"""


def _expand(text: str, inputs: dict, steps: dict) -> str:
    def value(m: re.Match) -> str:
        expr = m.group(1).strip()
        if expr.startswith("inputs."):
            return str(inputs[expr[len("inputs."):]])
        if expr == "github.action_path":
            return str(ROOT)
        raise AssertionError(f"expression the test does not know: {expr}")
    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def run_action(tmp_path: Path, given: dict) -> tuple[list[subprocess.CompletedProcess], dict]:
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    missing = [n for n, spec in ACTION["inputs"].items() if spec.get("required") and n not in given]
    assert not missing, missing
    inputs.update(given)
    ws = tmp_path / "workspace"
    temp = tmp_path / "runner_temp"
    temp.mkdir()
    summary, output = tmp_path / "step_summary.md", tmp_path / "github_output"
    summary.touch()
    output.touch()
    stand_in = tmp_path / "python-stand-in"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    inputs.setdefault("python", str(stand_in))
    if inputs["python"] == "python3":
        inputs["python"] = str(stand_in)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NANSCOPE_", "GITHUB_"))}
    base.update(GITHUB_ACTION_PATH=str(ROOT), RUNNER_TEMP=str(temp), GITHUB_WORKSPACE=str(ws),
                GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(output), GITHUB_ACTIONS="true",
                PIP_LOG=str(tmp_path / "pip.log"))
    results = []
    for i, step in enumerate(ACTION["runs"]["steps"]):
        assert step.get("shell") == "bash", "composite run steps need a shell"
        env = dict(base)
        env.update({k: _expand(str(v), inputs, {}) for k, v in (step.get("env") or {}).items()})
        script = tmp_path / f"step{i}.sh"
        script.write_text(_expand(step["run"], inputs, {}))
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=ws, env=env,
                           capture_output=True, timeout=300)
        results.append(p)
        if p.returncode != 0:
            break
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return results, {"summary": summary.read_text(), "outputs": outputs, "workspace": ws,
                     "pip": (tmp_path / "pip.log").read_text() if (tmp_path / "pip.log").exists() else ""}


def _workspace(tmp_path: Path, log: Path) -> Path:
    ws = tmp_path / "workspace"
    (ws / "logs").mkdir(parents=True)
    (ws / "logs" / "train.log").write_bytes(log.read_bytes())
    return ws


def test_action_diagnoses_writes_summary_annotations_and_sarif(tmp_path):
    _workspace(tmp_path, NAN)
    steps, got = run_action(tmp_path, {"paths": "logs/", "sarif": "nanscope.sarif"})
    install, diagnose = steps
    assert install.returncode == 0, install.stderr
    assert got["pip"].split()[-1] == str(ROOT)  # installed from the action's own checkout (its ref)
    assert install.stdout.decode().startswith("nanscope ")
    assert diagnose.returncode == 1  # a MEDIUM finding and fail-on medium: the step fails
    out = diagnose.stdout.decode()
    assert out.startswith("::warning file=logs/train.log,line=166,title=nanscope nan-rank-local")
    assert "::stop-commands::" in out
    assert "nan-rank-local" in got["summary"] and got["summary"].lstrip().startswith(("#", "<", "**", ">"))
    sarif = json.loads((got["workspace"] / "nanscope.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "logs/train.log"
    assert json.loads((got["workspace"] / "nanscope.json").read_text())["verdict"] == "actionable"
    assert got["outputs"]["status"] == "1"


def test_action_fail_on_and_inputs(tmp_path):
    _workspace(tmp_path, NAN)
    steps, got = run_action(tmp_path, {"paths": "logs/train.log", "fail-on": "high", "formats": "junit:j.xml gitlab:gl.json",
                                       "annotations": "false", "summary": "false"})
    diagnose = steps[1]
    assert diagnose.returncode == 0, diagnose.stderr
    assert got["outputs"]["status"] == "0"
    assert diagnose.stdout.decode().startswith("nanscope: ACTIONABLE")  # the text report in the log
    assert got["summary"] == ""
    assert (got["workspace"] / "j.xml").exists() and (got["workspace"] / "gl.json").exists()
    assert not (got["workspace"] / "nanscope.json").exists()


def test_action_passes_extra_args(tmp_path):
    _workspace(tmp_path, NAN)
    steps, got = run_action(tmp_path, {"paths": "logs/", "args": "--ignore numerics", "annotations": "false"})
    assert steps[1].returncode == 0
    assert "CLEAN" in steps[1].stdout.decode()


def test_action_metadata():
    assert ACTION["runs"]["using"] == "composite"
    assert {"paths", "fail-on", "formats", "summary", "sarif"} <= set(ACTION["inputs"])
    assert ACTION["outputs"]["status"]["value"] == "${{ steps.diagnose.outputs.status }}"
    doc = (ROOT / "docs/ci.md").read_text()
    assert "uses: nanscope/nanscope@" in doc
