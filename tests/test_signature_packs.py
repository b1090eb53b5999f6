"""User signature packs: `signatures test` on the bundled pack in a checkout, `explain --signatures`,
and the docs that say what a pack holds."""

from __future__ import annotations

import re
import shutil

from conftest import ROOT, run_cli
from nanscope.signatures import loader, selftest
from nanscope.signatures.machines import MACHINES
from nanscope.signatures.schema import DIAGNOSIS_KEYS, EXAMPLE_KEYS, TOP_KEYS

PACK_TOML = '''id = "team-loss-flatline"
title = "Loss exactly zero (team rule)"
category = "custom"
severity = "medium"
status = "test"
revision = 1
frameworks = ["pytorch"]

[match]
machine = "line"
events = ["step"]
when = "loss == 0"

[diagnosis]
summary = "Loss was exactly 0 at step {step}."
root_cause = "A masked-out batch."
benign_when = "Never."
fix = "Check the mask."
verify = "Re-run the step."
references = ["team wiki"]

[[examples]]
name = "zero"
expect = "match"
log = """
step=7, loss=0.0, grad_norm=0.0, lr=0.001
"""

[[examples]]
name = "non-zero"
expect = "no-match"
log = """
step=7, loss=1.5, grad_norm=0.3, lr=0.001
"""
'''


def test_signatures_test_on_the_checkouts_pack_with_an_installed_copy(tmp_path, monkeypatch):
    """pip install . puts a copy of signatures/ in the package; testing the checkout's folder
    must test it as the bundled pack, not report every id as 'already used'."""
    installed = tmp_path / "site-packages" / "nanscope" / "_signatures"
    shutil.copytree(ROOT / "signatures", installed)
    monkeypatch.setattr(loader, "bundled_dir", lambda: installed)
    sigs, errors = loader.load([str(ROOT / "signatures")])
    assert not errors, errors[:3]
    assert all(s.path.startswith(str(ROOT / "signatures")) for s in sigs)  # the checkout's files run
    # a sub-folder (or one file) of it: only its examples run, against the whole library, no duplicates
    numerics = [s for s in sigs if s.category == "numerics"]
    failures, total = selftest.run_examples([str(ROOT / "signatures" / "numerics")])
    assert failures == [] and total == sum(len(s.examples) for s in numerics)
    failures, total = selftest.run_examples([str(ROOT / "signatures" / "numerics" / "nan-rank-local.toml")])
    assert failures == [] and total == len(next(s for s in numerics if s.id == "nan-rank-local").examples)
    assert loader.bundled_pack_root(ROOT / "signatures" / "numerics") == (ROOT / "signatures").resolve()
    assert loader.bundled_pack_root(tmp_path) is None


def test_signatures_test_cli_on_the_bundled_pack():
    p = run_cli("signatures", "test", "signatures/")
    assert p.returncode == 0, p.stdout[-2000:]
    assert re.search(rb"^\d+ passed, 0 failed$", p.stdout, re.M)
    assert b"already used" not in p.stdout


def test_explain_a_user_signature(tmp_path):
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "team-loss-flatline.toml").write_text(PACK_TOML)
    p = run_cli("explain", "--signatures", str(tmp_path / "pack"), "team-loss-flatline")
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert out.startswith("team-loss-flatline (revision 1, test)")
    assert "Check the mask." in out and "step=7, loss=0.0" in out
    assert run_cli("explain", "team-loss-flatline").returncode == 2  # not without the pack
    t = run_cli("signatures", "test", str(tmp_path / "pack"))
    assert t.returncode == 0 and b"2 passed, 0 failed" in t.stdout


def test_pack_format_doc_lists_every_required_key():
    doc = (ROOT / "docs/signature-packs.md").read_text()
    for table in (TOP_KEYS, DIAGNOSIS_KEYS, EXAMPLE_KEYS):
        for key, required in table.items():
            assert f"`{key}`" in doc, key
    for name, machine in MACHINES.items():
        assert f"`{name}`" in doc, name
        for param, (required, _kind) in machine.PARAMS.items():
            if required:
                assert re.search(rf"`{name}`[^\n]*`{param}`", doc), (name, param)


def test_predicates_doc_says_how_exc_type_is_matched():
    doc = (ROOT / "docs/predicates.md").read_text()
    section = doc[doc.index("## `exc_type`"):]
    section = section[: section.find("\n## ", 5) if "\n## " in section[5:] else len(section)]
    assert "qualified" in section and "short" in section
    assert 'exc_type ~ "(^|\\\\.)OutOfMemoryError$"' in section


def test_a_pack_named_in_pyproject_is_known_to_explain_and_list(tmp_path):
    (tmp_path / "ci" / "pack").mkdir(parents=True)
    (tmp_path / "ci" / "pack" / "team-loss-flatline.toml").write_text(PACK_TOML)
    (tmp_path / "pyproject.toml").write_text('[tool.nanscope]\nsignatures = ["ci/pack"]\n')
    (tmp_path / "sub").mkdir()
    assert run_cli("explain", "team-loss-flatline", cwd=tmp_path / "sub").returncode == 0
    assert b"team-loss-flatline" in run_cli("signatures", "list", cwd=tmp_path / "sub").stdout


def test_a_failing_example_is_named_at_its_own_line(tmp_path):
    """`signatures test` points at the [[examples]] header of the example that failed (the
    blank line before a header once shifted every example up by one, onto the one before)."""
    pack = tmp_path / "pack"
    pack.mkdir()
    wrong = PACK_TOML + '\n[[examples]]\nname = "said to match"\nexpect = "match"\nlog = """\nstep=8, loss=2.5, grad_norm=0.3, lr=0.001\n"""\n'
    (pack / "team-loss-flatline.toml").write_text(wrong)
    header = wrong.split("\n").index('name = "said to match"')  # the [[examples]] line before it, 1-based
    t = run_cli("signatures", "test", str(pack))
    assert t.returncode == 1, t.stdout
    assert f"team-loss-flatline.toml:{header}: team-loss-flatline: example 'said to match'".encode() in t.stdout, t.stdout
