"""Output sinks and launcher prefixes: rich markup never interprets log text, no secret survives
in any report format, and one job rendered four ways gives the same findings."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from nanscope.report import FORMATS

MARKUP_LINES = [
    "[default0]:step 5 | loss nan | grad_norm nan [/ckpt-100]",
    "[default0]:step 6 | loss nan | grad_norm nan [link=http://evil]x[/link] [real_accelerator.py:203:get_accelerator]",
    "[default0]:step 7 | loss nan | grad_norm nan [bold red]boom[/bold red]",
]


def test_rich_markup_in_log_text_prints_literally():
    data = ("[default0]:step 4 | loss 2.0 | grad_norm 0.5\n" + "\n".join(MARKUP_LINES) + "\n").encode()
    p = run_cli("diagnose", "-", "--color", "always", stdin=data)
    out = p.stdout.decode()
    assert p.returncode == 1 and b"Traceback" not in p.stderr
    for token in ("[/ckpt-100]", "[link=http://evil]x[/link]", "[real_accelerator.py:203:get_accelerator]",
                  "[bold red]boom[/bold red]", "[default0]:step 5"):
        assert token in out
    assert "\x1b]8;" not in out  # no OSC 8 hyperlink was created


def _secret_log() -> tuple[bytes, str]:
    import random
    import string

    token = "hf_" + "".join(random.Random(5).choice(string.ascii_letters) for _ in range(34))
    lines = ["step 1 | loss 2.0 | grad_norm 0.5"] + [f"step {i} | loss nan | grad_norm nan | HF_TOKEN={token}" for i in range(2, 6)]
    return ("\n".join(lines) + "\n").encode(), token


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_no_secret_in_any_report_format(fmt):
    data, token = _secret_log()
    p = run_cli("diagnose", "-", "--format", fmt, "--color", "never", stdin=data)
    assert p.returncode == 1, p.stderr
    out = p.stdout.decode()
    assert token not in out
    assert "nan-persistent" in out


def _job_lines(rank: int) -> list[str]:
    out = []
    for s in range(115, 124):
        bad = rank == 3 and s >= 120
        out.append(f"step {s} | loss {'nan' if bad else f'{2.0 - s / 1000:.4f}'} | grad_norm {'nan' if s >= 120 else '0.41'}")
    return out


def _renderings(tmp_path) -> dict:
    """The same two-rank job (rank 0 healthy, rank 3 NaN from step 120) as four launchers print it."""
    runs = {}
    d = tmp_path / "per_rank"
    d.mkdir()
    for r in (0, 3):
        (d / f"rank_{r}.log").write_text("\n".join(_job_lines(r)) + "\n")
    runs["per-rank files"] = [str(d)]
    merged = []
    for a, b in zip(_job_lines(0), _job_lines(3)):
        merged += [(0, a), (3, b)]
    variants = {
        "srun --label": lambda r, line: f"{r}: {line}",
        "kubectl --prefix --timestamps": lambda r, line: f"[pod/trainer-{r}/main] 2024-05-01T12:00:0{r}.000000000Z {line}",
        "torchrun --tee 3": lambda r, line: f"[default{r}]:{line}",
    }
    for name, fmt in variants.items():
        f = tmp_path / (name.split()[0] + ".log")
        f.write_text("\n".join(fmt(r, line) for r, line in merged) + "\n")
        runs[name] = [str(f)]
    return runs


def test_one_job_four_launchers_same_findings(tmp_path):
    results = {}
    for name, paths in _renderings(tmp_path).items():
        r = json.loads(run_cli("diagnose", *paths, "--format", "json").stdout)
        results[name] = sorted((f["id"], f["initiating_rank"], f["first_step"]) for f in r["findings"])
    expected = results["per-rank files"]
    assert ("nan-rank-local", 3, 120) in expected
    for name, got in results.items():
        if name == "kubectl --prefix --timestamps":
            continue  # kubectl's pod prefix names a pod, not a rank: checked below
        assert got == expected, name
    # With kubectl the pods are the ranks only by naming convention; nanscope still finds the NaN run.
    assert any(f[0] == "nan-persistent" and f[2] == 120 for f in results["kubectl --prefix --timestamps"])
