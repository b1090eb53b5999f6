"""Initiating ranks (and one detection) in the blind public cases of issue 15: what a user who
pastes such a log gets, read from the excerpts in sample_logs/public (their provenance is in
MANIFEST.toml beside them), whole or cut to the lines a family needs.
"""

from __future__ import annotations

from pathlib import Path

from nanscope import api
from nanscope.ingest.prefixes import peel
from nanscope.model import Origin

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def lines(name: str) -> list[str]:
    return (PUBLIC / name).read_text(encoding="utf-8").splitlines()


def diagnose(tmp_path, text_lines: list[str]):
    p = tmp_path / "job.log"
    p.write_text("\n".join(text_lines) + "\n", encoding="utf-8")
    report = api.diagnose([str(p)])
    return report.findings[0] if report.findings else None


def test_watchdog_line_gives_an_unranked_ecc_traceback_its_rank(tmp_path):
    # 1012 (kohya-ss/sd-scripts): the bare `RuntimeError: CUDA error: uncorrectable ECC error` comes
    # first; `[Rank 1] NCCL watchdog thread terminated with exception: ...` is the same failure
    f = diagnose(tmp_path, lines("1012.log"))
    assert (f.id, f.initiating_rank, f.confidence) == ("ecc-error", 1, "medium")
    assert "rank 1" in f.decided_by


def test_unranked_first_line_with_another_rank_in_the_input_claims_none(tmp_path):
    # the same ECC lines, then another scheduler's own line from 933 (`[... TP3] Scheduler hit an
    # exception`): two ranks in the input, so the bare first line could be either's
    ecc = lines("1012.log")
    other = [ln for ln in lines("933.log") if "TP3] Scheduler hit an exception" in ln]
    assert other
    f = diagnose(tmp_path, ecc + other)
    assert f.id == "ecc-error" and f.initiating_rank is None


def test_sglang_sigquit_first_does_not_hide_the_tp_rank(tmp_path):
    # 933: `Received sigquit from a child process` (no TP tag) comes before `[... TP3] Scheduler hit an exception`
    f = diagnose(tmp_path, lines("933.log"))
    assert (f.id, f.initiating_rank) == ("sglang-scheduler-crash", 3)


def test_parlai_rank_prefix_is_peeled():
    # 1009: ParlaiLogger.add_format_prefix puts `rank: {rank:2d} |` before '%(asctime)s %(levelname)-8s | %(message)s'
    first = lines("1009.log")[0]
    msg, origin = peel(first, Origin())
    assert origin.rank == 3
    assert msg.startswith("2022-04-03 18:44:26,615 CRITICAL | Traceback (most recent call last):")


def test_a_rank_colon_in_prose_is_no_parlai_prefix():
    # the prefix needs ParlAI's ` | <time>` after it: a message that says `rank:  3 | ...` is prose
    text = "rank:  3 | world size 8"
    assert peel(text, Origin()) == (text, Origin())


def test_collector_timestamps_over_torchrun_failures_block(tmp_path):
    # 996 (modelscope/ms-swift#8307): a collector stamped every line of ChildFailedError's block
    f = diagnose(tmp_path, lines("996.log"))
    assert f is not None and f.id in ("uncaught-exception", "rank-crash-cascade")
    assert set(f.ranks) == {0, 1}


def test_a_logger_timestamp_before_its_own_message_stays_in_the_message():
    # fairseq's '%(asctime)s | %(levelname)s | %(name)s | %(message)s' (121.log): the stamp is the
    # record's own, not a collector's; only a stamp before an indented continuation is peeled
    line = lines("121.log")[0]
    assert peel(line, Origin()) == (line, Origin())
    row = next(ln for ln in lines("996.log") if "rank      :" in ln)
    msg, origin = peel(row, Origin())
    assert msg.startswith("  rank      : 0 (local_rank: 0)") and origin.ts is not None


