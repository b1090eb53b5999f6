"""vLLM (V0 and V1 engines): engine stats, KV-cache sizing, startup and engine-death errors.

Lines look like `INFO 05-19 10:13:11 [loggers.py:271] ...` (V1; V0 <= 0.6 printed
`INFO 01-11 15:51:18 llm_engine.py:275] ...`), behind process tags such as `(APIServer pid=P)`
or `(EngineCore_DP0 pid=P)` that ingest/prefixes.py peels. Every rule searches, so the logger
prefix, a docker-compose or k8s prefix may stay in front of the message.

Templates (vllm-project/vllm; quoted from source via the search index and from issue logs):
  vllm/v1/metrics/loggers.py   Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation
                               throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs,
                               [Preemptions: %d, ]GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%
  vllm/engine/metrics.py (V0)  Avg prompt throughput: ..., Running: %d reqs, Swapped: %d reqs,
                               Pending: %d reqs, GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%.
  vllm/v1/worker/gpu_worker.py Available KV cache memory: 6.94 GiB   (may be negative)
  vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory:
      To serve at least one request with the models's max seq len (131072), (4.11 GiB KV cache is
      needed, which is larger than the available KV cache memory (4.0 GiB). Based on the available
      memory, the estimated maximum model length is 127776. ...     (older: `models's`, stray `(`)
  vllm/worker/worker.py (V0) raise_if_cache_size_invalid:
      The model's max seq len (8192) is larger than the maximum number of tokens that can be
      stored in KV cache (2400). ...
  No available memory for the cache blocks. Try increasing `gpu_memory_utilization` ...
  Free memory on device [cuda:0 ](3.22/4.0 GiB) on startup is less than desired GPU memory
      utilization (0.9, 3.6 GiB). ...   (CPU backend: `Available memory on node 0 (13.04/14.71 GiB) on
      startup is less than desired CPU memory utilization (0.98, 14.42 GiB). ...`, vLLM 0.32 run here)
  EngineCore failed to start. / RuntimeError: Engine core initialization failed. See root cause above.
  vllm/v1/executor/multiproc_executor.py (monitor thread), V1:
      Worker proc %s died unexpectedly, shutting down executor.        (newer: `died unexpectedly (exit
      code: %s), shutting down executor.`); the process name is `VllmWorker-{rank}`, so the rank is in
      the text. vllm/v1/executor/ray_executor_v2.py: `RayWorkerProc rank=%s died unexpectedly, ...`
      (a list: `rank=[3]`). WorkerProc.worker_busy_loop: `WorkerProc hit an exception.` (0.8: `... %s`)
      worker_main: `WorkerProc failed to start.` (the worker raised while it loaded: its traceback follows)
      MultiprocExecutor.wait_for_ready (0.9+), the EngineCore's side of the same: raise Exception("WorkerProc
      initialization failed due to an exception in a background process. See stack trace for root cause.")
  vllm/v1/engine/core.py run_engine_core: `EngineCore encountered a fatal error.` (logger.exception);
      0.7-0.8.4 printed `EngineCore hit an exception: %s` (the traceback) for a start-up and a serving failure alike
  vllm/v1/executor/multiproc_executor.py collective_rpc: `raise TimeoutError(f"RPC call to {method} timed out.")`
      from the TimeoutError that vllm/distributed/device_communicators/shm_broadcast.py acquire_read raises
      (a bare `raise TimeoutError`) when a worker's reply does not come within the RPC timeout
      (VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS for execute_model). While it waits, acquire_read logs every 60 s
      `No available shared memory broadcast block found in 60 seconds. This typically happens when some
      processes are hanging or doing some time-consuming work (e.g. compilation[, weight/kv cache quantization]).`
  vllm/v1/worker/cpu_worker.py (CPU backend) KV-cache allocation check: `Available memory on node 0 (149.11/692.65
      GiB) on kv cache allocation is less than requested memory for kv (206.54/207.8 GiB). Reduce CPU memory used by
      other processes.` (later: `... for kv (12.0 GiB). Decrease --kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or
      reduce CPU memory used by other processes.`)
  vllm/entrypoints/launcher.py (V0 MQ server, 0.6-0.8): `MQLLMEngine is already dead, terminating server
      process`; vllm/engine/multiprocessing/client.py: `Engine process (pid %d) died.`,
      `MQEngineDeadError: Engine loop is not running`; vllm/engine/async_llm_engine.py: `Engine loop has died`
  vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run (V1 0.8+, PR #14728):
      CUDA out of memory occurred when warming up sampler with %d dummy requests. Please try lowering
      `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.
  vllm/worker/worker.py _check_if_gpu_supports_dtype (later vllm/platforms/cuda.py / interface.py
      check_if_supports_dtype): Bfloat16 is only supported on GPUs with compute capability of at least
      8.0. Your %s GPU has compute capability %d.%d.[ You can use float16 instead by explicitly setting the
      `dtype` flag in CLI, for example: --dtype=half.]   (<= 0.2 ended after the capability; PR #2374 added
      ` You can explicitly specify the data type by using the --dtype option, ...`)
  vllm/config/vllm.py (earlier vllm/config.py): The quantization method fp8 is not supported for the current GPU.
      Minimum capability: 90. Current capability: 86.   (compressed-tensors: ('Quantization scheme is not
      supported for ', 'the current GPU. Min capability: 80. ', 'Current capability: 75.')) -> dtype_unsupported
  vllm/config.py, later vllm/config/model.py _get_and_verify_max_len: User-specified max_model_len (4096) is greater
      than the derived max_model_len (seq_length=2048 or model_max_length=None in model's config.json). ...
  vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. ...
  Engine background task failed / AsyncEngineDeadError: Background loop has errored already. (V0)
  vllm/core/scheduler.py (V0): Sequence group 221 is preempted by PreemptionMode.RECOMPUTE mode
      because there is not enough KV cache space. ... total_num_cumulative_preemption=101

`Available KV cache memory` is a fact of the engine's start, not a periodic stat: it becomes a
LifecycleEvent(action="start", fields={"kv_cache_gib": X}) (a value <= 0 is also a vllm_startup_oom
error: the KV-cache budget is spent before the engine can start) (V0's `# GPU blocks: N` and V1's
`GPU KV cache size: N tokens` likewise, as `gpu_blocks` / `kv_cache_tokens`).

CUDA OOM inside the model runner is left to the cuda parser. The sampler's `probability tensor
contains either inf, nan or element < 0` is torch.multinomial's error: HF generate raises it too,
so the event says in `fields["seen_vllm"]` whether this stream printed vLLM lines before it.
"""

from __future__ import annotations

import re
from typing import Optional

from nanscope.model import ErrorEvent, LifecycleEvent, MetricsEvent, WarningEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float, to_int
from nanscope.parsers.python import EXC_LINE

