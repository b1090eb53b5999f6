#!/usr/bin/env bash
# Regenerate the real framework logs in sample_logs/hf/ and sample_logs/deepspeed/.
#
# Every log is the captured stdout+stderr (`2>&1 | tee`) of a real run of the
# framework on CPU, with tqdm's \r progress bars left in. The only
# post-processing is scrub() below: machine-specific absolute paths and the
# hostname are rewritten to neutral ones. Timestamps, pids and timings differ
# from run to run; everything else should reproduce.
#
# Needs two venvs (kept apart because transformers imports deepspeed when it
# is installed, which adds DeepSpeed accelerator lines to plain Trainer logs):
#   VENV_HF: torch==2.13.0 (CPU), transformers, accelerate
#   VENV_DS: torch==2.13.0 (CPU), deepspeed
# Setup used for the committed logs (CPU torch wheel; pin torch so pip never
# swaps it):
#   python3 -m venv $VENV_HF && $VENV_HF/bin/pip install torch==2.13.0 \
#       && $VENV_HF/bin/pip install transformers accelerate
#   python3 -m venv $VENV_DS && $VENV_DS/bin/pip install torch==2.13.0 \
#       && echo torch==2.13.0 > pin.txt && $VENV_DS/bin/pip install deepspeed -c pin.txt
# Usage: sample_logs/generate/make_hf_logs.sh [hf|hf-eval|hf-long|ds|ds-healthy|all]   (default all)
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT_HF="$ROOT/sample_logs/hf"
OUT_DS="$ROOT/sample_logs/deepspeed"
VENV_HF="${VENV_HF:-/work/scratch/venv-hf}"
VENV_DS="${VENV_DS:-/work/scratch/venv-ds}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
WHAT="${1:-all}"

# scrub RAW OUT VENV: copy RAW to OUT, rewriting absolute paths / hostname.
scrub() {
    local raw="$1" out="$2" venv="$3"
    "$venv/bin/python" - "$raw" "$out" "$venv" "$ROOT" "$TMP" <<'PY'
import re, socket, sys
raw, out, venv, root, tmp = sys.argv[1:6]
data = open(raw, "rb").read()
pyver = "python%d.%d" % sys.version_info[:2]
subs = [
    (venv + "/lib/" + pyver + "/site-packages", "/venv/lib/" + pyver + "/site-packages"),
    (venv + "/lib64/" + pyver + "/site-packages", "/venv/lib/" + pyver + "/site-packages"),
    (venv + "/bin", "/venv/bin"),
    (venv, "/venv"),
    (tmp, "/workspace/run"),
    (root, "/workspace"),
]
for old, new in subs:
    data = data.replace(old.encode(), new.encode())
host = socket.gethostname()
if len(host) >= 2:
    data = re.sub(rb"(?<![\w.-])" + re.escape(host.encode()) + rb"(?![\w-])", b"node0", data)
open(out, "wb").write(data)
PY
}

# run_log DIR NAME VENV CMD...: run CMD in ROOT, capture 2>&1 | tee, scrub into DIR/NAME.
run_log() {
    local dir="$1" name="$2" venv="$3"; shift 3
    echo "== $name: $*" >&2
    (cd "$ROOT" && PATH="$venv/bin:$PATH" "$@" 2>&1 | tee "$TMP/$name" >/dev/null)
    echo "   exit ${PIPESTATUS[0]:-?}" >&2
    scrub "$TMP/$name" "$dir/$name" "$venv"
}

