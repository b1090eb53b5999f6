#!/usr/bin/env bash
# Regenerate the REAL PyTorch runtime-error sample logs in sample_logs/core/.
#
# Every log is the unedited stdout+stderr of an actual run of torch_core_errors.py (single process,
# CPU), except for the one post-processing step of torch_common.sh (rewrite_paths: the venv prefix
# -> /venv, the repo -> /workspace, the scratch dir -> /workspace/run, the host name -> node0).
# Re-running reproduces the committed files (fd-limit modulo the step it fails at).
#
# Needs torch==2.13.0 (CPU build).  Usage:
#   TORCH_PY=/work/scratch/venv-torch/bin/python bash sample_logs/generate/make_core_logs.sh
# Takes ~30 seconds.  ONLY="name1 name2" regenerates only those logs.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="$REPO/sample_logs/core"
TORCH_PY="${TORCH_PY:-/work/scratch/venv-torch/bin/python}"
SCRIPT="$REPO/sample_logs/generate/torch_core_errors.py"
WORK_TAG=core
# shellcheck source=torch_common.sh
. "$HERE/torch_common.sh"

wanted() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

single() {  # single <name> <args...>
  local name="$1"; shift
  wanted "$name" || return 0
  echo "== $name: python torch_core_errors.py $*" >&2
  "$TORCH_PY" "$SCRIPT" "$@" --tmp "$WORK" > "$OUTDIR/$name.log" 2>&1
  echo "   exit code $?" >&2
  rewrite_paths "$OUTDIR/$name.log"
}

single inplace_modified inplace --steps 8 --fault-step 3
single rnn_state_not_detached rnn-no-detach --steps 8
single frozen_model frozen --steps 8
single resume_other_width resume-other-width
single weights_only_namespace weights-only
single lfs_pointer_checkpoint lfs-pointer
single dataloader_fd_limit fd-limit --nofile 128
single healthy healthy --steps 8
