"""nanscope/ingest/prefixes.py: launcher prefixes peeled off real lines, and rank hints from file paths.

Where a prefix is shown in front of a message that came from elsewhere, the comment says so; the
prefix shapes themselves are what the launchers print (torchrun --tee, srun --label, mpirun
--tag-output, Ray, vLLM, docker compose, kubectl logs --prefix/--timestamps).
"""

from __future__ import annotations

import pytest

from nanscope.ingest.prefixes import origin_from_path, peel
from nanscope.model import Origin

PEEL = [
    # (line, message after peeling, rank, local_rank)
    # torchrun --tee (sample_logs/torch/ddp_healthy.log)
    ("[default3]:step=0, loss=2.3468, grad_norm=0.3615, lr=0.001", "step=0, loss=2.3468, grad_norm=0.3615, lr=0.001", 3, 3),
    # torch's [rankN]: (modelscope/DiffSynth-Studio#458)
    ("[rank4]:[E318 07:39:53.792772442 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 9 Rank 4] Exception (either an error "
     "or timeout) detected by watchdog at work: 610, last enqueued NCCL work: 616, last completed NCCL work: 609.",
     "[E318 07:39:53.792772442 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 9 Rank 4] Exception (either an error or "
     "timeout) detected by watchdog at work: 610, last enqueued NCCL work: 616, last completed NCCL work: 609.", 4, None),
    # stacked: torchrun --tee around torch's rank prefix (sample_logs/torch, torch 2.13)
    ("[default1]:[rank1]: Traceback (most recent call last):", "Traceback (most recent call last):", 1, 1),
    ("[default0]:[rank0]:[W1129 19:37:42.411 reducer.cpp:1529] Warning", "[W1129 19:37:42.411 reducer.cpp:1529] Warning", 0, 0),
    # srun --label (padded to the width of the largest task id)
    ("3: iteration 10/100 | lm loss: 2.5E+00 |", "iteration 10/100 | lm loss: 2.5E+00 |", 3, None),
    (" 3: iteration 10/100 | lm loss: 2.5E+00 |", "iteration 10/100 | lm loss: 2.5E+00 |", 3, None),
    ("29: Epoch 0:   1%|          | 795/77225", "Epoch 0:   1%|          | 795/77225", 29, None),
    # a two-number log_line_prefix_template (NVIDIA/nccl#1837): peeled, but which number is the rank it does not say
    ("[trainer0|0]:ncclInternalError: Internal check failed.", "ncclInternalError: Internal check failed.", None, None),
    # Open MPI --tag-output
    ("[1,3]<stdout>:step 12 | loss nan", "step 12 | loss nan", 3, None),
    ("[1,0]<stderr>:Traceback (most recent call last):", "Traceback (most recent call last):", 0, None),
    # Ray actors (the rank comes from torch's prefix behind it)
    ("(RayWorkerWrapper pid=4009, ip=10.0.0.1) [rank3]:[E219 08:58:32.606233339 ProcessGroupNCCL.cpp:629] x",
     "[E219 08:58:32.606233339 ProcessGroupNCCL.cpp:629] x", 3, None),
    ("(WorkerDict pid=3490362) [rank1]:[E1118 20:32:23.955028747 ProcessGroupNCCL.cpp:629] x",
     "[E1118 20:32:23.955028747 ProcessGroupNCCL.cpp:629] x", 1, None),
    ("(pid=4009, ip=10.0.0.1) hello", "hello", None, None),
    # vLLM process tags (vllm-project/vllm#43295, #26612, #32105, vllm-ascend#5117, LMCache#1361, SergiioB/...#4)
    ("(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: x", "INFO 05-19 10:13:11 [loggers.py:271] Engine 000: x", None, None),
    ("(EngineCore_0 pid=3945189) INFO 08-21 07:17:09 [scheduler.py:495] x", "INFO 08-21 07:17:09 [scheduler.py:495] x", None, None),
    ("(EngineCore_DP0 pid=1937911) ERROR 10-11 10:42:14 [core.py:708] EngineCore failed to start.",
     "ERROR 10-11 10:42:14 [core.py:708] EngineCore failed to start.", None, None),
    ("(EngineCore pid=316) ValueError: x", "ValueError: x", None, None),
    ("(VllmWorker rank=2 pid=4242) INFO 05-20 00:55:13 [gpu_worker.py:424] x", "INFO 05-20 00:55:13 [gpu_worker.py:424] x", 2, None),
    ("(VllmWorker-0 pid=4242) INFO x", "INFO x", 0, None),
    # a tensor-parallel worker index is the worker's rank; a pipeline stage index (PP0) is not
    ("(Worker_TP1 pid=224) INFO 12-17 09:16:13 [multiproc_executor.py:599] WorkerProc shutting down.",
     "INFO 12-17 09:16:13 [multiproc_executor.py:599] WorkerProc shutting down.", 1, None),
    ("(Worker_PP0 pid=3258192) INFO 01-11 03:46:46 [gpu_worker.py:358] Available KV cache memory: 9.05 GiB",
     "INFO 01-11 03:46:46 [gpu_worker.py:358] Available KV cache memory: 9.05 GiB", None, None),
    # with expert parallelism the EP index follows (a public vLLM Llama-4 FP8 report); with DP in front the TP
    # index is only the rank inside one engine (vllm-project/vllm-ascend#3800)
    ("(Worker_TP1_EP1 pid=56590) ERROR 01-22 10:13:03 [multiproc_executor.py:766] WorkerProc failed to start.",
     "ERROR 01-22 10:13:03 [multiproc_executor.py:766] WorkerProc failed to start.", 1, None),
    ("(Worker_DP0_TP6_EP6 pid=27095) INFO 10-27 11:51:49 [monitor.py:34] torch.compile takes 67.60 s in total",
     "INFO 10-27 11:51:49 [monitor.py:34] torch.compile takes 67.60 s in total", None, None),
    # TP0 of the second pipeline stage is not rank 0 (a public Qwen3-VL-235B report with -pp 2)
    ("(Worker_PP1_TP0 pid=72466) INFO 09-24 20:54:48 [gpu_model_runner.py:2539] Starting to load model x",
     "INFO 09-24 20:54:48 [gpu_model_runner.py:2539] Starting to load model x", None, None),
    # docker compose (vllm-project/vllm-ascend#5117): service, then vLLM's tag
    ("qwen3-vl-32b  | (APIServer pid=104) ERROR 12-17 09:16:13 [async_llm.py:480] AsyncLLM output_handler failed.",
     "ERROR 12-17 09:16:13 [async_llm.py:480] AsyncLLM output_handler failed.", None, None),
    ("svc-1  | hello", "hello", None, None),
    # kubectl logs --prefix
    ("[pod/trainer-0/main] step=1, loss=2.3", "step=1, loss=2.3", None, None),
    # NeMo-Run's task prefix (sample_logs/public/504.log, nemo_run/run/logs.py): the replica is a node
    ("i.pretrain/0 [default2]:[rank2]: RuntimeError: Rank 2, node dcfai-xe9680-01, device 2, iteration -1: x",
     "RuntimeError: Rank 2, node dcfai-xe9680-01, device 2, iteration -1: x", 2, 2),
    # a user's own tag without a colon (mlc-ai/pith-train#47)
    ("[rank0] layer_partition: 48 layers / 4 stages -> [12, 12, 12, 12]",
     "layer_partition: 48 layers / 4 stages -> [12, 12, 12, 12]", 0, None),
    # a user's print that starts with its rank (sample_logs/faults/ddp_straggler.log)
    ("[default1]:rank 1: finished 40 steps in 4.5s", "finished 40 steps in 4.5s", 1, 1),
    ("rank 0: finished 60 steps in 0.1s", "finished 60 steps in 0.1s", 0, None),
]


