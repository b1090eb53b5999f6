"""The real sample logs: each one's ground truth (sample_logs/*/MANIFEST.toml) and golden JSON report.

Set NANSCOPE_UPDATE_GOLDEN=1 to rewrite tests/golden/ after a deliberate change; review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ROOT, all_ids, manifest_entries
from nanscope import api
from nanscope.report import json as json_report

GOLDEN = Path(__file__).resolve().parent / "golden"
_ENTRIES = manifest_entries()
_KNOWN = {s.id for s in api.load_signatures(api.Options())}


def _rel(entry: dict) -> str:
    return os.path.relpath(entry["abspath"], ROOT)


@pytest.mark.parametrize("entry", _ENTRIES, ids=[e["path"] for e in _ENTRIES])
def test_ground_truth(entry, monkeypatch):
    monkeypatch.chdir(ROOT)
    missing = set(entry.get("expect", [])) - _KNOWN
    if missing:
        pytest.skip(f"signature(s) {sorted(missing)} not in the library")
    report = api.diagnose([_rel(entry)])
    found = all_ids(report)
    expected = set(entry.get("expect", []))
    # known_gaps: ground truth nanscope cannot reach yet (documented in the folder README);
    # asserted to still differ, so fixing the gap makes this test say so.
    gaps = set(entry.get("known_gaps", []))
    if "expect" in gaps:
        assert found != expected, "the findings are right now: remove 'expect' from known_gaps"
    else:
        assert found == expected, f"found {sorted(found)}, expected {sorted(expected)}"
    if entry.get("healthy"):
        if "healthy" in gaps:
            assert report.verdict != "clean", "the healthy trap is clean now: remove 'healthy' from known_gaps"
        else:
            assert report.verdict == "clean"
            assert api.exit_code(report) == 0
    if "verdict" in entry:
        assert report.verdict == entry["verdict"]
    primary = next((f for f in report.findings if f.id == entry["expect"][0]), None) if expected else None
    if primary is not None:
        for key, got in (("first_bad_step", primary.first_step), ("initiating_rank", primary.initiating_rank)):
            if key not in entry:
                continue
            if key in gaps:
                assert got != entry[key], f"{key} is right now: remove it from known_gaps"
            else:
                assert got == entry[key], f"{key}: got {got}, expected {entry[key]} ({primary.decided_by})"


@pytest.mark.parametrize("entry", _ENTRIES, ids=[e["path"] for e in _ENTRIES])
def test_golden_report(entry, monkeypatch):
    monkeypatch.chdir(ROOT)
    rendered = json.loads(json_report.dumps(api.diagnose([_rel(entry)])))
    rendered["tool"]["version"] = "X"
    golden = GOLDEN / (entry["path"].replace("/", "__") + ".json")
    if os.environ.get("NANSCOPE_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(rendered, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert golden.exists(), f"no golden report {golden.name}: run with NANSCOPE_UPDATE_GOLDEN=1"
    assert rendered == json.loads(golden.read_text(encoding="utf-8"))
