"""`nanscope fleet`: many jobs, one table, and the signals across jobs (suspect hosts, rollouts).
The jobs are built from real logs (public excerpts and framework runs), copied into job folders."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow.parquet as pq
import pytest

from nanscope import api, hosts
from tests.conftest import SAMPLES, run_cli

PUB = SAMPLES / "public"
NCCL_IB_KOLYOZ2 = PUB / "412.log"  # kolyoz2:25146:25854 [0] ... NCCL WARN NET/IB : Got completion from peer
NCCL_IB_OTHER = PUB / "413.log"  # kp-ddp-worker-0:3468:3905 [4] ... NCCL WARN NET/IB
XID_NO_HOST = PUB / "426.log"  # dmesg NVRM: Xid (PCI:0000:00:05): 43 (no host in the text)
HEALTHY = SAMPLES / "torch" / "ddp_healthy.log"
NAN = SAMPLES / "torch" / "ddp_nan_rank2.log"


def _job(root, name, files, t):
    d = root / name
    d.mkdir(parents=True)
    for rel, src in files:
        dst = d / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)
        os.utime(dst, (t, t))
    return d


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Eight jobs over eight days: a host (kolyoz2) behind the NCCL/IB failures of three jobs, one
    other host once, a GPU (gpu-a17, per-node folder) with Xids in two jobs, and from day 6 on every
    job has a NaN on one rank (a change rolled out)."""
    root = tmp_path_factory.mktemp("fleet")
    day = 86400
    t0 = 1_780_000_000
    _job(root, "job-1", [("console.log", NCCL_IB_KOLYOZ2)], t0)
    _job(root, "job-2", [("console.log", HEALTHY)], t0 + day)
    _job(root, "job-3", [("console.log", NCCL_IB_KOLYOZ2)], t0 + 2 * day)
    _job(root, "job-4", [("gpu-a17/rank_0.log", XID_NO_HOST)], t0 + 3 * day)
    _job(root, "job-5", [("console.log", NCCL_IB_OTHER)], t0 + 4 * day)
    _job(root, "job-6", [("console.log", NAN), ("nccl.log", NCCL_IB_KOLYOZ2)], t0 + 5 * day)
    _job(root, "job-7", [("console.log", NAN), ("gpu-a17/dmesg.log", XID_NO_HOST)], t0 + 6 * day)
    _job(root, "job-8", [("console.log", NAN)], t0 + 7 * day)
    return root


def test_fleet_names_the_planted_bad_host_and_gpu(cluster):
    r = run_cli("fleet", str(cluster), "--format", "json", "--jobs", "2")
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    assert s["jobs"] == 8
    assert [(h["host"], h["jobs"]) for h in s["suspect_hosts"]] == [
        ("kolyoz2", ["job-1", "job-3", "job-6"]), ("gpu-a17", ["job-4", "job-7"])]
    assert s["suspect_hosts"][0]["findings"] == ["nccl-network-fabric"]
    # the excerpt's Xid lines name three GPUs of that host, each in both jobs
    assert [g["gpu"] for g in s["suspect_gpus"]] == [f"gpu-a17/PCI:0000:00:0{n}" for n in (5, 7, 8)]
    assert "kp-ddp-worker-0" not in r.stdout.decode()  # one job only: not a suspect


def test_fleet_sees_the_class_that_appears_in_every_job_since_a_day(cluster):
    s = api.fleet(str(cluster), options=api.Options(), jobs=1)[1]
    roll = {x["id"]: x for x in s["rollouts"]}
    assert roll["nan-rank-local"]["since_job"] == "job-6"
    assert roll["nan-rank-local"]["jobs_since"] == 3 and roll["nan-rank-local"]["jobs_before_with_it"] == 0
    assert "nccl-network-fabric" not in roll
    assert s["classes"][0]["id"] == "nccl-network-fabric" and s["classes"][0]["jobs"] == 4


