"""The fast paths give the per-line answer: the native lane (step lines read in RE2 over whole
chunks, nanscope/ingest/native.py) and the batched engine (machines over StepBatch columns).

Every sample log is diagnosed three ways: per line (no native lane, no RE2 rejection, each step
event through Machine.feed alone), and with the native lane forced on every region (sample logs
are small, so normally they never reach it); the JSON reports must be identical.
"""

from __future__ import annotations

import functools
import json
import math
import os
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nanscope.ingest.reader as reader
import nanscope.pipeline as pipeline
import nanscope.scan as scan
import nanscope.signatures.engine as engine_mod
from conftest import ROOT, manifest_entries
from pathlib import Path
from nanscope import api
from nanscope.ingest.native import NativeLane
from nanscope.ingest.native_hf import HFLane
from nanscope.ingest.reader import Source, expand_sources
from nanscope.model import Loc, Origin, StepEvent
from nanscope.parsers.registry import all_parsers, keyword_regex
from nanscope.stepbatch import StepBatch
from nanscope.report import json as json_report

_ENTRIES = manifest_entries()
ROOT_PATH = Path(ROOT)


def _diagnose(sources: list, native: bool, batch: bool, every_region: bool = True, signatures: tuple = (),
              jobs: int = 1) -> dict:
    """The JSON report through the per-line path (native=False: no native lane, no rejection;
    batch=False: every step event through Machine.feed alone) or the fast path, forced on every
    region however small (every_region=False: small regions stay in Python, as in real runs)."""
    saved = pipeline.NATIVE, reader.SMALL_REGION, api.Engine
    real = engine_mod.Engine
    pipeline.NATIVE, reader.SMALL_REGION = native, (0 if native and every_region else saved[1])
    api.Engine = lambda sigs: real(sigs, batch_steps=batch)  # type: ignore[misc]
    try:
        r = json.loads(json_report.dumps(api.diagnose_sources(sources, api.Options(jobs=jobs, signatures=signatures))))
    finally:
        pipeline.NATIVE, reader.SMALL_REGION, api.Engine = saved
    r.pop("elapsed_s", None)
    r["tool"].pop("elapsed_s", None)
    return r


def _report(paths: list, native: bool, batch: bool) -> dict:
    return _diagnose(expand_sources(paths), native, batch)


@pytest.mark.parametrize("entry", _ENTRIES, ids=[e["path"] for e in _ENTRIES])
def test_native_lane_and_batches_give_the_per_line_report(entry, monkeypatch):
    monkeypatch.chdir(ROOT)
    path = os.path.relpath(entry["abspath"], ROOT)
    slow = _report([path], native=False, batch=False)
    fast = _report([path], native=True, batch=True)
    assert fast == slow


def test_native_lane_claims_the_bench_mix(tmp_path, monkeypatch):
    """The benchmark's generated log (eight ranks, every format, injected faults): most step
    lines go native, and the report is still the per-line one."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import gen

    log = tmp_path / "bench.log"
    gen.write_console(str(log), gen.job_for_size(3 << 20, 8, 7, False))
    slow = _report([str(log)], native=False, batch=False)
    claimed = []
    real_columns = NativeLane.columns

    def counting(self, cand, lines, found):
        got = real_columns(self, cand, lines, found)
        claimed.append(len(got[0]))
        return got

    monkeypatch.setattr(NativeLane, "columns", counting)
    fast = _report([str(log)], native=True, batch=True)
    assert fast == slow
    ids = {f["id"] for f in fast["findings"]}
    assert {"nan-rank-local", "nan-persistent"} <= ids
    assert sum(claimed) > 0.9 * fast["inputs"][0]["formats"]["pytorch"]


def test_lines_the_readers_read_before_the_keyword_pass_hold_a_keyword_and_no_split(tmp_path, monkeypatch):
    """Once the lane has readers they read a region's lines before the keyword pass (reader.
    _release_lines): every line they read would have been a candidate, with no split line among
    them, on the benchmark's generated and replayed logs, and the report is the per-line one."""
    import sys

    import pyarrow.compute as pc
    from nanscope.ingest.interleave import MID_RE2

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import gen
    import replay

    logs = [tmp_path / "gen.log", tmp_path / "replay.log"]
    gen.write_console(str(logs[0]), gen.job_for_size(3 << 20, 8, 7, False))
    replay.write_console(str(logs[1]), 3 << 20)
    checked = []
    real = reader._release_lines

    def checking(regions, prefilter, native):
        got = real(regions, prefilter, native)
        if got is not None:
            lines, _, (found, _) = got
            for idx, _, _ in found:
                rows = lines.take(idx)
                assert pc.all(prefilter.holds(rows)).as_py()
                assert not pc.any(pc.match_substring_regex(rows, MID_RE2)).as_py()
                checked.append(len(idx))
        return got

    monkeypatch.setattr(reader, "_release_lines", checking)
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 512 << 10)  # (small logs: several batches after the first)
    monkeypatch.setattr(reader, "CLAIM_CANDIDATES", 512 << 10)
    for log in logs:
        fast = _diagnose(expand_sources([str(log)]), native=True, batch=True, every_region=False)
        assert fast == _report([str(log)], native=False, batch=False)
    assert sum(checked) > 15_000


