# Shared by make_torch_logs.sh, make_fault_logs.sh and make_multinode_logs.sh (sourced, not run):
# the torch check, the scratch folder and the one post-processing step, rewrite_paths.
# Set before sourcing: REPO, TORCH_PY, WORK_TAG (the scratch folder's name); HF_PY optional.
#
# rewrite_paths, in place:
#   <python prefix of TORCH_PY (and of HF_PY), a venv> -> /venv
#   <base Python install>/lib/ (stdlib)                -> /usr/local/lib/
#   <repo root>                                        -> /workspace
#   <scratch dir used for the runs>                    -> /workspace/run
#   <this machine's hostname>                          -> node0 (only if >= 4 chars and not localhost)

TORCHRUN="$(dirname "$TORCH_PY")/torchrun"
PREFIX="$("$TORCH_PY" -c 'import sys; print(sys.prefix)')"
BASE_PREFIX="$("$TORCH_PY" -c 'import sys; print(sys.base_prefix)')"
HF_PREFIX="$("${HF_PY:-$TORCH_PY}" -c 'import sys; print(sys.prefix)' 2>/dev/null || echo "$PREFIX")"
HOST="$(hostname)"

"$TORCH_PY" -c 'import torch, sys; v = torch.__version__; print("torch", v); sys.exit(0 if v.startswith("2.13.0") else 1)' \
  || { echo "need torch 2.13.0" >&2; exit 1; }

WORK="$(mktemp -d "/tmp/nanscope-${WORK_TAG}.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUTDIR"
cd "$WORK"

export PYTHONUNBUFFERED=1

rewrite_paths() {  # in place
  local f="$1"
  sed -i \
    -e "s#${PREFIX}#/venv#g" \
    -e "s#${HF_PREFIX}#/venv#g" \
    -e "s#${BASE_PREFIX}/lib/#/usr/local/lib/#g" \
    -e "s#${REPO}#/workspace#g" \
    -e "s#${WORK}#/workspace/run#g" \
    "$f"
  if [ "${#HOST}" -ge 4 ] && [ "$HOST" != "localhost" ]; then
    sed -i -e "s#\b${HOST}\b#node0#g" "$f"
  fi
}
