"""Normalized events out: JSON Lines (one object per event, strict JSON), Parquet and Arrow IPC.

Parquet / Arrow use one fixed Arrow schema for every framework (EVENT_SCHEMA below): a column per
event field, low-cardinality strings dictionary-encoded, NaN kept as a native float NaN, `text`
and `message` redacted. Fields a future event kind adds that the schema does not name go into
the `fields` column (JSON), so nothing is silently dropped.

Writing is streamed: events are buffered into record batches of BATCH_ROWS rows and written with
ParquetWriter.write_batch (or an IPC file writer), so the log never sits in memory. The file is
written under a temporary name in the target folder and renamed at the end: an interrupted export
leaves no file (an unclosed ParquetWriter leaves a file without a footer that nothing can read).
`partition_by="rank"` writes a hive-style folder (rank=0/part-<input-hash>.parquet, ...,
rank=__HIVE_DEFAULT_PARTITION__ for events without a rank) that DuckDB, Polars and Spark read as is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from typing import IO, Any, Iterable, Optional, Sequence

from nanscope.errors import NanscopeError
from nanscope.model import Collective, Event
from nanscope.output import settle_mode
from nanscope.redact import redact
from nanscope.report.base import number
from nanscope.report.sanitize import json_text

EVENT_SCHEMA_VERSION = 1
BATCH_ROWS = 8_192
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def event_record(ev: Event, redact_text: bool = True) -> dict:
    rec: dict = {"v": EVENT_SCHEMA_VERSION, "kind": ev.kind, "source": ev.loc.source, "line": ev.loc.line,
                 "rank": ev.rank, "local_rank": ev.origin.local_rank if ev.origin else None,
                 "node": ev.origin.node if ev.origin else None, "ts": ev.origin.ts if ev.origin else None,
                 "framework": ev.framework, "step": ev.step}
    for f in dataclasses.fields(ev):
        if f.name in ("loc", "origin", "stream", "text", "rank", "step", "framework", "step_counted"):
            continue
        v = getattr(ev, f.name)
        if isinstance(v, Collective):
            v = dataclasses.asdict(v)
        elif isinstance(v, dict):
            v = {k: number(x) for k, x in v.items()}
        rec[f.name] = number(v)
    if redact_text and isinstance(rec.get("message"), str):
        rec["message"] = redact(rec["message"])
    rec["text"] = redact(ev.text) if redact_text else ev.text
    return rec


def write_jsonl(events: Iterable[Event], out: IO[str], redact_text: bool = True) -> int:
    n = 0
    for ev in events:
        out.write(json_text(json.dumps(event_record(ev, redact_text), allow_nan=False, ensure_ascii=False)) + "\n")
        n += 1
    return n


# --- the fixed Arrow schema -------------------------------------------------------------------

def _columns() -> list[tuple[str, Any]]:
    import pyarrow as pa

    d, s, i64, i32, f64, b = (pa.dictionary(pa.int32(), pa.string()), pa.string(), pa.int64(), pa.int32(),
                              pa.float64(), pa.bool_())
    return [
        ("source", d), ("line", i64), ("rank", i32), ("local_rank", i32), ("node", d), ("ts", f64),
        ("kind", d), ("framework", d), ("step", i64),
        # step
        ("loss", f64), ("grad_norm", f64), ("lr", f64), ("loss_scale", f64), ("skipped", b),
        ("nan_iters", i64), ("skipped_iters", i64), ("skipped_total", i64), ("tokens_per_s", f64), ("epoch", f64),
        # scale / lifecycle
        ("action", d), ("old_scale", f64), ("new_scale", f64), ("rank_is_printer_only", b),
        # error / warning
        ("error", d), ("warning", d), ("message", s), ("exc_type", d), ("fingerprint", s),
        ("exitcode", i64), ("signal", d),
        ("pg", d), ("seq", i64), ("op", d), ("enqueued", i64), ("completed", i64), ("timeout_ms", i64),
        # metrics
        ("running", i64), ("waiting", i64), ("swapped", i64), ("preemptions", i64), ("kv_cache_usage", f64),
        ("prompt_tps", f64), ("generation_tps", f64),
        # everything else: fields / raw_fields / unknown future fields, as strict JSON
        ("fields", s), ("text", s),
    ]


def event_schema(without: Sequence[str] = ()) -> "Any":
    import pyarrow as pa

    from nanscope import __version__

    return pa.schema([pa.field(n, t) for n, t in _columns() if n not in without],
                     metadata={"nanscope.schema_version": str(EVENT_SCHEMA_VERSION), "nanscope.version": __version__})


_DIRECT = {n for n, _ in _columns()} - {"source", "line", "rank", "local_rank", "node", "ts", "kind", "framework",
                                        "step", "pg", "seq", "op", "enqueued", "completed", "timeout_ms",
                                        "fields", "text"}
_SKIP = {"loc", "origin", "stream", "text", "rank", "step", "framework", "collective", "fields", "raw_fields",
         "step_counted"}


def _row(ev: Event, redact_text: bool) -> dict:
    o = ev.origin
    row: dict = {"source": ev.loc.source, "line": ev.loc.line, "rank": ev.rank,
                 "local_rank": o.local_rank if o else None, "node": o.node if o else None,
                 "ts": o.ts if o else None, "kind": ev.kind, "framework": ev.framework, "step": ev.step}
    extra: dict = dict(getattr(ev, "fields", None) or getattr(ev, "raw_fields", None) or {})
    for f in dataclasses.fields(ev):
        if f.name in _SKIP:
            continue
        v = getattr(ev, f.name)
        if f.name in _DIRECT:
            row[f.name] = v
        elif v is not None:
            extra[f.name] = v
    c = getattr(ev, "collective", None)
    if c is not None:
        row.update(pg=c.pg, seq=c.seq, op=c.op, enqueued=c.enqueued, completed=c.completed, timeout_ms=c.timeout_ms)
    if extra:
        js = json.dumps({k: number(v) for k, v in extra.items()}, allow_nan=False, ensure_ascii=False, default=str)
        row["fields"] = redact(js) if redact_text else js
    msg = row.get("message")
    if redact_text and isinstance(msg, str):
        row["message"] = redact(msg)
    row["text"] = redact(ev.text) if redact_text else ev.text
    return row


def _kind(t: "Any") -> str:
    import pyarrow as pa

    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    return "str"


def _coerce(v: Any, kind: str) -> Any:
    """A value a parser produced, as the column's type (None when it cannot be)."""
    try:
        if kind == "int":
            if isinstance(v, float):
                return int(v) if v.is_integer() else None
            return int(v)
        if kind == "float":
            return float(v)
        if kind == "bool":
            return bool(v)
        return v if isinstance(v, str) else str(v)
    except (TypeError, ValueError, OverflowError):
        return None


