"""A rank, a step or a failure class comes from the log text or a documented per-rank layout, never
from a descriptive name: every sample log gives the same diagnosis under its own name, under a
neutral number and under a misleading name that mentions another rank."""

from __future__ import annotations

import shutil

import pytest

from conftest import SAMPLES, manifest_entries
from nanscope import api
from nanscope.ingest.prefixes import origin_from_path

_FILES = [e for e in manifest_entries() if e["abspath"].is_file()]


def _gist(report) -> list:
    return [(f.id, f.initiating_rank, f.first_step, sorted(r for r in f.ranks if r is not None),
             sorted(c.id for c in f.collateral)) for f in report.findings]


@pytest.mark.parametrize("entry", _FILES, ids=[e["path"] for e in _FILES])
def test_a_log_means_the_same_under_any_name(entry, tmp_path):
    own = _gist(api.diagnose([str(entry["abspath"])]))
    neutral = tmp_path / "017.log"
    misleading = tmp_path / "job_rank7_node3" / "nan_on_rank5.log"
    misleading.parent.mkdir()
    shutil.copy(entry["abspath"], neutral)
    shutil.copy(entry["abspath"], misleading)
    plain = _gist(api.diagnose([str(neutral)]))
    assert _gist(api.diagnose([str(misleading)])) == plain
    layout = origin_from_path(str(entry["abspath"].relative_to(SAMPLES)))
    if layout.rank is None and layout.node is None:  # rank_3.log, node1.log: the name is a layout
        assert plain == own


def test_a_per_rank_folder_keeps_its_ranks_under_a_neutral_folder_name(tmp_path):
    src = SAMPLES / "torch" / "ddp_nan_rank2_per_rank"
    shutil.copytree(src, tmp_path / "0042")
    own = _gist(api.diagnose([str(src)]))
    assert own[0][:2] == ("nan-rank-local", 2)
    assert _gist(api.diagnose([str(tmp_path / "0042")])) == own


def test_a_slurm_task_family_gives_ranks_and_a_lone_file_does_not(tmp_path):
    """`srun --output=job-%j-%t.out` writes one file per task: the trailing number is the rank."""
    src = SAMPLES / "torch" / "ddp_nan_rank2_per_rank"
    fam = tmp_path / "fam"
    fam.mkdir()
    for r in range(4):
        shutil.copy(src / f"rank_{r}.log", fam / f"job-4242-{r}.out")
    assert _gist(api.diagnose([str(fam)]))[0][:2] == ("nan-rank-local", 2)
    lone = tmp_path / "job-4242-2.out"
    shutil.copy(src / "rank_2.log", lone)
    assert all(f.initiating_rank is None for f in api.diagnose([str(lone)]).findings)
