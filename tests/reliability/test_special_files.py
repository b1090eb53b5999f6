"""Files that are not files, and signals (issue 20, item 5): a FIFO inside a folder is skipped with
a diagnostic instead of waiting forever for a writer; SIGTERM, like SIGINT, leaves no
`.nanscope-*.tmp` file or folder behind and exits 143."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT

NAN_RANK = b"".join(f"step {i} | loss {2.0 - i / 100:.3f} | grad_norm 0.5\n".encode() for i in range(10)) + \
    b"step 10 | loss nan | grad_norm nan\nstep 11 | loss nan | grad_norm nan\nstep 12 | loss nan | grad_norm nan\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_inside_a_folder_is_skipped_not_waited_for(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank_0.log").write_bytes(NAN_RANK)
    os.mkfifo(d / "rank_1.log")  # nobody ever writes to it
    # the timeout only guards against the hang this test is about; nothing here is timed
    p = subprocess.run([sys.executable, "-m", "nanscope", "diagnose", str(d), "--format", "json"],
                       capture_output=True, cwd=ROOT, timeout=120)
    r = json.loads(p.stdout)
    assert p.returncode == 1 and "nan-persistent" in [f["id"] for f in r["findings"]]
    skipped = [x for x in r["diagnostics"] if x["code"] == "NS-IO-SKIPPED"]
    assert skipped and skipped[0]["source"].endswith("rank_1.log") and "FIFO" in skipped[0]["message"]
    assert [i["path"] for i in r["inputs"]] == [str(d / "rank_0.log")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_folder_of_only_fifos_is_an_input_error(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    os.mkfifo(d / "rank_0.log")
    p = subprocess.run([sys.executable, "-m", "nanscope", "diagnose", str(d)], capture_output=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and b"no regular files" in p.stderr


def _wait_for(pred, what: str, limit: float = 120.0) -> None:
    end = time.monotonic() + limit
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"never saw {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("args", [["events", "-", "-o", "OUT/events.parquet"],
                                  ["events", "-", "-o", "OUT/ds", "--partition-by", "rank"]])
def test_sigterm_leaves_no_temporary_file(tmp_path, args):
    out = tmp_path / "out"
    out.mkdir()
    argv = [a.replace("OUT", str(out)) for a in args]
    proc = subprocess.Popen([sys.executable, "-m", "nanscope", *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdin.write(NAN_RANK * 200)
    proc.stdin.flush()
    # the export has started (its temporary file or folder exists) and waits for more stdin
    _wait_for(lambda: any(p.name.startswith(".nanscope-") for p in out.iterdir()), "the temporary output")
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    err = proc.stderr.read()
    assert rc == 143, err
    assert b"Traceback" not in err
    assert list(out.iterdir()) == []
