"""Global ranks from composed prefixes and the launchers' own topology lines (ingest/topology.py),
kubectl pods, and lines two ranks' writes split (ingest/interleave.py).

The launcher lines are copied from public threads and sample_logs/public (cited at each); the
step and error lines are the real ones of sample_logs/torch/ddp_nan_rank2.log (torch 2.13, four
ranks, rank 2 goes NaN at step 40). Where a launcher's prefix is put in front of such a line, it is
the prefix exactly as the launcher prints it (srun --label: `N: `; kubectl logs --prefix
--timestamps: `[pod/NAME/CONTAINER] RFC3339 `, kubectl pkg/cmd/logs addPrefixIfNeeded; the
timestamp comes from the kubelet inside the stream, so after the prefix), and the comment says so.
"""

from __future__ import annotations

import re

from conftest import SAMPLES
from nanscope import api
from nanscope.ingest.interleave import rejoin
from nanscope.ingest.prefixes import peel, with_topology
from nanscope.ingest.reader import Source
from nanscope.ingest.topology import learn
from nanscope.model import Origin

L = SAMPLES / "torch" / "ddp_nan_rank2.log"
# torchrun's launch configs block, accelerate#677 (sample_logs/public/333.log)
LAUNCH_CONFIGS = (SAMPLES / "public" / "333.log").read_text()
# torchrun's rendezvous result of one agent, a Kubeflow elastic job (sample_logs/public/334.log)
RENDEZVOUS = (SAMPLES / "public" / "334.log").read_text()
# DeepSpeed's launcher, oobabooga/textgen#51 (sample_logs/public/133.log, lines 3-6)
DEEPSPEED = (SAMPLES / "public" / "133.log").read_text().splitlines()[2:6]
# torchtune#2301: torchrun's own count
USING_NPROC = "I0129 19:29:59.590000 8654 torch/distributed/run.py:675] Using nproc_per_node=8."


def _rank_lines() -> list[str]:
    return [ln for ln in L.read_text().splitlines() if ln.startswith("[default")]


def _on_node(node: int, lines: list[str]) -> list[str]:
    """srun --label in front of torchrun --tee: `1: [default2]:...` (srun's task id = the node)."""
    return [f"{node}: {ln}" for ln in lines]


def _diagnose(text: str, name: str = "console.log"):
    return api.diagnose_sources([Source(name, None, text.encode())])


def _nan_finding(report):
    return next(f for f in report.findings if f.id == "nan-rank-local")


def _two_node_console(header: list[str]) -> str:
    """Node 0 runs the healthy ranks' lines, node 1 the same run's lines (its local rank 2 goes NaN)."""
    lines = _rank_lines()
    healthy = [ln for ln in lines if not ln.startswith("[default2]:")]
    return "\n".join(header + _on_node(0, healthy) + _on_node(1, lines)) + "\n"


def test_srun_over_torchrun_with_nproc_per_node_names_the_global_rank():
    report = _diagnose(_two_node_console(LAUNCH_CONFIGS.splitlines()))
    f = _nan_finding(report)
    assert f.initiating_rank == 1 * 8 + 2  # node 1, local rank 2, 8 processes per node
    assert f.first_step == 40
    assert "nproc_per_node" in (report.inputs[0].topology or "")
    labels = {s.label for s in report.ranks}
    assert "rank 10 (node1)" in labels and "rank 2 (node0)" not in labels  # node 0 had no local rank 2


def test_srun_over_torchrun_without_a_count_keeps_node_and_local_rank():
    # node 0 printed local ranks 0, 1, 3 only: no complete set to count, and no launcher line
    report = _diagnose(_two_node_console([]))
    labels = {s.label for s in report.ranks}
    assert "node1 local rank 2" in labels
    assert all(s.rank is None for s in report.ranks if s.node == "node1")
    assert report.inputs[0].topology is None


def test_torchruns_own_count_line_is_a_count():
    t = learn((USING_NPROC + "\n").encode(), whole=False)
    assert (t.per_node, t.per_node_from) == (8, "torchrun's launch configs (nproc_per_node)")


def test_a_c10d_rendezvous_does_not_number_nodes_by_srun_task():
    # torchrun warns that --node_rank is ignored under c10d (sample_logs/faults/multinode_crash/node1.log, line 1)
    warn = (SAMPLES / "faults" / "multinode_crash" / "node1.log").read_text().splitlines()[0]
    report = _diagnose(_two_node_console([warn, USING_NPROC]))
    assert all(s.rank is None for s in report.ranks if s.node == "node1")


