"""A collector's stamp in front of every line (nanscope/ingest/wrapper.py): peeled before the
launcher prefixes, so ranks, steps and the report are those of the same log unwrapped.

The log lines are sample_logs/torch/ddp_nan_rank2.log's (torch 2.13, four ranks, rank 2 goes NaN at
step 40); the stamps in front are in the collectors' own formats: journalctl's default `short`
output (`%b %d %H:%M:%S host ident[pid]: `, RFC 3164), moreutils ts(1)'s default `%b %d %H:%M:%S `,
and a shipper's bracketed date and time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SAMPLES
from nanscope import api
from nanscope.ingest.reader import Source
from nanscope.ingest.wrapper import learn_wrapper

L = SAMPLES / "torch" / "ddp_nan_rank2.log"
STAMPS = {
    "syslog": "Dec  1 14:00:{s:02d} gpu-node-7 python[31337]: ",
    "ts": "Dec 01 14:00:{s:02d} ",
    "bracketed": "[2026-12-01 14:00:{s:02d}] ",
}


def _wrapped(fmt: str) -> bytes:
    return "".join(fmt.format(s=i % 60) + ln + "\n" for i, ln in enumerate(L.read_text().splitlines())).encode()


def _summary(report) -> list:
    return [(f.id, f.initiating_rank, f.first_step, sorted(f.ranks)) for f in report.findings]


@pytest.mark.parametrize("name", sorted(STAMPS))
def test_a_collectors_stamp_is_peeled_and_the_report_is_the_unwrapped_logs(name):
    data = _wrapped(STAMPS[name])
    assert learn_wrapper(data[: 1 << 20]).name == name
    plain = api.diagnose_sources([Source("console.log", None, L.read_bytes())])
    wrapped = api.diagnose_sources([Source("console.log", None, data)])
    assert _summary(wrapped) == _summary(plain)
    f = next(f for f in wrapped.findings if f.id == "nan-rank-local")
    assert (f.initiating_rank, f.first_step) == (2, 40)
    assert {s.label for s in wrapped.ranks} == {s.label for s in plain.ranks}


def test_a_wrapped_rank_line_keeps_the_stamps_time_as_its_own():
    report = api.diagnose_sources([Source("console.log", None, _wrapped(STAMPS["syslog"]))])
    f = next(f for f in report.findings if f.id == "nan-rank-local")
    assert f.first_ts is not None  # Dec 1, 14:00:ss, in seconds of the year
    assert int(f.first_ts) // 86400 == 334  # (Jan 1 is day 0; Dec 1 is day 334)


def test_only_the_collector_relayed_excerpts_among_the_bundled_real_logs_are_taken_as_wrapped():
    """A program's own logger stamps (DeepSpeed's, SGLang's, Python logging's) and the kernel's own
    syslog lines are no wrapper: of every log in sample_logs/ (framework output and public
    excerpts) only those read through a collector are: 1813 (stable-diffusion-webui-forge), 1938
    (Ollama) and 2231 (the kubelet's glog lines) through journalctl, 1917 (vLLM) and 2196 (TGI)
    through a container runtime's RFC 3339 stamp, 4201 (Megatron's `[rank7]:` records) under a
    collector's `Oct 22 03:18:42 ` date and time, and 4731 (TGI on Gaudi: the launcher relays its shards'
    output, a traceback line by line, under its own tracing stamp `<RFC 3339>Z DEBUG text_generation_launcher: `)."""
    wrapped = {p.name: w.name for p in sorted(Path(SAMPLES).rglob("*.log")) if (w := learn_wrapper(p.read_bytes()[: 1 << 20]))}
    assert wrapped == {"1813.log": "syslog", "1917.log": "date-time", "1938.log": "syslog", "2196.log": "date-time",
                       "2231.log": "syslog", "4201.log": "ts", "4321.log": "syslog",
                       "4731.log": "syslog-iso"}


def test_the_journald_excerpt_reads_its_exception_behind_the_stamp():
    # 1813: `Oct 04 15:02:41 llm sd-webui-forge-start[394]: RuntimeError: CUDA error: no kernel image ...`
    assert api.diagnose([str(SAMPLES / "public" / "1813.log")]).findings[0].id == "cuda-arch-unsupported"
    errors = [e for e in api.events([str(SAMPLES / "public" / "1813.log")]) if e.kind == "error"]
    assert [(e.loc.line, e.exc_type) for e in errors] == [(2, None), (5, "RuntimeError")]
    assert errors[1].origin.ts - errors[0].origin.ts == (15 - 13) * 3600 + (2 - 19) * 60 + (41 - 39)  # the stamps' times
