"""The reader: candidate lines found in native code, with the same lines and line numbers as a
plain Python loop, whatever the chunk boundaries; keywords hidden inside other keywords found."""

from __future__ import annotations

import io
import random
import re

import pytest

import nanscope.ingest.reader as reader
from nanscope.ingest.reader import Prefilter, scan, scan_candidates
from nanscope.model import InputInfo


@pytest.fixture(autouse=True, params=["arrow", "python"])
def path(request, monkeypatch):
    """Every test runs on both candidate finders: RE2 over Arrow arrays, and the small-input one."""
    monkeypatch.setattr(reader, "SMALL_REGION", 0 if request.param == "arrow" else 1 << 30)
    return request.param

WORDS = ["loss", "exitcode", "exitcode:", "OVERFLOW!", "Error", "it/s]", "grad_norm", "Tried to allocate"]


def _reference(data: bytes, words: list[str], max_line: int) -> list[tuple[int, bytes]]:
    """What the reader must yield: every \\n / \\r / NUL separated piece holding a keyword."""
    out = []
    for n, line in enumerate(data.split(b"\n"), start=1):
        for piece in re.split(b"[\r\x00]", line):
            piece = piece[:max_line]
            if any(w.encode() in piece for w in words):
                out.append((n, piece))
    return out


def _scan(data: bytes, words: list[str], chunk: int = 1 << 20, max_line: int = 1 << 20):
    info = InputInfo("t", None)
    got = list(scan(io.BytesIO(data), Prefilter(words), info, chunk_bytes=chunk, max_line=max_line))
    return got, info


def _random_log(seed: int, n: int = 3000) -> bytes:
    rng = random.Random(seed)
    parts = ["step 3 | loss nan", "[default1]:exitcode: 1", "  5%|#   | 2/40 [00:01<00:02, 9.1it/s]",
             "[deepspeed] OVERFLOW! Rank 0 Skipping step", "RuntimeError: boom", "nothing here", "",
             "x" * 300, "CUDA out of memory. Tried to allocate 2.00 GiB", "caf\xe9 loss \u2014 ok", "grad_norm: inf"]
    seps = [b"\n", b"\n", b"\n", b"\r", b"\x00", b"\r\n"]
    return b"".join(rng.choice(parts).encode() + rng.choice(seps) for _ in range(n))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [64, 1000, 1 << 20])
def test_same_lines_as_a_python_loop_at_any_chunk_size(seed, chunk):
    data = _random_log(seed)
    got, info = _scan(data, WORDS, chunk=chunk)
    assert got == _reference(data, WORDS, 1 << 20)
    assert info.lines == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    assert info.nul_bytes == data.count(b"\x00")


def test_keywords_found_include_those_hidden_inside_longer_ones():
    pf = Prefilter(["exitcode", "exitcode:", "code: 1", "loss"])
    lines = [b"failed (exitcode: 1) local_rank: 0", b"train loss 2.0 loss", b"no keyword"]
    out = list(scan_candidates(io.BytesIO(b"\n".join(lines) + b"\n"), pf, InputInfo("t", None)))
    assert [(n, line) for n, line, _ in out] == [(1, lines[0]), (2, lines[1])]
    possible = pf.possible(out[0][2])
    assert {"exitcode", "exitcode:", "code: 1"} <= possible  # keywords inside or at the same byte are not lost
    assert "loss" not in possible


def test_line_longer_than_the_cap_keeps_its_head_and_is_counted():
    data = b"loss 1\n" + b"loss " + b"x" * 5000 + b"\nstep 2 loss 3\n"
    got, info = _scan(data, ["loss"], chunk=1 << 20, max_line=1000)
    assert got[0] == (1, b"loss 1") and got[-1] == (3, b"step 2 loss 3")
    assert got[1][0] == 2 and len(got[1][1]) == 1000
    assert info.long_lines == 1


def test_line_longer_than_a_chunk_is_skipped_to_its_end():
    data = b"loss 1\n" + b"y" * 10000 + b" loss\n" + b"loss 2\n"
    got, info = _scan(data, ["loss"], chunk=512, max_line=1000)
    assert got == [(1, b"loss 1"), (3, b"loss 2")]
    assert info.long_lines == 1 and info.lines == 3