def test_tgi_launcher_names_the_shard_that_failed(tmp_path):
    # 1001 (huggingface/text-generation-inference#1354): shard 0's ValueError (71 heads over 2 shards), then the
    # launcher's `Shard 0 failed to start` and `Shard terminated rank=1` (shut down after it)
    f = diagnose(tmp_path, lines("1001.log"))
    assert (f.id, f.initiating_rank, f.confidence) == ("tensor-parallel-indivisible", 0, "medium")
    assert [c.id for c in f.collateral] == ["tgi-shard-failed"]


def test_tgi_traceback_without_the_launcher_line_names_no_shard(tmp_path):
    # the shard's traceback and its ` rank=0` span field alone: no launcher line, no rank claimed
    text = [ln for ln in lines("1001.log") if "text_generation_launcher" not in ln]
    f = diagnose(tmp_path, text)
    assert f.id == "tensor-parallel-indivisible" and f.initiating_rank is None


def test_tgi_shard_start_up_progress_is_healthy(tmp_path):
    # 1021 (text-generation-inference#2657): `Waiting for shard to be ready... rank=N` while loading
    assert diagnose(tmp_path, lines("1021.log")) is None


def test_spawn_process_index_is_the_rank_of_its_traceback(tmp_path):
    # 1008 (youngwanLEE/centermask2#9): torch.multiprocessing.spawn's `-- Process 1 terminated with
    # the following error:` over detectron2's launch() (_distributed_worker(local_rank, ...)), one machine
    f = diagnose(tmp_path, lines("1008.log"))
    assert (f.id, f.initiating_rank, f.first_step) == ("nan-persistent", 1, 137)


def test_anomaly_without_the_spawn_header_names_no_rank(tmp_path):
    text = [ln for ln in lines("1008.log") if "terminated with the following error" not in ln]
    f = diagnose(tmp_path, text)
    assert f.id == "nan-persistent" and f.initiating_rank is None


def test_a_logged_traceback_goes_on_in_the_rank_of_its_first_line(tmp_path):
    # 1009 (ParlAI, facebookresearch/ParlAI#4460): `rank:  3 | ... CRITICAL | Traceback ...` is the
    # logger's prefix on the record's first line only; the `RuntimeError: CUDA out of memory` twelve
    # lines on, unprefixed, is rank 3's
    f = diagnose(tmp_path, lines("1009.log"))
    assert (f.id, f.initiating_rank) == ("cuda-oom", 3)


def test_a_traceback_after_prose_is_no_longer_the_prefixed_record(tmp_path):
    # the same traceback, with the logger's first line followed by another program's line with no
    # prefix (torch.multiprocessing.spawn's `-- Process 1 terminated with the following error:`,
    # the first line of 1008): the record has ended, the OOM below is no longer provably rank 3's
    tb = lines("1009.log")
    prose = next(ln for ln in lines("1008.log") if ln and not ln[0].isspace() and ":" not in ln[:12])
    f = diagnose(tmp_path, tb[:1] + [prose] + tb[1:13])
    assert f.id == "cuda-oom" and f.initiating_rank is None


# --- rank round 1 (sample_logs/public 1500-1510) -------------------------------------------------

def test_determined_wrap_rank_prefix_is_peeled(tmp_path):
    # 1509 (determined-ai/determined#5418): harness/determined/launch/wrap_rank.py writes
    # f"[rank={rank}] {line}"; the viewer put an empty column `[]` in front of it
    msg, origin = peel(lines("1509.log")[0], Origin())
    assert origin.rank == 0 and msg.startswith("RuntimeError: CUDA out of memory.")
    f = diagnose(tmp_path, lines("1509.log"))
    assert (f.id, f.initiating_rank) == ("cuda-oom", 0)


def test_a_rank_equals_tag_inside_a_message_is_no_prefix():
    msg, origin = peel("  Memory [rank=3] max_allocated=10.0MB", Origin())
    assert origin.rank is None and "[rank=3]" in msg


def test_one_mismatch_report_blames_the_first_rank_off_the_shared_sequence(tmp_path):
    # 1503 (bghira/SimpleTuner#2712): `Rank 1 ... but Rank 7 is running collective`: the checker
    # names the first rank in rank order whose fingerprint differs, so ranks 0-6 run rank 1's
    f = diagnose(tmp_path, lines("1503.log"))
    assert (f.id, f.initiating_rank, f.confidence) == ("collective-desync", 7, "medium")
    assert "ranks 0-6" in f.decided_by