@pytest.mark.parametrize("line,msg,rank,local", PEEL)
def test_peel(line, msg, rank, local):
    got, origin = peel(line, Origin())
    assert got == msg
    assert (origin.rank, origin.local_rank) == (rank, local)


NOT_PREFIXES = [
    "INFO 05-19 10:13:11 [loggers.py:271] Engine 000: x",  # vLLM's logger prefix stays (timestamps are read from it)
    "[E1129 19:37:42.411 reducer.cpp:1529] x",  # glog header
    "[2024-04-17 09:42:26] INFO     [olmo.train:816, rank=0] [step=1/739328]",
    "Step 3: loss 2.1",
    " 40%|████      | 20/50 [00:02<00:03,  9.10it/s]",
    "12:30:01 training started",
    "[441280.839852] Out of memory: Killed process 698405 (python)",  # dmesg uptime
    # a process named in a message is not a prefix (torch.multiprocessing spawn, LeeDoYup/FixMatch-pytorch#2)
    "-- Process 0 terminated with the following error:",
    # rank in prose (sample_logs/torch/ddp_nan_rank2.log's own header line shape is `rank 2/4 ...`)
    "rank 2/4 (node 1, local_rank 0): torch 2.13.0+cpu, steps 40, batch 64",
]


@pytest.mark.parametrize("line", NOT_PREFIXES)
def test_lines_without_launcher_prefix_are_left_alone(line):
    base = Origin(rank=7)
    assert peel(line, base) == (line, base)


