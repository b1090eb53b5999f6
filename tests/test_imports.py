"""The house: nanscope's modules import each other in floors that follow the data flow, with no
circle (docs/design.md, "Floors"). Deferred imports inside functions count like top-level ones."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "nanscope"

# Bottom to top. A module may import its own floor or a lower one, never a higher one.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("model", ("nanscope", "nanscope.errors", "nanscope.model", "nanscope.redact", "nanscope.rankset",
               "nanscope.columns", "nanscope.keys", "nanscope.stepbatch", "nanscope.metricsrows",
               "nanscope.parsers.numbers", "nanscope.schema", "nanscope.tomlfile", "nanscope.lazynp")),
    ("ingest and parsers", ("nanscope.ingest", "nanscope.parsers", "nanscope.follow")),
    ("pipeline", ("nanscope.pipeline", "nanscope.pieces", "nanscope.parallel", "nanscope.dask_scan", "nanscope.scan")),
    ("streams, engine, attribution", ("nanscope.streams", "nanscope.series", "nanscope.signatures",
                                      "nanscope.attribution")),
    ("outputs", ("nanscope.report", "nanscope.export", "nanscope.output", "nanscope.progress", "nanscope.hosts",
                 "nanscope.baseline", "nanscope.evaluate", "nanscope.fleet")),
    ("api", ("nanscope.api", "nanscope.config")),
    ("cli", ("nanscope.cli", "nanscope.__main__", "nanscope.live", "nanscope.signatures.selftest")),
]


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    got: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for cand in [mod] + [f"{mod}.{a.name}" for a in node.names]:
                if cand in known:
                    got.add(cand)
        elif isinstance(node, ast.Import):
            got |= {a.name for a in node.names if a.name in known}
    got.discard(name)
    if name == "nanscope":
        got = set()  # the package's __init__ (the version) imports nothing of ours
    return got


def _floor(name: str) -> int:
    best, at = -1, None
    for i, (_, prefixes) in enumerate(FLOORS):
        for pre in prefixes:
            if (name == pre or (pre != "nanscope" and name.startswith(pre + "."))) and len(pre) > best:
                best, at = len(pre), i
    assert at is not None, f"{name} is on no floor: add it to FLOORS (and docs/design.md)"
    return at


GRAPH = {n: _imports(n, p, set(_modules())) for n, p in _modules().items()}


def test_every_module_is_on_a_floor():
    for name in GRAPH:
        _floor(name)


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_go_down_the_floors(name):
    up = [dep for dep in GRAPH[name] if _floor(dep) > _floor(name)]
    assert not up, f"{name} ({FLOORS[_floor(name)][0]}) imports a higher floor: {sorted(up)}"


def test_no_import_circle():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_the_checker_sees_a_circle_and_an_upward_import(tmp_path):
    """The walk itself: a deferred import inside a function is found."""
    mod = tmp_path / "m.py"
    mod.write_text("def f():\n    from nanscope.cli import app\n", encoding="utf-8")
    assert _imports("nanscope.model", mod, {"nanscope.cli", "nanscope.model"}) == {"nanscope.cli"}


_NUMPY_PROBE = """
import sys
from nanscope.cli import main
code = main(["diagnose", sys.argv[1], "--format", "json"])
print("numpy" in sys.modules, code, file=sys.stderr)
"""


@pytest.mark.parametrize("log, steps", [("sample_logs/core/dataloader_fd_limit.log", False),
                                        ("sample_logs/public/1005.log", False),
                                        ("sample_logs/faults/ddp_nan_persistent_rank1.log", True)])
def test_numpy_is_imported_only_for_a_log_with_steps(log, steps):
    """Start-up: a log with no step lines (a crash, a time-out) is diagnosed without importing numpy,
    the largest single import of a small log's run (nanscope.lazynp); a log with steps needs it."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", _NUMPY_PROBE, str(root / log)], capture_output=True, text=True,
                         cwd=root, timeout=120)
    imported, code = out.stderr.strip().splitlines()[-1].split()
    assert code == "1", out.stderr  # a finding in each
    assert json.loads(out.stdout)["findings"], out.stdout[:500]
    assert imported == str(steps), out.stderr
