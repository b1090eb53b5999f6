"""The per-file scan on a Dask distributed cluster (`--engine dask[:ADDRESS]`), merged into exactly
the report of the sequential run.

Inputs are cut into shards of consecutive files of about equal size; a Dask task scans one shard
with the same `scan_source` the local run uses and sends back, per file, its items (step rows as
StepBatch columns, metrics rows as columns, the few error / warning / lifecycle events as
objects), its InputInfo and its diagnostics. A large file (pieces.SPLIT_MIN_BYTES, with more
than one worker) is read in pieces instead (nanscope.pieces): a task per piece, and a task per
piece's overrun that starts from the state the piece ended in and reads on until it meets a
later piece's recorded state; `pieces.stitch` merges them into the sequential items. Nothing a worker sends depends on another shard, so
the merge is a union keyed by input index (associative, order-free: `merge_parts`), and the client
feeds the files to streams and engine strictly in input order, as `nanscope.parallel` does with
its spill files: whatever the sharding and whatever the order tasks finish in, the report is the
sequential one. The client consumes shard k while later shards are still being scanned.

Workers open the files by path: on a remote cluster the paths must be visible to the workers
(a shared file system), as for any Dask job that reads files. Standard input and in-memory data
are read in the client. `dask[distributed]` is an optional extra: nothing imports it unless this
engine is chosen.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from nanscope import pieces
from nanscope.errors import InputError, NanscopeError
from nanscope.ingest.reader import Source
from nanscope.model import Event, InputInfo
from nanscope.pipeline import ScanOptions, ScanResult, in_order, io_diagnostics, note_unreadable, scan_source
from nanscope.parsers.registry import select

SHARDS_PER_WORKER = 4  # tasks per worker: small enough to balance, big enough to amortise a task


@dataclass
class FilePart:
    """One input file scanned by a worker: what the client needs to merge it."""

    index: int
    items: list
    info: InputInfo
    diagnostics: list = field(default_factory=list)


def parse_engine(spec: Optional[str]) -> tuple[str, Optional[str]]:
    """`local`, `dask` or `dask:ADDRESS` -> (engine, address); a clear error otherwise."""
    if spec is None or spec == "local":
        return "local", None
    name, _, address = spec.partition(":")
    if name != "dask":
        raise NanscopeError(f"--engine: unknown engine '{spec}' (use local, dask or dask:ADDRESS)")
    return "dask", address or None


def scan_part(index: int, source: Source, options: ScanOptions) -> FilePart:
    """Scan one file as the sequential run does (this runs on a worker)."""
    parsers = select(options.parsers)
    info = InputInfo(path=source.name, size=None)
    result = ScanResult()
    items: list = []
    try:
        items = list(scan_source(source, parsers, info, result, options.max_line_bytes, None, options.native))
    except (InputError, OSError) as e:
        note_unreadable(info, result, source.name, e)
    return FilePart(index, items, info, result.diagnostics)


def scan_shard(shard: Sequence[tuple[int, Source]], options: ScanOptions) -> list[FilePart]:
    """A Dask task: the files of one shard, each scanned on its own."""
    return [scan_part(i, src, options) for i, src in shard]


def shard_sources(sources: Sequence[Source], n_shards: int) -> list[list[tuple[int, Source]]]:
    """Consecutive runs of files of about equal total size (stdin / in-memory inputs excluded)."""
    sizes = []
    for s in sources:
        try:
            sizes.append(max(1, os.path.getsize(s.path)) if s.path else 1)
        except OSError:
            sizes.append(1)
    target = max(1, sum(sizes) // max(1, n_shards))
    shards: list[list[tuple[int, Source]]] = []
    cur: list[tuple[int, Source]] = []
    acc = 0
    for i, (src, size) in enumerate(zip(sources, sizes)):
        cur.append((i, src))
        acc += size
        if acc >= target:
            shards.append(cur)
            cur, acc = [], 0
    if cur:
        shards.append(cur)
    return shards


@dataclass
class SplitPart:
    """One large input read in pieces on the cluster (nanscope.pieces): each piece a task from a
    fresh state, each piece's overrun a task from the state that piece ended in; what they send
    back is the pieces' messages (items as columns) and their states at the sync points."""

    index: int
    source: Source
    plan: Any
    reads: list  # futures of pieces.piece_task, one per piece
    overs: list  # futures of pieces.overrun_task, one per piece but the last

    def items(self, options: ScanOptions, result: ScanResult, progress, note) -> Iterator:
        def got(fut) -> Any:
            try:
                value = fut.result()
            except Exception as e:  # noqa: BLE001 - a worker's failure becomes a clear error
                raise NanscopeError(f"a Dask task failed: {type(e).__name__}: {e}") from None
            fut.release()
            return value

        done = pieces.Stitched(InputInfo(path=self.source.name, size=self.plan.size), {}, [])
        yield from pieces.stitch(self.plan, lambda p: iter(got(self.reads[p]).messages),
                                 lambda p: iter(got(self.overs[p])), done, progress)
        for fut in self.reads + self.overs:
            fut.release()  # (the pieces an overrun passed over)
        result.inputs.append(done.info)
        io_diagnostics(self.source, done.info, done.marks, options.max_line_bytes, self.plan.size, result)
        if note is not None:
            note(pieces.describe(self.source.name, self.plan, done, "as Dask tasks"))


