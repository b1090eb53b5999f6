"""Distributed failures users posted (sample_logs/public/2600-2635, session 12): two ranks on one GPU, ranks
that never join the process group (store-based barrier, TCPStore, elastic rendezvous), NCCL's NVLink SHARP
multicast on NVSwitch nodes, NCCL's own allocations in a full GPU or a full /dev/shm. What a user reads first,
that no waiting rank is blamed, and that the healthy NCCL / store-barrier lines stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanscope import api
from tests.conftest import diagnose_lines, ids

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def _report(name: str):
    return api.diagnose([str(PUBLIC / name)])


@pytest.mark.parametrize("name, expected", [
    ("2600.log", "nccl-duplicate-gpu"),   # DistBackendError, Last error: Duplicate GPU detected (verl#161)
    ("2601.log", "nccl-duplicate-gpu"),   # DDP's parameter check with NCCL 2.18.6 (MambaIR#39)
    ("2602.log", "nccl-duplicate-gpu"),   # the WARN behind a Ray actor's prefix (NeMo RL#3155)
    ("2604.log", "rendezvous-timeout"),   # store barrier: 1792 of 2048 workers (metaseq#52)
    ("2606.log", "rendezvous-timeout"),   # 9 workers for a world of 8, Kedro's log flattened in (parallelformers#54)
    ("2607.log", "rendezvous-timeout"),   # five rounds of waiting for key:2 (accelerate#1401)
    ("2608.log", "rendezvous-timeout"),   # worker_count=8 for world_size=4 (yolov5#4574)
    ("2628.log", "rendezvous-timeout"),   # a stale file:// store: worker_count=4 for world_size=2 (powersgd#21)
    ("2611.log", "cuda-oom"),             # NCCL's alloc.h Cuda failure 'out of memory' (nccl#1235)
    ("2620.log", "nccl-nvls-failed"),     # nvls.cc CUCHECK, CUDA 401 (nccl#1788)
    ("2622.log", "nccl-nvls-failed"),     # 2.29's Failed to bind NVLink SHARP after Last error (pytorch#177472)
    ("2624.log", "nccl-nvls-failed"),     # the WARN wrapped, vLLM's engine failing after it (p5en fix PR)
    ("2626.log", "nccl-nvls-failed"),     # 2.18's CUCHECK without the number, pdsh host prefix (nccl#1029)
    ("2630.log", "shm-exhausted"),        # 2.7's posix_fallocate: No space left on device (nccl#342)
    ("2631.log", "shm-exhausted"),        # the same under Horovod's mpirun, with the ring set-up (nccl#290)
])
def test_first_finding(name, expected):
    assert ids(_report(name))[:1] == [expected]


@pytest.mark.parametrize("name, generic", [
    ("2600.log", "nccl-error"), ("2620.log", "nccl-error"), ("2604.log", "collective-timeout"),
])
def test_the_specific_finding_replaces_the_generic_one(name, generic):
    assert generic not in ids(_report(name))


@pytest.mark.parametrize("name", ["2600.log", "2602.log", "2607.log", "2608.log", "2620.log"])
def test_no_rank_is_blamed(name):
    # two ranks that share a GPU, the rank that waits in the barrier, a node's NVSwitch fabric: none is the culprit
    assert _report(name).findings[0].initiating_rank is None


@pytest.mark.parametrize("name", ["2616.log", "2617.log", "2618.log", "2627.log", "2629.log", "2635.log"])
def test_healthy_nccl_and_barrier_lines_stay_quiet(name):
    # IB async event 'client reregistration', a topology-search fallback WARN, '[0m' colour remnants, the store
    # barrier completing, an nccl-tests start-up, 'Could not enable P2P' INFO
    assert ids(_report(name)) == []


def test_two_rounds_of_waiting_are_still_a_start_up(tmp_path):
    # Lightning-AI/pytorch-lightning#4420 (2609.log): every rank logs the wait once or twice; that alone is no failure
    report = diagnose_lines(tmp_path, [
        "INFO:root:Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)",
        "INFO:root:Waiting in store based barrier to initialize process group for rank: 6, key: store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)",
        "INFO:root:Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)",
    ])
    assert ids(report) == []


def test_the_rendezvous_finding_says_what_to_compare(tmp_path):
    # github.com/neu-vi/ezflow/issues/194 (2605.log)
    report = diagnose_lines(tmp_path, [
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
        "store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)",
    ])
    assert ids(report) == ["rendezvous-timeout"]
    assert "MASTER_PORT" in report.findings[0].fix