def test_held_candidates_come_out_in_line_order_before_a_small_last_region(tmp_path):
    """The lane holds several chunks' candidates; a last region too small for Arrow (read in
    Python) comes after everything held, and the report is still the per-line one."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import gen

    log = tmp_path / "bench.log"
    gen.write_console(str(log), gen.job_for_size(5 << 20, 8, 11, False))
    data = log.read_bytes()
    tail = len(data) - (len(data) // reader.CHUNK_BYTES) * reader.CHUNK_BYTES
    if not 0 < tail < reader.SMALL_REGION:  # make the last region small
        log.write_bytes(data[: len(data) - tail + reader.SMALL_REGION // 2].rsplit(b"\n", 1)[0] + b"\n")
    slow = _diagnose(expand_sources([str(log)]), native=False, batch=False)
    fast = _diagnose(expand_sources([str(log)]), native=True, batch=True, every_region=False)
    assert fast == slow
    assert fast["inputs"][0]["formats"]["pytorch"] > 1000
    # and within each stream, step rows and the other events in the per-line path's order
    # (the stats lines that may go ahead of held rows, see Pending.flush_before, aside); the
    # ranks' streams hold no HF dicts (which come out after the next bar): in line order
    order = _order_per_stream(str(log), native=True)
    assert order == _order_per_stream(str(log), native=False)
    ranks = {key: lines for key, lines in order.items() if key[0] == "rank"}
    assert len(ranks) == 9 and all(lines == sorted(lines) for lines in ranks.values())


def _order_per_stream(path: str, native: bool) -> dict:
    saved = pipeline.NATIVE
    pipeline.NATIVE = native
    try:
        out: dict = {}
        for it in scan.scan_all(expand_sources([path]), pipeline.ScanOptions(jobs=1), pipeline.ScanResult()):
            if it.kind in pipeline.STEP_READERS:
                continue
            rows = it.lines.tolist() if it.kind == "steps" else [it.loc.line]
            out.setdefault(it.stream, []).extend(rows)
        return out
    finally:
        pipeline.NATIVE = saved


# --- line by line: what the native lane reads equals what the pytorch rule reads ------------------

_KEYS = ["step", "Step", "iter", "it", "global_step", "loss", "Loss", "train_loss", "lm loss", "grad_norm", "grad norm",
         "gnorm", "lr", "learning_rate", "scale", "loss_scale", "tps", "tokens/s", "epoch", "data_time", "mfu", "x1", "loss.1"]
_VALS = ["0", "12", "-3", "+4", "1.5", "0.25", "1e-05", "3.0E+02", ".5", "7.", "nan", "NaN", "-nan", "inf", "-inf",
         "Infinity", "12ms", "1.5.2", "0x1f", "abc", "1,000"]
_SEPS = ["=", ": ", " ", " = ", ":", "\t"]
_JOIN = [", ", " | ", " ", "; ", ",", " - ", "  "]
_PREFIXES = ["", "[default3]:", "[rank2]:", "[default1]:[rank5]:", "3: ", "[1,7]<stdout>:", "  ", "[4]: "]


@st.composite
def _lines(draw):
    n = draw(st.integers(1, 6))
    parts = []
    for _ in range(n):
        parts.append(draw(st.sampled_from(_KEYS)) + draw(st.sampled_from(_SEPS)) + draw(st.sampled_from(_VALS)))
    joins = [draw(st.sampled_from(_JOIN)) for _ in range(n - 1)]
    text = parts[0] + "".join(j + p for j, p in zip(joins, parts[1:]))
    return draw(st.sampled_from(_PREFIXES)) + text + draw(st.sampled_from(["", " ", ",", " |"]))


def _claim(lane: NativeLane, lines) -> tuple:
    """Every line of an Arrow array through the native lane as the reader runs it (no claimable
    filter): (line numbers it read, its StepBatches, formats, HF payload)."""
    import numpy as np

    pre = keyword_regex(lane.parsers)
    _, _, _, payload = pre.candidates(lines, np.arange(1, len(lines) + 1), lane, None, 1 << 20, None)
    if payload is None:
        return [], [], {}, None
    batches, formats, hf = payload
    return sorted(int(x) for b in batches for x in b.lines.tolist()), batches, formats, hf


def _same(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and (a == b or (math.isnan(a) and math.isnan(b))))


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines(), min_size=1, max_size=40))
def test_native_rows_read_like_the_rule(lines):
    data = "\n".join(lines).encode()
    parsers = all_parsers()
    lane = NativeLane(parsers, "x.log", Origin(), 1 << 20)
    pa, pc, _ = reader._arrow()
    cand = pa.array([ln.encode() for ln in lines], pa.binary())

    claimed, batches, _, _ = _claim(lane, cand)
    rows = {int(line): (b, i) for b in batches for i, line in enumerate(b.lines.tolist())}
    assert len(rows) == len(claimed)
    for k, line in enumerate(lines, start=1):
        want = [e for e in pipeline.parse_line(line.encode(), k, "x.log", Origin(), tuple(p.name for p in parsers))]
        if k not in rows:
            continue  # left to the per-line path: always allowed
        assert len(want) == 1 and isinstance(want[0], StepEvent), line
        ev = want[0]
        b, i = rows[k]
        assert ev.step is not None and int(b.step[i]) == ev.step, line
        assert b.stream == ev.stream and b.rank == ev.rank, line
        for name in ("loss", "grad_norm", "lr", "loss_scale", "tokens_per_s", "epoch"):
            v, p = b.col(name)
            assert _same(float(v[i]) if p[i] else None, getattr(ev, name)), (line, name)
        for key, val in (ev.raw_fields or {}).items():
            v, p = b.col(f"raw_fields.{key}")
            assert p[i] and _same(float(v[i]), float(val)), (line, key)
        assert repr(b.event(i)) == repr(ev)  # (NaN != NaN: compare as printed)
    del data


def test_native_lane_reads_what_the_rules_claim_and_leaves_the_rest():
    lines = [b"[default0]:step=1, loss=2.5, lr=0.1",  # pytorch
             b"[default0]:iteration 3, loss=2.5, lr=0.1",  # megatron's keyword, but pytorch's line
             b"[default0]:[2024-05-01 12:00:00,123] [INFO] [logging.py:128:log_dist] [Rank 0] step=10, skipped=2, "
             b"lr=[0.0001], mom=[(0.9, 0.999)]",  # deepspeed
             b"[default0]:step=1, loss=2.5 \x1b[0m, lr=0.1",  # an escape sequence: per line
             b"[default0]:step=1, loss=2.5, lr=0.1 caf\xc3\xa9",  # non-ASCII: per line
             b"2024-05-01T12:00:00Z step=1, loss=2.5, lr=0.1",  # a timestamp prefix: per line
             b"[default0]:loss=2.5, lr=0.1",  # no step number: streams fill it in, per line
             b"{'loss': 2.5, 'grad_norm': 1.0, 'learning_rate': 0.1, 'epoch': 0.5}",  # HF: waits for its step
             b"ValueError: step=1, loss=2.5, lr=0.1"]  # an exception line: depends on a traceback

    pa = reader._arrow()[0]
    lane = NativeLane(all_parsers(), "x.log", Origin(), 1 << 20)
    claimed, batches, formats, hf = _claim(lane, pa.array(lines, pa.binary()))
    assert claimed == [1, 2, 3, 6]
    assert formats == {"pytorch": 3, "deepspeed": 1}
    # the HF dict line (no bar: it waits for the next one's count) is the HF lane's: held, no row yet
    assert hf is not None and hf[0].tolist() == [8] and hf[1]["dict"].tolist() == [True] and hf[1]["bar"].tolist() == [False]
    b, stamped = batches  # [default0]'s stream (two frameworks) and the stamped line's
    assert b.framework is None and b.lines.tolist() == [1, 2, 3]
    assert b.step.tolist() == [1, 3, 10]
    v, present = b.col("skipped_total")
    assert present.tolist() == [False, False, True] and v[2] == 2.0
    assert repr(b.event(2)) == repr(pipeline.parse_line(lines[2], 3, "x.log", Origin(), lane.names)[0])
    # a stamped row's origin differs per row (its time): the batch has none, its event has the stamp's
    assert stamped.origin is None and stamped.lines.tolist() == [6]
    assert repr(stamped.event(0)) == repr(pipeline.parse_line(lines[5], 6, "x.log", Origin(), lane.names)[0])
    assert stamped.event(0).origin.ts is not None


def test_engine_batches_equal_single_events_on_random_curves():
    """Spikes, divergence, NaN runs, scale drops and stragglers on random multi-rank curves:
    the batched machines emit what the per-event machines emit."""
    rnd = random.Random(5)
    out = []
    for r in range(4):
        loss = 3.0
        scale = 65536.0
        for s in range(400):
            loss *= 0.995 if s < 250 or r != 2 else 1.01
            v = loss * (8 if rnd.random() < 0.01 else 1)
            txt = "nan" if (r == 1 and 100 <= s < 100 + rnd.randint(1, 5)) else f"{v:.4f}"
            if rnd.random() < 0.01:
                scale /= 2
            dt = 90.0 if r == 3 and s > 300 else 10.0 + rnd.random()
            out.append(f"[rank{r}]:step={s}, loss={txt}, grad_norm={rnd.random():.3f}, scale={scale}, data_time_ms={dt:.1f}")
    data = "\n".join(out).encode()
    src = [Source("curves.log", None, data)]
    one, many = _diagnose(src, native=False, batch=False), _diagnose(src, native=False, batch=True)
    assert many == one
    found = {f["id"]: f for f in many["findings"]}
    assert {"nan-skip-recover", "nan-rank-local", "straggler", "loss-divergence"} <= set(found)
    # the one-step 8x values, each back at once (under the divergence, on the diverging rank's stream)
    assert "loss-spike-transient" in set(found) | set(found["loss-divergence"]["also_matched"])
    assert found["straggler"]["ranks"] == [3]


@pytest.mark.parametrize("hold", [5, 64, 1024])
def test_engine_batches_equal_single_events_on_persistent_runs(hold, monkeypatch):
    """NaN runs of every length, several in one held batch of a stream, others across the
    batches' edges, some with a loss scale below 1 (loss-scale-collapse's requirement): the
    persistent machines match what they match event by event."""
    monkeypatch.setattr(engine_mod, "HOLD_STEPS", hold)
    rnd = random.Random(12)
    out = []
    for r in range(2):
        bad_until = -1
        for s in range(3000):
            if s > bad_until and rnd.random() < 0.02:
                bad_until = s + rnd.choice([0, 1, 2, 3, 5, 8, 40, 300])
            nan = r == 1 and s <= bad_until
            gn = "nan" if nan and rnd.random() < 0.7 else f"{rnd.random():.3f}"
            scale = 0.5 if nan and s % 7 == 0 else 1024.0
            out.append(f"[rank{r}]:step={s}, loss={'nan' if nan else f'{2 + rnd.random():.4f}'}, grad_norm={gn}, "
                       f"scale={scale}")
            if rnd.random() < 0.003:
                out.append(f"[rank{r}]:step={s}, loss={2 + rnd.random():.4f}, grad_norm=0.5")  # a repeated step
    data = "\n".join(out).encode()
    src = [Source("runs.log", None, data)]
    one, many = _diagnose(src, native=False, batch=False), _diagnose(src, native=False, batch=True)
    assert many == one
    found = {f["id"]: f for f in many["findings"]}
    assert found["nan-persistent"]["occurrences"] > 5
    assert found["loss-scale-collapse"]["occurrences"] > 5


@pytest.mark.parametrize("hold", [5, 64, 1024])
def test_engine_batches_equal_single_events_on_runs_a_restart_logs_below(hold, monkeypatch):
    """A run that restarts and logs its steps again below the last one of a non-finite (or
    overflowing) run still open: the loss-scale machines skip such rows in batches instead of one
    by one (a 44 MB restarted HF log took 7.7 s, now 1.8 s) and still match what they match event
    by event, with the scale printed on some bad rows (read one by one) and on none."""
    monkeypatch.setattr(engine_mod, "HOLD_STEPS", hold)
    rnd = random.Random(7)
    out = []
    for restart in range(3):
        for s in range(0, 1500, 1 + restart):
            nan = s >= 1200 - 300 * restart and rnd.random() < 0.9
            burst = s < 12 and s % 3 != 2  # an overflow burst at the start (a warm-up, unless a loss is NaN)
            loss_nan = nan or (restart == 1 and s == 4)
            scale = "" if restart == 1 else f", scale={0.5 if nan and s % 5 == 0 else 2048.0}"
            out.append(f"[rank0]:step={s}, loss={'nan' if loss_nan else f'{2 + rnd.random():.4f}'}, "
                       f"grad_norm={'nan' if nan or burst else '0.5'}{scale}")
    data = "\n".join(out).encode()
    src = [Source("restarts.log", None, data)]
    one, many = _diagnose(src, native=False, batch=False), _diagnose(src, native=False, batch=True)
    assert many == one
    assert {"nan-persistent", "loss-scale-collapse", "nan-skip-recover"} <= {f["id"] for f in many["findings"]}


def test_real_runs_restarted_after_a_fault_give_the_per_line_report(monkeypatch):
    """Real logs appended as a job restarted in the same file (the fault's log, then a healthy
    run from step 1): HF Trainer's NaN run, DeepSpeed's loss-scale collapse."""
    monkeypatch.chdir(ROOT)
    for first, then in (("sample_logs/hf/trainer_nan_filter_off.log", "sample_logs/hf/trainer_healthy.log"),
                        ("sample_logs/deepspeed/fp16_scale_collapse.log", "sample_logs/deepspeed/fp16_healthy.log"),
                        ("sample_logs/deepspeed/fp16_overflow_warmup.log", "sample_logs/deepspeed/fp16_overflow_transient.log")):
        data = Path(first).read_bytes() + Path(then).read_bytes() + Path(first).read_bytes()
        src = [Source("restarted.log", None, data)]
        slow, fast = _diagnose(src, native=False, batch=False), _diagnose(src, native=True, batch=True)
        assert fast == slow, first
        assert slow["findings"], first


@pytest.mark.parametrize("hold", [7, 1024])
def test_engine_batches_equal_single_events_on_diverging_curves(hold, monkeypatch):
    """Noisy loss curves that fall, level off and climb back at a random step, one per rank:
    the trend machine (loss-divergence) finds the same best window and onset in batches as
    event by event."""
    monkeypatch.setattr(engine_mod, "HOLD_STEPS", hold)
    rnd = random.Random(7)
    out = []
    for r in range(12):
        turn = rnd.randint(50, 500)
        loss = 5.0
        for s in range(600):
            loss *= 0.99 if s < turn else 1.004
            noise = 1 + rnd.uniform(-0.2, 0.2) * (r % 3)
            out.append(f"[rank{r}]:step={s}, loss={loss * noise:.4f}, grad_norm=0.5")
    src = [Source("trend.log", None, "\n".join(out).encode())]
    one, many = _diagnose(src, native=False, batch=False), _diagnose(src, native=False, batch=True)
    assert many == one
    assert len({f["first_step"] for f in many["findings"] if f["id"] == "loss-divergence"}) >= 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3).map(float)), min_size=1,
                max_size=200), st.integers(1, 70))
def test_rolling_min_is_each_windows_minimum(values, w):
    """spike and trend skip the windows whose minimum rules them out; the minima come from a few
    whole-array passes, and must be each window's own (NaN where the window has one)."""
    import numpy as np
    from nanscope.signatures.machines import rolling_min

    x = np.array(values, dtype=np.float64)
    w = min(w, len(x))
    want = np.lib.stride_tricks.sliding_window_view(x, w).min(axis=1)
    assert np.array_equal(rolling_min(x, w), want, equal_nan=True)


