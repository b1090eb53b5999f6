"""Distributed and launch failures users posted (sample_logs/public/2400-2421, session 11): NCCL with no
interface to use, NCCL's own collective-mismatch checks, Slurm's cgroup OOM kill, the MPICH family's
launchers naming the rank that died first, and a process group started without a launcher. What a user
reads first, the rank the text names, and that the healthy NCCL start-ups stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanscope import api
from tests.conftest import diagnose_lines, ids

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def _report(name: str):
    return api.diagnose([str(PUBLIC / name)])


@pytest.mark.parametrize("name, expected", [
    ("2400.log", "nccl-network-fabric"),       # NET/IB : req 0/1 ... collective mismatch error, behind a host prefix (nccl#969)
    ("2401.log", "nccl-network-fabric"),       # the 2.3 - 2.9 wording of the same size check (nccl#615)
    ("2402.log", "collective-desync"),         # NCCL 2.4 Mismatched collective detected ... around rank 39 (nccl#296)
    ("2403.log", "nccl-no-socket-interface"),  # DistBackendError, Last error: Bootstrap : no socket interface found (open-r1-multimodal#7)
    ("2404.log", "nccl-no-socket-interface"),  # the same under a plain RuntimeError, one GPU (MambaTree#14)
    ("2405.log", "nccl-no-socket-interface"),  # NCCL 2.4's bootstrap.cc:37 WARN (pytorch#29482)
    ("2406.log", "nccl-no-socket-interface"),  # the barrier's DistBackendError, then the agent's SIGTERMs (MFTCoder#31)
    ("2407.log", "host-oom"),                  # slurmstepd's old oom-kill wording, srun task 4 (HAFS#101)
    ("2409.log", "collective-timeout"),        # heartbeat monitor timed out on three ranks, the watchdog stuck (DEIM#105)
    ("2415.log", "worker-segfault"),          # PALS: rank 0 died from signal 11, rank 4 from 9 after it (ezpz#210)
    ("2417.log", "worker-segfault"),          # PALS: rank 256 SIGSEGV, rank 0 SIGTERM (mpich#7569)
    ("2418.log", "rank-crash-cascade"),        # PALS: rank 27421 SIGABRT, 48109 SIGTERM (mpich#7605)
    ("2422.log", "process-killed"),            # Hydra's banner: EXIT CODE: 9, the run out of memory (MPLBM-UT#92)
    ("2423.log", "worker-segfault"),           # Hydra's banner: EXIT CODE: 139, then the proxies abort (Galois#37)
    ("2424.log", "process-killed"),            # EXIT CODE: 9 and mpiexec's Killed (signal 9) (jukebox#155)
    ("2425.log", "dist-backend-unavailable"),  # Windows: no NCCL built in, two workers' tracebacks interleaved (pytorch#116080)
    ("2426.log", "dist-backend-unavailable"),  # torch 2.2+'s 'NCCL support is not compiled' timeout warning (pytorch#159742)
    ("2427.log", "store-libuv-unsupported"),   # torchrun's TCPStore on a Windows 2.5 wheel, indented paste (fluxgym#302)
    ("2428.log", "store-libuv-unsupported"),   # the same behind a runner's clipped '39] [INFO] ' (fluxgym#82)
    ("2429.log", "process-group-not-initialized"),  # an evaluation's all_reduce without the launcher (InstructSeg#7)
    ("2430.log", "process-group-not-initialized"),  # torch 1.x RuntimeError under IPython's traceback (mmsegmentation#809)
    ("2431.log", "collective-desync"),         # NET/Socket : message truncated (nccl#268)
    ("2432.log", "collective-desync"),         # NET/Socket : peer ... message truncated :, wrapped (nccl#626)
    ("2420.log", "dist-env-not-set"),          # env:// rendezvous: MASTER_ADDR expected, but not set (pytorch#39832)
    ("2421.log", "dist-env-not-set"),          # RANK, under loguru-style traceback annotations (DAMO-YOLO#63)
])
def test_first_finding(name, expected):
    assert ids(_report(name))[:1] == [expected]


@pytest.mark.parametrize("name, rank", [
    ("2403.log", 0),       # [rank0]: prefix on the DistBackendError
    ("2407.log", 4),       # srun: error: Orion-01-01: task 4: Out Of Memory
    ("2415.log", 0),       # rank 0 died from signal 11 and dumped core
    ("2416.log", 96),      # rank 84's PMI lost its peer; rank 96 segfaulted
    ("2417.log", 256),
    ("2418.log", 27421),
])
def test_initiating_rank_from_the_text(name, rank):
    assert _report(name).findings[0].initiating_rank == rank


@pytest.mark.parametrize("name", ["2402.log", "2408.log"])
def test_no_rank_is_claimed_without_evidence(name):
    # NCCL's "around rank 39" is the rank that printed it, not the odd one; srun's "tasks 1-3" are three
    assert [f.initiating_rank for f in _report(name).findings] == [None]


def test_the_no_interface_finding_replaces_the_generic_nccl_error():
    assert ids(_report("2406.log")) == ["nccl-no-socket-interface"]


@pytest.mark.parametrize("name", ["2411.log", "2412.log", "2413.log", "2414.log"])
def test_healthy_nccl_startups_stay_quiet(name):
    # NCCL WARN Failed to open libibverbs.so from four ranks, plugin-not-found INFO, NCCL_SOCKET_IFNAME set
    # to an interface that exists, a one-GPU channel set-up
    assert ids(_report(name)) == []


def test_an_app_that_falls_back_to_one_gpu_is_not_a_failed_init(tmp_path):
    # mit-han-lab/distrifuser#11 (the title): the app catches the ValueError and goes on
    report = diagnose_lines(tmp_path, [
        "Failed to initialize process group: Error initializing torch.distributed using env:// rendezvous: "
        "environment variable RANK expected, but not set, falling back to single GPU",
    ])
    assert "dist-env-not-set" not in ids(report)


def test_the_first_env_wording_and_the_raise_line(tmp_path):
    # pytorch/pytorch#11782: the torch 1.0 preview's message; the traceback's `raise _env_error(...)` alone is source
    report = diagnose_lines(tmp_path, ["ValueError: env:// rendezvous: WORLD_SIZE not set"])
    assert ids(report) == ["dist-env-not-set"]
    assert "WORLD_SIZE" in report.findings[0].summary
    assert "dist-env-not-set" not in ids(diagnose_lines(tmp_path, ['    raise _env_error("RANK")']))


@pytest.mark.parametrize("line", [
    # the source lines a traceback shows, quoting the messages (pytorch#116080, #159742, mmsegmentation#809)
    'raise RuntimeError("Distributed package doesn\'t have NCCL " "built in")',
    '  warnings.warn("Attempted to get default timeout for nccl backend, but NCCL support is not compiled")',
    '--> 358         raise RuntimeError("Default process group has not been initialized, "',
    "        self._store = TCPStore(  # type: ignore[call-arg]",
])
def test_quoted_source_lines_are_not_the_errors(tmp_path, line):
    assert ids(diagnose_lines(tmp_path, [line])) == []


def test_set_up_errors_keep_the_rank_prefix(tmp_path):
    # the rank is the process that printed it (torch's [rankN]: prefix), one event per process
    report = diagnose_lines(tmp_path, [
        "[rank1]: ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
    ])
    assert [(f.id, f.initiating_rank) for f in report.findings] == [("process-group-not-initialized", 1)]
