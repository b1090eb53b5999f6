"""What users of other CLIs expect: -h, shell completion, a word when stdin is a terminal, examples."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import pytest

from conftest import ROOT, run_cli

COMMANDS = [["diagnose"], ["events"], ["eval"], ["explain"], ["formats"], ["schema"], ["config"],
            ["signatures"], ["signatures", "list"], ["signatures", "show"], ["signatures", "test"], ["signatures", "lint"]]


@pytest.mark.parametrize("cmd", [[]] + COMMANDS, ids=lambda c: " ".join(c) or "nanscope")
def test_dash_h_is_help_with_examples(cmd):
    p = run_cli(*cmd, "-h")
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert out.startswith("Usage: nanscope")
    assert "Example" in out
    example_lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("nanscope ")
                     or ("nanscope " in ln and "|" in ln)]
    assert example_lines, out
    if cmd and cmd != ["signatures"]:
        assert any(" ".join(["nanscope", *cmd]) in ln for ln in example_lines), example_lines


def test_completion_script_and_completing_a_command(tmp_path):
    p = run_cli("--show-completion", "bash")
    assert p.returncode == 0 and b"_NANSCOPE_COMPLETE=complete_bash" in p.stdout
    done = run_cli(env={"_NANSCOPE_COMPLETE": "complete_bash", "COMP_WORDS": "nanscope diagnose --fail", "COMP_CWORD": "2"})
    assert done.stdout.decode().split() == ["--fail-on"]
    inst = run_cli("--install-completion", "bash", env={"HOME": str(tmp_path), "SHELL": "/bin/bash"})
    assert inst.returncode == 0, inst.stderr
    assert "nanscope" in (tmp_path / ".bashrc").read_text()


def _run_on_a_terminal(args: list[str], typed: bytes) -> tuple[int, str, bytes]:
    """Run nanscope with a pseudo-terminal as stdin; type `typed` once it has said something."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NANSCOPE_")}
    p = subprocess.Popen([sys.executable, "-m", "nanscope", *args], stdin=slave, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=ROOT, env=env)
    os.close(slave)
    err = b""
    deadline = time.monotonic() + 60
    while b"waiting" not in err and time.monotonic() < deadline:
        ready, _, _ = select.select([p.stderr], [], [], 1.0)
        if ready:
            chunk = os.read(p.stderr.fileno(), 4096)
            if not chunk:
                break
            err += chunk
    os.write(master, typed)
    out, rest = p.communicate(timeout=120)
    os.close(master)
    return p.returncode, (err + rest).decode(), out


def test_diagnose_on_a_terminal_says_it_is_waiting_for_a_log():
    line = (ROOT / "sample_logs/torch/ddp_nan_rank2.log").read_bytes().splitlines()[0]
    code, err, out = _run_on_a_terminal(["diagnose"], line + b"\n\x04")  # one pasted line, then Ctrl-D
    assert "nanscope: waiting for a log on stdin" in err
    assert "Ctrl-D" in err
    assert b"nanscope: " in out  # the report of what was typed, on stdout (never mixed with the note)
    assert b"waiting" not in out
    assert code in (0, 1)


def test_a_pipe_gets_no_note():
    p = run_cli("diagnose", stdin=(ROOT / "sample_logs/torch/healthy.log").read_bytes())
    assert p.returncode == 0
    assert p.stderr == b""