def test_the_rendezvous_block_gives_the_nodes_first_rank():
    t = learn(RENDEZVOUS.encode(), whole=True)
    assert (t.node_index, t.file_offset, t.per_node) == (0, 0, 1)
    # under srun, each block's lines carry the node's label: node 1's block names ranks 8..15
    block = [ln for ln in RENDEZVOUS.splitlines() if ln.startswith("  ")]
    moved = [ln.replace("group_rank=0", "group_rank=1").replace("local_ranks=[0]", "local_ranks=[0, 1]")
             .replace("global_ranks=[0]", "global_ranks=[2, 3]") for ln in block]
    t = learn(("\n".join(_on_node(1, moved)) + "\n").encode(), whole=False)
    assert t.offsets == {1: 2}
    b = with_topology(Origin(), t)
    assert peel("1: [default1]:step=40, loss=nan, grad_norm=nan, lr=0.001", b)[1].rank == 3


def test_two_agents_blocks_in_one_file_are_not_one_node():
    both = RENDEZVOUS + RENDEZVOUS.replace("group_rank=0", "group_rank=1").replace("global_ranks=[0]", "global_ranks=[1]")
    t = learn(both.encode(), whole=True)
    assert t.node_index is None and t.file_offset is None


def test_deepspeed_launcher_topology():
    t = learn(("\n".join(DEEPSPEED) + "\n").encode(), whole=False)
    assert t.per_node == 1 and t.node_index == 0
    assert "DeepSpeed" in t.per_node_from


def test_local_rank_on_a_named_node_with_a_count_is_a_global_rank(tmp_path):
    node = tmp_path / "node1"
    node.mkdir()
    (node / "console.log").write_text(USING_NPROC.replace("=8.", "=4.") + "\n" + L.read_text())
    report = api.diagnose([str(node / "console.log")])
    assert _nan_finding(report).initiating_rank == 1 * 4 + 2


def test_torchrun_agent_local_rank_on_a_known_node():
    # the agent's line (sample_logs/public/303.log) as srun --label shows it on node 1
    agent = ("1: ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 "
             "(pid: 812917) of binary: /data/USER/anaconda3/envs/ColossalAI-Chat/bin/python")
    console = "\n".join(LAUNCH_CONFIGS.splitlines() + _on_node(1, _rank_lines()[:4]) + [agent]) + "\n"
    t = learn(console.encode(), whole=True)
    msg, origin = peel(agent, with_topology(Origin(), t))
    assert (origin.rank, origin.node) == (None, "node1")  # srun's label over agents is a node, not rank 1
    from nanscope.pipeline import ScanOptions, ScanResult
    from nanscope.scan import scan_all
    evs = [e for e in scan_all([Source("c.log", None, console.encode())], ScanOptions(native=False), ScanResult())
           if getattr(e, "error", None) == "worker_failed"]
    assert [e.rank for e in evs] == [8 + 3]


def test_kubectl_prefix_and_timestamps_one_pod_per_rank_yields_ranks():
    # a PyTorchJob's pods (training-operator: -master-0 is replica 0, -worker-N is N+1), each running
    # torchrun with one worker; kubectl logs --prefix --timestamps in front of the real lines
    lines = _rank_lines()
    pods = {0: "mnist-master-0", 1: "mnist-worker-0", 2: "mnist-worker-1", 3: "mnist-worker-2"}
    out = []
    for ln in lines:
        r = int(ln[len("[default"):ln.index("]")])
        out.append(f"[pod/{pods[r]}/pytorch] 2024-05-01T12:00:{len(out) % 60:02d}.000000000Z [default0]:"
                   + ln[ln.index("]:") + 2:])
    report = _diagnose("\n".join(out) + "\n", "pods.log")
    f = _nan_finding(report)
    assert (f.initiating_rank, f.first_step) == (2, 40)
    assert "each pod printed" in report.inputs[0].topology


def test_a_worker_pod_without_its_master_is_no_rank():
    t = learn(b"[pod/mnist-worker-1/pytorch] 2024-05-01T12:00:00.000000000Z [default0]:x\n", whole=True)
    msg, origin = peel("[pod/mnist-worker-1/pytorch] 2024-05-01T12:00:00.000000000Z [default0]:x", with_topology(Origin(), t))
    assert (msg, origin.rank, origin.node) == ("x", None, "mnist-worker-1")