_F = r"-?\d+(?:\.\d+)?"
# vLLM's logger prefix: `ERROR 05-20 00:55:13 [core.py:1100] ` (V1) / `ERROR 06-13 02:36:52 async_llm_engine.py:52] ` (V0)
_LOG_PREFIX = LazyPattern(
    r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:\[[^\s\]]*\]+|\S+:\d+\])[ \t]?"
)
# Without a leading \b (which keeps re from skipping ahead to the words' first letters); the word
# boundary is checked on the few matches instead (_counts).
_COUNTS = LazyPattern(r"(?P<k>Running|Waiting|Swapped|Pending): (?P<v>\d+) reqs")
_WORD = LazyPattern(r"\w")
_KV_USAGE = LazyPattern(r"GPU KV cache usage: (?P<v>" + _F + r")%")
# V1 names the device: "%s KV cache usage" (GPU, CPU, XPU, ...). V0 printed GPU and CPU (swap) side by side.
_DEV_KV_USAGE = LazyPattern(r"Waiting: \d+ reqs, (?P<dev>[A-Z]+) KV cache usage: (?P<v>" + _F + r")%")
_CPU_KV = LazyPattern(r"CPU KV cache usage: (?P<v>" + _F + r")%")
_PREFIX_HIT = LazyPattern(r"Prefix cache hit rate: (?P<v>" + _F + r")%")
_PREEMPTIONS = LazyPattern(r"Preemptions: (?P<v>\d+)")
_ENGINE = LazyPattern(r"Engine (?P<v>\d+): ")
_ANY_EXC = LazyPattern(r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception))(?::[ \t]|\()")


def _message(text: str) -> str:
    """The message without vLLM's `LEVEL MM-DD HH:MM:SS [file:line]` logger prefix."""
    return _LOG_PREFIX.sub("", text, count=1)


def _exc_type(text: str) -> Optional[str]:
    msg = _message(text)
    m = EXC_LINE.match(msg)
    if m:
        return m.group("type")
    m = _ANY_EXC.search(msg)
    return m.group("type") if m else None


def _counts(text: str) -> dict:
    """`Running: N reqs`-style counts (the last of each wins), each starting at a word boundary."""
    out = {}
    for c in _COUNTS.finditer(text):
        i = c.start()
        if i and _WORD.match(text, i - 1):
            continue
        out[c.group("k")] = int(c.group("v"))
    return out


def _seen(state: dict) -> None:
    state["seen_vllm"] = True


def _error(rec, state, kind: str, fields: dict) -> ErrorEvent:
    _seen(state)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="vllm", error=kind, message=_message(rec.text).strip(),
        exc_type=_exc_type(rec.text), fields=fields,
    )


@rule(
    "metrics",
    ("Avg prompt throughput",),
    r"Avg prompt throughput: (?P<p>" + _F + r") tokens/s, Avg generation throughput: (?P<g>" + _F + r") tokens/s",
)
def _metrics(m, rec, state):
    _seen(state)
    text = rec.text
    counts = _counts(text)
    kv = _KV_USAGE.search(text) or _DEV_KV_USAGE.search(text)
    pre = _PREEMPTIONS.search(text)
    fields: dict = {}
    for key, rx in (("cpu_kv_cache_usage", _CPU_KV), ("prefix_cache_hit_rate", _PREFIX_HIT)):
        if key == "cpu_kv_cache_usage" and "Pending:" not in text:
            continue  # only V0 has a separate CPU (swap) KV cache usage
        f = rx.search(text)
        if f:
            fields[key] = to_float(f.group("v"))
    eng = _ENGINE.search(text)
    if eng:
        fields["engine"] = int(eng.group("v"))
    return MetricsEvent(
        loc=rec.loc, text=rec.text, framework="vllm",
        running=counts.get("Running"),
        waiting=counts.get("Waiting", counts.get("Pending")),
        swapped=counts.get("Swapped"),
        preemptions=int(pre.group("v")) if pre else None,
        kv_cache_usage=to_float(kv.group("v")) if kv else None,
        prompt_tps=to_float(m.group("p")), generation_tps=to_float(m.group("g")),
        fields=fields or None,
    )


@rule("kv-cache-memory", ("Available KV cache memory",), r"Available KV cache memory: (?P<gib>" + _F + r") GiB")
def _kv_memory(m, rec, state):
    _seen(state)
    gib = to_float(m.group("gib"))
    start = LifecycleEvent(
        loc=rec.loc, text=rec.text, framework="vllm", action="start",
        fields={"kv_cache_gib": gib},
    )
    if gib is None or gib > 0:
        return start
    return [start, _error(rec, state, "vllm_startup_oom", {"reason": "no_kv_cache_memory", "kv_cache_gib": gib})]


@rule("kv-cache-tokens", ("GPU KV cache size:",), r"GPU KV cache size: (?P<tok>[\d,]+) tokens")
def _kv_tokens(m, rec, state):
    _seen(state)
    return LifecycleEvent(
        loc=rec.loc, text=rec.text, framework="vllm", action="start",
        fields={"kv_cache_tokens": to_int(m.group("tok"))},
    )


@rule("gpu-blocks", ("# GPU blocks:",), r"# GPU blocks: (?P<gpu>\d+), # CPU blocks: (?P<cpu>\d+)")
def _gpu_blocks(m, rec, state):
    _seen(state)
    gpu = int(m.group("gpu"))
    start = LifecycleEvent(
        loc=rec.loc, text=rec.text, framework="vllm", action="start",
        fields={"gpu_blocks": gpu, "cpu_blocks": int(m.group("cpu"))},
    )
    if gpu > 0:
        return start
    # V0 worker.py raise_if_cache_size_invalid: `if num_gpu_blocks <= 0: raise ValueError("No available
    # memory for the cache blocks. ...")`: zero blocks is that start-up failure, whether or not the
    # traceback made it into the excerpt.
    return [start, _error(rec, state, "vllm_startup_oom", {"reason": "no_cache_blocks", "gpu_blocks": gpu})]


@rule(
    "kv-cache-insufficient-v1",
    ("KV cache is needed",),
    r"To serve at least one request with the models?'s max seq len \((?P<len>\d+)\), \(?(?P<need>" + _F
    + r") GiB KV cache is needed, which is larger than the available KV cache memory \((?P<avail>" + _F
    + r") GiB\)\.(?:.*?(?:estimated|Estimated) maximum model length is (?P<est>\d+))?",
)
def _kv_v1(m, rec, state):
    return _error(rec, state, "vllm_kv_cache_insufficient", {
        "max_model_len": int(m.group("len")),
        "estimated_max_len": to_int(m.group("est")),
        "needed_gib": to_float(m.group("need")),
        "available_gib": to_float(m.group("avail")),
    })


@rule(
    "kv-cache-insufficient-v0",
    ("maximum number of tokens that can be stored in KV cache",),
    r"The model's max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((?P<tok>\d+)\)",
)
def _kv_v0(m, rec, state):
    # V0 prints the cache's capacity in tokens: the largest max_model_len that would fit.
    return _error(rec, state, "vllm_kv_cache_insufficient", {
        "max_model_len": int(m.group("len")),
        "estimated_max_len": int(m.group("tok")),
        "needed_gib": None,
        "available_gib": None,
    })


@rule("no-cache-blocks", ("No available memory for the cache blocks",), r"No available memory for the cache blocks")
def _no_blocks(m, rec, state):
    return _error(rec, state, "vllm_startup_oom", {"reason": "no_cache_blocks"})


@rule(
    "free-memory-startup",
    ("on startup is less than desired",),
    r"(?:Free memory on device(?: (?P<dev>[^\s(]+))?|Available memory on node (?P<node>\d+)) \((?P<free>" + _F
    + r")/(?P<total>" + _F + r") GiB\) on startup is less than desired (?P<kind>GPU|CPU) memory utilization \((?P<util>"
    + _F + r"), (?P<want>" + _F + r") GiB\)",
)
def _free_memory(m, rec, state):
    # The CPU backend (vllm-cpu) words it `Available memory on node 0 (...) ... desired CPU memory utilization`.
    return _error(rec, state, "vllm_startup_oom", {
        "reason": "free_memory_below_utilization",
        "device": m.group("dev") if m.group("node") is None else f"cpu-node{m.group('node')}",
        "free_gib": to_float(m.group("free")),
        "total_gib": to_float(m.group("total")),
        "gpu_memory_utilization": to_float(m.group("util")),
        "requested_gib": to_float(m.group("want")),
    })


