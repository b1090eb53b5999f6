"""Damaged, unreadable and oddly encoded input (issue 20, items 3 and 4): the readable part is
diagnosed, the damage is reported, and an input not read in full never gives the verdict `clean`.

The exit-status rule (README "Exit status", docs/ci.md): findings at or above --fail-on give 1
(3 when all are retryable) even if an input was damaged; otherwise an input not read in full
gives 2, also with --exit-zero and --fail-on never."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES, run_cli

zstandard = pytest.importorskip("zstandard")  # a dependency of the default install

L = SAMPLES / "torch" / "ddp_nan_rank2.log"  # 4 ranks, a NaN on rank 2 at step 40 (line 166)
# after the real log: healthy filler (synthetic, for robustness only), so a zstd frame has many blocks
FILLER = b"".join(f"step {i} | loss 1.0 | grad_norm 0.5 | {'x' * 60}\n".encode() for i in range(1000, 20000))
HEALTHY = b"".join(f"step {i} | loss {2.0 - i / 1000:.4f} | grad_norm 0.5\n".encode() for i in range(20))


def _diagnose(path, *args: str) -> tuple[int, dict]:
    p = run_cli("diagnose", str(path), "--format", "json", *args)
    assert b"Traceback" not in p.stderr and b"internal error" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout)


def _ids(r: dict) -> list[str]:
    return [f["id"] for f in r["findings"]]


def _damage(r: dict) -> str:
    d = [x for x in r["diagnostics"] if x["code"] == "NS-IO-INCOMPLETE"]
    assert d, r["diagnostics"]
    assert r["inputs"][0]["complete"] is False
    return d[0]["message"]


@pytest.mark.parametrize("damage", ["trailing junk", "flipped crc"])
def test_damaged_gzip_keeps_what_it_read_and_says_so(tmp_path, damage):
    gz = bytearray(gzip.compress(L.read_bytes()))
    if damage == "trailing junk":
        gz += b"this is not gzip"
    else:
        gz[-6] ^= 0xFF  # the CRC32 in the member's trailer
    f = tmp_path / "train.log.gz"
    f.write_bytes(bytes(gz))
    rc, r = _diagnose(f)
    assert rc == 1 and "nan-rank-local" in _ids(r)
    assert r["verdict"] == "actionable"
    assert "damaged" in _damage(r)
    assert r["inputs"][0]["lines"] == L.read_bytes().count(b"\n")


@pytest.mark.parametrize("damage", ["trailing NULs", "corrupt frame"])
def test_damaged_zstd_keeps_what_it_read_and_says_so(tmp_path, damage):
    data = L.read_bytes() + FILLER
    z = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(data))
    if damage == "trailing NULs":
        z += b"\x00" * 100
    else:
        z[int(len(z) * 0.8)] ^= 0xFF
    f = tmp_path / "train.log.zst"
    f.write_bytes(bytes(z))
    rc, r = _diagnose(f)
    assert rc == 1 and "nan-rank-local" in _ids(r)
    assert "damaged" in _damage(r)


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_truncated_archive_without_findings_is_not_clean(tmp_path, kind):
    body = HEALTHY + FILLER
    packed = gzip.compress(body) if kind == "gz" else zstandard.ZstdCompressor().compress(body)
    f = tmp_path / f"train.log.{kind}"
    f.write_bytes(packed[: len(packed) // 2])
    for args in ((), ("--fail-on", "info"), ("--exit-zero",), ("--fail-on", "never")):
        rc, r = _diagnose(f, *args)
        assert (rc, r["verdict"]) == (2, "incomplete"), args
        assert "truncated" in _damage(r)
    text = run_cli("diagnose", str(f))
    assert text.returncode == 2 and b"INCOMPLETE" in text.stdout


def test_zstd_without_the_library_is_not_clean(tmp_path):
    f = tmp_path / "train.log.zst"
    f.write_bytes(zstandard.ZstdCompressor().compress(HEALTHY))
    script = "import sys; sys.modules['zstandard'] = None\nfrom nanscope.cli import main\nsys.exit(main(sys.argv[1:]))"
    p = subprocess.run([sys.executable, "-c", script, "diagnose", str(f), "--format", "json"], capture_output=True,
                       cwd=ROOT, timeout=120)
    r = json.loads(p.stdout)
    assert (p.returncode, r["verdict"]) == (2, "incomplete")
    d = next(x for x in r["diagnostics"] if x["code"] == "NS-IO-UNREADABLE")
    assert "zstandard" in d["message"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_lone_unreadable_file_is_not_clean(tmp_path):
    f = tmp_path / "train.log"
    f.write_bytes(HEALTHY)
    f.chmod(0)
    try:
        rc, r = _diagnose(f)
    finally:
        f.chmod(0o644)
    assert (rc, r["verdict"]) == (2, "incomplete")


@pytest.mark.parametrize("encoding,bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-16-le", b"")])
def test_utf16_log_is_decoded(tmp_path, encoding, bom):
    f = tmp_path / "train.log"
    f.write_bytes(bom + L.read_text(encoding="utf-8").encode(encoding))
    rc, r = _diagnose(f)
    assert rc == 1
    top = next(x for x in r["findings"] if x["id"] == "nan-rank-local")
    assert (top["initiating_rank"], top["first_step"]) == (2, 40)
    assert top["evidence"][0]["line"] == 166
    assert any(x["code"] == "NS-IO-ENCODING" for x in r["diagnostics"])
    assert not any(x["code"] == "NS-IO-BINARY-REGION" for x in r["diagnostics"])


def test_nul_hole_is_not_taken_for_utf16():
    from nanscope.ingest.reader import utf16_encoding

    assert utf16_encoding(b"\x00" * 64) is None
    assert utf16_encoding(b"s\x00t\x00e\x00p\x00 \x001\x00") == "utf-16-le"
    assert utf16_encoding(b"step 1 | loss 2.0") is None


def test_two_junk_bytes_that_look_like_a_bom_before_utf8_text_stay_utf8():
    from nanscope.ingest.reader import utf16_encoding

    assert utf16_encoding(b"\xff\xfe step 3 | loss 2.0\n") is None
    assert utf16_encoding(b"\xff\xfe" + "步骤 3 损失".encode("utf-16-le")) == "utf-16"
