"""The command line as a user meets it: exit codes, stdin, and clear errors on bad input."""

from __future__ import annotations

import gzip
import json

from conftest import ROOT, run_cli

NAN_LOG = "sample_logs/torch/ddp_nan_rank2.log"


def _json(p) -> dict:
    return json.loads(p.stdout.decode())


def test_torchrun_nan_names_rank_2_step_40():
    p = run_cli("diagnose", NAN_LOG, "--format", "json")
    assert p.returncode == 1
    r = _json(p)
    top = r["findings"][0]
    assert (top["id"], top["initiating_rank"], top["first_step"]) == ("nan-rank-local", 2, 40)
    assert top["collateral_ranks"] == [0, 1, 3]
    assert top["evidence"][0]["text"].startswith("[default2]:step=40, loss=nan")
    skip = next(f for f in r["findings"] if f["id"] == "nan-skip-recover")
    assert (skip["initiating_rank"], skip["first_step"]) == (2, 40)


def test_text_report_leads_with_verdict_rank_and_evidence():
    p = run_cli("diagnose", NAN_LOG, "--color", "never")
    out = p.stdout.decode()
    assert out.startswith("nanscope: ACTIONABLE")
    assert "initiating rank 2" in out
    assert f"{NAN_LOG}:166  [default2]:step=40, loss=nan" in out
    assert "\x1b" not in out


def test_stdin_gives_the_same_answer_as_the_file():
    data = (ROOT / NAN_LOG).read_bytes()
    a = _json(run_cli("diagnose", NAN_LOG, "--format", "json"))
    b = _json(run_cli("diagnose", "-", "--format", "json", stdin=data))
    strip = lambda r: [(f["id"], f["initiating_rank"], f["first_step"], f["ranks"]) for f in r["findings"]]
    assert strip(a) == strip(b)
    c = _json(run_cli("diagnose", "--format", "json", stdin=gzip.compress(data)))
    assert strip(a) == strip(c)


def test_healthy_log_exits_0_and_is_clean():
    p = run_cli("diagnose", "sample_logs/torch/ddp_healthy.log", "--format", "json")
    assert p.returncode == 0
    assert _json(p)["verdict"] == "clean"


def test_fail_on_threshold_and_exit_zero():
    assert run_cli("diagnose", NAN_LOG, "--fail-on", "high").returncode == 0
    assert run_cli("diagnose", NAN_LOG, "--fail-on", "low").returncode == 1
    assert run_cli("diagnose", NAN_LOG, "--exit-zero").returncode == 0
    assert run_cli("diagnose", "sample_logs/torch/nan_persistent.log", "--fail-on", "high").returncode == 1


def test_select_and_ignore():
    r = _json(run_cli("diagnose", NAN_LOG, "--format", "json", "--ignore", "nan-rank-local"))
    ids = [f["id"] for f in r["findings"]]
    assert "nan-rank-local" not in ids and "nan-skip-recover" in ids
    r = _json(run_cli("diagnose", NAN_LOG, "--format", "json", "--select", "nan-rank-local"))
    assert [f["id"] for f in r["findings"]] == ["nan-rank-local"]
    p = run_cli("diagnose", NAN_LOG, "--select", "no-such-signature")
    assert p.returncode == 2 and b"no-such-signature" in p.stderr


def test_missing_file_is_one_clear_line_and_exit_2():
    p = run_cli("diagnose", "does/not/exist.log")
    assert p.returncode == 2
    err = p.stderr.decode()
    assert "does/not/exist.log" in err and "no such file" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_usage_error_exits_2():
    p = run_cli("diagnose", NAN_LOG, "--format", "yaml")
    assert p.returncode == 2
    assert b"Traceback" not in p.stderr


def test_binary_file_does_not_crash(tmp_path):
    f = tmp_path / "core.bin"
    f.write_bytes(bytes(range(256)) * 4000 + b"\nstep 5 | loss nan | grad_norm nan\n" + b"\x00" * 5000)
    p = run_cli("diagnose", str(f), "--format", "json")
    assert p.returncode in (0, 1)
    r = _json(p)
    assert r["inputs"][0]["nul_bytes"] > 0
    assert any(d["code"] == "NS-IO-BINARY-REGION" for d in r["diagnostics"])


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    f = tmp_path / "bad.log"
    lines = [f"step {i} | loss {2.0 - i / 100:.4f} | grad_norm 0.5".encode() for i in range(10)]
    lines[3] = b"\xff\xfe " + lines[3]
    lines += [b"step 10 | loss nan | grad_norm nan", b"step 11 | loss nan | grad_norm nan",
              b"step 12 | loss nan | grad_norm nan"]
    f.write_bytes(b"\n".join(lines) + b"\n")
    p = run_cli("diagnose", str(f), "--format", "json")
    r = _json(p)
    assert r["inputs"][0]["replaced_bytes"] == 2
    assert [x["id"] for x in r["findings"]] == ["nan-persistent"]
    assert p.returncode == 1


def test_empty_input_is_clean():
    p = run_cli("diagnose", "-", "--format", "json", stdin=b"")
    assert p.returncode == 0
    r = _json(p)
    assert r["verdict"] == "clean" and r["inputs"][0]["lines"] == 0


def test_unreadable_file_among_good_ones_is_reported_and_the_rest_diagnosed(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank_0.log").write_bytes((ROOT / "sample_logs/torch/nan_persistent.log").read_bytes())
    bad = d / "rank_1.log"
    bad.write_text("x")
    bad.chmod(0)
    try:
        p = run_cli("diagnose", str(d), "--format", "json")
    finally:
        bad.chmod(0o644)
    r = _json(p)
    assert "nan-persistent" in [f["id"] for f in r["findings"]]
    import os

    if os.geteuid() != 0:  # root can read anything
        assert any(x["code"] == "NS-IO-UNREADABLE" for x in r["diagnostics"])


def test_internal_error_exits_2_not_1(tmp_path):
    # A parser that raises must not look like "findings" (exit 1).
    script = tmp_path / "boom.py"
    script.write_text(
        "import sys\n"
        "import nanscope.parsers.pytorch as p\n"
        "def boom(*a, **k): raise RuntimeError('boom')\n"
        "p.PARSER.parse = boom\n"
        "from nanscope.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(script), "diagnose", NAN_LOG], capture_output=True, cwd=ROOT)
    assert out.returncode == 2
    err = out.stderr.decode()
    assert "internal error" in err and "--debug" in err and "Traceback" not in err


def test_explain_and_signature_commands():
    p = run_cli("explain", "nan-skip-recover")
    assert p.returncode == 0 and b"Verify the fix" in p.stdout
    assert run_cli("explain", "no-such-id").returncode == 2
    lst = run_cli("signatures", "list").stdout.decode()
    assert "nan-rank-local" in lst
    assert run_cli("signatures", "lint").returncode == 0
    t = run_cli("signatures", "test")
    assert t.returncode == 0 and b" 0 failed" in t.stdout


def test_broken_pipe_exits_quietly():
    import subprocess
    import sys

    big = (ROOT / NAN_LOG).read_bytes() * 50
    proc = subprocess.Popen([sys.executable, "-m", "nanscope", "events", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdin.write(big)
    proc.stdin.close()
    proc.stdout.readline()
    proc.stdout.close()
    rc = proc.wait(timeout=120)
    err = proc.stderr.read().decode()
    assert rc == 0, err
    assert "Traceback" not in err