@rule(
    "kv-allocation-cpu",
    ("on kv cache allocation is less than requested memory for kv",),
    r"Available memory on node (?P<node>\d+) \((?P<free>" + _F + r")/(?P<total>" + _F + r") GiB\) on kv cache allocation"
    r" is less than requested memory for kv \((?:(?P<left>" + _F + r")/)?(?P<want>" + _F + r") GiB\)",
)
def _kv_allocation_cpu(m, rec, state):
    # The CPU worker checks, after loading the weights, that the host can still give the KV cache what was
    # asked for (VLLM_CPU_KVCACHE_SPACE / --kv-cache-memory-bytes, by default a fraction of the host's memory).
    return _error(rec, state, "vllm_startup_oom", {
        "reason": "kv_cache_allocation",
        "device": f"cpu-node{m.group('node')}",
        "free_gib": to_float(m.group("free")),
        "total_gib": to_float(m.group("total")),
        "kv_left_gib": to_float(m.group("left")),
        "requested_gib": to_float(m.group("want")),
    })


@rule(
    "engine-dead",
    ("EngineCore failed to start", "Engine core initialization failed", "EngineDeadError", "Engine background task failed",
     "EngineCore hit an exception"),
    r"(?P<start>EngineCore failed to start|Engine core initialization failed)"
    r"|(?P<hit>EngineCore hit an exception)"
    r"|(?P<bg>Engine background task failed)"
    r"|(?:^|[\s.(])(?P<dead>(?:Async)?EngineDeadError)(?::|\)|\s*$)",
)
def _engine_dead(m, rec, state):
    # 0.7-0.8.4's `EngineCore hit an exception` ended a failed start-up and a failed busy loop alike
    phase = "startup" if m.group("start") else (None if m.group("hit") else "runtime")
    fields = {"phase": phase}
    if state.get("shutdown_requested"):
        fields["during_shutdown"] = True  # Ctrl-C / SIGTERM races the output handler: not a crash
    return _error(rec, state, "vllm_engine_dead", fields)


@rule(
    "worker-died",
    ("died unexpectedly",),
    r"(?:Worker proc (?P<proc>\S+)|RayWorkerProc rank=\[?(?P<ray>[\d, ]+)\]?) died unexpectedly"
    r"(?: \(exit code: (?P<code>-?\d+|None)\))?, shutting down executor",
)
def _worker_died(m, rec, state):
    # VllmWorker-{rank} (vllm/v1/executor/multiproc_executor.py names the process f"VllmWorker-{rank}").
    rank = None
    name = m.group("proc")
    if name is not None:
        w = re.fullmatch(r"VllmWorker-(\d+)", name)
        rank = int(w.group(1)) if w else None
    else:
        ranks = [int(x) for x in re.findall(r"\d+", m.group("ray"))]
        rank = ranks[0] if len(ranks) == 1 else None
    code = m.group("code")
    fields = {"phase": "runtime", "worker_died": name or m.group("ray"), "own_failure": rank is not None,
              "exitcode": to_int(code) if code not in (None, "None") else None}
    ev = _error(rec, state, "vllm_engine_dead", fields)
    ev.rank = rank
    return ev


@rule(
    "worker-exception",
    ("WorkerProc hit an exception", "WorkerProc failed to start", "EngineCore encountered a fatal error",
     "WorkerProc initialization failed due to an exception"),
    r"(?P<worker>WorkerProc hit an exception)|(?P<wstart>WorkerProc failed to start"
    r"|WorkerProc initialization failed due to an exception in a background process)|EngineCore encountered a fatal error",
)
def _worker_exception(m, rec, state):
    if m.group("worker") is not None or m.group("wstart") is not None:
        # the worker's own exception follows; the worker (its process tag) is where it happened.
        # WorkerProc.worker_main logs `WorkerProc failed to start.` when the worker raised before it was ready.
        fields = {"phase": "startup" if m.group("wstart") else "runtime", "worker_exception": True,
                  "own_failure": rec.origin.rank is not None}
    else:
        fields = {"phase": "runtime"}
    if state.get("shutdown_requested"):
        fields["during_shutdown"] = True
    return _error(rec, state, "vllm_engine_dead", fields)


@rule(
    "v0-engine-dead",
    ("MQLLMEngine is already dead", "Engine loop is not running", "Engine loop has died", "Engine process (pid"),
    r"MQLLMEngine is already dead|MQEngineDeadError: Engine loop is not running|Engine loop has died"
    r"|Engine process \(pid \d+\) died",
)
def _v0_engine_dead(m, rec, state):
    if not first_time(state, ("v0_engine_dead",), rec.loc.line):
        return []  # printed once per request in flight
    return _error(rec, state, "vllm_engine_dead", {"phase": "runtime"})


_SHM_READ_SPAN = 3  # lines from acquire_read's frame to its bare `TimeoutError` (`raise TimeoutError` between)


@rule(
    "rpc-timeout",
    ("RPC call to",),
    r"TimeoutError: RPC call to (?P<method>.+?) timed out\.",
)
def _rpc_timeout(m, rec, state):
    return _timeout_event(rec, state, m.group("method"))


# A paste that lost its line breaks keeps the frame, the raise and the exception on one line:
# `... shm_broadcast.py", line 469, in acquire_read (EngineCore_DP0 pid=142) ERROR ... raise TimeoutError
# (EngineCore_DP0 pid=142) ERROR ... TimeoutError (Worker pid=212) INFO ...` (vllm-project/vllm#25387).
_FLAT_SHM_TIMEOUT = LazyPattern(r"\braise TimeoutError\b.{0,400}?\] TimeoutError(?=\s|$)")


@rule("shm-read-frame", ('shm_broadcast.py"',), r'shm_broadcast\.py", line \d+, in acquire_read\b')
def _shm_read_frame(m, rec, state):
    state["shm_read_line"] = rec.loc.line
    if _FLAT_SHM_TIMEOUT.search(rec.text, m.end()):
        return _timeout_event(rec, state, None)
    return None  # the frame stays the python parser's too


@rule("shm-read-timeout", ("TimeoutError",), r"(?:^|\] )TimeoutError\s*$")
def _shm_read_timeout(m, rec, state):
    at = state.get("shm_read_line")
    if at is None or not 0 < rec.loc.line - at <= _SHM_READ_SPAN:
        return None  # a bare TimeoutError from elsewhere
    return _timeout_event(rec, state, None)


@rule("shm-wait", ("No available shared memory broadcast block found",),
      r"No available shared memory broadcast block found in (?P<s>\d+) second")
def _shm_wait(m, rec, state):
    # Progress of a slow step or a compilation as much as of a hang: counted, reported only with a time-out.
    state["shm_waits"] = state.get("shm_waits", 0) + 1
    state["shm_wait_s"] = int(m.group("s"))
    return []


