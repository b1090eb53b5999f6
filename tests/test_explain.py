"""`nanscope explain ID`: every bundled signature has a complete encyclopedia entry, offline."""

from __future__ import annotations

import pytest

from conftest import run_cli
from nanscope.signatures.explain import explain_text
from nanscope.signatures.loader import bundled_dir, load

# The headings a user reads, in the order they appear.
SECTIONS = ("What it is", "Mechanism", "Symptoms, and what each means", "How to confirm", "Fix",
            "Prevention", "Verify the fix", "References")

BUNDLED, _ERRORS = load()
BY_ID = {s.id: s for s in BUNDLED}


def test_every_bundled_file_loads_into_an_entry():
    files = sorted(p.stem for p in bundled_dir().rglob("*.toml"))
    assert files, "no bundled signature files found"
    missing = [f for f in files if f not in BY_ID]
    assert not missing, f"signature files that do not load (see `nanscope signatures lint`): {missing}"


@pytest.mark.parametrize("sig_id", sorted(BY_ID))
def test_entry_has_every_section_in_order(sig_id: str):
    text = explain_text(BY_ID[sig_id])
    lines = text.splitlines()
    positions = []
    for heading in SECTIONS:
        assert heading in lines, f"{sig_id}: no '{heading}' section"
        at = lines.index(heading)
        assert at + 1 < len(lines) and lines[at + 1].startswith("  ") and lines[at + 1].strip(), (
            f"{sig_id}: '{heading}' section is empty")
        positions.append(at)
    assert positions == sorted(positions), f"{sig_id}: sections out of order"
    assert f"retryable: {'yes' if BY_ID[sig_id].retryable else 'no'}" in lines[2]


@pytest.mark.parametrize("sig_id", sorted(BY_ID))
def test_entry_content_is_its_own_not_a_fallback(sig_id: str):
    s = BY_ID[sig_id]
    # explain falls back to root_cause when mechanism is missing: the entry must have its own.
    assert s.mechanism.strip() and s.mechanism.strip() != s.root_cause.strip(), f"{sig_id}: no mechanism"
    assert s.prevention.strip(), f"{sig_id}: no prevention"
    assert len(s.confirm) >= 2, f"{sig_id}: a checklist needs at least two steps"
    assert len(s.symptoms) >= 2, f"{sig_id}: needs at least two symptoms"
    for sym in s.symptoms:
        assert " — " in sym, f"{sig_id}: symptom is not 'what you see — what it means': {sym[:60]!r}"
    assert s.references and s.verify.strip() and s.benign_when.strip()
    for rel in s.related:
        assert rel != sig_id, f"{sig_id}: related to itself"


def test_cli_explain_prints_the_entry():
    p = run_cli("explain", "collective-timeout")
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    assert out.startswith("collective-timeout (revision ")
    assert "\nMechanism\n" in out and "\nHow to confirm\n" in out and "  [ ] " in out


def test_cli_explain_unknown_id_exits_2_with_one_line_error():
    p = run_cli("explain", "no-such-signature")
    assert p.returncode == 2
    assert p.stdout == b""
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("nanscope: error: ") and "no-such-signature" in err
    assert "Traceback" not in err
