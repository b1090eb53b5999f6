"""Property tests (hypothesis): random bytes and mutated real lines never crash the pipeline; chunk
boundaries never change what is read; the order of per-rank files never changes the diagnosis;
sanitizers are idempotent.

A longer fuzz run (the one recorded in README, "Fuzzing"): NANSCOPE_FUZZ_EXAMPLES=20000 python -m
pytest tests/reliability/test_properties.py -k "random_bytes or mutated" --hypothesis-show-statistics"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nanscope.api import Options, diagnose_sources, load_signatures
from nanscope.ingest.reader import Source, scan
from nanscope.model import InputInfo
from nanscope.parsers.registry import all_parsers, keyword_regex
from nanscope.report.sanitize import terminal, xml

EXAMPLES = int(os.environ.get("NANSCOPE_FUZZ_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYWORDS = keyword_regex(all_parsers())
OPTIONS = Options(bundled_signatures=load_signatures(Options()))  # loaded once: 16x more examples per second

# Realistic line shapes (from the sample logs), with room for random text and multi-byte characters.
_SHAPES = [
    "[default{r}]:step={s}, loss={v}, grad_norm={v}, lr=0.001",
    "step {s} | loss {v} | grad_norm {v} | lr 1.0e-03 | scale 65536.0",
    "{{'loss': '{v}', 'grad_norm': '{v}', 'learning_rate': '0.0004', 'epoch': '0.3'}}",
    "[2024-05-01 10:00:01,123] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "[rank{r}]: RuntimeError: CUDA error: an illegal memory access was encountered",
    " 40%|████      | {s}/50 [00:02<00:03,  9.10it/s]",
    "{t}",
]
_values = st.sampled_from(["2.3012", "nan", "inf", "-inf", "0.0", "1.2E+00", "0"])
_line = st.builds(
    lambda shape, r, s, v, t: shape.format(r=r, s=s, v=v, t=t),
    st.sampled_from(_SHAPES), st.integers(0, 7), st.integers(0, 500), _values,
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x00"), max_size=60),
)
_log = st.lists(_line, min_size=1, max_size=60).map(lambda ls: ("\n".join(ls) + "\n").encode("utf-8"))


def _read(data: bytes, chunk: int) -> list:
    info = InputInfo(path="x", size=None)
    return list(scan(io.BytesIO(data), KEYWORDS, info, chunk_bytes=chunk)), info.lines


@SETTINGS
@given(_log, st.integers(1, 4096))
def test_chunk_boundaries_do_not_change_what_is_read(data, chunk):
    whole = _read(data, 8 << 20)
    assert _read(data, chunk) == whole
    for _, line in whole[0]:
        line.decode("utf-8")  # never a character cut in half


@SETTINGS
@given(st.binary(max_size=4096))
def test_random_bytes_never_crash(data):
    report = diagnose_sources([Source("fuzz.log", None, data)], OPTIONS)
    assert report.verdict in ("clean", "benign", "actionable", "retryable", "incomplete")


@SETTINGS
@given(_log)
def test_valid_logs_never_crash_and_json_stays_strict(data):
    import json

    from nanscope.report.json import dumps

    report = diagnose_sources([Source("fuzz.log", None, data)], OPTIONS)
    json.loads(dumps(report), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


# Real lines, never retyped: every line of the bundled sample logs (read here, at test time).
_SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
_REAL = sorted({ln for f in sorted(_SAMPLES.rglob("*.log")) for ln in f.read_bytes().splitlines() if ln.strip()})
_real_line = st.sampled_from(_REAL)


def _mutate(line: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """Apply (kind, position, byte) edits: 0 flips a byte, 1 inserts one, 2 deletes one, 3 doubles
    the tail from there (a line split / interleaved write)."""
    b = bytearray(line)
    for kind, pos, val in edits:
        i = pos % (len(b) + 1)
        if kind == 0 and i < len(b):
            b[i] ^= val or 1
        elif kind == 1:
            b.insert(i, val)
        elif kind == 2 and i < len(b):
            del b[i]
        elif kind == 3:
            b[i:i] = b[i:]
    return bytes(b)


_mutated = st.builds(_mutate, _real_line, st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10_000), st.integers(0, 255)), max_size=4))
_mutated_log = st.lists(st.one_of(_real_line, _mutated), min_size=1, max_size=40).map(lambda ls: b"\n".join(ls) + b"\n")


@SETTINGS
@given(_mutated_log)
# a step line with a node prefix and no local rank once crashed the rank lookup (CI, session 12)
@example(b"0: [default0]:                    ^^^^^^^^^^^^^^^^^\n0: [default1\\:step 13 | loss 2.2541 | grad_norm 0.3968 | lr 1.0e-03\n")
def test_mutated_real_lines_never_crash(data):
    import json

    from nanscope.report.json import dumps

    report = diagnose_sources([Source("fuzz.log", None, data)], OPTIONS)
    assert report.verdict in ("clean", "benign", "actionable", "retryable", "incomplete")
    json.loads(dumps(report), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def _rank_file(rank: int, bad_step: int | None) -> bytes:
    lines = [f"step {s} | loss {'nan' if s == bad_step else f'{2.0 - s / 100:.3f}'} | grad_norm 0.5" for s in range(12)]
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=max(10, EXAMPLES // 4), deadline=None)
@given(st.permutations(list(range(4))), st.integers(0, 3), st.integers(3, 9))
def test_file_order_does_not_change_the_diagnosis(order, bad_rank, bad_step):
    files = {r: _rank_file(r, bad_step if r == bad_rank else None) for r in range(4)}

    def run(ranks):
        rep = diagnose_sources([Source(f"logs/rank_{r}.log", None, files[r]) for r in ranks], OPTIONS)
        return sorted((f.id, f.initiating_rank, f.first_step, tuple(f.ranks)) for f in rep.findings)

    baseline = run(range(4))
    assert ("nan-rank-local", bad_rank, bad_step, (bad_rank,)) in baseline
    assert run(order) == baseline


@SETTINGS
@given(st.text(max_size=300))
def test_sanitizers_are_idempotent_and_leave_no_controls(s):
    t = terminal(s, max_len=10_000)
    assert terminal(t, max_len=10_000) == t
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", t)
    x = xml(s)
    assert xml(x) == x