def _timeout_event(rec, state, method):
    if not first_time(state, ("rpc_timeout",), rec.loc.line):
        return []  # acquire_read's TimeoutError and collective_rpc's re-raise are one time-out
    waits = state.get("shm_waits", 0)
    detail = (f"RPC call to {method} timed out" if method
              else "the read of the workers' reply queue (shm_broadcast acquire_read) timed out")
    if waits:
        detail += f", after {waits} message(s) that no reply had come for {state.get('shm_wait_s', 60)} s"
    fields = {"phase": "runtime", "method": method, "waits": waits, "detail": detail}
    if state.get("shutdown_requested"):
        fields["during_shutdown"] = True
    return _error(rec, state, "vllm_rpc_timeout", fields)


@rule(
    "sampler-warmup-oom",
    ("when warming up sampler with",),
    r"CUDA out of memory occurred when warming up sampler with (?P<n>\d+) dummy requests",
)
def _sampler_oom(m, rec, state):
    if not first_time(state, ("sampler_oom",), rec.loc.line):
        return []
    return _error(rec, state, "vllm_startup_oom", {"reason": "sampler_warmup", "dummy_requests": int(m.group("n"))})


@rule(
    "dtype-compute-capability",
    ("is only supported on GPUs with compute capability",),
    r"(?<!\w)(?P<dtype>Bfloat16|bfloat16|\w+) is only supported on GPUs with compute capability of at least "
    r"(?P<need>\d+\.\d+)\. Your (?P<gpu>.{1,256}?) GPU has compute capability (?P<have>\d+\.\d+)",
)
def _dtype(m, rec, state):
    return _error(rec, state, "dtype_unsupported", {
        "dtype": m.group("dtype").lower(), "gpu": m.group("gpu"),
        "required_capability": m.group("need"), "compute_capability": m.group("have"),
    })


# vllm/config/vllm.py (earlier vllm/config.py, vllm/model_executor/model_loader) VllmConfig._get_quantization_config:
#   raise ValueError(f"The quantization method {model_config.quantization} is not supported for the current GPU. "
#                    f"Minimum capability: {quant_config.get_min_capability()}. Current capability: {capability}.")
# (behind pydantic's `Value error, ` in 0.10+); compressed-tensors' _check_scheme_supported raises a RuntimeError
# built from three strings, printed as a tuple: ('Quantization scheme is not supported for ', 'the current GPU.
# Min capability: 80. ', 'Current capability: 75.'). The capability is major*10+minor.
@rule(
    "quantization-compute-capability",
    ("is not supported for the current GPU", "Quantization scheme is not supported for"),
    r"The quantization method (?P<q>\S+) is not supported for the current GPU\. Minimum capability: (?P<need>\d+)\. "
    r"Current capability: (?P<have>\d+)"
    r"|Quantization scheme is not supported for (?:', ')?the current GPU\. Min capability: (?P<sneed>\d+)\. "
    r"(?:', ')?Current capability: (?P<shave>\d+)",
)
def _quant_capability(m, rec, state):
    need, have = m.group("need") or m.group("sneed"), m.group("have") or m.group("shave")
    if not first_time(state, ("quant_capability", need, have), rec.loc.line):
        return []  # each TP worker raises it, and the engine re-raises it
    return _error(rec, state, "dtype_unsupported", {
        "dtype": m.group("q") or "compressed-tensors scheme", "quantization": True,
        "required_capability": f"{int(need) // 10}.{int(need) % 10}",
        "compute_capability": f"{int(have) // 10}.{int(have) % 10}",
    })


# The --quantization argument against the checkpoint's own quantization_config (config.json's quant_method):
#   vllm/config.py (later vllm/config/model.py) ModelConfig._verify_quantization:
#       raise ValueError("Quantization method specified in the model config "
#                        f"({quant_method}) does not match the quantization method specified "
#                        f"in the `quantization` argument ({self.quantization}).")
#       (0.3 printed the same; a markdown paste loses the backticks; 0.10+ behind pydantic's `Value error, `;
#       sgl-project/sglang's python/sglang/srt/configs/model_config.py _verify_quantization copies the words)
#   vllm/model_executor/model_loader/weight_utils.py get_quant_config, a --quantization for a checkpoint that has no
#   config file of that method: raise ValueError(f"Cannot find the config file for {model_config.quantization}")
@rule(
    "quantization-method-mismatch",
    ("does not match the quantization method specified in the", "Cannot find the config file for "),
    r"Quantization method specified in the model config \((?P<cfg>[^()]*)\) does not match the quantization method"
    r" specified in the `?quantization`? argument \((?P<arg>[^()]*)\)"
    r"|Cannot find the config file for (?P<noconf>[\w\-]+)\s*$",
)
def _quant_mismatch(m, rec, state):
    cfg, arg = m.group("cfg"), m.group("arg") or m.group("noconf")
    if not first_time(state, ("quant_mismatch", cfg, arg), rec.loc.line):
        return []  # the engine's re-raise, a wrapper's repr of the same error
    if cfg is not None:
        detail = (f"the checkpoint's config.json says quant_method {cfg}, the engine was started with --quantization "
                  f"{arg}")
    else:
        detail = f"--quantization {arg} was given, but the checkpoint has no {arg} quantization config"
    _seen(state)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="serving", error="quantization_method_mismatch",
        message=_message(rec.text).strip(), exc_type=_exc_type(rec.text),
        fields={"config_method": cfg, "argument": arg, "detail": detail},
    )



# A quantization method the installed engine (or library) does not know at all, from the checkpoint's
# quantization_config or from --quantization / quantization=:
#   vllm/config.py (later vllm/config/model.py) ModelConfig._verify_quantization:
#       raise ValueError(f"Unknown quantization method: {self.quantization}. Must be one of {supported_quantization}.")
#       (0.2-0.9; 0.10+ behind pydantic's `Value error, `; an empty name when the checkpoint's config declares none
#       this release reads; sgl-project/sglang's python/sglang/srt/configs/model_config.py copies the words)
#   vllm/model_executor/layers/quantization/__init__.py get_quantization_config:
#       raise ValueError(f"Invalid quantization method: {quantization}")
#   vllm/transformers_utils/configs/mistral.py _remap_mistral_quantization_args (Mistral-format params.json):
#       raise ValueError(f"Found unknown quantization='{quantization}' in config")
#   transformers / diffusers quantizers/auto.py AutoQuantizationConfig / AutoHfQuantizer:
#       raise ValueError(f"Unknown quantization type, got {quant_method} - supported types are: {list(...)}")
#       (newer transformers logs the same words as a warning ending `... we will skip the quantization`: not this)
_QUANT_LIST = LazyPattern(r"'([\w\-]+)'")