def test_megatron_padding_is_one_reader_whatever_the_numbers_width(monkeypatch):
    """Megatron right-aligns its numbers (`iteration       50/  242204`), so the run of spaces
    before each one shrinks as it grows. The lane checks that the line reads the same with one
    space there and with three more, and then one reader takes every width: lines from iteration
    5 to 50,000 (and a NaN loss at 12,345) give the per-line report with one Megatron reader."""
    real = (ROOT_PATH / "sample_logs/megatron/healthy_iterations_leonardo_excerpt.log").read_text().splitlines()
    sample = next(ln for ln in real if "] iteration " in ln)
    head, tail = sample.split("] iteration ", 1)
    rest = tail.split("|", 1)[1]  # ' consumed samples: ... |'
    lines = []
    for it in list(range(5, 200, 5)) + list(range(200, 50001, 997)) + [12345]:
        loss = "nan" if it == 12345 else f"{6.0 / (1 + it / 1000):.6E}"
        row = rest.replace("lm loss: 6.258318E+00", f"lm loss: {loss}").replace(
            "consumed samples:        50400", f"consumed samples: {it * 1008:>12}")
        lines.append(f"{head}] iteration {it:>8}/  242204 |{row}")
    lines.sort(key=lambda ln: int(ln.split("] iteration ")[1].split("/")[0]))
    src = [Source("megatron.log", None, ("\n".join(lines) + "\n").encode())]
    made = []
    real_init = NativeLane.__init__

    def keep(self, *a, **k):
        real_init(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(NativeLane, "__init__", keep)
    fast = _diagnose(src, native=True, batch=True)
    assert fast == _diagnose(src, native=False, batch=False)
    readers = {id(x) for lane in made for x in lane._layouts.values() if x is not None and x.parser == "megatron"}
    assert len(readers) <= 3  # the loss printed as E+, E- and nan: three shapes of the number itself
    assert "nan-persistent" in {f["id"] for f in fast["findings"]} or fast["findings"]


def test_a_run_of_spaces_the_parser_reads_stays_as_printed():
    """A rule that wants exactly three spaces before the step: the lane learns no reader that
    would take other runs (it checks one space and three more before generalizing padding)."""

    from nanscope.parsers.base import Parser, rule

    @rule("exact", ["tick"], r"^tick   (?P<step>\d+) loss=(?P<loss>[\d.]+)$")
    def exact(m, rec, state):
        return StepEvent(loc=rec.loc, text=rec.text, framework="t", step=int(m.group("step")),
                         loss=float(m.group("loss")))

    lane = NativeLane([Parser("padded", "t", [exact])], "x.log", Origin(), 1 << 20)
    pa, pc, _ = reader._arrow()
    read, batches, _, _ = _claim(lane, pa.array([b"tick   5 loss=2.5", b"tick   6 loss=2.4"], pa.binary()))
    assert read == [1, 2] and [int(x) for b in batches for x in b.step.tolist()] == [5, 6]  # learned
    read, _, _, _ = _claim(lane, pa.array([b"tick  7 loss=2.3", b"tick    8 loss=2.2", b"tick   9 loss=2.1"],
                                          pa.binary()))
    assert read == [3]  # the reader takes its own run of spaces only: the others are no rule's lines


_TS_PIECES = st.sampled_from(["", " ", "\t", "[", "I", "W", "E", "INFO", "WARNING ", "INFO  ", "2024-", "11", "13", "00",
                              "05", "-", " ", "T", "_", ":", "29", "59", ".", ",", "123", "123456789", "x", "]"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_TS_PIECES, max_size=12).map("".join), min_size=1, max_size=20))
