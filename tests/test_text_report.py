"""The text report's layout: wrapped titles, the per-rank table, rank wording, the baseline header."""

from __future__ import annotations

import json
import re
import shutil

from conftest import ROOT, run_cli

NAN = ROOT / "sample_logs/torch/ddp_nan_rank2.log"


def _text(*args, cwd=ROOT) -> str:
    p = run_cli("diagnose", *args, "--color", "never", cwd=cwd)
    assert p.returncode in (0, 1, 3), p.stderr
    return p.stdout.decode()


def test_a_wrapped_title_continues_under_the_title():
    lines = _text(str(NAN)).splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith("2. LOW      nan-skip-recover  "))
    indent = len("2. LOW      nan-skip-recover  ")
    assert lines[i + 1].startswith(" " * indent) and lines[i + 1].strip() == "training recovered"
    assert all(len(ln) <= 100 for ln in lines[i:i + 2])


def test_rank_column_never_shows_a_truncated_path(tmp_path):
    deep = tmp_path / "a_rather_long_directory_name_for_the_job" / "and_another_level_of_nesting"
    deep.mkdir(parents=True)
    shutil.copy(ROOT / "sample_logs/deepspeed/fp16_overflow_transient.log", deep / "deepspeed_fp16_overflow_transient_run.log")
    out = _text(str(tmp_path), str(ROOT / "sample_logs/hf/trainer_healthy.log"))
    table = out[out.index("per-rank steps"):]
    assert "…" not in table
    rows = table.splitlines()[2:4]
    assert [r.split()[0:2] for r in rows] == [["file", "1"], ["file", "2"]]
    ledger = table[:table.index("\nloss")]  # the sparklines follow the legend (and use its names, never a cut path)
    legend = dict(ln.split(": ", 1) for ln in ledger.splitlines() if re.match(r"file \d+: ", ln))
    # the whole paths, in a legend (rows sort by path, so which one is `file 1` depends on the checkout's place)
    assert sorted(legend) == ["file 1", "file 2"]
    assert sorted(legend.values()) == sorted([str(deep / "deepspeed_fp16_overflow_transient_run.log"),
                                              str(ROOT / "sample_logs/hf/trainer_healthy.log")])


def test_short_paths_stay_in_the_rank_column():
    out = _text("sample_logs/torch/healthy.log")
    assert "\nsample_logs/torch/healthy.log     60" in out


def test_no_ranks_question_mark_or_rank_none():
    for log in ("sample_logs/vllm/engine_dead.log", "sample_logs/faults/dataloader_worker_killed_recv.log",
                "sample_logs/vllm/kv_cache_too_small.log"):
        text = _text(log)
        js = run_cli("diagnose", log, "--format", "json").stdout.decode()
        for shown in (text, js):
            assert "ranks ?" not in shown.lower() and "rank none" not in shown.lower(), log


def test_baseline_header_speaks_of_the_new_findings(tmp_path):
    base = tmp_path / "base.json"
    run_cli("diagnose", str(NAN), "--format", "json", "-o", str(base))
    same = run_cli("diagnose", str(NAN), "--baseline", str(base))
    head = " ".join(same.stdout.decode().split("\n\n")[0].split())
    assert head.startswith("nanscope: CLEAN - nothing new since the baseline. 0 new finding(s) in ")
    assert "2 known from the baseline follow, marked [known]" in head
    assert same.returncode == 0
    assert json.loads(run_cli("diagnose", str(NAN), "--baseline", str(base), "-f", "json").stdout)["baseline"]["verdict"] == "clean"
    new = run_cli("diagnose", str(NAN), "--baseline", "sample_logs/torch/ddp_healthy.log")
    head = " ".join(new.stdout.decode().split("\n\n")[0].split())
    assert head.startswith("nanscope: ACTIONABLE - something went wrong and needs a fix. 2 new finding(s) in ")
    assert "known from the baseline" not in head
    assert new.returncode == 1