def test_line_prefix_beats_file_name():
    base = origin_from_path("logs/rank_3.log")
    assert base.rank == 3
    assert peel("[rank1]:x", base)[1].rank == 1
    assert peel("plain line", base)[1].rank == 3


def test_local_rank_on_a_named_node_is_not_a_global_rank():
    base = origin_from_path("job/node1/console.log")
    _, origin = peel("[default3]:x", base)
    assert (origin.rank, origin.local_rank, origin.node) == (None, 3, "node1")


def test_vllm_worker_tp_tag():
    msg, origin = peel("(VllmWorker TP0 pid=1234) INFO 04-17 08:12:24 [gpu_worker.py:1] x", Origin())
    assert msg == "INFO 04-17 08:12:24 [gpu_worker.py:1] x"


def test_kubectl_timestamps():
    # tenstorrent/tt-inference-server#3359 (the message is cut there)
    msg, _ = peel("2026-05-12T08:01:39.331095044Z (APIServer pid=1) INFO 05-12 08:01:39 [loggers.py:271] Engine 000: x", Origin())
    assert msg == "INFO 05-12 08:01:39 [loggers.py:271] Engine 000: x"


def test_kubectl_prefix_and_timestamps():
    msg, _ = peel("[pod/trainer-0/main] 2024-01-01T00:00:00.000000000Z step=1, loss=2.3", Origin())
    assert msg == "step=1, loss=2.3"


PATHS = [
    ("rank_3.log", 3, None),
    ("rank3.log", 3, None),
    ("node1/rank_3.out", 3, "node1"),
    ("logs/node2/worker.log", None, "node2"),
    ("/tmp/torchelastic_x/abc_def/attempt_0/3/stdout.log", 3, None),
    ("attempt_1/12/stderr.log", 12, None),
    ("rank_9/rank_2.log", 2, None),  # the file's own name wins over its folder
    ("rank_9/console.log", 9, None),
    ("worker-4.log", 4, None),
    ("job/rank_5/stdout.stderr", 5, None),
    # a rank inside a descriptive name is a person's label, not a per-rank layout
    ("run_rank9/ddp_nan_rank2.log", None, None),
    ("nan_on_rank3/console.log", None, None),
    ("job_node3_failed/console.log", None, None),
    ("017.log", None, None),  # a number alone is a neutral name, not a rank
    ("slurm-4242.out", None, None),  # a Slurm job id is not a rank
    ("train.log", None, None),
    ("frank3.log", None, None),  # `rank` inside a word is not a rank
    (None, None, None),
]


@pytest.mark.parametrize("path,rank,node", PATHS)
def test_origin_from_path(path, rank, node):
    o = origin_from_path(path)
    assert (o.rank, o.node) == (rank, node)


def test_torchelastic_attempt_folder_under_a_node_folder_is_a_local_rank():
    """torchelastic names attempt_K/<N>/ by local rank; under node1/ (one --log-dir per agent, as in
    sample_logs/multinode/restart_attempts_logdir) N=1 is not global rank 1, and a [rankN]: prefix in
    the file keeps that local rank."""
    o = origin_from_path("logs/node1/job_x1/attempt_0/1/stderr.log")
    assert (o.rank, o.local_rank, o.node) == (None, 1, "node1")
    msg, got = peel("[rank3]: ValueError: bad sample", o)
    assert (msg, got.rank, got.local_rank, got.node) == ("ValueError: bad sample", 3, 1, "node1")


def test_sibling_files_that_differ_in_a_trailing_number_are_a_per_rank_family():
    from nanscope.ingest.prefixes import layout_ranks

    family = [f"out/job-4242-{r}.out" for r in range(4)]
    assert layout_ranks(family + ["out/other.log"]) == {p: r for r, p in enumerate(family)}
    assert layout_ranks(["slurm-4242.out", "slurm-4243.out"]) == {}  # job ids: no rank 0
    assert layout_ranks(["a/train_0.log"]) == {}  # a lone file is no family
    assert layout_ranks(["logs/2024-05-01.log", "logs/2024-05-02.log"]) == {}
    assert origin_from_path("out/job-4242-3.out", layout_rank=3).rank == 3