def test_a_mismatch_with_rank_0_names_no_rank(tmp_path):
    # the same report about rank 0 (ms-swift#9443's shape, `Rank 1 ... but Rank 0`): the two could
    # be either side of the split
    line = lines("1503.log")[0].replace("but Rank 7 is running", "but Rank 0 is running")
    f = diagnose(tmp_path, [line])
    assert f.id == "collective-desync" and f.initiating_rank is None


def test_unnamed_anomaly_error_is_the_worker_the_agent_says_failed(tmp_path):
    # 1504 (bghira/SimpleTuner#304): the anomaly-mode RuntimeError has no rank prefix; torchrun's
    # agent SIGTERMs the other worker and reports local rank 1 failed with exit code 1
    f = diagnose(tmp_path, lines("1504.log"))
    assert (f.id, f.initiating_rank, f.confidence) == ("nan-op-origin", 1, "medium")
    assert "launcher" in f.decided_by


def test_unnamed_anomaly_error_without_the_agent_record_names_no_rank(tmp_path):
    text = [ln for ln in lines("1504.log") if "failed (exitcode" not in ln]
    f = diagnose(tmp_path, text)
    assert f.id == "nan-op-origin" and f.initiating_rank is None


def test_unnamed_error_with_a_second_failed_worker_names_no_rank(tmp_path):
    # 1504's lines plus another agent's record of local rank 0's own SIGSEGV (1513's line): two
    # workers failed of their own, so the bare anomaly error could be either's
    other = [ln for ln in lines("1513.log") if "failed (exitcode: -11) local_rank: 0" in ln]
    assert other
    diagnose(tmp_path, lines("1504.log") + other)
    report = api.diagnose([str(tmp_path / "job.log")])
    nan = [g for g in report.findings if g.id == "nan-op-origin"]
    assert nan and nan[0].initiating_rank is None


def test_bare_device_assert_is_the_rank_whose_traceback_follows(tmp_path):
    # 1506 (modelscope/ms-swift#8378): the kernel's assert is printed bare (torch's excepthook
    # prefixes only the traceback); `[rank5]: Traceback ...` follows it; the excerpt ends mid-traceback
    f = diagnose(tmp_path, lines("1506.log"))
    assert (f.id, f.initiating_rank, f.confidence) == ("cuda-device-assert", 5, "medium")
    assert "[rank5]: Traceback" in f.decided_by


def test_bare_device_assert_without_a_traceback_after_it_names_no_rank(tmp_path):
    text = lines("1506.log")[:2]
    f = diagnose(tmp_path, text)
    assert f.id == "cuda-device-assert" and f.initiating_rank is None


def test_a_traceback_far_from_the_bare_line_is_not_its(tmp_path):
    text = lines("1506.log")
    filler = [f"Train:   7%|▋         | {82 + i}/1218 [18:06:05<227:39:40, 721.46s/it]" for i in range(60)]
    f = diagnose(tmp_path, text[:2] + filler + text[2:])
    assert f.id == "cuda-device-assert" and f.initiating_rank is None


def test_open_mpi_names_the_process_whose_sigabrt_aborted_the_job(tmp_path):
    # 1508 (horovod/horovod#1350): orte_print_aborted_job reports the job's aborted proc; "exited on
    # signal 6" is rank 1's own end, not a teardown, and no collective timed out anywhere
    f = diagnose(tmp_path, lines("1508.log"))
    assert (f.id, f.initiating_rank, f.confidence) == ("rank-crash-cascade", 1, "medium")
    report = api.diagnose([str(tmp_path / "job.log")])
    assert "worker-terminated" not in {g.id for g in report.findings} | {c.id for g in report.findings for c in g.collateral}


def test_open_mpi_sigabrt_among_collective_timeouts_names_no_rank(tmp_path):
    # the same report after another rank's watchdog timed out: the abort may be the watchdog's own
    timeout = [ln for ln in lines("1004.log") if "Watchdog caught collective operation timeout" in ln][:1]
    assert timeout
    f = diagnose(tmp_path, timeout + lines("1508.log"))
    assert (f.id, f.initiating_rank, f.confidence) == ("rank-crash-cascade", None, "low")
    assert "watchdog" in f.decided_by