def submit_split(client: Any, index: int, source: Source, plan: Any, options: ScanOptions) -> SplitPart:
    """The tasks that read one input in pieces: the pieces at once, each overrun once its piece
    and the states of the pieces after it are there."""
    n = len(plan.starts)
    reads = [client.submit(pieces.piece_task, index, source, options, plan, p, pure=False) for p in range(n)]
    states = [client.submit(pieces.piece_states, r, pure=False) for r in reads]
    ends = [client.submit(pieces.end_state, reads[p], plan, pure=False) for p in range(n - 1)]
    overs = [client.submit(pieces.overrun_task, source, options, plan, p, ends[p], states[p + 1:], pure=False)
             for p in range(n - 1)]
    return SplitPart(index, source, plan, reads, overs)


def merge_parts(*groups: dict[int, FilePart]) -> dict[int, FilePart]:
    """The union of partial results keyed by input index: associative and commutative, since a
    file is scanned by exactly one task."""
    merged: dict[int, FilePart] = {}
    for g in groups:
        for k, part in g.items():
            if k in merged:
                raise NanscopeError(f"input {k} was scanned twice")
            merged[k] = part
    return merged


def feed_in_order(parts: Iterable[FilePart], n: int, options: ScanOptions, result: ScanResult,
                  progress: Optional[Callable[[int, int], None]] = None) -> Iterator[Event]:
    """The events of all inputs in input order, whatever order `parts` arrive in: a part that
    arrives early waits until every input before it has been fed."""
    waiting: dict[int, FilePart] = {}
    nxt = 0
    for part in parts:
        waiting = merge_parts(waiting, {part.index: part})
        while nxt in waiting:
            p = waiting.pop(nxt)
            if isinstance(p, SplitPart):
                yield from in_order(p.items(options, result, progress, options.note), options.ahead)
                nxt += 1
                continue
            result.inputs.append(p.info)
            result.diagnostics.extend(p.diagnostics)
            if progress is not None:
                progress(p.info.size or 0, p.info.lines)
            yield from in_order(iter(p.items), options.ahead)
            nxt += 1
    if nxt != n:
        raise NanscopeError(f"the cluster returned {nxt} of {n} inputs")


def dask_client(address: Optional[str], workers: Optional[int] = None) -> tuple[Any, Callable[[], None]]:
    """A client of the scheduler at `address`, or of a LocalCluster of `workers` processes (default:
    one per core, at most 4) that is closed with the client."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise NanscopeError("--engine dask needs Dask: pip install 'nanscope[dask]'") from None
    if address:
        try:
            client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise NanscopeError(f"--engine dask:{address}: cannot reach the scheduler ({e})") from None
        return client, client.close
    cluster = LocalCluster(n_workers=workers or max(1, min(4, os.cpu_count() or 1)), threads_per_worker=1,
                           processes=True, dashboard_address=None, silence_logs=40)
    client = Client(cluster)

    def close() -> None:
        client.close()
        cluster.close()

    return client, close


def scan_dask(sources: Sequence[Source], options: ScanOptions, result: ScanResult, address: Optional[str] = None,
              progress: Optional[Callable[[int, int], None]] = None) -> Iterator[Event]:
    """The events of scan_all(sources), with the files scanned on a Dask cluster (a LocalCluster
    of options.jobs workers when no address is given)."""
    select(options.parsers)  # unknown --parser names fail before anything is sent
    local = [i for i, s in enumerate(sources) if s.path is None or s.data is not None]
    if local:
        raise NanscopeError("--engine dask reads files only; standard input and in-memory data are read "
                            "with the local engine")
    client, close = dask_client(address, options.jobs)
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})) or 1)
        sent = dataclasses.replace(options, progress=None, note=None)  # a callback does not travel
        sizes = []
        for s in sources:
            try:
                sizes.append(os.path.getsize(s.path))  # type: ignore[arg-type]
            except OSError:
                sizes.append(0)
        plans = pieces.split_plans(list(sources), sizes, workers, pieces.SPLIT_MIN_BYTES, options.max_line_bytes) \
            if workers > 1 or pieces.PIECE_BYTES else {}
        split = [submit_split(client, i, sources[i], plan, sent) for i, plan in plans.items()]
        whole = [(i, s) for i, s in enumerate(sources) if i not in plans]
        if not plans:
            shards = shard_sources(sources, workers * SHARDS_PER_WORKER)
        else:
            shards = [[(whole[k][0], s) for k, s in shard]
                      for shard in shard_sources([s for _, s in whole], workers * SHARDS_PER_WORKER)] if whole else []
        futures = client.map(scan_shard, shards, options=sent, pure=False) if shards else []

        def arrived() -> Iterator[FilePart]:
            for fut in futures:  # in shard order: the client feeds shard k while k+1.. are scanned
                try:
                    got = fut.result()
                except Exception as e:  # noqa: BLE001 - a worker's failure becomes a clear error
                    raise NanscopeError(f"a Dask task failed: {type(e).__name__}: {e}") from None
                fut.release()
                yield from got

        yield from feed_in_order(itertools.chain(split, arrived()), len(sources), options, result, progress)
    finally:
        close()