def test_non_ascii_keyword_and_invalid_utf8():
    data = "\u2014 \u00e9t\u00e9 loss\n".encode() + b"\xff\xfe loss\n" + "only \u00e9t\u00e9\n".encode()
    got, _ = _scan(data, ["\u00e9t\u00e9"])
    assert [n for n, _ in got] == [1, 3]
    got, _ = _scan(data, ["loss"])
    assert [n for n, _ in got] == [1, 2]


def test_no_keywords_means_no_candidates():
    got, info = _scan(b"a\nb\n", [])
    assert got == [] and info.lines == 2


def test_marks_say_where_the_first_nul_and_long_line_are():
    data = b"loss 1\nok\n" + b"ab\x00\x00cd\n" + b"loss " + b"z" * 3000 + b"\nloss 2\n"
    marks: dict = {}
    info = InputInfo("t", None)
    list(scan_candidates(io.BytesIO(data), Prefilter(["loss"]), info, max_line=1000, marks=marks))
    assert marks["nul"] == (3, data.index(b"\x00"))
    assert marks["long"] == 4
    assert info.nul_bytes == 2 and info.long_lines == 1


def _per_line(data: bytes) -> int:
    """How many lines a scan with the native lane leaves to the per-line path."""
    from nanscope.ingest.native import NativeLane
    from nanscope.model import Origin
    from nanscope.parsers.registry import all_parsers, keyword_regex

    parsers = all_parsers()
    items = scan_candidates(io.BytesIO(data), keyword_regex(parsers), InputInfo("x.log", None),
                            native=NativeLane(parsers, "x.log", Origin(), 1 << 20))
    return sum(1 for _, raw, _ in items if raw)


def _report_of(data: bytes):
    from nanscope import api
    from nanscope.ingest.reader import Source

    r = api.diagnose_sources([Source("console.log", None, data)])
    return [(f.id, f.initiating_rank, f.first_step, sorted(f.ranks)) for f in r.findings], r.inputs[0]


@pytest.mark.parametrize("how", ["crlf", "colour"])
def test_windows_line_ends_and_terminal_colours_read_as_the_plain_log(how):
    """ddp_nan_rank2.log (four ranks, rank 2 NaN at step 40) as a Windows console or a colouring
    logger writes it, enough of it that the columnar path reads it: the same findings, and the same
    lines read as events (a \\r or an escape used to send every line the per-line way)."""
    from conftest import SAMPLES

    lines = (SAMPLES / "torch" / "ddp_nan_rank2.log").read_bytes().splitlines()
    plain = b"".join(ln + b"\n" for ln in lines)
    if how == "crlf":
        data = b"".join(ln + b"\r\n" for ln in lines)
    else:
        data = b"".join(b"\x1b[32m" + ln + b"\x1b[0m\n" for ln in lines)
    got, info = _report_of(data)
    want, plain_info = _report_of(plain)
    assert got == want and ("nan-rank-local", 2, 40, [2]) in [(a, b, c, d[:1]) for a, b, c, d in got]
    assert (info.lines, info.event_lines) == (plain_info.lines, plain_info.event_lines)
    assert _per_line(data) == _per_line(plain)


def test_the_keyword_pass_is_split_into_unions_that_find_what_one_union_finds():
    """RE2 leaves its DFA for a much slower engine past a memory budget, which one union of every
    keyword overran (reader._unions): the unions, in byte order, together find exactly the lines
    Python's search finds."""
    import pyarrow as pa

    from nanscope.ingest import reader
    from nanscope.parsers.registry import all_parsers

    pf = reader.Prefilter([k for p in all_parsers() for k in p.keywords])
    assert len(pf._re2) > 1 and all(len(u) <= reader._UNION_CHARS for u in pf._re2)
    alts = [a for u in pf._re2 for a in u.split("|")]
    assert alts == sorted(alts)  # (adjacent alternatives share their prefix: RE2 factors it)
    lines = [w.encode() + b" tail" for w in pf.words[::7]] + [b"nothing here", b"x" + pf.words[-1].encode()]
    got = pf.holds(pa.array(lines, pa.binary())).to_pylist()
    assert got == [bool(pf.search(line)) for line in lines] and got.count(False) == 1