class _Batcher:
    """Column buffers for one output file; dictionaries grow across batches (valid IPC deltas)."""

    def __init__(self, schema: "Any"):
        import pyarrow as pa

        self.schema = schema
        self.names = schema.names
        self.dict_cols = {f.name for f in schema if pa.types.is_dictionary(f.type)}
        self.codes: dict[str, dict] = {n: {} for n in self.dict_cols}
        self.kinds = {f.name: _kind(f.type) for f in schema}
        self.cols: dict[str, list] = {n: [] for n in self.names}
        self.rows = 0

    def add(self, row: dict) -> None:
        for n in self.names:
            v = row.get(n)
            if v is not None:
                if n in self.dict_cols:
                    codes = self.codes[n]
                    v = codes.setdefault(str(v), len(codes))
                else:
                    v = _coerce(v, self.kinds[n])
            self.cols[n].append(v)
        self.rows += 1

    def take(self) -> "Any":
        import pyarrow as pa

        arrays = []
        for f in self.schema:
            vals = self.cols[f.name]
            if f.name in self.dict_cols:
                arrays.append(pa.DictionaryArray.from_arrays(pa.array(vals, pa.int32()),
                                                             pa.array(list(self.codes[f.name]), pa.string())))
            else:
                arrays.append(pa.array(vals, f.type, from_pandas=False))
            self.cols[f.name] = []
        self.rows = 0
        return pa.record_batch(arrays, schema=self.schema)