@rule(
    "quantization-method-unknown",
    ("Unknown quantization method: ", "Invalid quantization method: ", "Found unknown quantization=",
     "Unknown quantization type, got "),
    r"Unknown quantization method: (?P<q>\S*?)\.? Must be one of (?P<known>\[.*)"
    r"|ValueError: Invalid quantization method: (?P<inv>[\w\-]+)\s*$"
    r"|Found unknown quantization=(?P<mistral>.*?) in config"
    r"|Unknown quantization type, got (?P<hf>[\w\-]+) - supported types are: ?(?P<hfknown>\[.*)?",
)
def _quant_unknown(m, rec, state):
    if m.group("hf") is not None and "skip the quantization" in rec.text:
        return []  # transformers' warning: it loads the weights unquantized instead
    q = m.group("q")
    if q is None:
        q = m.group("inv") or m.group("hf")
    if q is None:
        q = (m.group("mistral") or "").strip()
    if not first_time(state, ("quant_unknown", q), rec.loc.line):
        return []  # each worker raises it, the engine re-raises it, pydantic repeats it
    listed = m.group("known") or m.group("hfknown") or ""
    known = _QUANT_LIST.findall(listed)
    complete = "]" in listed
    if m.group("mistral") is not None:
        detail = f"the Mistral-format config's quantization block {q} names no scheme this vLLM release maps"
    elif q:
        detail = f"quantization method '{q}' is not one this release knows"
    else:
        detail = "the checkpoint's quantization config names no method this release reads (an empty quant_method)"
    if known and complete:
        shown = ", ".join(known[:12]) + (f" and {len(known) - 12} more" if len(known) > 12 else "")
        detail += f" (it knows {shown})"
    _seen(state)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="serving", error="quantization_method_unknown",
        message=_message(rec.text).strip(), exc_type=_exc_type(rec.text),
        fields={"method": q, "known": known if complete else None, "detail": detail},
    )


# The model's attention head size (hidden_size / num_attention_heads, or head_dim) is not one the attention
# kernels were built for:
#   vllm/model_executor/layers/attention.py PagedAttention.__init__ (0.1): raise ValueError(f"head_size
#       ({self.head_size}) is not supported. Supported head sizes: {_SUPPORTED_HEAD_SIZES}.")
#   vllm/attention/backends/*.py (0.4-0.6, PagedAttention / FlashAttention backends, the HPU and RBLN plugins):
#       f"Head size {head_size} is not supported by PagedAttention. Supported head sizes are: {suppored_head_sizes}."
#   vllm/v1/attention/backends/*.py validate_head_size (V1): f"Head size {head_size} is not supported by
#       {attn_type}. Supported head sizes are: {supported_head_sizes}. Set VLLM_ATTENTION_BACKEND=FLEX_ATTENTION to
#       use FlexAttention backend which supports all head sizes."  (later: `Set --attention-backend=FLEX_ATTENTION`)
#   csrc/attention/attention_kernels.cu (and ROCm/aiter's attention_v1.cu) dispatch: TORCH_CHECK(false,
#       "Unsupported head size: ", head_size)  -> `RuntimeError: Unsupported head size: 32` at the first decode
# FlashAttention's own checks (csrc/flash_attn/flash_api.cpp, the CK / ROCm build, forks): TORCH_CHECK(head_size_og <=
#   256, "FlashAttention forward only supports head dimension at most 256") (CK: "CK FlashAttention backward only
#   supports head dimension at most 256"; later builds at most 512), TORCH_CHECK(head_size % 8 == 0, "head_size should
#   be a multiple of 8"); FlashAttention-3's Hopper build (hopper/flash_api.cpp, 2024): TORCH_CHECK(head_size_og == 64
#   || ... == 256, "Only support head size 64, 128, and 256 for now"); ports for older GPUs print their own
#   `only supports head dimension 128`.
# vLLM's INFO `Cannot use FlashAttention-2 backend for head size 88.` is a fallback to another backend: not this.
@rule(
    "attention-head-size-unsupported",
    ("is not supported. Supported head sizes", "Supported head sizes are", "Unsupported head size",
     "only supports head dimension", "Only support head size", "head_size should be a multiple of 8"),
    r"head_size \((?P<h0>\d+)\) is not supported\. Supported head sizes: (?P<l0>\[[^\]]*\])"
    r"|Head size (?P<h1>\d+) is not supported by (?P<backend>\w+)\. Supported head sizes are: (?P<l1>\[[^\]]*\])"
    r"|Unsupported head size:? (?P<h2>\d+)"
    r"|(?P<fa>FlashAttention|repo) (?:forward |backward )?only supports head dimension (?P<most>at most )?(?P<lim>\d+)"
    r"|Only support head size (?P<l3>\d+(?:, \d+)*,? (?:and|or) \d+) for now"
    r"|(?P<mult8>head_size should be a multiple of 8)",
    flags=re.IGNORECASE,
)
def _head_size(m, rec, state):
    h = m.group("h0") or m.group("h1") or m.group("h2")
    if m.group("backend"):
        backend = m.group("backend")
    elif m.group("h0"):
        backend = "PagedAttention"
    elif h is not None:
        backend = "paged-attention"
    else:
        backend = "FlashAttention"
    if not first_time(state, ("head_size", h, backend), rec.loc.line):
        return []  # every worker raises it, the engine re-raises it
    listed = m.group("l0") or m.group("l1") or m.group("l3")
    supported = [int(x) for x in re.findall(r"\d+", listed)] if listed else None
    if h is not None:
        detail = f"the model's attention head size {h} is not one the {backend} kernels support"
        if supported:
            detail += f" ({', '.join(map(str, supported))})"
    elif m.group("lim"):
        limit = "at most " if m.group("most") else "only "
        detail = f"the model's attention head size is not one the {backend} kernels support ({limit}{m.group('lim')})"
    elif supported:
        detail = (f"the model's attention head size is not one the {backend} kernels support "
                  f"({', '.join(map(str, supported))} only)")
    else:
        detail = f"the model's attention head size is not one the {backend} kernels support (a multiple of 8 only)"
    if "FLEX_ATTENTION" in rec.text:
        detail += "; the error names FLEX_ATTENTION, which takes any head size"
    _seen(state)
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="serving", error="attention_head_size_unsupported",
        message=_message(rec.text).strip(), exc_type=_exc_type(rec.text),
        fields={"head_size": int(h) if h else None, "backend": backend, "supported": supported, "detail": detail},
    )

# The start-up memory profile's sanity check, raised when free device memory did not drop during the profiling run
# (another process on the device freed memory meanwhile, or memory a previous instance in this process held was
# released), so the KV-cache budget computed from it would be wrong:
#   vllm/worker/worker.py determine_num_available_blocks (0.4-0.5): assert peak_memory > 0, ("Error in memory
#       profiling. This happens when the GPU memory was not properly cleaned up before initializing the vLLM instance.")
#   0.6 (_assert_memory_footprint_increased_during_profiling): "Error in memory profiling. Initial used memory {},
#       currently used memory {}. This happens when the GPU memory was not properly cleaned up before ..."
#   0.7-0.8 (V0 worker.py, V1 gpu_worker.py): "Error in memory profiling. Initial free memory {X}, current free memory
#       {Y}. This happens when the GPU memory was not properly cleaned up before initializing the vLLM instance."
#   later V1 gpu_worker.py determine_available_memory: "Error in memory profiling. Initial free memory X GiB, current
#       free memory Y GiB. This happens when other processes sharing the same container release GPU memory while vLLM
#       is profiling during initialization. To fix this, ensure consistent GPU memory allocation or isolate vLLM in its
#       own container."   (the plugins' workers copy it: vllm-ascend's NPU worker, the qaic worker)
# Only the assertion's words: the DEBUG record `Initial free memory: X GiB, free memory: Y GiB, requested GPU memory`
# and `Memory profiling takes N seconds` are a healthy start's.
@rule(
    "memory-profiling-error",
    ("Error in memory profiling",),
    r"Error in memory profiling\.(?:\s+Initial (?P<what>used|free) memory (?P<init>" + _F + r")(?P<unit> ?GiB)?,"
    r"\s*current(?:ly)? (?:used |free )?memory (?P<cur>" + _F + r"))?",
)
def _memory_profiling(m, rec, state):
    if not first_time(state, ("memory_profiling",), rec.loc.line):
        return []  # every worker asserts it, the engine re-raises it
    what, init, cur = m.group("what"), m.group("init"), m.group("cur")
    unit = " GiB" if m.group("unit") else (" bytes" if init is not None and "." not in init else "")
    if init is not None and to_float(init) == to_float(cur):
        detail = (f"{what} device memory stayed at {init}{unit} through the profiling run (a device whose memory reading"
                  " does not move, or memory released elsewhere exactly offset the profile)")
    elif what == "free" and init is not None:
        detail = (f"free device memory went from {init}{unit} to {cur}{unit} during the profiling run instead of dropping"
                  " (another process on the device freed memory meanwhile)")
    elif what == "used" and init is not None:
        detail = (f"used device memory went from {init}{unit} to {cur}{unit} during the profiling run instead of growing"
                  " (memory held before vLLM started was released meanwhile)")
    else:
        detail = "free device memory did not drop during the profiling run (another process on the device freed memory meanwhile)"
    return _error(rec, state, "vllm_memory_profiling", {
        "initial": to_float(init), "current": to_float(cur), "measure": what, "detail": detail})


