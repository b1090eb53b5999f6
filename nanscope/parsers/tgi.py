"""Hugging Face text-generation-inference (TGI): the launcher's report of a shard that failed.

The launcher (launcher/src/main.rs, tracing_subscriber's compact fmt) spawns one
`text-generation-server` process per shard (rank 0..num_shard-1). When one exits during start-up its
shard manager sends ShardStatus::Failed(rank) and the launcher logs

  tracing::error!("Shard {rank} failed to start");              -> ... ERROR text_generation_launcher: Shard 0 failed to start
  (older: "Shard {rank} failed to start:\\n{err}")

then `Shutting down shards` and exits with `Error: ShardCannotStart`. The shard's own stderr (the
Python traceback) is printed before it, by the shard manager, whose tracing span field ends that
multi-line record as ` rank=0` on a line of its own; the launcher's line is what names the shard that
failed, so the event carries that rank as the process that failed itself (attribution's own_failure).
`Waiting for shard to be ready... rank=N` is start-up progress, not a failure.

A shard that dies of a signal is named by its shard manager before that (launcher/src/main.rs shard_manager:
`tracing::error!("Shard process was signaled to shutdown with signal {signal}")`, the span field appending
` rank=N` since ~1.1; older launchers print it without the span), and the weight download likewise
(`Download process was signaled to shutdown with signal {signal}: {err}`, then `Error: DownloadError`): the
signal says how the process died (9: SIGKILL, the host's OOM killer as a rule; 7: SIGBUS, /dev/shm too small;
4: SIGILL, a CPU without the instructions a kernel was built for; 11: SIGSEGV). A shard that exits once the
server is up is `Shard {rank} crashed` (then `Error: ShardFailed`).

The launcher's own exit (main returns Err(LauncherError), which Rust prints with Debug) is the last line:
`Error: ShardCannotStart` (a shard did not start), `Error: ShardFailed` / `Error: ShardDisconnected` (a
shard was lost while serving), `Error: WebserverFailed` (the router died), `Error: DownloadError`. An
excerpt cut after the shard's own lines may keep only that: the shard failure still shows.

The router is Rust: when it panics the standard panic hook prints `thread 'NAME' panicked at FILE:LINE:COL:`
and the message on the next line (Rust >= 1.73; before: `thread 'NAME' panicked at 'MESSAGE', FILE:LINE:COL`),
then the launcher logs `Webserver Crashed`. A panic is Rust's uncaught exception.

The shard's Python server logs its own failure before it exits, and the launcher relays the shard's log
records with its own target (`ERROR text_generation_launcher: MESSAGE`):
  server/text_generation_server/server.py serve_inner:   logger.exception("Error when initializing model")
  server/text_generation_server/interceptor.py (every gRPC method: Warmup, Prefill, Decode, ...):
      logger.exception(f"Method {method_name} encountered an error.")
The traceback follows; `Method Warmup ...` is a shard that loaded but could not run the router's warm-up batch
(an unsupported kernel or quantization; its CUDA OOM is the warmup-oom rule's below), `Method Prefill/Decode`
one that fails while serving. An excerpt often ends before the launcher's `Shard N failed to start`.

The server's warm-up (server/text_generation_server/models/flash_causal_lm.py warmup, every release since
0.9) runs one prefill of --max-batch-prefill-tokens tokens and turns the CUDA OOM it catches into
  raise RuntimeError(f"Not enough memory to handle {len(batch.input_ids)} prefill tokens. "
                     f"You need to decrease `--max-batch-prefill-tokens`") from e
(later releases count `batch.to_pb().current_tokens` / `num_tokens`; some catch any exception); the launcher
then logs `Method Warmup encountered an error.` and the router `Error: Warmup(Generation("Not enough memory
to handle 4096 prefill tokens. ..."))`. It is a CUDA OOM at start-up with the budget that caused it.

While serving, the shard's paged KV cache is a fixed pool of blocks; the router batches requests up to
--max-batch-total-tokens (inferred from the memory left after the warm-up, or set by the user), and when a
batch needs more blocks than are free the shard's block allocator fails it
(server/text_generation_server/models/cache_manager.py CacheManager.allocate, 1.x):
    assert len(free_block_indices) >= blocks, (
        f"Out of available cache blocks: asked {blocks}, only {len(free_block_indices)} free blocks")
the router relaying it per request (`Server error: Out of available cache blocks: asked 107, only 4 free
blocks`, `Request failed during generation: Server error: ...`). Ascend's MindIE / ATB model runner, which copied
the allocator, logs the same words with a trailing period.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import SIGNALS, Parser, rule

FW = "tgi"


@rule("shard-failed", ("failed to start", "crashed"),
      r"text_generation_launcher: Shard (?P<rank>\d+) (?:(?P<start>failed to start)|crashed)")
def _shard_failed(m, rec, state):
    first_time(state, ("shard_failed",), rec.loc.line)  # the `Error: Shard...` exit that follows is this one
    rank = int(m.group("rank"))
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="tgi_shard_failed", message=rec.text.strip(),
                    fields={"shard": rank, "own_failure": True, "phase": "startup" if m.group("start") else "runtime",
                            "what": "failed to start" if m.group("start") else "crashed while serving"})
    ev.rank = rank
    return ev


@rule("shard-raised", ("encountered an error.", "Error when initializing model"),
      r"text_generation_launcher: (?:Method (?P<method>\w+) encountered an error\.|(?P<init>Error when initializing model))")
def _shard_raised(m, rec, state):
    if not first_time(state, ("shard_failed",), rec.loc.line):
        return []  # the launcher's `Shard N failed to start` / `Error: Shard...` said it already
    method = m.group("method")
    if m.group("init"):
        phase, what = "startup", "raised while it initialized the model"
    elif method == "Warmup":
        phase, what = "startup", "failed the router's warm-up"
    else:
        phase, what = "runtime", f"raised in {method}"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="tgi_shard_failed", message=rec.text.strip(),
                      fields={"phase": phase, "what": what, "method": method})


@rule("launcher-exit", ("Error: ShardCannotStart", "Error: ShardFailed", "Error: ShardDisconnected"),
      r"Error: Shard(?P<how>CannotStart|Failed|Disconnected)\s*$", match_start=True)
def _launcher_exit(m, rec, state):
    if not first_time(state, ("shard_failed",), rec.loc.line):
        return []  # the launcher already named the shard (`Shard 0 failed to start`)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="tgi_shard_failed", message=rec.text.strip(),
                      fields={"phase": "startup" if m.group("how") == "CannotStart" else "runtime",
                              "what": "failed to start" if m.group("how") == "CannotStart" else "crashed while serving"})


@rule("rust-panic", ("' panicked at ",),
      r"thread '(?P<thread>[^']*)' panicked at (?:'(?P<old>.*)', (?P<oldat>\S+:\d+:\d+)|(?P<at>\S+?:\d+:\d+):?\s*$)",
      match_start=True)
def _rust_panic(m, rec, state):
    msg = (f"{m.group('old')} (thread '{m.group('thread')}' at {m.group('oldat')})" if m.group("old") is not None
           else f"thread '{m.group('thread')}' panicked at {m.group('at')}")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="rust", error="exception", exc_type="Rust panic",
                      message=msg, fields={"panic_thread": m.group("thread")})


@rule("process-signaled", ("process was signaled to shutdown with signal",),
      r"text_generation_launcher: (?P<what>Shard|Download) process was signaled to shutdown with signal (?P<num>\d+)"
      r"(?:[: ][^\n]*?\brank=(?P<rank>\d+))?")
def _signaled(m, rec, state):
    num = int(m.group("num"))
    shard = m.group("what") == "Shard"
    rank = int(m.group("rank")) if shard and m.group("rank") is not None else None
    ev = ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="worker_failed", message=rec.text.strip(),
        signal=SIGNALS.get(num, f"SIG{num}"),
        fields={"source": "tgi", "process": "shard" if shard else "download", "signum": num,
                "own_failure": rank is not None},
    )
    ev.rank = rank
    return ev


@rule("warmup-oom", ("prefill tokens. You need to decrease",),
      r"Not enough memory to handle (?P<n>\d+) prefill tokens\. You need to decrease `?--max-batch-prefill-tokens")
def _warmup_oom(m, rec, state):
    if not first_time(state, ("warmup_oom",), rec.loc.line):
        return []  # the shard's exception, then the router's Error: Warmup(...) with the same text
    n = int(m.group("n"))
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="cuda_oom", message=rec.text.strip(), exc_type="RuntimeError",
        fields={"warmup": True, "prefill_tokens": n,
                "detail": f"the warm-up prefill of {n} tokens did not fit in GPU memory (--max-batch-prefill-tokens)"},
    )


@rule("kv-cache-blocks", ("Out of available cache blocks: asked ",),
      r"Out of available cache blocks: asked (?P<asked>\d+), only (?P<free>\d+) free blocks")
def _kv_blocks(m, rec, state):
    if not first_time(state, ("kv_cache_blocks_exhausted",), rec.loc.line):
        return []  # the shard's assertion, the router's relay, every request that follows
    asked, free = int(m.group("asked")), int(m.group("free"))
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="kv_cache_blocks_exhausted", message=rec.text.strip(),
        fields={"asked": asked, "free": free,
                "detail": (f"a batch needed {asked} KV cache blocks and only {free} were free: the router's batch "
                           "budget is larger than the cache the shard allocated")},
    )


PARSER = Parser(
    name="tgi",
    framework=FW,
    priority=40,
    description="text-generation-inference: a shard that failed or died of a signal, a warm-up out of memory, the KV cache out of blocks, the router's panic",
    rules=[_shard_failed, _shard_raised, _launcher_exit, _signaled, _warmup_oom, _kv_blocks, _rust_panic],
)
