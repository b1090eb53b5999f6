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
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule

FW = "tgi"


@rule("shard-failed", ("failed to start",), r"text_generation_launcher: Shard (?P<rank>\d+) failed to start")
def _shard_failed(m, rec, state):
    rank = int(m.group("rank"))
    ev = ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="tgi_shard_failed", message=rec.text.strip(),
                    fields={"shard": rank, "own_failure": True})
    ev.rank = rank
    return ev


PARSER = Parser(
    name="tgi",
    framework=FW,
    priority=40,
    description="text-generation-inference launcher: a shard that failed to start",
    rules=[_shard_failed],
)
