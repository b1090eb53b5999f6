"""Issue 20, item 10: the smaller failures. Invalid UTF-8 is counted on every line, not only on
those a parser reads; a --baseline that is not UTF-8 is named as the bad input; `--format jsonl |
head -1` stops reading once head has gone. (The NUL-hole memory and time are in test_input.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from conftest import ROOT, SAMPLES, run_cli

L = SAMPLES / "torch" / "ddp_nan_rank2.log"


def test_invalid_utf8_on_lines_no_parser_reads_is_counted():
    data = b"step 1 | loss 2.0 | grad_norm 0.5\nhello \xff\xfe world, nothing to parse here\nbye \xc3\n"
    p = run_cli("diagnose", "-", "--format", "json", stdin=data)
    r = json.loads(p.stdout)
    assert r["inputs"][0]["replaced_bytes"] == 3
    d = next(x for x in r["diagnostics"] if x["code"] == "NS-IO-INVALID-UTF8")
    assert d["message"].startswith("3 invalid UTF-8")


def test_baseline_that_is_not_utf8_names_the_file(tmp_path):
    bad = tmp_path / "good-run.json"
    bad.write_bytes(b'{"schema_version": "1.0", "findings": ["\xff"]}')
    p = run_cli("diagnose", str(L), "--baseline", str(bad))
    assert p.returncode == 2
    assert b"internal error" not in p.stderr
    assert str(bad).encode() in p.stderr and b"UTF-8" in p.stderr


def test_jsonl_begin_comes_first_and_a_closed_stdout_stops_the_reading():
    proc = subprocess.Popen([sys.executable, "-m", "nanscope", "diagnose", "-", "--format", "jsonl"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    block = b"".join(f"step {i} | loss 2.0 | grad_norm 0.5\n".encode() for i in range(20000))
    fed = [0]

    def feed() -> None:  # an endless log: only nanscope stopping ends this
        try:
            while True:
                proc.stdin.write(block)
                fed[0] += len(block)
        except (BrokenPipeError, ValueError, OSError):
            pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    first = json.loads(proc.stdout.readline())  # before the input ends (it never does)
    assert first["type"] == "begin" and first["v"] == 2
    assert first["data"]["inputs"] == [{"path": "<stdin>", "size": None}]
    proc.stdout.close()  # what `| head -1` does
    rc = proc.wait(timeout=120)  # a guard against the old behaviour (reading forever), not a timing
    assert rc == 0, proc.stderr.read()
    assert b"Traceback" not in proc.stderr.read()


def test_jsonl_to_a_file_has_the_same_messages(tmp_path):
    out = tmp_path / "r.jsonl"
    run_cli("diagnose", str(L), "--format", "jsonl", "-o", str(out))
    piped = run_cli("diagnose", str(L), "--format", "jsonl").stdout.decode().splitlines()
    filed = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["type"] for x in filed] == [json.loads(x)["type"] for x in piped]
    assert json.loads(filed[0]) == json.loads(piped[0])
    summary = next(json.loads(x) for x in filed if json.loads(x)["type"] == "summary")
    assert summary["data"]["inputs"][0]["lines"] == L.read_bytes().count(b"\n")


def test_nul_hole_is_cheap_in_memory():
    """A NUL hole costs no memory in proportion to its size: a 16 MiB hole's peak is within a few
    MB of a 1 MiB hole's (the same path: a region of NULs, Arrow's UTF-8 check, the NUL runs
    collapsed). Measured against that baseline on the same machine, as an absolute figure depends
    on the interpreter, the libraries' builds and the kernel's page handling."""
    from reliability.test_input import HEAD, NAN_TAIL, _child_rss_mb

    def hole(mib):
        def write(stdin):
            stdin.write(HEAD)
            block = b"\x00" * (1 << 20)
            for _ in range(mib):
                stdin.write(block)
            stdin.write(NAN_TAIL)
        return write

    peaks = {}
    for mib in (1, 16):
        rc, out, peaks[mib] = _child_rss_mb(["diagnose", "-", "--format", "json"], hole(mib))
        r = json.loads(out)
        assert rc == 1 and "nan-persistent" in [f["id"] for f in r["findings"]]
        assert r["inputs"][0]["nul_bytes"] == mib << 20
    assert peaks[16] - peaks[1] < 12, f"peak RSS {peaks[1]:.0f} MB with a 1 MiB hole, {peaks[16]:.0f} MB with 16 MiB"


def test_invalid_utf8_in_a_big_region_is_counted_as_in_a_small_one():
    """A region of 256 KB or more is checked by Arrow's UTF-8 validation first; one bad byte in
    it, a character cut at the end of a capped line, or none, the count is the strict decoder's."""
    from nanscope.ingest.reader import SMALL_REGION, invalid_utf8

    body = b"step 1 | loss 2.0 | grad_norm 0.5 caf\xc3\xa9\n" * (SMALL_REGION // 40 + 1)
    assert len(body) >= SMALL_REGION
    assert invalid_utf8(body) == 0
    assert invalid_utf8(body + b"bye \xff\xfe\n" + body) == 2
    assert invalid_utf8(body + b"caf\xc3", final=False) == 0  # (the cut may split a character)
    assert invalid_utf8(body + b"caf\xc3", final=True) == 1


def test_a_loss_scale_halved_to_a_subnormal_number_is_one_drop_not_a_crash(tmp_path):
    """A scale printed as 1e-320 (hostile or a broken scaler): prev / new overflows to inf; the
    scale machines count one halving and the diagnosis goes on (an OverflowError before)."""
    line = "[2024-07-10 15:50:45,798] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {}, reducing to {}"
    log = tmp_path / "scale.log"
    log.write_text("\n".join([line.format(65536, 32768), line.format(32768, "1.012e-320"), line.format("1.012e-320", "5e-324")]) + "\n")
    p = run_cli("diagnose", "--format", "json", str(log))
    assert p.returncode in (0, 1), p.stderr.decode()
    report = json.loads(p.stdout)
    assert b"Traceback" not in p.stderr and report["inputs"][0]["complete"] is True
    assert {f["id"] for f in report["findings"]} & {"loss-scale-collapse", "loss-scale-warmup", "updates-skipped"}
