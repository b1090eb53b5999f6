"""Nothing lost: a real multi-rank log with each kind of damage inserted in the middle gives the
same findings as the clean log, plus a diagnostic that names the damage and where it is."""

from __future__ import annotations

import json

from conftest import ROOT, run_cli

SAMPLE = ROOT / "sample_logs/torch/ddp_nan_rank2.log"


def _findings(report: dict) -> list:
    return [(f["id"], f["initiating_rank"], f["first_step"], f["ranks"]) for f in report["findings"]]


def test_damage_in_the_middle_loses_nothing(tmp_path):
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    mid = len(lines) // 3
    damage = [
        b"\x00" * (8 << 20),                      # a NUL hole (preallocated file of a crashed node)
        bytes(range(256)) * 64 + b"\n",           # binary garbage
        b"y" * (50 << 20) + b"\n",                # a 50 MB line
        b"[default1]:step 7 | loss \xff\xfe\xc3(\xe2\x82 | garbled\n",  # invalid UTF-8 in a line nanscope reads
    ]
    damaged = b"".join(lines[:mid]) + b"".join(damage) + b"".join(lines[mid:])
    bad = tmp_path / "damaged.log"
    bad.write_bytes(damaged)
    clean = json.loads(run_cli("diagnose", str(SAMPLE), "--format", "json").stdout)
    p = run_cli("diagnose", str(bad), "--format", "json")
    got = json.loads(p.stdout)
    assert p.returncode == 1
    assert _findings(got) == _findings(clean)
    codes = {d["code"]: d for d in got["diagnostics"]}
    assert {"NS-IO-BINARY-REGION", "NS-IO-LONG-LINE", "NS-IO-INVALID-UTF8"} <= set(codes)
    assert codes["NS-IO-BINARY-REGION"]["line"] == mid + 1
    assert f"offset {sum(len(x) for x in lines[:mid])}" in codes["NS-IO-BINARY-REGION"]["message"]
    assert codes["NS-IO-LONG-LINE"]["line"] is not None
    assert all(d["source"] == str(bad) for d in got["diagnostics"])