def test_a_store_wait_for_the_nccl_unique_id_blames_the_default_groups_rank_0(tmp_path):
    # 1516 (NVIDIA-NeMo/Speech#14399): `[1] is setting up NCCL communicator and retrieving ncclUniqueId
    # from [0] ... wait timeout after 600000ms, keys: /default_pg/0//cuda//0`
    f = diagnose(tmp_path, lines("1516.log"))
    assert (f.id, f.initiating_rank, f.confidence) == ("collective-timeout", 0, "medium")
    assert "ncclUniqueId" in f.decided_by


def test_a_store_wait_without_the_group_in_its_key_names_no_rank(tmp_path):
    # 1517 (pytorch/pytorch#68597, the older wording): the key does not say which group waited, and
    # another group's [0] is that group's first member, not the job's rank 0
    f = diagnose(tmp_path, lines("1517.log"))
    assert f.id == "collective-timeout" and f.initiating_rank is None


def test_every_worker_aborting_in_the_same_second_names_no_rank(tmp_path):
    # 1512 (open-mmlab/mmsegmentation#3106): ranks 0, 1 and 2 all SIGABRT at 22:36:10, no error file
    f = diagnose(tmp_path, lines("1512.log"))
    assert f.initiating_rank is None and f.confidence == "low"


def test_milabench_tag_and_pipe_are_peeled_to_the_ranks_under_them():
    # 2612 (mila-iqia/milabench#269): milabench/log.py TerminalFormatter prints `{tag} [stderr] {line}`
    msg, origin = peel(lines("2612.log")[0], Origin())
    assert origin.rank == 14 and msg.startswith("[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] [Rank 14]")


def test_a_gui_relay_tag_is_peeled_so_the_exception_is_read(tmp_path):
    # 2696 (kohya-ss/musubi-tuner#817): a GUI relays the trainer's stderr as `[training STDERR] ...`
    msg, _ = peel(lines("2696.log")[2], Origin())
    assert msg == "ValueError: optimizer got an empty parameter list"
    f = diagnose(tmp_path, lines("2696.log"))
    assert f.id == "no-trainable-parameters"


def test_a_pipe_name_inside_prose_is_no_prefix():
    for text in ("wrote the log to out [stderr] and more", "[stderr] RuntimeError: x", "see [training STDERR]: x"):
        assert peel(text, Origin()) == (text, Origin())


def test_a_rank_that_crashed_waiting_for_rank_0_in_a_monitored_barrier_blames_rank_0(tmp_path):
    # 2170 (sgl-project/sglang#5602): TP3's gloo monitoredBarrier got errors waiting for send/recv from rank 0
    # (ProcessGroupGloo.cpp: "Please check rank 0 logs for faulty rank"), then TP3's scheduler raised
    f = diagnose(tmp_path, lines("2170.log"))
    assert (f.id, f.initiating_rank) == ("sglang-scheduler-crash", 0)
    assert 3 in f.collateral_ranks and "waited for rank 0" in f.decided_by


def test_a_wait_logged_after_the_ranks_own_error_does_not_move_the_blame(tmp_path):
    # the same lines with the barrier's message after the scheduler's traceback: its consequence, not its cause
    text = lines("2170.log")
    barrier = text.pop(1)
    f = diagnose(tmp_path, text + [barrier])
    assert (f.id, f.initiating_rank) == ("sglang-scheduler-crash", 3)


def test_horovodrun_rank_prefix_with_its_timestamp_is_peeled():
    # 1865 (horovod/horovod#2097): safe_shell_exec.prefix_connection's '{time}[{rank}]<{prefix}>:'
    msg, origin = peel(lines("1865.log")[0], Origin())
    assert origin.rank == 0 and msg.startswith("2020-09-25 16:52:53.640992: W tensorflow/core/framework/op_kernel.cc")
    msg, origin = peel("[3]<stdout>:Epoch 1/10", Origin())
    assert (msg, origin.rank) == ("Epoch 1/10", 3)
