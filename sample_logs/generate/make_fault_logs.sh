#!/usr/bin/env bash
# Regenerate the REAL failure sample logs in sample_logs/faults/.
#
# Every log is the unedited stdout+stderr of an actual run of torch_faults.py
# (single process, torchrun with 4 CPU ranks over gloo, or two torchrun agents
# forming a 2-node job on localhost), except for one post-processing step
# (rewrite_paths below, as in make_torch_logs.sh) that replaces
# machine-specific absolute paths and host names with neutral ones:
#   <python prefix of TORCH_PY / HF_PY, a venv> -> /venv
#   <base Python install>/lib/ (stdlib)          -> /usr/local/lib/
#   <repo root>                                 -> /workspace
#   <scratch dir used for the runs>             -> /workspace/run
#   <this machine's hostname>                   -> node0 (only if >= 4 chars)
# Re-running reproduces the committed files modulo timestamps, pids, ports and
# the interleaving of lines from different ranks / nodes.
#
# Needs torch==2.13.0 (CPU build); the safetensors logs need a Python with
# torch + safetensors (HF_PY; skipped if it has no safetensors).  Usage:
#   TORCH_PY=/work/scratch/venv-torch/bin/python HF_PY=/work/scratch/venv-hf/bin/python \
#     bash sample_logs/generate/make_fault_logs.sh
# Takes ~2 minutes on 2 cores.  ONLY="name1 name2" regenerates only those logs.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="$REPO/sample_logs/faults"
TORCH_PY="${TORCH_PY:-/work/scratch/venv-torch/bin/python}"
HF_PY="${HF_PY:-/work/scratch/venv-hf/bin/python}"
SCRIPT="$REPO/sample_logs/generate/torch_faults.py"
WORK_TAG=faults
# shellcheck source=torch_common.sh
. "$HERE/torch_common.sh"

wanted() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

single() {  # single <python> <name> <args...>
  local py="$1"; shift
  local name="$1"; shift
  wanted "$name" || return 0
  echo "== $name: python torch_faults.py $*" >&2
  "$py" "$SCRIPT" "$@" > "$OUTDIR/$name.log" 2>&1
  echo "   exit code $?" >&2
  rewrite_paths "$OUTDIR/$name.log"
}

ddp() {  # ddp <name> <script args...>
  local name="$1"; shift
  wanted "$name" || return 0
  echo "== $name: torchrun --standalone --nproc_per_node=4 --tee 3 torch_faults.py $*" >&2
  "$TORCHRUN" --standalone --nproc_per_node=4 --tee 3 "$SCRIPT" "$@" 2>&1 | tee "$OUTDIR/$name.log" > /dev/null
  echo "   exit code ${PIPESTATUS[0]}" >&2
  rewrite_paths "$OUTDIR/$name.log"
}

free_port() {
  "$TORCH_PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# 1. Anomaly mode: RMS norm with eps outside the sqrt; an all-zero row at step 23
#    -> SqrtBackward0 returns nan in backward.
single "$TORCH_PY" anomaly_nan_op anomaly-nan --steps 40 --fault-step 23

# 2. DataLoader(num_workers=2): the worker fetching batch 25 SIGKILLs itself.
single "$TORCH_PY" dataloader_worker_killed dataloader-kill --steps 40 --fault-step 25
#    Same fault, earlier step.  Timing-dependent: in about half the runs the
#    main process is unpickling a batch from the dying worker and the error
#    is chained after "ConnectionResetError: [Errno 104] Connection reset by
#    peer" (the committed file has that form; other runs give the plain form).
single "$TORCH_PY" dataloader_worker_killed_recv dataloader-kill --steps 30 --fault-step 15

# 3. Checkpoints cut short.
single "$TORCH_PY" checkpoint_corrupt ckpt-truncated --hidden 2048       # half of ~350 KB
single "$TORCH_PY" checkpoint_empty ckpt-truncated --cut 0 --out empty  # 0 bytes
if "$HF_PY" -c 'import safetensors, torch' 2>/dev/null; then
  single "$HF_PY" safetensors_truncated safetensors-truncated --out st_half            # half
  single "$HF_PY" safetensors_header_truncated safetensors-truncated --cut 100 --out st_head
else
  echo "== safetensors not importable with $HF_PY: skipped" >&2
fi

# 4. Two-node job on localhost: two torchrun agents, 2 workers each, c10d
#    rendezvous; global rank 3 (node 1, local rank 1) raises at step 25.
#    Each agent's console goes to its own file, and both agents also append
#    to one shared file (as when every node's output lands in one job log).
MN="$OUTDIR/multinode_crash"
if wanted multinode_crash; then
rm -rf "$MN"; mkdir -p "$MN"
CONSOLE="$OUTDIR/multinode_crash_console.log"
: > "$CONSOLE"
PORT="$(free_port)"
echo "== multinode_crash: 2 x torchrun --nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d --rdzv_endpoint=localhost:$PORT --rdzv_id=job42 --node_rank=N --tee 3 torch_faults.py ddp --steps 40 --fault crash --fault-rank 3 --fault-step 25" >&2
for node in 0 1; do
  (
    "$TORCHRUN" --nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d \
      --rdzv_endpoint="localhost:$PORT" --rdzv_id=job42 --node_rank="$node" --tee 3 \
      "$SCRIPT" ddp --steps 40 --fault crash --fault-rank 3 --fault-step 25 2>&1 \
      | tee -a "$CONSOLE" > "$MN/node$node.log"
    echo "   node $node exit code ${PIPESTATUS[0]}" >&2
  ) &
  # c10d rendezvous ignores --node_rank and orders nodes by (host, agent pid):
  # start node 0 first so that it gets group rank 0.
  sleep 2
done
wait
rewrite_paths "$MN/node0.log"; rewrite_paths "$MN/node1.log"; rewrite_paths "$CONSOLE"
grep -q "rank 3/4 (node 1, local_rank 1)" "$MN/node1.log" \
  || echo "   WARNING: node1.log does not hold global rank 3; ground truth in README is wrong for this run" >&2
fi

# 5. Loss curves (single process).
single "$TORCH_PY" loss_spike lr-spike --lr 1e-2 --steps 140 --fault-step 60 --lr-mult 50 --spike-len 1
single "$TORCH_PY" loss_divergence lr-diverge --lr 1.0 --steps 60
single "$TORCH_PY" loss_zero loss-zero --steps 40 --fault-step 20

# 6. DDP, 4 ranks.
ddp ddp_straggler ddp --steps 40 --fault straggler --fault-rank 2 --fault-step 20 --sleep 0.2
ddp ddp_sigkill_rank2 ddp --steps 40 --fault sigkill --fault-rank 2 --fault-step 20
ddp ddp_nan_persistent_rank1 ddp --steps 60 --fault input-nan --fault-rank 1 --fault-step 30
# Rank 2's prefetch thread dies at step 20 ("Exception in thread prefetch"), the process lives on and
# waits for the batch; the other ranks' allreduce times out after 20 s (gloo), torchrun tears down.
ddp ddp_thread_exception ddp --steps 40 --fault thread-exception --fault-rank 2 --fault-step 20 --pg-timeout 20
# Rank 1 catches an exception at step 20, prints its traceback and trains on: a healthy run.
ddp ddp_handled_exception ddp --steps 40 --fault handled-exception --fault-rank 1 --fault-step 20

ls -l "$OUTDIR" "$MN" >&2
