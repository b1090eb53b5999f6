#!/usr/bin/env bash
# Regenerate the REAL two-node sample logs in sample_logs/multinode/.
#
# Every job is two torchrun agents on this machine (--nnodes=2 --nproc_per_node=2, c10d
# rendezvous on localhost, --tee 3), each running torch_multinode.py on 2 CPU workers over gloo:
# global rank = node * 2 + local rank.  As under `srun --label torchrun ...` (one Slurm task per
# node), each agent's stdout+stderr is prefixed line by line with its task id and both are
# appended to one console file.  The label is Slurm's: src/common/write_labelled_message.c writes
# "%*d: " (task id right-aligned, space-padded; Slurm 17.11+, commit 748ebdde09; "%0*d: ",
# zero-padded, in 1.4-17.02) before every line, width = _wid(num_tasks) from src/api/step_io.c
# (the digits of num_tasks - 1).  With 2 tasks both give "0: " / "1: "; with 11..100 tasks
# " 3: " (or "03: " before 17.11).
#
# The only post-processing is rewrite_paths below (as in make_torch_logs.sh / make_fault_logs.sh):
#   <python prefix of TORCH_PY, a venv> -> /venv
#   <base Python install>/lib/ (stdlib) -> /usr/local/lib/
#   <repo root>                         -> /workspace
#   <scratch dir used for the runs>     -> /workspace/run
#   <this machine's hostname>           -> node0 (only if >= 4 chars and not localhost)
# Re-running reproduces the committed files modulo timestamps, pids, ports, torchelastic's
# random run-directory suffix and the interleaving of lines from different ranks / nodes.
#
# Needs torch==2.13.0 (CPU build).  Usage:
#   TORCH_PY=/work/venvs/fixtures/bin/python bash sample_logs/generate/make_multinode_logs.sh [name...]
# Takes ~4 minutes on 2 cores (the stall waits for a 10 s gloo timeout).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="$REPO/sample_logs/multinode"
TORCH_PY="${TORCH_PY:-/work/venvs/fixtures/bin/python}"
SCRIPT="$REPO/sample_logs/generate/torch_multinode.py"
ONLY=" ${*:-} "
WORK_TAG=multinode
# shellcheck source=torch_common.sh
. "$HERE/torch_common.sh"

free_port() {
  "$TORCH_PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wanted() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }

# job <name> <extra torchrun args ("" or words)> <script args...>
# Two agents; their labelled output is appended to $OUTDIR/<name>.log.
job() {
  local name="$1"; shift
  local extra="$1"; shift
  wanted "$name" || return 0
  local console="$OUTDIR/$name.log" port node
  : > "$console"
  port="$(free_port)"
  echo "== $name: 2 x torchrun --nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d --rdzv_endpoint=localhost:PORT --rdzv_id=$name --node_rank=N --tee 3 $extra torch_multinode.py $* | sed 's/^/N: /' >> $name.log" >&2
  for node in 0 1; do
    (
      local nodeextra="${extra//@NODE@/$node}"
      # shellcheck disable=SC2086
      "$TORCHRUN" --nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d \
        --rdzv_endpoint="localhost:$port" --rdzv_id="$name" --node_rank="$node" --tee 3 $nodeextra \
        "$SCRIPT" "$@" 2>&1 | sed -u "s/^/$node: /" >> "$console"
      echo "   node $node exit code ${PIPESTATUS[0]}" >&2
    ) &
    # c10d rendezvous ignores --node_rank and orders nodes by (host, agent pid):
    # start node 0 first so that it gets group rank 0.
    sleep 2
  done
  wait
  rewrite_paths "$console"
}

# 1. srun --label over --tee, healthy baseline (a trap: nothing to report).
job srun_healthy "" --steps 30

# 2. NaN input on global rank 3 (node 1, local rank 1) at step 12; no skip, so the NaN update
#    reaches every rank's weights and all print loss nan from step 13.
job srun_nan_one_rank "" --steps 30 --fault input-nan --fault-rank 3 --fault-step 12

# 3. NaN input on every rank at step 12.
job srun_nan_all_ranks "" --steps 30 --fault input-nan --fault-rank -1 --fault-step 12

# 4. FSDP2 (fully_shard on fc1, fc2 and the root), NaN input on global rank 1 at step 12.
#    (FSDP1 does not run here: "FSDP needs a non-CPU accelerator device".)
job fsdp2_nan_one_rank "" --wrap fsdp2 --steps 30 --fault input-nan --fault-rank 1 --fault-step 12

# 5. Global rank 2 (node 1, local 0) sleeps 25 s inside step 10, before its backward (and the
#    gradient all-reduce); gloo's timeout is 10 s.
job stall_timeout "" --steps 30 --fault stall --fault-rank 2 --fault-step 10 --sleep 25 --pg-timeout 10

# 6. Global rank 1 all-reduces its loss once more than the others from step 10 on: its extra
#    1-element all_reduce meets the others' next DDP gradient bucket all-reduce.
job extra_collective "" --steps 30 --fault extra-collective --fault-rank 1 --fault-step 10 --pg-timeout 15

# 6b. The same job with TORCH_DISTRIBUTED_DEBUG=DETAIL (torch would check every collective's
#     fingerprint): on this CPU build every worker dies of SIGSEGV before its first line.
TORCH_DISTRIBUTED_DEBUG=DETAIL job debug_detail_segv "" --steps 30 --fault extra-collective --fault-rank 1 --fault-step 10 --pg-timeout 15

# 7. --max-restarts 1: global rank 3 raises at step 10 of attempt 0 only; attempt 1 runs to the end.
#    Each agent also keeps torchrun's per-rank files (--log-dir).
if wanted restart_attempts; then
  rm -rf "$OUTDIR/restart_attempts_logdir"
  job restart_attempts "--max-restarts=1 --log-dir=$OUTDIR/restart_attempts_logdir/node@NODE@" \
    --steps 30 --fault crash --fault-rank 3 --fault-step 10 --first-attempt-only --pg-timeout 20
  while IFS= read -r f; do rewrite_paths "$f"; done < <(find "$OUTDIR/restart_attempts_logdir" -type f)
fi

# 8. A handled exception: rank 0 looks for an optional eval-prompt file at step 5, catches the
#    FileNotFoundError, prints it with traceback.print_exc() and trains on (a trap).
job handled_exception "" --steps 30 --fault handled --fault-rank 0 --fault-step 5

ls -lR "$OUTDIR" >&2