def test_fleet_text_summary_and_parquet_table(cluster, tmp_path):
    table = tmp_path / "findings.parquet"
    r = run_cli("fleet", str(cluster), "--table", str(table))
    out = r.stdout.decode()
    assert r.returncode == 0
    assert "host kolyoz2: 3 jobs (nccl-network-fabric): job-1, job-3, job-6" in out
    assert "nan-rank-local: every job since job-6" in out
    t = pq.read_table(table).to_pylist()
    assert {row["job"] for row in t} == {f"job-{i}" for i in range(1, 9)}
    clean = [row for row in t if row["job"] == "job-2"]
    assert len(clean) == 1 and clean[0]["finding_id"] is None and clean[0]["verdict"] == "clean"
    nan = [row for row in t if row["job"] == "job-8" and row["finding_id"] == "nan-rank-local"]
    assert nan and nan[0]["initiating_rank"] == 2 and nan[0]["first_step"] == 40
    ib = [row for row in t if row["job"] == "job-3" and row["finding_id"] == "nccl-network-fabric"][0]
    assert ib["hardware"] is True and ib["hosts"] == ["kolyoz2"]
    assert t[0]["job_time"].year == 2026


def test_fleet_on_a_local_dask_cluster_equals_the_local_run(cluster):
    pytest.importorskip("distributed")
    local = api.fleet(str(cluster), options=api.Options(), jobs=1)
    dask = api.fleet(str(cluster), options=api.Options(), engine="dask")
    assert [(r.job, r.verdict, r.rows) for r in dask[0]] == [(r.job, r.verdict, r.rows) for r in local[0]]
    assert dask[1] == local[1]


def test_fleet_pattern_makes_each_matching_file_a_job(cluster):
    s = api.fleet(str(cluster), pattern="*/console.log", options=api.Options(), jobs=1)[1]
    assert s["jobs"] == 7  # job-4 has no console.log
    assert [h["host"] for h in s["suspect_hosts"]] == ["kolyoz2"]


def test_fleet_bad_input_is_a_clear_error(tmp_path):
    r = run_cli("fleet", str(tmp_path / "nope"))
    assert r.returncode == 2 and b"not a folder" in r.stderr
    r = run_cli("fleet", str(tmp_path))
    assert r.returncode == 2 and b"no jobs found" in r.stderr


def test_job_names_from_the_file_system_reach_the_terminal_inert(tmp_path):
    for name in ("job-\x1b[31mred", "job-b"):
        _job(tmp_path, name, [("console.log", NCCL_IB_KOLYOZ2)], 1_780_000_000)
    out = run_cli("fleet", str(tmp_path)).stdout.decode()
    assert "\x1b" not in out and "job-␛[31mred" in out


@pytest.mark.parametrize("line, host", [
    ("kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer 10.0.0.2", "kolyoz2"),
    ("[default0]:gpu-st-p4d-7:1234:1290 [0] NCCL INFO NET/Socket : Using [0]eth0", "gpu-st-p4d-7"),
    ("  host      : ip-10-0-3-4.ec2.internal", "ip-10-0-3-4.ec2.internal"),
    ("srun: error: gpu-a17: task 3: Exited with exit code 1", "gpu-a17"),
    ("slurmstepd: error: *** STEP 4242.0 ON gpu-a18 CANCELLED AT 2024-05-01T10:00:00 ***", "gpu-a18"),
    ("Jul 31 23:14:18 dgx-07 kernel: NVRM: Xid (PCI:0000:00:05): 43, pid=1045242", "dgx-07"),
    ("[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:00:05): 43, pid=1045242", None),
    ("waiting for host node17 to respond", None),
])
def test_hosts_only_where_a_framework_prints_them(line, host):
    assert hosts.host_in_line(line) == host


@pytest.mark.parametrize("path, host", [
    ("job/gpu-a17/rank_0.log", "gpu-a17"), ("job/gpu-a17.log", "gpu-a17"), ("job/rank_3.log", None),
    ("job/node1/rank_0.log", None), ("job/attempt_0/3/error.json", None), ("job/console.log", None),
])
def test_hosts_from_per_node_layouts_not_from_index_names(path, host):
    assert hosts.host_from_path(path, "job") == host