def test_a_line_split_by_another_ranks_write_is_rejoined():
    # torchrun's tail_logfile writes a partial readline() under its prefix; the next worker's line
    # lands behind it and the rest comes later (issue 20, item 9)
    lines = L.read_text().split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.startswith("[default2]:step=40,"))
    j = next(k for k, ln in enumerate(lines) if k > i and ln.startswith("[default3]:"))
    cut = lines[i].index("loss=") + 3
    split = lines[:i] + lines[i + 1:j] + [lines[i][:cut] + lines[j], "[default2]:" + lines[i][cut:]] + lines[j + 1:]
    report = _diagnose("\n".join(split))
    f = _nan_finding(report)
    assert (f.initiating_rank, f.first_step) == (2, 40)
    ev = f.matches[0].events[0]
    assert ev.text == "[default2]:step=40, loss=nan, grad_norm=nan, lr=0.001" and ev.loc.line == j + 1


def test_open_mpi_interleaving_is_rejoined():
    # spellml/examples#17 (Spell's own `DATE: running: ` in front of Open MPI's --tag-output)
    region = (b"May 18, 2020, 11:47:18: running: [1,1]<stdout>:Train Epoch: 10 [10240/30000 (34%)]\tLoss: 0.121522"
              b"[1,0]<stdout>:Train Epoch: 10 [10240/30000 (34%)]\tLoss: 0.241982\n"
              b"May 18, 2020, 11:47:18: running: [1,1]<stdout>:\n")
    assert rejoin(region).split(b"\n") == [
        b"May 18, 2020, 11:47:18: running: [1,0]<stdout>:Train Epoch: 10 [10240/30000 (34%)]\tLoss: 0.241982",
        b"May 18, 2020, 11:47:18: running: [1,1]<stdout>:Train Epoch: 10 [10240/30000 (34%)]\tLoss: 0.121522", b""]


def test_a_fragment_with_no_continuation_stays_as_printed():
    region = b"[default1]:step=40, lo[default0]:step=40, loss=2.0467, grad_norm=nan, lr=0.001\n"
    assert rejoin(region) == region
    stacked = b"[default0]:[rank0]:[W1129 19:37:42.411 reducer.cpp:1529] Warning\n0: [default1]:[rank9]: Traceback\n"
    assert rejoin(stacked) == stacked


def test_nemo_run_replicas_over_torchrun_with_a_count():
    # NeMo-Run prints each torchx replica's lines under `role/N ` (nemo_run/run/logs.py), in front of
    # torchrun's --tee prefix (sample_logs/public/504.log: `i.pretrain/0 [default2]:[rank2]: ...`)
    lines = _rank_lines()
    console = "\n".join([USING_NPROC] + [f"i.pretrain/1 {ln}" for ln in lines]) + "\n"
    f = _nan_finding(_diagnose(console))
    assert f.initiating_rank == 8 + 2


def test_sibling_files_that_each_print_several_local_ranks_are_one_file_per_node(tmp_path):
    # Slurm --output=job-%t.out with one torchrun agent per task: job-0.out, job-1.out are nodes,
    # not ranks (each holds [default0]..[default3]); torchrun's count names the global rank
    lines = _rank_lines()
    healthy = [ln for ln in lines if not ln.startswith("[default2]:")]
    (tmp_path / "job-0.out").write_text("\n".join([USING_NPROC.replace("=8.", "=4.")] + healthy) + "\n")
    (tmp_path / "job-1.out").write_text("\n".join([USING_NPROC.replace("=8.", "=4.")] + lines) + "\n")
    report = api.diagnose([str(tmp_path)])
    assert _nan_finding(report).initiating_rank == 1 * 4 + 2
    assert {s.label for s in report.ranks} >= {"rank 0 (node0)", "rank 6 (node1)"}


def _tee(seed: int, any_cut: bool = False) -> tuple[bytes, dict]:
    """What torchrun's tail_logfile threads write to one stdout when each worker's readline() may
    return a partial line (at most one cut per line; unless any_cut, after a letter or `=,.:`, where
    the rule can tell a split from a prefix): `[defaultN]:` + piece, pieces of different
    workers in a random order, each worker's in its own order. Returns the output and, per worker,
    its lines as the worker printed them."""
    import random

    rng = random.Random(seed)
    per: dict = {}
    for ln in _rank_lines():
        k = ln[:ln.index("]:") + 2]
        per.setdefault(k, []).append(ln[len(k):])
    queues = {k: [] for k in per}
    for k, msgs in per.items():
        for m in msgs:
            cuts = [c for c in range(1, len(m) - 1) if any_cut or m[c - 1].isalpha() or m[c - 1] in "=,.:"]
            if cuts and rng.random() < 0.3:
                cut = rng.choice(cuts)
                queues[k] += [m[:cut], m[cut:] + "\n"]
            else:
                queues[k].append(m + "\n")
    out = []
    while any(queues.values()):
        k = rng.choice([k for k, q in queues.items() if q])
        out.append(k + queues[k].pop(0))
    return "".join(out).encode(), per