def test_timestamps_of_a_column_are_parse_ts_of_each_line(messages):
    """The native lane reads the timestamps of a metrics reader's rows in one RE2 pass: the same
    seconds (or None) as parse_ts on each line's message, whatever the text after the prefix."""
    from nanscope.ingest.native import _timestamps
    from nanscope.ingest.timestamps import parse_ts

    pa, _, _ = reader._arrow()
    regex = r"^(?P<pre>\x28APIServer\x20pid\x3d\d+\x29\x20)INFO"  # a reader's prefix (the rest is not used)
    rows = pa.array([f"(APIServer pid=12) {m}".encode() for m in messages], pa.binary())
    want = [parse_ts(m) for m in messages]
    assert _seconds(_timestamps(rows, regex)) == want


def test_timestamps_of_a_column_in_every_format_parse_ts_reads():
    from nanscope.ingest.native import _timestamps
    from nanscope.ingest.timestamps import parse_ts

    pa, _, _ = reader._arrow()
    messages = ["INFO 05-19 10:13:11 [loggers.py:271] Engine 000: x", "WARNING 12-31 23:59:59.5 z",
                "ERROR  02-29 00:00:00 y", "W1129 21:24:13.795900716 reducer.cpp:1529] x",
                "[I0101 00:00:00 x", "  [2024-05-01 12:00:01,123] x", "2024-05-01T12:00:01 y",
                "05-19_10:13:11.25 z", "INFO 13-29 22:29:01 month 13", "INFO 00-29 22:29:01 month 0",
                "INFO 1-2 3:4:5 short", "no time here", "", "INFO 05-19 10:13:1"]
    rows = pa.array([f"(APIServer pid=3646) {m}".encode() for m in messages], pa.binary())
    want = [parse_ts(m) for m in messages]
    assert sum(w is not None for w in want) == 8
    assert _seconds(_timestamps(rows, r"^(?P<pre>\x28APIServer\x20pid\x3d\d+\x29\x20)x")) == want


def test_kubectl_stamps_of_a_column_are_what_peel_reads():
    """The seconds of kubectl's --timestamps stamp in a column of prefixes are the ts peel gives
    each line (a month out of range: none; no stamp: none)."""
    from nanscope.ingest.native import _stamps
    from nanscope.ingest.prefixes import peel

    pa, _, _ = reader._arrow()
    prefixes = ["[pod/vllm-0/vllm] 2026-11-29T21:59:07.001Z ", "[pod/a/b] 2024-02-29T00:00:00+01:00 ",
                "[pod/a/b] 2024-13-01T00:00:00Z ", "2025-01-02T03:04:05,5Z ", "[pod/a/b] "]
    want = [peel(p + "x", Origin())[1].ts for p in prefixes]
    assert sum(w is not None for w in want) == 3
    got = _stamps(pa.array([p.encode() for p in prefixes], pa.binary()))
    assert [None if v != v else float(v) for v in got.tolist()] == want


def _seconds(got: tuple) -> list:
    """_timestamps' (seconds, set) as parse_ts answers each line."""
    secs, ok = got
    return [float(v) if k else None for v, k in zip(secs.tolist(), ok.tolist())]


_PIECES = [b"step=", b"loss=", b"iteration ", b"/ 100 | lm loss: ", b" | grad norm: ", b"[default1]:", b"[rank3]:", b"3: ",
           b"[1,5]<stdout>:", b"12", b"0.5", b"nan", b"1e-05", b", ", b" | ", b"\r", b"\x1b[0m", b"\xc3\xa9", b"\xff",
           b"{'loss': '1.5'}", b" 10%|#  | 5/50 [00:01<00:09, 4.5it/s]", b"Traceback (most recent call last):",
           b"RuntimeError: boom", b"skipped=", b"\x00", b"  "]


# derandomize: CI runs the same 150 inputs every time (a gate that fails by chance is no gate); a longer,
# random search is `--hypothesis-seed=N` or a higher max_examples, run by hand when the lanes change.
@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=8).map(b"".join), min_size=1, max_size=60))
@example([b"[default1]:Traceback (most recent call last):", b"iteration ", b"RuntimeError: boom"])
def test_native_lane_on_arbitrary_lines_gives_the_per_line_report(lines):
    """Whatever the lines (fragments of every format, escapes, invalid UTF-8, NUL, \\r), the fast
    path neither crashes nor answers differently from the per-line path."""
    src = [Source("fuzz.log", None, b"\n".join(lines) + b"\n")]
    assert _diagnose(src, native=True, batch=True) == _diagnose(src, native=False, batch=False)


@pytest.mark.xfail(strict=True, reason="known divergence (found by the property test above, session 18): an HF log "
                   "dict with no step before a `step=N` line is numbered 1 by the HF lane and N by the per-line path")
def test_an_hf_dict_without_a_step_before_a_step_line_is_numbered_alike_on_both_paths():
    src = [Source("fuzz.log", None, b"{'loss': '1.5'}\nstep=3: loss=3: \n{'loss': '1.5'}\n")]
    assert _diagnose(src, native=True, batch=True) == _diagnose(src, native=False, batch=False)


_TB_HEAD = b"[default1]:Traceback (most recent call last):"
_KV_STEPS = [b"step=%d loss=1.5 lr=0.1" % i for i in range(1, 200)]
_HF_DICTS = [b"{'loss': %d.5, 'grad_norm': 0.3, 'learning_rate': 1e-05, 'epoch': 0.%d}" % (i, i) for i in range(1, 200)]


