"""`nanscope events -o events.parquet|.arrow|.jsonl` and `--partition-by rank`: what a user
querying the export with DuckDB (or Polars / Spark) relies on."""

from __future__ import annotations

import json
import math
import os

import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, run_cli
from nanscope import api
from nanscope.export import EVENT_SCHEMA_VERSION, event_schema, write_table

DDP = "sample_logs/torch/ddp_nan_rank2.log"
LOGS = [DDP, "sample_logs/deepspeed/fp16_scale_collapse.log", "sample_logs/hf/trainer_nan_filter_on.log"]


def _export(tmp_path, *args: str) -> None:
    p = run_cli("events", *args)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"" and p.stderr == b""
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".nanscope-")]  # no temp file left


def test_duckdb_per_rank_steps_match_the_report(tmp_path):
    out = tmp_path / "events.parquet"
    _export(tmp_path, DDP, "-o", str(out))
    report = json.loads(run_cli("diagnose", DDP, "--format", "json").stdout)
    expected = {r["rank"]: r["steps"] for r in report["ranks"]}
    assert expected == {0: 60, 1: 60, 2: 60, 3: 60}
    rows = duckdb.sql(f"SELECT rank, count(*) FROM read_parquet('{out}') WHERE kind = 'step' "
                      "GROUP BY rank ORDER BY rank").fetchall()
    assert dict(rows) == expected
    # NaN is a native float NaN, so isnan() finds the initiating rank's step
    nan = duckdb.sql(f"SELECT rank, step FROM read_parquet('{out}') WHERE isnan(loss) ORDER BY step, rank").fetchall()
    assert nan[0] == (2, 40)


def test_partitioned_export_is_a_hive_dataset(tmp_path):
    out = tmp_path / "events"
    _export(tmp_path, DDP, "-o", str(out), "--partition-by", "rank")
    parts = sorted(os.listdir(out))
    assert parts == ["rank=0", "rank=1", "rank=2", "rank=3"]
    for d in parts:
        files = os.listdir(out / d)
        assert len(files) == 1 and files[0].startswith("part-") and files[0].endswith(".parquet")
    rows = duckdb.sql(f"SELECT rank, count(*) FROM read_parquet('{out}/*/*.parquet', hive_partitioning = true) "
                      "WHERE kind = 'step' GROUP BY rank ORDER BY rank").fetchall()
    assert rows == [(0, 60), (1, 60), (2, 60), (3, 60)]
    # exporting again replaces the earlier export instead of adding a second copy
    _export(tmp_path, DDP, "-o", str(out), "--partition-by", "rank")
    assert sum(len(os.listdir(out / d)) for d in os.listdir(out)) == 4


def test_partitioned_export_never_replaces_a_folder_it_did_not_write(tmp_path):
    precious = tmp_path / "results"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    p = run_cli("events", DDP, "-o", str(precious), "--partition-by", "rank")
    assert p.returncode == 2 and b"not an earlier" in p.stderr
    assert (precious / "notes.txt").read_text() == "keep me"
    assert run_cli("events", DDP, "-o", str(tmp_path / "x"), "--partition-by", "node").returncode == 2
    assert run_cli("events", DDP, "--partition-by", "rank").returncode == 2


def test_one_fixed_schema_for_every_framework(tmp_path):
    schemas = []
    for i, log in enumerate(LOGS):
        out = tmp_path / f"{i}.parquet"
        _export(tmp_path, log, "-o", str(out))
        schemas.append(pq.read_schema(out))
        assert pq.read_table(out).num_rows > 0
    assert all(s.equals(schemas[0], check_metadata=True) for s in schemas)
    s = schemas[0]
    assert s.equals(event_schema(), check_metadata=False)
    assert s.metadata[b"nanscope.schema_version"] == str(EVENT_SCHEMA_VERSION).encode()
    for name in ("source", "kind", "framework", "node", "error"):
        assert pa.types.is_dictionary(s.field(name).type), name
    for name in ("source", "line", "rank", "local_rank", "node", "ts", "kind", "framework", "step", "loss",
                 "grad_norm", "lr", "loss_scale", "skipped", "error", "message", "exitcode", "signal", "text"):
        assert name in s.names
    kinds = {r[0] for r in duckdb.sql(f"SELECT DISTINCT kind FROM read_parquet('{tmp_path / '1.parquet'}')").fetchall()}
    assert "scale" in kinds  # the DeepSpeed overflow lines are there too


def test_arrow_file_has_the_same_rows_as_parquet(tmp_path):
    _export(tmp_path, DDP, "-o", str(tmp_path / "e.parquet"))
    _export(tmp_path, DDP, "-o", str(tmp_path / "e.arrow"))
    a = ipc.open_file(str(tmp_path / "e.arrow")).read_all()
    b = pq.read_table(tmp_path / "e.parquet")
    assert a.num_rows == b.num_rows == 240
    assert a.schema.equals(b.schema, check_metadata=False)
    assert a.column("text").to_pylist() == b.column("text").to_pylist()


def test_events_are_written_in_row_groups(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "e.parquet"
    n = write_table(api.events([DDP]), str(out), "parquet", batch_rows=50)
    meta = pq.ParquetFile(out).metadata
    assert n == meta.num_rows == 240
    assert meta.num_row_groups == 5  # 50+50+50+50+40: streamed, never one table in memory
    losses = pq.read_table(out, columns=["rank", "step", "loss"]).to_pylist()
    assert any(r["rank"] == 2 and r["step"] == 40 and math.isnan(r["loss"]) for r in losses)


def test_an_interrupted_export_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "e.parquet"
    out.write_bytes(b"the previous export")

    def dying():
        for i, ev in enumerate(api.events([DDP])):
            if i == 120:
                raise KeyboardInterrupt
            yield ev

    with pytest.raises(KeyboardInterrupt):
        write_table(dying(), str(out), "parquet", batch_rows=50)
    assert out.read_bytes() == b"the previous export"
    assert os.listdir(tmp_path) == ["e.parquet"]


def test_text_and_message_columns_are_redacted(tmp_path):
    token = "hf_" + "Q7vRk2mZpX9wLs4tYb8nC1dFgH3jKaEoUi"  # built here: never a literal token in the repo
    log = tmp_path / "train.log"
    log.write_text(f"step 1 | loss 2.3012 | grad_norm 0.8123 | lr 1.0e-03 HF_TOKEN={token}\n"
                   f"RuntimeError: bad token {token}\n", encoding="utf-8")
    for ext in ("parquet", "arrow", "jsonl"):
        out = tmp_path / f"e.{ext}"
        _export(tmp_path, str(log), "-o", str(out))
        data = out.read_bytes()
        assert token.encode() not in data and b"[REDACTED" in data, ext


def test_unknown_output_extension_is_a_usage_error(tmp_path):
    p = run_cli("events", DDP, "-o", str(tmp_path / "e.csv"))
    assert p.returncode == 2 and b".parquet" in p.stderr
    assert not os.listdir(tmp_path)


def test_jsonl_to_stdout_still_works():
    p = run_cli("events", DDP)
    assert p.returncode == 0
    lines = p.stdout.decode().splitlines()
    assert len(lines) == 240
    assert json.loads(lines[0])["v"] == 1
