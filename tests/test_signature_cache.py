"""The bundled signature library is kept built between runs (signatures/loader.py _Cache): the same
signatures as a plain load, an edited file read anew, a cache nobody but the user may write, and
no cache at all when NANSCOPE_CACHE_DIR is empty."""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import ROOT, run_cli
from nanscope.signatures import loader


def _ids(sigs) -> list[str]:
    return [s.id for s in sigs]


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A copy of the bundled library, loaded as the bundled one, and an empty cache folder."""
    lib = tmp_path / "lib"
    shutil.copytree(loader.bundled_dir(), lib)
    monkeypatch.setattr(loader, "bundled_dir", lambda: lib)
    cache = tmp_path / "cache"
    monkeypatch.setenv("NANSCOPE_CACHE_DIR", str(cache))
    return lib, cache


def test_a_second_load_comes_from_the_cache_and_equals_a_plain_load(library, monkeypatch):
    lib, cache = library
    first, errors = loader.load()
    assert not errors and len(list(cache.glob("signatures-*.pickle"))) == 1

    def no_parse(path):
        raise AssertionError(f"parsed {path} although the cache holds it")

    monkeypatch.setattr(loader, "load_file", no_parse)
    again, errors = loader.load()
    assert not errors
    assert _ids(again) == _ids(first)
    assert [s.summary for s in again] == [s.summary for s in first]


def test_an_edited_signature_file_is_read_anew(library):
    lib, cache = library
    loader.load()
    path = next(lib.rglob("cuda-oom.toml"))
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('title = "', 'title = "EDITED ', 1), encoding="utf-8")
    sigs, errors = loader.load()
    assert not errors
    assert next(s for s in sigs if s.id == "cuda-oom").title.startswith("EDITED ")
    assert len(list(cache.glob("signatures-*.pickle"))) == 1  # the old library's entry is gone


def test_a_cache_others_may_write_is_not_read(library, monkeypatch):
    lib, cache = library
    loader.load()
    (entry,) = cache.glob("signatures-*.pickle")
    entry.chmod(0o666)
    calls = []
    real = loader.load_file
    monkeypatch.setattr(loader, "load_file", lambda p: calls.append(p) or real(p))
    sigs, errors = loader.load()
    assert not errors and calls, "a group/world-writable cache must not be unpickled"


def test_a_damaged_cache_means_a_plain_load(library):
    lib, cache = library
    first, _ = loader.load()
    (entry,) = cache.glob("signatures-*.pickle")
    entry.write_bytes(b"not a pickle")
    again, errors = loader.load()
    assert not errors and _ids(again) == _ids(first)


def test_an_empty_cache_dir_setting_turns_the_cache_off(library, monkeypatch):
    lib, cache = library
    monkeypatch.setenv("NANSCOPE_CACHE_DIR", "")
    sigs, errors = loader.load()
    assert not errors and sigs
    assert not cache.exists()


def test_the_cli_diagnoses_the_same_with_and_without_the_cache(tmp_path):
    log = ROOT / "sample_logs" / "torch" / "ddp_nan_rank2.log"
    cold = run_cli("diagnose", str(log), "-f", "json", env={"NANSCOPE_CACHE_DIR": str(tmp_path / "c")})
    warm = run_cli("diagnose", str(log), "-f", "json", env={"NANSCOPE_CACHE_DIR": str(tmp_path / "c")})
    off = run_cli("diagnose", str(log), "-f", "json", env={"NANSCOPE_CACHE_DIR": ""})
    assert list((tmp_path / "c").glob("signatures-*.pickle"))
    assert cold.returncode == warm.returncode == off.returncode == 1
    assert _no_time(cold.stdout) == _no_time(warm.stdout) == _no_time(off.stdout)
    assert "nan-rank-local" in {f["id"] for f in _no_time(warm.stdout)["findings"]}


def _no_time(stdout: bytes) -> dict:
    import json

    report = json.loads(stdout)
    report["tool"].pop("elapsed_s", None)
    return report