def test_rejoin_moves_bytes_and_never_adds_a_line():
    # any cut, also where the rule cannot tell a split (after a digit and a blank: a timestamp's end)
    for seed in range(20):
        data, _ = _tee(seed, any_cut=True)
        got = rejoin(data)
        assert got.count(b"\n") == data.count(b"\n")
        text = [sorted(re.sub(rb"\[default\d\]:", b"", x)) for x in (got, data)]
        assert text[0] == text[1]  # the workers' text, moved, none lost or made up


def test_rejoin_restores_every_workers_lines_from_tee_interleaving():
    for seed in range(20):
        data, per = _tee(seed)
        got = rejoin(data)
        assert got.count(b"\n") == data.count(b"\n")
        lines = got.decode().split("\n")
        for k, msgs in per.items():
            mine = [ln[len(k):] for ln in lines if ln.startswith(k) and ln[len(k):]]
            assert [m for m in mine] == [m for m in msgs if m], (seed, k)


# pdsh (DeepSpeed's default multi-node launcher) puts `host: ` in front of every line it relays.
# The launcher lines are verbatim from huggingface/accelerate#1317 (a two-host pdsh job; the mapping
# names hosts as `user@host`, pdsh prints the host alone) and deepspeedai/DeepSpeed#1923 (hostfile
# `algo-1 slots=4 ...`).
PDSH_MAPPING = ("104.171.201.171: [2023-04-16 02:38:19,528] [INFO] [launch.py:246:main] global_rank_mapping=defaultdict("
                "<class 'list'>, {'setup@104.171.201.171': [0, 1, 2, 3, 4, 5, 6, 7], 'setup@104.171.201.172': [8, 9, 10, 11, "
                "12, 13, 14, 15]})")
NAMED_MAPPING = ("[2022-04-28 04:19:02,153] [INFO] [launch.py:115:main] global_rank_mapping=defaultdict(<class 'list'>, "
                 "{'algo-1': [0, 1, 2, 3, 4, 5, 6, 7]})")


def test_pdsh_host_and_deepspeeds_mapping_give_the_global_rank():
    # ddp_nan_rank2's torchrun lines as the second host would relay them: local rank 2 there is rank 10
    text = "\n".join([PDSH_MAPPING] + [f"104.171.201.172: {ln}" for ln in L.read_text().splitlines()]) + "\n"
    report = _diagnose(text)
    assert _nan_finding(report).initiating_rank == 10
    assert "global_rank_mapping" in (report.inputs[0].topology or "")
    assert "rank 10 (104.171.201.172)" in {s.label for s in report.ranks}


def test_pdsh_host_without_a_mapping_is_a_node_not_a_rank():
    text = "\n".join(f"104.171.201.172: {ln}" for ln in L.read_text().splitlines()) + "\n"
    f = _nan_finding(_diagnose(text))
    assert f.initiating_rank is None


def test_a_pdsh_host_name_is_peeled_where_the_input_shows_it_as_one():
    # 1225 (hiyouga/LlamaFactory#8871): `192.168.13.81: [rank19]:[E808 ...] [PG ID 1 PG GUID 1 Rank 19] ...`
    line = (SAMPLES / "public" / "1225.log").read_text().splitlines()[3]
    msg, origin = peel(line, Origin())
    assert (origin.rank, origin.node) == (19, "192.168.13.81") and msg.startswith("[E808 10:31:07")
    # a name is a host only before a prefix / DeepSpeed's stamp, or once the input showed it so
    head = f"algo-1: {NAMED_MAPPING}\n".encode()
    base = with_topology(Origin(), learn(head, whole=True))
    agent = "W1129 21:15:15.891000 5293 torch/distributed/run.py:874] *****************************************"
    msg, origin = peel(f"algo-1: {agent}", base)
    assert (msg, origin.node) == (agent, "algo-1")
    for text in ("RuntimeError: CUDA error: unspecified launch failure", "Epoch: [23][280/715]    Time 0.290 (0.318)"):
        assert peel(text, base) == (text, base)
        assert peel(text, Origin()) == (text, Origin())