# vllm/config.py DeviceConfig.__init__ (0.6-0.8, device="auto"): when no platform plugin matched (no CUDA / ROCm /
# XPU / TPU / CPU build found a device; vllm/platforms/__init__.py logs `No platform detected, vLLM is running on
# UnspecifiedPlatform`): raise RuntimeError("Failed to infer device type")   (later: ", please set the environment
# variable `VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue."). In a container it is
# nearly always one started without the GPUs.
# vllm/platforms/__init__.py resolve_current_platform_cls_qualname logs `No platform detected, vLLM is running on
# UnspecifiedPlatform` (0.7+, INFO) when no plugin found a device. Importing vLLM on a machine without a GPU (a
# trainer's import, `vllm --help`) prints it too and is fine; a server that goes on to start (`vLLM API server version
# X`, vllm/entrypoints/openai/api_server.py run_server, 0.5+) cannot run on no platform, so the two together are the
# failure even where the excerpt ends before the RuntimeError.
_NO_DEVICE_DETAIL = ("vLLM detected no platform it can run on: no GPU is visible to the process (a container started"
                     " without --gpus / the NVIDIA runtime, an empty CUDA_VISIBLE_DEVICES) or the install has no build"
                     " for this device")


@rule(
    "device-type-unknown",
    ("Failed to infer device type", "running on UnspecifiedPlatform", "vLLM API server version"),
    r"(?P<failed>Failed to infer device type)|(?P<none>No platform detected, vLLM is running on UnspecifiedPlatform)"
    r"|(?P<server>vLLM API server version \S+)",
)
def _no_device_type(m, rec, state):
    if m.group("failed") is None:
        state["vllm_" + ("no_platform" if m.group("none") else "server_start")] = True
        if not (state.get("vllm_no_platform") and state.get("vllm_server_start")):
            return []
        if not first_time(state, ("device_type",), rec.loc.line):
            return []
        return _error(rec, state, "cuda_no_device", {
            "cuda_error": "vLLM: No platform detected (UnspecifiedPlatform) and the API server starting", "code": None,
            "source": "vllm", "detail": _NO_DEVICE_DETAIL})
    if not first_time(state, ("device_type",), rec.loc.line):
        return []
    return _error(rec, state, "cuda_no_device", {
        "cuda_error": "vLLM: Failed to infer device type", "code": None, "source": "vllm", "detail": _NO_DEVICE_DETAIL})


# vllm/config.py (later vllm/config/model.py) _get_and_verify_max_len, when --max-model-len is above what the
# model's config.json gives (max_position_embeddings, seq_length, sliding_window, ... or the tokenizer's
# model_max_length):
#   <= 0.5: raise ValueError(f"User-specified max_model_len ({max_model_len}) is greater than the derived
#           max_model_len ({max_len_key}={derived_max_model_len} or model_max_length={model_max_length} in model's
#           config.json). This may lead to incorrect model outputs or CUDA errors. Make sure the value is correct
#           and within the model context size.")   (the oldest print `(None=4096 in model's config.json)`)
#   0.6+:   ... CUDA errors. To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 ...
#   0.10+:  the same behind pydantic's `Value error, ` (ModelConfig is a pydantic dataclass)
# With VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 the same words are a logger.warning (PR #7080: `WARNING ... config.py:...]
# User-specified max_model_len ... CUDA errors.`; since PR #20904 it goes on with ` VLLM_ALLOW_LONG_MAX_MODEL_LEN
# must be used with extreme caution. ...` right after `config.json).`): the user chose it and the engine starts,
# so that form is no failure. (The error since #20904 has the caution too, but after `To allow overriding ...`.)
_MAX_LEN_OVERRIDE = LazyPattern(r"\)\.?\s*VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution")
_WARNING_LEVEL = LazyPattern(r"(?:^|[\s\]])WARNING \d\d-\d\d \d\d:\d\d:\d\d")


@rule(
    "max-model-len-exceeds-model",
    ("is greater than the derived max_model_len",),
    r"User-specified max_model_len \((?P<user>\d+)\) is greater than the derived max_model_len \((?P<derived>[^)]*)",
)
def _max_model_len(m, rec, state):
    if _MAX_LEN_OVERRIDE.match(rec.text, m.end()) or _WARNING_LEVEL.search(rec.text, 0, m.start()):
        return []  # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: the override's warning, the engine goes on
    if not first_time(state, ("max_model_len",), rec.loc.line):
        return []  # the exception, a wrapper's log of it, pydantic's re-print
    derived = m.group("derived").replace(" in model's config.json", "").strip()
    nums = [to_float(x) for x in re.findall(r"=\s*(\d+(?:\.\d+)?)", derived)]
    limit = next((int(x) for x in nums if x is not None), None)
    return _error(rec, state, "vllm_max_model_len", {
        "max_model_len": int(m.group("user")), "derived": derived, "derived_max_len": limit,
        "detail": f"--max-model-len {m.group('user')} is above the model's own limit ({derived})",
    })


# Without chunked prefill one prompt must fit in one scheduler step, so the step's token budget may not be below the
# longest sequence. vllm/config.py SchedulerConfig._verify_args (V0, 0.2-0.9; later vllm/config/scheduler.py
# verify_max_model_len, behind pydantic's `Value error, ` in 0.10+):
#   raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than max_model_len
#       ({self.max_model_len}). This effectively limits the maximum sequence length to max_num_batched_tokens and
#       makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.")
# vllm-ascend's AscendSchedulerConfig: "Ascend scheduler is enabled without chunked prefill feature. Argument
#   max_num_batched_tokens (4096) is smaller than max_model_len (32768). ..."; verl's vLLM rollout checks the same
#   pair before it builds the engine: "Enable chunked prefill, max_num_batched_tokens is smaller than max_model_len,
#   please increase max_num_batched_tokens or disable chunked prefill" (no numbers).
@rule(
    "batched-tokens-below-max-len",
    ("is smaller than max_model_len",),
    r"max_num_batched_tokens \((?P<b>\d+)\) is smaller than max_model_len \((?P<l>\d+)\)"
    r"|(?P<verl>max_num_batched_tokens is smaller than max_model_len), please increase",
)
def _batched_tokens(m, rec, state):
    if not first_time(state, ("batched_tokens",), rec.loc.line):
        return []  # the exception, pydantic's re-print, a wrapper's log of it
    b, ln = to_int(m.group("b")), to_int(m.group("l"))
    detail = (f"max_num_batched_tokens {b} is below max_model_len {ln} with chunked prefill off" if b is not None
              else "max_num_batched_tokens is below max_model_len (the wrapper's check before it starts vLLM)")
    return _error(rec, state, "vllm_batched_tokens_below_max_len",
                  {"max_num_batched_tokens": b, "max_model_len": ln, "detail": detail})