@pytest.mark.parametrize("lines, rank", [
    # a keyword line no rule claims (claimable drops it natively), unprefixed or under the rank's own prefix:
    # the traceback the header opened is over, the bare exception line is not rank 1's
    ([_TB_HEAD, b"iteration ", b"RuntimeError: boom"], None),
    ([_TB_HEAD, b"[default1]:iteration ", b"RuntimeError: boom"], None),
    ([_TB_HEAD, b"iteration 12", b"RuntimeError: boom"], None),
    # a dropped line that is a traceback's own (a frame) goes on with it
    ([_TB_HEAD, b'  File "train.py", line 3, in iteration_loop', b"RuntimeError: boom"], 1),
    # a step line a reader reads into a StepBatch, an HF log dict the HF lane reads, between header and exception
    (_KV_STEPS[:100] + [_TB_HEAD, _KV_STEPS[100], b"RuntimeError: boom"] + _KV_STEPS[101:], None),
    (_HF_DICTS[:100] + [_TB_HEAD, _HF_DICTS[100], b"RuntimeError: boom"] + _HF_DICTS[101:], None),
    (_KV_STEPS[:100] + [_TB_HEAD, b"RuntimeError: boom"] + _KV_STEPS[100:], 1),
], ids=["dropped", "dropped-prefixed", "dropped-number", "dropped-frame", "step-row", "hf-dict", "no-line-between"])
def test_a_line_the_native_lane_takes_out_still_ends_a_logged_record(lines, rank):
    """A rank-prefixed traceback header opens a record whose unprefixed traceback lines are the
    rank's (ingest/prefixes.RecordContinuation); any other line ends it. The native lane takes
    some lines out of the per-line stream (claimable drops the keyword lines no rule claims,
    readers read step lines, the HF lane its dicts): they end the record at their own line all
    the same, so the bare exception after one is nobody's on both paths (an unprefixed line
    between a rank's prefixed ones is another stream's output)."""
    src = [Source("fuzz.log", None, b"\n".join(lines) + b"\n")]
    fast = _diagnose(src, native=True, batch=True)
    assert fast == _diagnose(src, native=False, batch=False)
    got = [f for f in fast["findings"] if f["id"] == "uncaught-exception"]
    assert len(got) == 1 and got[0]["initiating_rank"] == rank


_VLLM_STATS = ("({proc} pid={pid}) INFO 05-19 10:13:{s:02d} [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 "
               "tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: {r} reqs, Waiting: {w} reqs, GPU KV cache "
               "usage: {kv}%, Prefix cache hit rate: 0.0%")  # vllm/v1/metrics/loggers.py, as in sample_logs/vllm


@functools.lru_cache(maxsize=1)
def _hf_bars() -> tuple:
    return tuple(ln for ln in (ROOT_PATH / "sample_logs/hf/trainer_nan_filter_off.log").read_bytes().split(b"\n")
                 if ln.startswith(b"\r ") and b"{'loss'" in ln and ln.count(b"\r") == 3)


def _hf_bar(i: int) -> bytes:
    """A real HF progress line (tqdm redraws, then the log dict) with the bar's count set to i."""
    real = _hf_bars()
    ln = real[i % len(real)]
    return ln.replace(b"| " + ln.split(b"| ")[1].split(b"/")[0] + b"/", f"| {i}/".encode(), 1)


def _hf_lane_both_ways(log, monkeypatch) -> tuple[list, dict, dict]:
    """The report of `log` per line and natively, and how many lines each call of the HF lane took."""
    taken: list = []
    real_claim = HFLane.claim

    def counting(self, *a):
        got = real_claim(self, *a)
        taken.append(sum(len(seg[2]) for seg in got))
        return got

    monkeypatch.setattr(HFLane, "claim", counting)
    slow = _report([str(log)], native=False, batch=False)
    fast = _report([str(log)], native=True, batch=True)
    return taken, slow, fast


@pytest.mark.parametrize("lead", [b"", b"trainer-1  | ", b"[default0]:", b"[pod/train-0/main] 2026-11-29T21:59:07.001Z "])
def test_hf_progress_lines_are_read_natively_with_the_per_line_steps(tmp_path, monkeypatch, lead):
    """transformers' `\\r bar \\r \\r {dict}` lines (real format, from sample_logs/hf, tqdm's block
    characters included): read in RE2, each dict takes the next bar's count as its step, as the
    hf parser does line by line (the last one is still held at the end, then flushed). Under a
    launcher's prefix (docker compose, torchrun, kubectl) too: the per-line path reads the pieces
    between the \\r, so the prefix stands alone and the bars and dicts are the input's stream."""
    assert _hf_bars(), "the sample has bar + dict lines"
    lines = [b"some header line"]
    for i in range(1, 400):
        ln = lead + _hf_bar(i)
        if 250 <= i < 260:
            ln = ln.replace(ln.split(b"'loss': ")[1].split(b",")[0], b"'nan'", 1)
        lines.append(ln)
    log = tmp_path / "hf.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    taken, slow, fast = _hf_lane_both_ways(log, monkeypatch)
    assert sum(taken) == 399
    assert fast == slow
    assert {f["id"] for f in fast["findings"]} & {"nan-persistent", "nan-skip-recover"}
    steps = fast["ranks"][0]
    # each dict took the next bar's count; the last one, with no bar after it, the step after
    assert steps["steps"] == 399 and steps["first_step"] == 2 and steps["last_step"] == 400


@pytest.mark.parametrize("bars_first", [False, True])
def test_hf_dicts_without_bars_get_their_counted_steps_in_the_batch(tmp_path, monkeypatch, bars_first):
    """Trainer log dicts with no bar and no step (public/1020: tqdm off; grad_norm nan from the
    first), hundreds of them: the lane reads them, streams give them their steps in the batch (a
    count 1, 2, ..., or on from the last bar's count after real progress lines), and the report is
    the per-line one, its steps said as counts only where the log printed none."""
    dicts = (ROOT_PATH / "sample_logs/public/1020.log").read_bytes().split(b"\n")[:4]
    lines = [b"some header line"] + ([_hf_bar(i) for i in range(1, 51)] if bars_first else [])
    lines += [dicts[i % 4] for i in range(600)]
    log = tmp_path / "hf_dicts.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    taken, slow, fast = _hf_lane_both_ways(log, monkeypatch)
    assert sum(taken) >= 600
    assert fast == slow
    f = {x["id"]: x for x in fast["findings"]}["nan-persistent"]
    assert ("the log prints no step numbers" in f["summary"]) != bars_first
    assert fast["ranks"][0]["last_step"] == (651 if bars_first else 600)


def test_hf_dicts_between_eval_dicts_get_their_counted_steps_as_line_by_line(tmp_path, monkeypatch):
    """Two training dicts (public/1020, no bar, grad_norm nan) then an eval dict (a real one from
    sample_logs), 300 times: the lane reads the training dicts in short runs between the eval
    dicts it leaves per line, each run releasing the dict held before it as an event of its own;
    streams give those their counted steps too, and the report is the per-line one."""
    dicts = (ROOT_PATH / "sample_logs/public/1020.log").read_bytes().split(b"\n")[:4]
    evals = [ln for p in sorted((ROOT_PATH / "sample_logs").rglob("*.log"))
             for ln in p.read_bytes().split(b"\n") if ln.startswith(b"{'eval_loss': ") and ln.endswith(b"}")]
    assert evals, "a real eval dict in sample_logs"
    lines = [b"some header line"]
    for i in range(300):
        lines += [dicts[i % 4], dicts[(i + 1) % 4], evals[0]]
    log = tmp_path / "hf_eval.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    taken, slow, fast = _hf_lane_both_ways(log, monkeypatch)
    assert sum(taken) >= 500
    assert fast == slow


