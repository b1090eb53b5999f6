"""The docs site: generated pages (tools/docs_pages.py), the runnable API example, the README."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("docs_pages", ROOT / "tools" / "docs_pages.py")
docs_pages = importlib.util.module_from_spec(spec)
spec.loader.exec_module(docs_pages)


@pytest.fixture(scope="module")
def pages():
    return docs_pages.generated_pages()


def test_one_page_per_signature_with_the_rule_page_sections(pages, signatures):
    for sig in signatures:
        page = pages[f"signatures/{sig.category}/{sig.id}.md"]
        assert page.startswith(f"# {sig.id}\n")
        for heading in ("## What it is", "## Why it happens", "## Fix", "## Verify the fix",
                        "## What it looks like in a log", "## What does not match", "## References", "## How it matches"):
            assert heading in page, (sig.id, heading)
        if sig.symptoms:
            assert "## Symptoms" in page
        example = next(e for e in sig.examples if e.expect == "match")
        assert example.log.strip().splitlines()[0] in page  # the real log lines, verbatim
    index = pages["signatures/index.md"]
    assert all(f"[{s.id}]({s.category}/{s.id}.md)" in index for s in signatures)


def test_related_links_point_at_pages_that_exist(pages):
    for path, page in pages.items():
        if not path.startswith("signatures/") or path.endswith("index.md"):
            continue
        for target in re.findall(r"\]\(\.\./([\w-]+/[\w-]+\.md)\)", page):
            assert f"signatures/{target}" in pages, (path, target)


def test_schema_page_covers_every_field(pages):
    from nanscope.schema import report_schema

    schema = report_schema()
    page = pages["schema.md"]
    for name in schema["properties"]:
        assert f"| `{name}` |" in page, name
    for name in schema["$defs"]["finding"]["properties"]:
        assert f"| `{name}` |" in page, name
    assert json.loads(pages["schema/report.v1.schema.json"]) == schema


def test_log_text_is_escaped_not_interpreted():
    assert docs_pages.md_text("run `nanscope diagnose <logs>` on <logs> *now*") == \
        "run `nanscope diagnose <logs>` on \\<logs\\> \\*now\\*"
    assert docs_pages.fence("a ``` b").startswith("````\n")


def test_api_page_example_runs_and_prints_what_the_page_says(monkeypatch):
    page = (ROOT / "docs" / "api.md").read_text()
    code = re.search(r"## Example.*?```python\n(.*?)```", page, re.S).group(1)
    shown = re.search(r"prints\n\n```text\n(.*?)```", page, re.S).group(1)
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/api.md", "exec"), {})
    assert out.getvalue() == shown
    reference = docs_pages.api_reference()
    for name in ("diagnose", "events", "evaluate", "exit_code", "Options", "Finding", "Report"):
        assert f"### `{name}`" in reference, name


def test_generator_script_writes_the_pages(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_pages.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "signatures" / "numerics" / "nan-rank-local.md").exists()
    assert "### `diagnose`" in (tmp_path / "api.md").read_text()


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (pip install '.[docs]'); .ci/run builds the site")
    pytest.importorskip("material")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1",
                                                                                   "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert (tmp_path / "site" / "signatures" / "numerics" / "nan-rank-local" / "index.html").exists()


def test_readme_links_the_docs_and_says_the_first_command_exits_1():
    readme = (ROOT / "README.md").read_text()
    assert "(docs/index.md)" in readme and "mkdocs" in readme
    first = readme.index("nanscope diagnose sample_logs/torch/ddp_nan_rank2.log")
    assert re.search(r"exits? (with status )?1", readme[first: first + 800]), "say that exit status 1 is expected"
    for shown in ("[tool.nanscope]", "--output sarif:", "uses: nanscope/nanscope@"):
        assert shown in readme, shown