if [[ "$WHAT" == hf || "$WHAT" == all ]]; then
    mkdir -p "$OUT_HF"
    T=sample_logs/generate/hf_train.py
    OD="$TMP/hf-out"
    run_log "$OUT_HF" trainer_healthy.log "$VENV_HF" \
        python $T --steps 50 --inject none --output-dir "$OD"
    run_log "$OUT_HF" trainer_nan_filter_on.log "$VENV_HF" \
        python $T --steps 50 --inject poison --inject-step 20 --nan-filter on --output-dir "$OD"
    run_log "$OUT_HF" trainer_nan_filter_off.log "$VENV_HF" \
        python $T --steps 50 --inject poison --inject-step 20 --nan-filter off --output-dir "$OD"
    run_log "$OUT_HF" trainer_nan_one_step.log "$VENV_HF" \
        python $T --steps 50 --inject loss-once --inject-step 15 --max-grad-norm 1.0 --output-dir "$OD"
    run_log "$OUT_HF" trainer_ddp_nan.log "$VENV_HF" \
        torchrun --standalone --nproc_per_node=2 $T --steps 40 --inject poison --inject-step 20 \
        --inject-ranks 1 --nan-filter on --output-dir "$OD"
fi

# A healthy run that evaluates every 20 steps: the eval loop's nested tqdm bar (with its cursor-up
# escapes) and the eval dicts between the training dicts.
if [[ "$WHAT" == hf || "$WHAT" == all || "$WHAT" == hf-eval ]]; then
    mkdir -p "$OUT_HF"
    run_log "$OUT_HF" trainer_healthy_eval.log "$VENV_HF" \
        python sample_logs/generate/hf_train.py --steps 60 --eval-steps 20 --output-dir "$TMP/hf-out"
fi

# A longer healthy run (1000 steps, eval every 100): once the loss is small, batch 8's per-step loss
# has one-step outliers many times its median that come straight back (no spike that stays up).
if [[ "$WHAT" == hf || "$WHAT" == all || "$WHAT" == hf-long ]]; then
    mkdir -p "$OUT_HF"
    run_log "$OUT_HF" trainer_healthy_long_eval.log "$VENV_HF" \
        python sample_logs/generate/hf_train.py --steps 1000 --eval-steps 100 --output-dir "$TMP/hf-out"
fi

if [[ "$WHAT" == ds || "$WHAT" == all ]]; then
    mkdir -p "$OUT_DS"
    T=sample_logs/generate/hf_train.py
    DS="python $T --framework deepspeed"
    # Throwaway run first: the first DeepSpeed run on a machine JIT-builds
    # deepspeed_shm_comm_op (about a minute, extra compiler output). Keep that
    # out of the committed logs.
    echo "== deepspeed warm-up (JIT op build), output discarded" >&2
    (cd "$ROOT" && PATH="$VENV_DS/bin:$PATH" $DS --steps 2 >/dev/null 2>&1)
    # This host's CPU has AVX512-FP16, so DeepSpeed accepts fp16 here. Capping
    # oneDNN's ISA below AVX512_CORE_FP16 makes torch.ops.mkldnn.
    # _is_mkldnn_fp16_supported() (what DeepSpeed's CPU accelerator asks) answer
    # False, as it does on CPUs without AVX512-FP16.
    run_log "$OUT_DS" fp16_unsupported.log "$VENV_DS" \
        env ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $DS --steps 10
    run_log "$OUT_DS" fp16_overflow_warmup.log "$VENV_DS" \
        $DS --steps 60 --initial-scale-power 32 --logging-steps 5
    run_log "$OUT_DS" fp16_overflow_transient.log "$VENV_DS" \
        $DS --steps 60 --initial-scale-power 16 --logging-steps 5 --inject loss-once --inject-step 30
    run_log "$OUT_DS" fp16_scale_collapse.log "$VENV_DS" \
        $DS --steps 80 --initial-scale-power 16 --logging-steps 5 --inject poison-inf --inject-step 30
fi

# A healthy fp16 DeepSpeed run (default initial scale 2**16: no overflow in 60 steps here).
if [[ "$WHAT" == ds || "$WHAT" == all || "$WHAT" == ds-healthy ]]; then
    mkdir -p "$OUT_DS"
    run_log "$OUT_DS" fp16_healthy.log "$VENV_DS" \
        python sample_logs/generate/hf_train.py --framework deepspeed --steps 60 --initial-scale-power 16 --logging-steps 5
fi