@pytest.mark.parametrize("leads", [(b"[default0]:",), (b"[default0]:", b"[default1]:"), (b"[rank0]:", b"3: "),
                                   (b"[default0]:", b""), (b"trainer-1  | ",)])
def test_hf_dicts_behind_a_launchers_prefix_are_read_natively_on_the_prefixs_stream(tmp_path, monkeypatch, leads):
    """Trainer log dicts alone on their lines behind torchrun --tee's `[default0]:` (the dicts of
    public/1020, nan from the first; the Trainer logs on rank 0, here on two ranks in turn too, or
    in turn with dicts of the input's own stream): the per-line path peels the prefix, so each is a
    step of that rank's stream, counted; the lane reads them on the same streams (an srun label `3: `
    stays per line: an agent's topology may make it a node), between real progress lines of the
    input's own stream, and the report is the per-line one."""
    dicts = (ROOT_PATH / "sample_logs/public/1020.log").read_bytes().split(b"\n")[:4]
    lines = [b"some header line"] + [_hf_bar(i) for i in range(1, 21)]
    lines += [leads[i % len(leads)] + dicts[i % 4] for i in range(500)] + [_hf_bar(i) for i in range(21, 41)]
    log = tmp_path / "hf_prefixed.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    taken, slow, fast = _hf_lane_both_ways(log, monkeypatch)
    assert fast == slow
    assert sum(taken) >= 40 + 500 // len(leads) * sum(lead != b"3: " for lead in leads)
    assert {f["id"] for f in fast["findings"]} & {"nan-persistent", "grad-norm-nonfinite"}


def test_hf_bars_and_prefixed_dicts_in_turn_give_the_per_line_report(tmp_path, monkeypatch):
    """torchrun --tee's console of a Trainer: each bar redraw (`\\r` pieces, the input's own stream)
    then the dict behind `[default0]:` (rank 0's stream), 300 times: both read natively, the report
    the per-line one."""
    dicts = (ROOT_PATH / "sample_logs/public/1020.log").read_bytes().split(b"\n")[:4]
    lines = [b"some header line"]
    for i in range(1, 300):
        lines += [_hf_bar(i), b"[default0]:" + dicts[i % 4]]
    log = tmp_path / "hf_tee.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    taken, slow, fast = _hf_lane_both_ways(log, monkeypatch)
    assert fast == slow
    assert sum(taken) >= 590


@pytest.mark.parametrize("lead", [b"", b"[default0]:"])
def test_hf_dicts_of_transformers_before_grad_norm_are_read_natively(tmp_path, monkeypatch, lead):
    """transformers before 4.38 logs `{'loss': ..., 'learning_rate': ..., 'epoch': ...}` (no grad_norm;
    public/2018's dicts): the lane reads them too, with no grad norm (absent, never a NaN), and the
    report is the per-line one."""
    dicts = [ln for ln in (ROOT_PATH / "sample_logs/public/2018.log").read_bytes().split(b"\n")
             if ln.startswith(b"{'loss': ") and b"grad_norm" not in ln and ln.endswith(b"}")]
    assert len(dicts) >= 10
    lines = [b"some header line"] + [lead + dicts[i % len(dicts)] for i in range(600)]
    log = tmp_path / "hf_old.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    taken, slow, fast = _hf_lane_both_ways(log, monkeypatch)
    assert fast == slow
    assert sum(taken) >= 600
    assert not {f["id"] for f in fast["findings"]} & {"grad-norm-nonfinite", "nan-persistent"}


def test_hf_progress_lines_around_a_line_the_lane_does_not_read_are_still_read_natively(tmp_path, monkeypatch):
    """A chunk whose HF lines end a training run (the `train_runtime` dict glued to the last bar,
    from sample_logs/hf) and start another: the lane reads the progress lines before and after
    that line, which alone goes per line between them; the dict the lane's last line before it
    leaves held is the one the parser releases there, and the report is the per-line one."""
    end = next(ln for ln in (ROOT_PATH / "sample_logs/hf/trainer_nan_filter_off.log").read_bytes().split(b"\n")
               if b"{'train_runtime'" in ln)
    lines = [b"some header line"] + [_hf_bar(i) for i in range(1, 201)] + [end] + [_hf_bar(i) for i in range(1, 120)]
    log = tmp_path / "hf_two_runs.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    taken, slow, fast = _hf_lane_both_ways(log, monkeypatch)
    assert sum(taken) == 200 + 119
    assert fast == slow
    assert fast["ranks"][0]["steps"] == 200 + 119


def test_hf_lines_of_a_run_that_evaluates_are_read_natively_between_its_eval_lines(tmp_path, monkeypatch):
    """A real Trainer run that evaluates every 20 steps (sample_logs/hf/trainer_healthy_eval.log:
    nested eval bars, eval dicts), restarted in the same file many times: the lane reads the
    training lines between every two lines it leaves per line (the eval dicts, the restart's
    first bar glued to a warning), not only those before the first; the report is the per-line one."""
    run = (ROOT_PATH / "sample_logs/hf/trainer_healthy_eval.log").read_bytes()
    log = tmp_path / "evals.log"
    log.write_bytes(run * 40)
    taken, slow, fast = _hf_lane_both_ways(log, monkeypatch)
    assert fast == slow
    assert fast["ranks"][0]["steps"] == 60 * 40 and not fast["findings"]
    per_run = sum(1 for ln in run.split(b"\n") if b"{'loss'" in ln)
    assert sum(taken) >= 0.9 * per_run * 40  # (the lines the lane reads: nearly every training dict)


def test_vllm_stats_between_trainer_steps_take_the_per_line_step_without_cutting_the_rows(tmp_path, monkeypatch):
    """vLLM stats lines printed between HF trainer progress lines (one unprefixed stream): each
    takes the step after the trainer's last one, as line by line, and the trainer's rows still
    reach the machines as whole batches (they used to be cut at every stats line)."""
    lines = [b"some header line"]
    for i in range(1, 300):
        lines.append(_hf_bar(i))
        if i % 3 == 0:
            pressure = 200 <= i < 230
            lines.append(_VLLM_STATS.format(proc="APIServer", pid=3646, s=i % 60, r=18, w=40 if pressure else 0,
                                            kv="97.5" if pressure else "41.0").encode())
    log = tmp_path / "mixed.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    cuts = []
    real_slice = StepBatch.slice
    monkeypatch.setattr(StepBatch, "slice", lambda self, a, b: cuts.append(1) or real_slice(self, a, b))
    slow = _report([str(log)], native=False, batch=False)
    cuts.clear()
    fast = _report([str(log)], native=True, batch=True)
    assert fast == slow
    (finding,) = [f for f in fast["findings"] if f["id"] == "vllm-preemption-pressure"]
    assert finding["first_step"] == 202  # after bar 201 (it gave the dict before it step 201)
    assert len(cuts) < 10


_STATS = ("(APIServer pid=3646) INFO 05-19 10:13:{s:02d} [loggers.py:271] Engine 000: Avg prompt throughput: {p}.{d} "
          "tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: {r} reqs, Waiting: 0 reqs, GPU KV cache "
          "usage: 4{d}.5%, Prefix cache hit rate: 0.0%")  # vllm/v1/metrics/loggers.py, as in sample_logs/vllm
_NAN_PROBS = "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0"


def _scan_events(path: str, native: bool) -> list:
    saved = pipeline.NATIVE, reader.SMALL_REGION
    pipeline.NATIVE, reader.SMALL_REGION = native, (0 if native else saved[1])
    try:
        out = list(scan.scan_all(expand_sources([path]), pipeline.ScanOptions(jobs=1), pipeline.ScanResult()))
    finally:
        pipeline.NATIVE, reader.SMALL_REGION = saved
    evs = [e for it in out for e in (it.events() if it.kind == "metrics_rows" else [it])]
    return [e for e in evs if e.kind in ("metrics", "error")]