@pytest.mark.parametrize("line,rank,local,node", [
    # srun --label in front of torchrun --tee: the srun task is the node's agent, [defaultM] its local rank
    ("0: [default3]:step 5 | loss nan", None, 3, "node0"),
    ("1: [default3]:step 5 | loss nan", None, 3, "node1"),
    # Slurm pads the task id to the width of the largest one: "%*d: " (17.11+), "%0*d: " before
    # (SchedMD/slurm src/common/write_labelled_message.c; 11+ agents)
    (" 1: [default3]:step 5 | loss nan", None, 3, "node1"),
    ("01: [default3]:step 5 | loss nan", None, 3, "node1"),
    # torch's own [rankK]: behind them names the global rank
    ("1: [default3]:[rank11]: Traceback (most recent call last):", 11, 3, "node1"),
    # srun --label alone: the task is the rank
    ("5: step 5 | loss nan", 5, None, None),
])
def test_srun_label_over_torchrun_tee_is_node_and_local_rank(line, rank, local, node):
    _, origin = peel(line, Origin())
    assert (origin.rank, origin.local_rank, origin.node) == (rank, local, node)


# Prefixes in front of torch's rank prefix, and SGLang's per-rank logger prefix
# (hiyouga/LlamaFactory#7396, huggingface/transformers paste in sample_logs/public/315.log,
# sgl-project/sglang#36081, #28702, #30532).
MORE_PEEL = [
    ("[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout",
     "[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout", 0),
    ("2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory.", 3),
    ("[2026-08-23 09:11:04 TP6 EP6] Scheduler hit an exception: Traceback (most recent call last):",
     "Scheduler hit an exception: Traceback (most recent call last):", 6),
    ("ERROR 2026-06-15T14:10:59.392128409Z [2026-06-15 14:10:59 TP7] Scheduler hit an exception: Traceback (most recent call last):",
     "Scheduler hit an exception: Traceback (most recent call last):", 7),
    ("  [TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
     "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", 0),
    # with data parallelism TPn is a rank within one DP replica, not the global rank
    ("[2025-03-08 12:29:21 DP1 TP0] Load weight end.", "Load weight end.", None),
]


@pytest.mark.parametrize("line,msg,rank", MORE_PEEL)
def test_peel_more(line, msg, rank):
    got, origin = peel(line, Origin())
    assert (got, origin.rank) == (msg, rank)


def test_a_time_stamp_alone_is_not_a_prefix():
    line = "2024-11-20 14:37:16 DEBUG:filelock:Lock 140341412642880 acquired on /root/.triton/autotune/x.lock"
    assert peel(line, Origin()) == (line, Origin())


def test_nemo_run_replica_is_a_node_not_a_rank():
    # NVIDIA-NeMo/Run#251: the agent's own line under NeMo-Run's `role/replica ` prefix
    line = ("llama32_1b/0 I0601 20:17:03.073000 616467 site-packages/torch/distributed/elastic/agent/server/api.py:677] "
            "[default] Rendezvous'ing worker group")
    msg, origin = peel(line, Origin())
    assert msg.startswith("I0601 20:17:03.073000") and (origin.rank, origin.node) == (None, "node0")
    assert peel("i.pretrain/1 [default3]:x", Origin())[1] == Origin(rank=None, local_rank=3, node="node1")


def test_srun_label_alone_is_the_node_agent_once_the_file_shows_label_over_tee():
    """sample_logs/multinode/extra_collective.log (srun --label over torchrun --tee, 2 nodes): node 1's
    agent prints `1: torch.distributed.DistNetworkError: ...` with no [defaultM]: that is the agent of
    node 1, not rank 1; the workers' `1: [default0]:[rank2]:` lines keep their rank."""
    from conftest import SAMPLES
    from nanscope import api
    from nanscope.model import ErrorEvent

    evs = [e for e in api.events([str(SAMPLES / "multinode" / "extra_collective.log")]) if isinstance(e, ErrorEvent)]
    agent = [e for e in evs if "DistNetworkError" in (e.text or "") and e.text.startswith("1: torch.")]
    assert agent and all(e.rank is None and e.origin.node == "node1" for e in agent)
    worker = [e for e in evs if (e.text or "").startswith("1: [default0]:[rank2]: RuntimeError")]
    assert worker and all(e.rank == 2 for e in worker)