class _FileSink:
    """One Parquet or Arrow IPC file, written to `path` (a temp name; the caller renames it)."""

    def __init__(self, path: str, fmt: str, schema: "Any"):
        import pyarrow as pa

        self.batcher = _Batcher(schema)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            # No min/max statistics on float columns: Arrow leaves NaN out of them, and DuckDB
            # (verified with 2.0.1) then folds `isnan(loss)` to false from the statistics alone.
            stats = [f.name for f in schema if not pa.types.is_floating(f.type)]
            self.writer = pq.ParquetWriter(path, schema, compression="zstd", write_statistics=stats)
        else:
            self._file = pa.OSFile(path, "wb")
            self.writer = pa.ipc.new_file(self._file, schema,
                                          options=pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True))
        self.fmt = fmt

    def flush(self) -> None:
        if self.batcher.rows:
            self.writer.write_batch(self.batcher.take())

    def close(self) -> None:
        self.flush()
        self.writer.close()
        if self.fmt != "parquet":
            self._file.close()


def _tmp_beside(path: str, suffix: str, directory: bool = False) -> str:
    parent = os.path.dirname(os.path.abspath(path)) or "."
    if directory:
        return tempfile.mkdtemp(prefix=".nanscope-", suffix=suffix, dir=parent)
    fd, tmp = tempfile.mkstemp(prefix=".nanscope-", suffix=suffix, dir=parent)
    os.close(fd)
    return tmp


def input_hash(paths: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(paths).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def table_format(path: str) -> Optional[str]:
    """'parquet' or 'arrow' from the file name, None for anything else."""
    low = path.lower()
    if low.endswith((".parquet", ".pq")):
        return "parquet"
    if low.endswith((".arrow", ".feather", ".ipc")):
        return "arrow"
    return None


def write_table(events: Iterable[Event], path: str, fmt: str, redact_text: bool = True,
                batch_rows: int = BATCH_ROWS) -> int:
    """Stream events into one Parquet / Arrow IPC file, atomically. Returns the number of rows."""
    tmp = _tmp_beside(path, ".tmp")
    sink = None
    n = 0
    try:
        sink = _FileSink(tmp, fmt, event_schema())
        for ev in events:
            sink.batcher.add(_row(ev, redact_text))
            n += 1
            if sink.batcher.rows >= batch_rows:
                sink.flush()
        sink.close()
        sink = None
        settle_mode(tmp, path)
        os.replace(tmp, path)
    except BaseException:
        if sink is not None:
            with contextlib.suppress(Exception):
                sink.writer.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return n


def _replaceable(folder: str) -> bool:
    """Only an earlier partitioned export (rank=*/part-*.parquet) is ever replaced."""
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        if rel == ".":
            if files or not all(d.startswith("rank=") for d in dirs):
                return False
        elif dirs or not all(f.startswith("part-") and f.endswith(".parquet") for f in files):
            return False
    return True


def write_partitioned(events: Iterable[Event], folder: str, inputs: Sequence[str], redact_text: bool = True,
                      batch_rows: int = BATCH_ROWS) -> int:
    """A hive-style folder partitioned by rank: FOLDER/rank=R/part-<input-hash>.parquet."""
    if os.path.exists(folder) and (not os.path.isdir(folder) or not _replaceable(folder)):
        raise NanscopeError(f"{folder} exists and is not an earlier `--partition-by rank` export; "
                            "choose a new folder name")
    schema = event_schema(without=("rank",))
    part = f"part-{input_hash(inputs)}.parquet"
    tmp_dir = _tmp_beside(folder, ".tmp", directory=True)
    sinks: dict[Optional[int], _FileSink] = {}
    buffered = n = 0
    try:
        for ev in events:
            row = _row(ev, redact_text)
            sink = sinks.get(ev.rank)
            if sink is None:
                sub = os.path.join(tmp_dir, f"rank={HIVE_NULL if ev.rank is None else ev.rank}")
                os.makedirs(sub, exist_ok=True)
                sink = sinks[ev.rank] = _FileSink(os.path.join(sub, part), "parquet", schema)
            sink.batcher.add(row)
            n += 1
            buffered += 1
            if buffered >= batch_rows:  # bounded memory whatever the number of ranks
                for s in sinks.values():
                    s.flush()
                buffered = 0
        for s in sinks.values():
            s.close()
        sinks.clear()
        old = None
        if os.path.exists(folder):
            old = _tmp_beside(folder, ".old", directory=True)
            os.rmdir(old)
            os.replace(folder, old)
        settle_mode(tmp_dir, folder, directory=True)
        os.replace(tmp_dir, folder)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        for s in sinks.values():
            with contextlib.suppress(Exception):
                s.writer.close()
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    return n