_KUBECTL = "[pod/vllm-0/vllm] 2026-11-29T21:{m:02d}:{s:02d}.{ms:03d}Z "  # kubectl logs --prefix --timestamps


@pytest.mark.parametrize("kubectl", [False, True])
def test_vllm_stats_lines_are_read_natively_as_the_parser_reads_them(tmp_path, monkeypatch, kubectl):
    """vLLM's stats lines become MetricsEvents in RE2 (numbers, text, origin with its process tag
    and timestamp, stream), and the vllm parser's note that the stream printed vLLM lines is made
    where the line is: the sampler error before them says seen_vllm False, the one after True.
    Under kubectl's prefix with --timestamps too (a stamp on every line: one prefix per pod, not
    one per line; the pod is the node)."""
    lead = (lambda i: _KUBECTL.format(m=i // 60 % 60, s=i % 60, ms=i * 7 % 1000)) if kubectl else (lambda i: "")
    lines = [lead(0) + _NAN_PROBS]
    lines += [lead(i) + _STATS.format(s=i % 60, p=i * 7, d=i % 10, r=i % 20) for i in range(200)]
    lines += [lead(201) + _NAN_PROBS]
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(lines) + "\n")
    made = []
    real = NativeLane._metrics_rows

    def counting(self, *a):
        got = real(self, *a)
        made.append(len(got))
        return got

    monkeypatch.setattr(NativeLane, "_metrics_rows", counting)
    slow = _scan_events(str(log), native=False)
    fast = _scan_events(str(log), native=True)
    assert sum(made) == 200
    assert [repr(e) for e in fast] == [repr(e) for e in slow]
    assert fast[0].fields["seen_vllm"] is False and fast[-1].fields["seen_vllm"] is True
    m = fast[1]
    assert (m.running, m.kv_cache_usage, m.fields, m.origin.proc, m.origin.ts is not None) == (
        0, 40.5, {"prefix_cache_hit_rate": 0.0, "engine": 0}, "APIServer", True)
    assert m.origin.node == ("vllm-0" if kubectl else None)


_ROWS_SIGS = {  # machines and conditions that take vLLM stats rows in every way the engine has
    "team-kv-spike": ("spike", '["metrics"]', '\nfield = "kv_cache_usage"\nfactor = 1.5\nwindow = 8\nmin_history = 4'),
    "team-kv-regex": ("line", '["metrics"]', '\nwhen = ["text ~ \'Running: 1[0-9] reqs\'", "kv_cache_usage > 97"]'),
    "team-kv-with-steps": ("count_within", '["step", "metrics"]',
                           '\nwhen = { any = ["grad_norm > 2.2", "kv_cache_usage >= 97"] }\nmin_count = 6'),
    "team-kv-columns": ("line", '["metrics"]', '\nwhen = ["step >= 211", "fields.engine == 0", "rank is none", '
                        '"framework == \'vllm\'", "waiting in [40, 41]"]'),
}


def _rows_signature(sig_id: str, machine: str, events: str, params: str) -> str:
    return f"""id = "{sig_id}"
title = "A team's own vLLM fingerprint"
category = "custom"
severity = "low"
status = "experimental"
revision = 1
frameworks = ["vllm"]

[match]
machine = "{machine}"
events = {events}{params}

[diagnosis]
summary = "custom"
root_cause = "ours"
benign_when = "never"
fix = "fix it"
verify = "rerun"
references = ["our wiki"]

[[examples]]
name = "required by the schema; this test diagnoses its own log"
expect = "match"
log = "x"

[[examples]]
name = "a miss"
expect = "no-match"
log = "y"
"""


def _trainer_and_vllm_log(path: Path, errors: tuple = (130, 215)) -> None:
    """HF trainer progress lines (one unprefixed stream) with two vLLM processes' stats lines
    between them (two readers: runs of one to three rows alternate), a stretch of KV cache
    pressure, and a sampler error before some stats lines (a per-line candidate that cuts the
    runs)."""
    lines = [b"some header line"]
    for i in range(1, 300):
        lines.append(_hf_bar(i))
        if i in errors:
            lines.append(_NAN_PROBS.encode())  # (its stream's rows so far go first: the stats after it take streams' step)
        for k in range(3 if 120 <= i < 140 else 1):
            pressure = 200 <= i < 230 or i == 150
            proc, pid = ("APIServer", 3646) if (i + k) % 4 else ("EngineCore_0", 3701)
            lines.append(_VLLM_STATS.format(proc=proc, pid=pid, s=(i + k) % 60, r=10 + i % 20, w=40 + i % 2 if pressure else 0,
                                      kv="97.5" if pressure else "41.0").encode())
    path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize("sig_id", [None] + sorted(_ROWS_SIGS))
def test_vllm_stats_rows_give_the_per_line_report_whatever_reads_them(tmp_path, sig_id):
    """vLLM stats lines travel as MetricsRows (columns, nanscope/metricsrows.py): whatever machine
    and condition read them (one that says which rows matter, one that must see every row, a
    regex only a row can answer, steps read together with metrics), the report is the per-line
    one, with the same steps, and the team's signature fires."""
    log = tmp_path / "mixed.log"
    _trainer_and_vllm_log(log)
    sigs: tuple = ()
    if sig_id is not None:
        (tmp_path / "sigs").mkdir()
        (tmp_path / "sigs" / f"{sig_id}.toml").write_text(_rows_signature(sig_id, *_ROWS_SIGS[sig_id]))
        sigs = (str(tmp_path / "sigs"),)
    slow = _diagnose(expand_sources([str(log)]), native=False, batch=False, signatures=sigs)
    fast = _diagnose(expand_sources([str(log)]), native=True, batch=True, signatures=sigs)
    assert fast == slow
    ids = {f["id"] for f in fast["findings"]}
    assert "vllm-preemption-pressure" in ids
    if sig_id is not None:
        assert sig_id in ids


def test_vllm_stats_rows_cross_processes_as_the_sequential_report(tmp_path):
    """Worker processes send MetricsRows to the parent (pickled with their own lines only): the
    report of --jobs 2 is the sequential one."""
    for name in ("a.log", "b.log"):
        _trainer_and_vllm_log(tmp_path / name)
    sources = expand_sources([str(tmp_path / "a.log"), str(tmp_path / "b.log")])
    one = _diagnose(sources, native=True, batch=True, jobs=1)
    two = _diagnose(sources, native=True, batch=True, jobs=2)
    assert two == one
    assert "vllm-preemption-pressure" in {f["id"] for f in two["findings"]}


_MIXED_LINE = st.one_of(
    st.tuples(st.just("stats"), st.sampled_from(["APIServer", "EngineCore_0"]), st.integers(0, 30),
              st.sampled_from(["41.0", "97.5", "99.1"])),
    st.tuples(st.just("bar"), st.integers(1, 400)),
    st.tuples(st.just("step"), st.sampled_from(["", "[default0]:", "[rank1]:"]), st.integers(1, 400),
              st.sampled_from(["2.5", "nan"])),
    st.tuples(st.just("error"), st.sampled_from([_NAN_PROBS, "RuntimeError: boom"])),
)


def _mixed_line(item: tuple) -> bytes:
    kind = item[0]
    if kind == "stats":
        _, proc, w, kv = item
        return _VLLM_STATS.format(proc=proc, pid=7 if proc == "APIServer" else 8, s=w % 60, r=18, w=w, kv=kv).encode()
    if kind == "bar":
        return _hf_bar(item[1])
    if kind == "step":
        _, pre, n, loss = item
        return f"{pre}step={n}, loss={loss}, grad_norm=0.5, lr=0.001".encode()
    return item[1].encode()


@settings(max_examples=60, deadline=None)
@given(st.lists(_MIXED_LINE, min_size=1, max_size=80))
@example([("bar", 1), ("bar", 15), ("step", "", 1, "2.5"), ("bar", 1)])
def test_vllm_stats_rows_in_any_mix_give_the_per_line_report(items):
    """vLLM stats lines of two processes among HF progress lines, prefixed and unprefixed step
    prints and errors, in any order: runs of rows cut wherever other candidates fall, steps from
    held rows or from streams, and still the per-line report. (The example: a script's own step
    print between two trainer bars falls between two rows of the HF batch, whose dicts come out
    at the next bar; the two batches were delivered one after the other, see pipeline.by_order.)"""
    src = [Source("mix.log", None, b"\n".join(_mixed_line(it) for it in items) + b"\n")]
    assert _diagnose(src, native=True, batch=True) == _diagnose(src, native=False, batch=False)


def test_a_run_of_stats_rows_goes_after_the_held_steps_of_a_machine_that_reads_both(tmp_path):
    """A machine that reads steps and metrics sees them in line order: the engine feeds its held
    step events of the stream before a MetricsRows, as before each MetricsEvent."""
    from nanscope.signatures.loader import load_file

    path = tmp_path / "team-kv-with-steps.toml"
    path.write_text(_rows_signature("team-kv-with-steps", "count_within", '["step", "metrics"]',
                                    '\nwhen = { any = ["loss > 5", "kv_cache_usage >= 97"] }\nmin_count = 2'))
    sig, errors = load_file(path)
    assert not errors
    log = tmp_path / "stats.log"
    log.write_text("\n".join(_STATS.format(s=i, p=i, d=9, r=3).replace("usage: 49.5%", "usage: 97.5%")
                             for i in range(5)) + "\n")
    saved = pipeline.NATIVE, reader.SMALL_REGION
    pipeline.NATIVE, reader.SMALL_REGION = True, 0
    try:
        items = list(scan.scan_all(expand_sources([str(log)]), pipeline.ScanOptions(jobs=1), pipeline.ScanResult()))
    finally:
        pipeline.NATIVE, reader.SMALL_REGION = saved
    (rows,) = [it for it in items if it.kind == "metrics_rows"]
    step = StepEvent(loc=Loc(str(log), 0), text="step=1, loss=6.0",
                     framework="pytorch", origin=Origin(), step=1, loss=6.0, stream=rows.stream)

    def first_match(feed_rows_whole: bool) -> list:
        eng = engine_mod.Engine([sig])
        eng.feed(step)
        if feed_rows_whole:
            eng.feed(rows)
        else:
            for ev in list(rows.events()):
                eng.feed(ev)
        (finding,) = eng.finish()
        return [ev.text for ev in finding.matches[0].events]

    assert first_match(True) == first_match(False)
    assert first_match(True)[0] == "step=1, loss=6.0"


@functools.lru_cache(maxsize=1)
def _hf_kinds() -> tuple:
    """Every kind of HF progress line the real logs print (sample_logs/hf: bar + dict, several
    bars + dict, bars alone, tqdm's 0/N bar with transformers' warning glued to it, a dict after
    the spaces tqdm clears its bar with; public/222: a dict on a line of its own, tqdm off),
    and a rank's own bar under srun's label (cuda/oom_rank11: another stream's hf state)."""
    hf = [ln for ln in (ROOT_PATH / "sample_logs/hf/trainer_nan_filter_off.log").read_bytes().split(b"\n")
          if b"\r" in ln and (b"it/s" in ln or b"{'" in ln)]
    alone = [ln for ln in (ROOT_PATH / "sample_logs/public/222.log").read_bytes().split(b"\n") if ln.startswith(b"{'loss'")]
    rank = [b"11: " + ln for ln in (ROOT_PATH / "sample_logs/cuda/oom_rank11_multinode_excerpt.log").read_bytes().split(b"\n")
            if ln.startswith(b"Train:")]
    return tuple(hf + alone[:3] + rank[:1])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["", "trainer-1  | "])), min_size=1, max_size=60))
