#!/usr/bin/env bash
# Regenerate the REAL PyTorch sample logs in sample_logs/torch/.
#
# Every log is the unedited stdout+stderr of an actual run of torch_train.py
# (single process, or torchrun with 4 CPU ranks over gloo), except for one
# post-processing step (rewrite_paths below) that replaces machine-specific
# absolute paths and host names with neutral ones:
#   <python prefix, e.g. the venv>   -> /venv
#   <repo root>                      -> /workspace
#   <scratch dir used for the runs>  -> /workspace/run
#   <this machine's hostname>        -> node0   (only if it is >= 4 chars)
# Re-running reproduces the committed files modulo timestamps, pids, ports,
# torchelastic temp-dir names and the interleaving of lines from different
# ranks.
#
# Needs torch==2.13.0 (CPU build).  Usage:
#   TORCH_PY=/work/scratch/venv-torch/bin/python bash sample_logs/generate/make_torch_logs.sh
# Takes ~3 minutes on 2 cores (the collective-timeout run waits 15 s).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="$REPO/sample_logs/torch"
TORCH_PY="${TORCH_PY:-/work/scratch/venv-torch/bin/python}"
SCRIPT="$REPO/sample_logs/generate/torch_train.py"
WORK_TAG=torch
# shellcheck source=torch_common.sh
. "$HERE/torch_common.sh"

single() {  # single <name> <args...>
  local name="$1"; shift
  echo "== $name: python torch_train.py $*" >&2
  "$TORCH_PY" "$SCRIPT" "$@" > "$OUTDIR/$name.log" 2>&1
  echo "   exit code $?" >&2
  rewrite_paths "$OUTDIR/$name.log"
}

ddp() {  # ddp <name> <extra torchrun args (one word or "")> <script args...>
  local name="$1"; shift
  local extra="$1"; shift
  echo "== $name: torchrun --standalone --nproc_per_node=4 --tee 3 $extra torch_train.py $*" >&2
  # shellcheck disable=SC2086
  "$TORCHRUN" --standalone --nproc_per_node=4 --tee 3 $extra "$SCRIPT" "$@" 2>&1 | tee "$OUTDIR/$name.log" > /dev/null
  echo "   exit code ${PIPESTATUS[0]}" >&2
  rewrite_paths "$OUTDIR/$name.log"
}

# 1. AMP: one-step inf gradient at step 25 -> GradScaler skips, halves scale, recovers.
single amp_skip_recover --fmt pipe --amp --steps 60 --fault grad-inf --fault-step 25

# 2. AMP: huge init_scale -> first steps overflow and are skipped; the LR
#    scheduler then steps before any optimizer.step() -> PyTorch UserWarning.
single amp_first_step_skipped --fmt pipe --amp --init-scale 16777216 --scheduler --steps 40

# 3. DDP: NaN input on rank 2 at step 40; manual skip of non-finite grad norm.
#    Keep torchrun's per-rank files for this run.
ddp ddp_nan_rank2 "--log-dir=$WORK/torchrun_logs" \
  --fmt kv --steps 60 --fault input-nan --fault-rank 2 --fault-step 40 --skip-nonfinite
PR="$OUTDIR/ddp_nan_rank2_per_rank"
rm -rf "$PR"; mkdir -p "$PR"
for r in 0 1 2 3; do
  # layout: <log-dir>/<run_id>_<random>/attempt_0/<local_rank>/{stdout,stderr}.log
  d="$(ls -d "$WORK"/torchrun_logs/*/attempt_0/"$r")"
  cat "$d/stdout.log" "$d/stderr.log" > "$PR/rank_$r.log"
  rewrite_paths "$PR/rank_$r.log"
done

# 4. Single process: NaN written into a weight at step 30 -> NaN loss forever.
single nan_persistent --fmt colon --steps 60 --fault weight-nan --fault-step 30

# 5. Clean runs.
single healthy --fmt kv --scheduler --steps 60
ddp ddp_healthy "" --fmt pipe --steps 60

# 6. Rank 1 raises IndexError at step 30 -> gloo connection errors on survivors.
ddp ddp_crash_rank1 "" --fmt pipe --steps 60 --fault crash --fault-rank 1 --fault-step 30

# 7. Rank 3 stops joining collectives at step 20 -> gloo timeout (15 s) on the others.
ddp ddp_hang_rank3 "" --fmt colon --steps 60 --fault hang --fault-rank 3 --fault-step 20 \
  --pg-timeout 15 --hang-seconds 300

# 8. Rank 1 lowers its RLIMIT_AS and allocates 8 GiB at step 15 -> real
#    DefaultCPUAllocator error; script uses @record so torchrun shows tracebacks.
ddp ddp_host_oom_rank1 "" --fmt kv --steps 60 --fault oom --fault-rank 1 --fault-step 15 --record

ls -l "$OUTDIR" "$PR" >&2