# Speculative decoding needs the draft (proposer) and the target (scorer) to share one vocabulary. V0's
# vllm/spec_decode/spec_decode_worker.py SpecDecodeWorker._vocab_size checks it with a bare assertion, so the log
# shows only the traceback's source line and `AssertionError`:
#   assert all(vocab_sizes[0] == vocab_size for vocab_size in vocab_sizes)
# (llama.cpp's wording of the same check is ggml.py's.)
@rule(
    "spec-decode-vocab",
    ("vocab_sizes[0] == vocab_size for vocab_size in vocab_sizes",),
    r"assert all\(vocab_sizes\[0\] == vocab_size for vocab_size in vocab_sizes\)",
)
def _spec_vocab(m, rec, state):
    if not first_time(state, ("spec_vocab",), rec.loc.line):
        return []  # every worker (and the driver) raises it
    return _error(rec, state, "spec_draft_mismatch", {
        "engine": "vLLM",
        "detail": "the draft model's vocab_size differs from the target model's (spec_decode_worker's vocab check)"})


# Speculative settings SpeculativeConfig refuses (vllm/config.py, later vllm/config/speculative.py):
#   maybe_create_spec_config (0.4-0.6): raise ValueError("Expected both speculative_model and "
#       "num_speculative_tokens to be provided, but found " f"{speculative_model=} and {num_speculative_tokens=}.")
#       (0.5's MLPSpeculator path raised it too for a count above the speculator's n_predict, vllm-project/vllm#5893)
#     "Speculative decoding and chunked prefill are " f"currently mutually exclusive ({enable_chunked_prefill=})."
#     "Speculative decoding requires usage of the V2 " "block manager. Enable it with --use-v2-block-manager."
#   __post_init__ (0.8+): f"num_speculative_tokens:{self.num_speculative_tokens}" f" must be divisible by {n_predict=}"
@rule(
    "spec-config",
    ("Expected both speculative_model and num_speculative_tokens", " must be divisible by n_predict=",
     "Speculative decoding and chunked prefill are currently mutually exclusive",
     "Speculative decoding requires usage of the V2 block manager"),
    r"Expected both speculative_model and num_speculative_tokens to be provided, but found"
    r" speculative_model=(?P<model>'[^']*'|None) and num_speculative_tokens=(?P<n>\d+|None)"
    r"|num_speculative_tokens:(?P<k>\d+) must be divisible by n_predict=(?P<np>\d+)"
    r"|(?P<chunked>Speculative decoding and chunked prefill are currently mutually exclusive)"
    r"|(?P<v1bm>Speculative decoding requires usage of the V2 block manager)",
)
def _spec_config(m, rec, state):
    if not first_time(state, ("spec_config",), rec.loc.line):
        return []  # the raise, the engine's re-raise, a wrapper's log of it
    if m.group("model") is not None:
        model, n = m.group("model"), m.group("n")
        if model != "None" and n != "None":
            detail = (f"both the draft {model} and num_speculative_tokens={n} were given: the count is more than the"
                      " draft predicts (its n_predict), which this vLLM reports in these words")
        else:
            detail = (f"a draft model needs num_speculative_tokens with it (speculative_model={model},"
                      f" num_speculative_tokens={n})")
    elif m.group("k"):
        detail = (f"num_speculative_tokens {m.group('k')} is not a multiple of the draft head's n_predict"
                  f" {m.group('np')}")
    elif m.group("chunked"):
        detail = "this vLLM cannot run speculative decoding with chunked prefill on"
    else:
        detail = "this vLLM's speculative decoding needs the v2 block manager (--use-v2-block-manager)"
    return _error(rec, state, "spec_config_invalid", {"engine": "vLLM", "detail": detail})


# vllm/model_executor/models/registry.py inspects (0.6.2+: in a subprocess, `python -m
# vllm.model_executor.models.registry`) or imports the implementation of the checkpoint's architecture:
#   logger.exception("Error in inspecting model architecture '%s'", model_arch)   (_try_inspect_model_cls)
#   logger.exception("Error in loading model architecture '%s'", model_arch)      (_try_load_model_cls)
# then returns None, and the engine ends with `Model architectures [...] are not supported for now` (0.6.x; later
# `... failed to be inspected`): the architecture is in vLLM's table but its module could not be imported here (a
# broken or mismatched install, a missing dependency, a platform vLLM does not run on). The traceback says why.
@rule(
    "registry-inspect",
    ("Error in inspecting model architecture '", "Error in loading model architecture '"),
    r"Error in (?P<how>inspecting|loading) model architecture '(?P<arch>[^']+)'",
)
def _registry_inspect(m, rec, state):
    arch = m.group("arch")
    if not first_time(state, ("model_arch", f"['{arch}']"), rec.loc.line):
        return []
    return _error(rec, state, "model_arch_unsupported", {
        "architecture": arch, "engine": "vLLM",
        "detail": f"vLLM could not {'inspect' if m.group('how') == 'inspecting' else 'load'} its implementation of "
                  f"{arch} (the traceback below says why: a broken install, a missing dependency, an unsupported platform)"})


# A checkpoint tensor that the model vLLM built has no parameter for (a quantization scale of a layer vLLM builds
# unquantized, a module of a custom architecture the Transformers backend does not have, another weight layout):
#   vllm/model_executor/models/utils.py AutoWeightsLoader._load_module (0.6.4+):
#       msg = (f"There is no module or parameter named '{prefix}' in {type(self.module).__name__}")
#       raise ValueError(msg)     (later followed by `The available parameters belonging to {parent} ({cls}) are: {...}`;
#       pastes often wrap the message after `named`)
#   the models' own load_weights (vLLM, and SGLang's copies of them): `param = params_dict[name]` raises a bare KeyError
#   with the tensor's name; that source line in a traceback is only ever printed for that KeyError (a dict lookup).
@rule(
    "weights-param-unknown",
    ("There is no module or parameter named", "param = params_dict[name]"),
    r"There is no module or parameter named(?: '(?P<name>[^']+)'(?: in (?P<cls>\w+))?)?"
    r"|(?P<frame>^|\s)param = params_dict\[name\]\s*$",
)
def _weights_param(m, rec, state):
    if not first_time(state, ("weights_param",), rec.loc.line):
        return []  # every TP worker's traceback, the engine's re-raise
    name, cls = m.group("name"), m.group("cls")
    if m.group("frame") is not None:
        detail = "the checkpoint has a tensor the engine's model implementation has no parameter for (params_dict lookup)"
    else:
        detail = (f"the checkpoint has tensor {name!r}" if name else "the checkpoint has a tensor") + \
            (f", which {cls} (the model vLLM built) has no parameter for" if cls else ", which the model vLLM built has no parameter for")
    ev = _error(rec, state, "state_dict_mismatch", {"tensor": name, "model_class": cls, "detail": detail})
    ev.message = ("the engine's weight loader: " if m.group("frame") is not None else "vLLM's weight loader: ") + detail
    return ev