def test_hf_lines_of_every_kind_in_any_order_give_the_per_line_report(picks):
    """The HF lane reads bars and dicts as their own row kinds, under a launcher prefix or none
    (a line of bars alone releases the held dict and holds none, a dict with no bar before it
    releases the held one without a step); a line it cannot read ends its run of the chunk, one
    of another stream does not. In any order, the report is the per-line one."""
    kinds = _hf_kinds()
    lines = [(lead if b"\r" in kinds[k % len(kinds)] else b"") + kinds[k % len(kinds)]
             for k, lead in ((k, lead.encode()) for k, lead in picks)]
    src = [Source("hf.log", None, b"\n".join(lines) + b"\n")]
    assert _diagnose(src, native=True, batch=True) == _diagnose(src, native=False, batch=False)


def test_a_text_regex_is_answered_over_a_native_batch_of_mixed_frameworks():
    """nan-persistent's TRL clause (`framework == 'hf'` and a text regex) on a batch of pytorch and
    DeepSpeed rows (no one framework): the regex runs over the batch's lines, so the machine does
    not go row by row (it did, on every per-rank file whose rank printed both), and the answer is
    the rows' own."""
    from nanscope.signatures.predicates import compile_expr, compile_vector

    lines = [b"[default0]:step=1, loss=2.5, lr=0.1",
             b"[default0]:[2024-05-01 12:00:00,123] [INFO] [logging.py:128:log_dist] [Rank 0] step=10, skipped=2, "
             b"lr=[0.0001], mom=[(0.9, 0.999)]",
             b"[default0]:step=11, loss=nan, lr=0.1"]
    pa = reader._arrow()[0]
    lane = NativeLane(all_parsers(), "x.log", Origin(), 1 << 20)
    _, (b,), _, _ = _claim(lane, pa.array(lines, pa.binary()))
    assert b.framework is None and len(b) == 3
    cond = ["event == 'step'", "framework == 'hf'", 'text ~ "logps/chosen\\W?: (?:nan|NaN)\\b"']
    assert compile_vector(cond)(b).tolist() == [False, False, False]
    for pat, want in (('text ~ "loss=nan"', [False, False, True]), ('text !~ "log_dist"', [True, False, True])):
        assert compile_vector([pat])(b).tolist() == want == [compile_expr(pat)(b.event(i)) for i in range(3)]


def test_an_fp16_run_restarted_many_times_gives_the_per_line_report(tmp_path, monkeypatch):
    """A real fp16 run whose scaler skips steps (its scale changes every few steps), appended 40
    times as restarts, with a real traceback after every tenth: the machines that read scale or
    error events get the held steps before each, the others later in larger batches; the report
    is still the one every step alone through Machine.feed gives."""
    amp = (ROOT / "sample_logs/torch/amp_first_step_skipped.log").read_bytes()
    crash = (ROOT / "sample_logs/core/rnn_state_not_detached.log").read_bytes()
    log = tmp_path / "restarts.log"
    log.write_bytes(b"".join(amp + (crash if i % 10 == 9 else b"") for i in range(40)))
    monkeypatch.chdir(tmp_path)
    slow = _report([log.name], native=False, batch=False)
    fast = _report([log.name], native=True, batch=True)
    assert fast == slow
    assert {f["id"] for f in fast["findings"]} >= {"autograd-graph-freed", "nan-skip-recover", "loss-scale-warmup"}
