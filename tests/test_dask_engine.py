"""`--engine dask`: the per-file scan on a Dask cluster merges into exactly the sequential report,
whatever the sharding and the order in which tasks finish."""

from __future__ import annotations

import json
import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nanscope import api, dask_scan
from nanscope.ingest.reader import expand_sources
from nanscope.report.base import report_record
from tests.conftest import SAMPLES, run_cli

PER_RANK = SAMPLES / "torch" / "ddp_nan_rank2_per_rank"
MIXED = [SAMPLES / "torch" / "ddp_crash_rank1.log", PER_RANK, SAMPLES / "faults" / "multinode_crash",
         SAMPLES / "deepspeed", SAMPLES / "hf"]


def _record(report) -> dict:
    rec = report_record(report)
    rec.pop("elapsed_s", None)
    return rec


def _sequential(paths) -> dict:
    return _record(api.diagnose([str(p) for p in paths], api.Options(jobs=1)))


class _Future:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value

    def release(self):
        pass


class _ShuffledClient:
    """A stand-in for dask.distributed.Client that runs the tasks in this process, in a random
    order (the client must not care in which order tasks finish)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def scheduler_info(self):
        return {"workers": {"a": {}, "b": {}}}

    def map(self, fn, items, pure=False, **kw):
        items = list(items)
        order = list(range(len(items)))
        self.rng.shuffle(order)
        done = {k: fn(items[k], **kw) for k in order}
        return [_Future(done[k]) for k in range(len(items))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), shards=st.integers(1, 40))
def test_any_sharding_and_finishing_order_gives_the_sequential_report(monkeypatch, seed, shards):
    rng = random.Random(seed)
    expected = _sequential(MIXED)
    sources = expand_sources([str(p) for p in MIXED])

    def random_shards(srcs, n):
        cuts = sorted(rng.sample(range(1, len(srcs)), min(len(srcs) - 1, shards - 1))) if len(srcs) > 1 else []
        bounds = [0, *cuts, len(srcs)]
        return [[(i, srcs[i]) for i in range(a, b)] for a, b in zip(bounds, bounds[1:])]

    monkeypatch.setattr(dask_scan, "dask_client", lambda address, workers=None: (_ShuffledClient(rng), lambda: None))
    monkeypatch.setattr(dask_scan, "shard_sources", random_shards)
    got = _record(api.diagnose_sources(sources, api.Options(engine="dask")))
    assert got == expected


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_parts_arriving_in_any_order_are_fed_in_input_order(seed):
    from nanscope.pipeline import ScanOptions, ScanResult

    sources = expand_sources([str(p) for p in MIXED])
    parts = [dask_scan.scan_part(i, s, ScanOptions()) for i, s in enumerate(sources)]
    shuffled = parts[:]
    random.Random(seed).shuffle(shuffled)
    names = lambda evs: [(e.kind, getattr(e, "loc", None) and e.loc.line, len(e) if e.kind == "hold" else 0)  # noqa: E731
                         for e in evs]
    a, b = ScanResult(), ScanResult()
    assert names(dask_scan.feed_in_order(shuffled, len(parts), ScanOptions(), a)) == \
        names(dask_scan.feed_in_order(parts, len(parts), ScanOptions(), b))
    assert [i.path for i in a.inputs] == [s.name for s in sources]


def test_merge_is_associative_and_refuses_a_file_scanned_twice():
    from nanscope.errors import NanscopeError
    from nanscope.model import InputInfo

    p = {k: dask_scan.FilePart(k, [], InputInfo(str(k), None)) for k in range(4)}
    x, y, z = {0: p[0]}, {1: p[1], 3: p[3]}, {2: p[2]}
    left = dask_scan.merge_parts(dask_scan.merge_parts(x, y), z)
    right = dask_scan.merge_parts(x, dask_scan.merge_parts(y, z))
    assert left == right == dask_scan.merge_parts(z, y, x)
    with pytest.raises(NanscopeError, match="scanned twice"):
        dask_scan.merge_parts(x, {0: p[0]})


@pytest.fixture(scope="module")
def thousand_ranks(tmp_path_factory):
    """1,000 per-rank files: the real per-rank logs of the DDP NaN run, repeated."""
    folder = tmp_path_factory.mktemp("ranks")
    for i in range(1000):
        shutil.copy(PER_RANK / f"rank_{i % 4}.log", folder / f"rank_{i}.log")
    return folder


def test_local_cluster_report_equals_the_local_report_on_1000_per_rank_files(thousand_ranks):
    pytest.importorskip("distributed")
    local = run_cli("diagnose", "-f", "json", "--jobs", "1", str(thousand_ranks))
    dask = run_cli("diagnose", "-f", "json", "--engine", "dask", str(thousand_ranks))
    assert dask.returncode == local.returncode == 1, dask.stderr.decode()[-2000:]
    a, b = json.loads(local.stdout), json.loads(dask.stdout)
    assert a == b
    assert len(a["inputs"]) == 1000 and len(a["ranks_seen"]) == 1000
    assert {f["id"] for f in a["findings"]} >= {"nan-rank-local"}


def test_unknown_engine_and_stdin_are_clear_errors():
    bad = run_cli("diagnose", "--engine", "spark", str(PER_RANK))
    assert bad.returncode == 2 and b"unknown engine 'spark'" in bad.stderr
    stdin = run_cli("diagnose", "--engine", "dask", "-", stdin=b"step=1, loss=2.0\n")
    assert stdin.returncode == 2 and b"reads files only" in stdin.stderr