@rule(
    "shutdown-requested",
    ("shutdown triggered", "trigger received signal"),
    r"\[shutdown\] (?:API server: shutdown triggered|EngineCore: trigger received signal=SIG(?:INT|TERM))",
)
def _shutdown(m, rec, state):
    state["shutdown_requested"] = True
    return []


@rule(
    "nan-probs",
    ("probability tensor contains either",),
    r"probability tensor contains either .?inf.?, .?nan.? or element < 0",
)
def _nan_probs(m, rec, state):
    seen = bool(state.get("seen_vllm"))
    ev = _error(rec, state, "vllm_nan_probs", {"seen_vllm": seen})
    state["seen_vllm"] = seen  # this line alone is not evidence that vLLM printed it
    return ev


@rule(
    "preemption",
    ("is preempted by PreemptionMode",),
    r"Sequence group (?P<id>\S+) is preempted by PreemptionMode\.(?P<mode>\w+) mode"
    r"(?:.*?total_num_cumulative_preemption=(?P<n>\d+))?",
)
def _preemption(m, rec, state):
    _seen(state)
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="vllm", warning="vllm_preemption", message=_message(rec.text).strip(),
        fields={"cumulative": to_int(m.group("n")), "mode": m.group("mode"), "sequence_group": m.group("id")},
    )


# Ray's ActorDiedError for one of vLLM's Ray workers (python/ray/exceptions.py ActorDiedError: "The actor died
# unexpectedly before finishing this task." then the death cause's context, one field a line:
# f"\tclass_name: {context.class_name}", actor_id, pid, namespace, ip, and, when Ray knows it, "The actor is dead because
# its worker process has died. Worker exit type: ..."). The worker actor is vLLM's RayWorkerWrapper (0.4+; RayWorkerVllm
# before): the engine lost a worker, whatever killed it (the exit detail, when printed, is python.py's to read).
@rule("ray-worker-died", ("class_name: RayWorkerWrapper", "class_name: RayWorkerVllm"),
      r"(?:^|\s)class_name: (?P<cls>RayWorkerWrapper|RayWorkerVllm)\b")
def _ray_worker_died(m, rec, state):
    if not first_time(state, ("ray_worker_died",), rec.loc.line):
        return []  # every caller of the dead actor re-raises it
    fields = {"phase": None, "worker_died": m.group("cls"),
              "detail": f"a vLLM Ray worker actor ({m.group('cls')}) died"}
    if state.get("shutdown_requested"):
        fields["during_shutdown"] = True
    return _error(rec, state, "vllm_engine_dead", fields)


# The same death as vLLM's engine logs it: with the Ray executor the EngineCore (V1) or the engine (V0) waits on its
# workers with ray.get, and a worker actor that vanished surfaces there as Ray's ActorDiedError, logged with the
# traceback under vLLM's logger prefix (`ERROR 05-06 14:20:15 [core.py:387] ray.exceptions.ActorDiedError: ...`).
# python/ray/exceptions.py ActorDiedError.BASE_ERROR_MSG "The actor died unexpectedly before finishing this task."
# (RayActorError before Ray 2.x) is the message of an actor whose process died without a Python error of its own
# (killed, crashed, its node lost); an actor whose constructor raised says instead "The actor died because of an
# error raised in its creation task". So a vLLM-logged ActorDiedError of that wording is a worker process that was
# killed or crashed, not an exception to read: the cause is outside Python (the node's kernel log, Ray's worker
# logs). When Ray also prints the exit (`Worker exit type: SYSTEM_ERROR ...`), python.py reads that line too.
@rule(
    "ray-actor-died-logged",
    ("The actor died unexpectedly before finishing this task",),
    r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:\[[^\s\]]*\]+|\S+:\d+\])[ \t]*"
    r"(?:ray\.exceptions\.)?(?P<type>ActorDiedError|RayActorError): The actor died unexpectedly before finishing this task",
)
def _ray_actor_died_logged(m, rec, state):
    if not first_time(state, ("ray_actor_died_logged",), rec.loc.line):
        return []  # every pending ray.get on the dead actor re-raises it
    _seen(state)
    detail = ("a vLLM Ray worker actor's process died with no Python error of its own (Ray's "
              f"{m.group('type')}: the actor died unexpectedly): killed (often the OOM killer), crashed, or its node was lost")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="vllm", error="killed", message=_message(rec.text).strip(),
                      exc_type=m.group("type"), fields={"source": "ray", "phase": None, "detail": detail})


# The OpenAI-compatible server's request handling (vllm/entrypoints/openai/serving_chat.py, serving_completion.py,
# serving_engine.py; since 0.1x chat_completion/serving.py, engine/serving.py) catches what one request raises while
# it is prepared and answers it with create_error_response (a 400 for a ValueError):
#   logger.exception("Error in preprocessing prompt inputs")   ->  `ERROR 07-03 03:19:15 [serving_chat.py:200] ...`
#   (0.10+ prints the file's path under vllm/, shortened in the middle:
#   `ERROR 05-04 08:51:40 [entrypoints/.../chat_completion/serving.py:1267] ...`, vllm-project/vllm#41647)
# so the traceback and the exception line carry that logger's prefix, e.g. serving_engine._validate_input's
#   f"This model's maximum context length is {max_model_len} tokens. However, you requested {n} tokens ..."
# The engine goes on serving the other requests: such an exception is no crash of the server. (The failures that
# do surface there, an engine that died, a chat template the tokenizer lacks, are claimed first: the engine rules
# above, chat_template.py.)
_SERVING_EXC = (r"(?:^|\s)(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?"
                r"(?:[\w.\-]+/){0,6}(?P<file>serving(?:_\w+)?\.py):\d+\][ \t]*"
                r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception))(?::|\s*$)")


@rule(
    "request-rejected",
    ("serving_chat.py:", "serving_completion.py:", "serving_engine.py:", "serving_responses.py:", "[serving.py:", "/serving.py:"),
    _SERVING_EXC,
)
def _request_rejected(m, rec, state):
    _seen(state)
    return []  # one request was answered with an error; the server is fine


PARSER = Parser(
    name="vllm",
    framework="vllm",
    priority=40,
    description="vLLM engine stats, KV-cache sizing, startup OOM, engine death, RPC time-outs, sampler NaN, preemption,"
                " config checks (quantization vs GPU capability and vs the checkpoint's config, quantization methods the release does not know, attention head sizes the kernels lack, max_model_len vs the model, the batch token budget), the speculative"
                " draft's vocabulary and settings, the model registry's import failures, the memory profile's check, no device,"
                " requests the OpenAI server rejected",
    rules=[_metrics, _kv_memory, _kv_tokens, _gpu_blocks, _kv_v1, _kv_v0, _no_blocks, _free_memory,
           _kv_allocation_cpu, _shutdown, _quant_capability, _quant_mismatch, _quant_unknown, _head_size,
           _memory_profiling, _no_device_type,
           _max_model_len, _batched_tokens, _spec_vocab, _spec_config,
           _registry_inspect, _weights_param, _worker_died, _worker_exception,
           _v0_engine_dead, _sampler_oom, _dtype, _engine_dead, _rpc_timeout, _shm_read_frame, _shm_read_timeout,
           _shm_wait, _nan_probs, _preemption, _ray_actor_died_logged, _ray_worker_died, _request_rejected],
)
