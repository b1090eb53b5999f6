"""Bad input: every row of the reliability table that concerns what comes in.

Sizes are chosen for the 2-core CI machine; NANSCOPE_BIG=1 runs the large variants."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, run_cli

BIG = bool(os.environ.get("NANSCOPE_BIG"))
NAN_TAIL = b"step 900 | loss nan | grad_norm nan\nstep 901 | loss nan | grad_norm nan\nstep 902 | loss nan | grad_norm nan\n"
HEAD = b"".join(f"step {i} | loss {2.0 - i / 1000:.4f} | grad_norm 0.5\n".encode() for i in range(20))


def _diagnose_stdin(data: bytes, *args: str) -> tuple[int, dict, bytes]:
    p = run_cli("diagnose", "-", "--format", "json", *args, stdin=data)
    return p.returncode, json.loads(p.stdout), p.stderr


def _ids(report: dict) -> list[str]:
    return [f["id"] for f in report["findings"]]


# Peak RSS of the child's own address space (VmHWM). Not getrusage(): on Linux the ru_maxrss of a
# process started by fork/vfork + exec includes the parent's peak (here: pytest's).
_RSS_WRAPPER = (
    "import re, sys\n"
    "from nanscope.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "kb = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
    "sys.stderr.write('PEAK_RSS_KB=%d\\n' % kb)\n"
    "sys.exit(rc)\n"
)


def _child_rss_mb(args: list[str], data_writer) -> tuple[int, bytes, float]:
    """Run nanscope in a child that reports its own peak RSS; feed stdin from data_writer."""
    proc = subprocess.Popen([sys.executable, "-c", _RSS_WRAPPER, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    out = []
    t = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    t.start()
    data_writer(proc.stdin)
    proc.stdin.close()
    rc = proc.wait(timeout=600)
    t.join()
    err = proc.stderr.read().decode()
    kb = int(err.rsplit("PEAK_RSS_KB=", 1)[1].split()[0])
    return rc, out[0], kb / 1024


def test_nul_hole_does_not_hide_what_follows():
    hole = b"\x00" * ((64 if BIG else 8) << 20)
    rc, r, err = _diagnose_stdin(HEAD + hole + NAN_TAIL)
    assert rc == 1 and "nan-persistent" in _ids(r)
    d = [x for x in r["diagnostics"] if x["code"] == "NS-IO-BINARY-REGION"]
    assert d and "NUL" in d[0]["message"]
    assert r["inputs"][0]["nul_bytes"] == len(hole)


def test_very_long_line_is_capped_and_what_follows_is_parsed():
    """The line is capped as it is read: a 256 MiB line's peak is within a few MB of a 4 MiB
    line's (the same path, a line over the 1 MiB cap), measured on the same machine."""
    size = (1024 if BIG else 256) << 20

    def line(total):
        def write(stdin):
            block = b"x" * min(total, 8 << 20)
            stdin.write(HEAD)
            for _ in range(total // len(block)):
                stdin.write(block)
            stdin.write(b"\n" + NAN_TAIL)
        return write

    peaks = {}
    for total in (4 << 20, size):
        rc, out, peaks[total] = _child_rss_mb(["diagnose", "-", "--format", "json"], line(total))
        r = json.loads(out)
        assert rc == 1 and "nan-persistent" in _ids(r)
        assert r["inputs"][0]["long_lines"] == 1
        assert any(d["code"] == "NS-IO-LONG-LINE" for d in r["diagnostics"])
    assert peaks[size] - peaks[4 << 20] < 16, f"peak RSS {peaks[4 << 20]:.0f} MiB on a 4 MiB line, {peaks[size]:.0f} on {size >> 20} MiB"


def test_tqdm_carriage_returns_in_one_huge_line():
    bar = b"".join(f"\r 40%|####      | {i}/50000 [00:02<00:03, 9.10it/s, loss=0.41]".encode() for i in range(50000))
    data = bar + b"\rstep 7 | loss nan | grad_norm nan\rstep 8 | loss nan | grad_norm nan\rstep 9 | loss nan | grad_norm nan\r\n"
    assert len(data) > 3 << 20
    rc, r, _ = _diagnose_stdin(data)
    assert "nan-persistent" in _ids(r)
    f = next(f for f in r["findings"] if f["id"] == "nan-persistent")
    assert f["first_step"] == 7 and f["evidence"][0]["line"] == 1


def test_crlf_is_one_line_break():
    data = HEAD.replace(b"\n", b"\r\n") + NAN_TAIL.replace(b"\n", b"\r\n")
    rc, r, _ = _diagnose_stdin(data)
    f = next(f for f in r["findings"] if f["id"] == "nan-persistent")
    assert f["evidence"][0]["line"] == 21
    assert r["inputs"][0]["lines"] == 23


def test_ansi_colour_is_stripped_before_matching():
    data = HEAD + b"".join(f"\x1b[31mstep {i} | loss nan | grad_norm nan\x1b[0m\n".encode() for i in range(900, 903))
    rc, r, _ = _diagnose_stdin(data)
    f = next(f for f in r["findings"] if f["id"] == "nan-persistent")
    assert f["evidence"][0]["text"] == "step 900 | loss nan | grad_norm nan"


def test_truncated_gzip_keeps_the_prefix_and_says_where_it_ended(tmp_path):
    lines = HEAD + NAN_TAIL + b"".join(f"step {i} | loss 1.0 | grad_norm 0.5\n".encode() for i in range(1000, 60000))
    gz = gzip.compress(lines)
    f = tmp_path / "train.log.gz"
    f.write_bytes(gz[: len(gz) // 2])
    p = run_cli("diagnose", str(f), "--format", "json")
    r = json.loads(p.stdout)
    assert p.returncode == 1 and "nan-persistent" in _ids(r)
    assert r["inputs"][0]["complete"] is False
    d = next(x for x in r["diagnostics"] if x["code"] == "NS-IO-INCOMPLETE")
    assert "after line" in d["message"]
    assert b"Traceback" not in p.stderr


def test_truncated_zstd_is_detected(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    lines = HEAD + NAN_TAIL + b"".join(f"step {i} | loss 1.0 | grad_norm 0.5\n".encode() for i in range(1000, 60000))
    z = zstandard.ZstdCompressor().compress(lines)
    f = tmp_path / "train.log.zst"
    f.write_bytes(z[: len(z) // 2])
    r = json.loads(run_cli("diagnose", str(f), "--format", "json").stdout)
    assert "nan-persistent" in _ids(r)
    assert r["inputs"][0]["complete"] is False
    assert any(x["code"] == "NS-IO-INCOMPLETE" for x in r["diagnostics"])


def test_multi_member_gzip_and_trailing_padding(tmp_path):
    a, b = gzip.compress(HEAD), gzip.compress(NAN_TAIL)
    p = run_cli("diagnose", "-", "--format", "json", stdin=a + b)
    r = json.loads(p.stdout)
    assert "nan-persistent" in _ids(r) and r["inputs"][0]["complete"] is True
    f = tmp_path / "padded.log.gz"
    f.write_bytes(a + b + b"\x00" * 4096)
    r2 = json.loads(run_cli("diagnose", str(f), "--format", "json").stdout)
    assert "nan-persistent" in _ids(r2)


def test_file_truncated_while_read_is_reported(tmp_path):
    """A log rotated or truncated under the reader: what was read is diagnosed, and the report
    says the file shrank (the truncation happens after the first chunk, deterministically)."""
    from nanscope import api
    from nanscope.report import json as json_report

    f = tmp_path / "live.log"
    body = HEAD + b"".join(f"step {i} | loss 1.0 | grad_norm 0.5 | {'x' * 200}\n".encode() for i in range(100, 60000))
    f.write_bytes(body)
    chunks = []

    def truncate_after_first_chunk(nbytes: int, nlines: int) -> None:
        chunks.append(nbytes)
        if len(chunks) == 1:
            with open(f, "r+b") as fh:
                fh.truncate(len(body) // 2)

    report = api.diagnose([str(f)], api.Options(progress=truncate_after_first_chunk))
    r = json.loads(json_report.dumps(report))
    assert r["inputs"][0]["size"] == len(body)
    assert r["inputs"][0]["lines"] < body.count(b"\n")
    changed = [d for d in r["diagnostics"] if d["code"] == "NS-IO-CHANGED"]
    assert changed and "shrank" in changed[0]["message"]


def test_binary_garbage_never_crashes():
    import random

    rng = random.Random(7)
    garbage = bytes(rng.getrandbits(8) for _ in range(1 << 20))
    rc, r, err = _diagnose_stdin(garbage + HEAD + NAN_TAIL)
    assert rc == 1 and "nan-persistent" in _ids(r)
    assert b"Traceback" not in err


def test_ctrl_c_exits_130_and_leaves_no_half_written_output(tmp_path):
    out = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "nanscope", "diagnose", "-", "--format", "json", "-o", str(out)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdin.write(HEAD * 1000)
    proc.stdin.flush()
    time.sleep(1.0)
    import signal

    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=60)
    err = proc.stderr.read()
    assert rc in (130, -2), err
    assert b"Traceback" not in err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_many_small_rank_files_with_few_file_descriptors(tmp_path):
    n = 5000 if BIG else 600
    d = tmp_path / "ranks"
    d.mkdir()
    for r in range(n):
        body = b"".join(f"step {i} | loss {2.0 - i / 100:.3f} | grad_norm 0.5\n".encode() for i in range(5))
        if r == 137:
            body += b"step 5 | loss nan | grad_norm 0.5\n"
        else:
            body += b"step 5 | loss 1.95 | grad_norm 0.5\n"
        (d / f"rank_{r}.log.gz").write_bytes(gzip.compress(body))
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    p = subprocess.run([sys.executable, "-m", "nanscope", "diagnose", str(d), "--format", "json"],
                       capture_output=True, cwd=ROOT, preexec_fn=limit, timeout=600)
    r = json.loads(p.stdout)
    top = next(f for f in r["findings"] if f["id"] == "nan-rank-local")
    assert (top["initiating_rank"], top["first_step"]) == (137, 5)
    assert len(r["inputs"]) == n
