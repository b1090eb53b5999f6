"""Every --format of `nanscope diagnose`: golden files on real sample logs, strict parsers and
schemas for the machine formats, CI limits, and log text that tries to attack each sink.

Set NANSCOPE_UPDATE_GOLDEN=1 to rewrite tests/golden_formats/ after a deliberate change (they
also change when the signature library changes: the JUnit and SARIF files list every rule).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from conftest import ROOT, run_cli
from nanscope import __version__, api
from nanscope.report import FORMATS, RenderOptions, render
from nanscope.report import markdown as markdown_report
from nanscope.report.sanitize import gh_data, gh_property, md_fence, xml

GOLDEN = Path(__file__).resolve().parent / "golden_formats"
SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
SAMPLES = ["sample_logs/torch/ddp_nan_rank2.log", "sample_logs/torch/healthy.log"]
EXT = {"text": "txt", "json": "json", "jsonl": "jsonl", "markdown": "md", "github": "txt", "junit": "xml",
       "sarif": "sarif"}
STRICT_JSON = ("json", "jsonl", "sarif")


def _fail_constant(name: str):
    raise AssertionError(f"non-strict JSON constant {name}")


def strict_json(text: str):
    return json.loads(text, parse_constant=_fail_constant)


def _render(fmt: str, report, **opts) -> str:
    out = io.StringIO()
    render(fmt, report, out, RenderOptions(**opts))
    return out.getvalue()


def _normalize(fmt: str, text: str) -> str:
    """Take out what legitimately changes between runs: the version and the stop-commands token."""
    if fmt == "github":
        tokens = re.findall(r"^::stop-commands::(\S+)$", text, re.M)
        for t in tokens:
            text = text.replace(t, "TOKEN")
    if fmt in ("json", "jsonl", "sarif"):
        text = text.replace(f'"version": "{__version__}"', '"version": "X"')
        text = text.replace(f'"version":"{__version__}"', '"version":"X"')
        text = text.replace(f'"semanticVersion": "{__version__}"', '"semanticVersion": "X"')
    return text


@pytest.fixture(scope="module")
def reports():
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        yield {s: api.diagnose([s]) for s in SAMPLES}
    finally:
        os.chdir(cwd)


def test_every_format_is_listed():
    assert {"text", "json", "jsonl", "markdown", "github", "junit", "sarif"} <= set(FORMATS)
    p = run_cli("formats")
    assert p.returncode == 0
    for name in ("jsonl", "markdown", "github", "junit", "sarif"):
        assert re.search(rf"^{name}\s", p.stdout.decode(), re.M)


@pytest.mark.parametrize("sample", SAMPLES)
@pytest.mark.parametrize("fmt", sorted(EXT))
def test_golden(fmt, sample, reports, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = _normalize(fmt, _render(fmt, reports[sample]))
    golden = GOLDEN / fmt / (Path(sample).stem + "." + EXT[fmt])
    if os.environ.get("NANSCOPE_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden}: run with NANSCOPE_UPDATE_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8")


# --- strict formats, real parsers -----------------------------------------------------------------

@pytest.mark.parametrize("sample", SAMPLES)
def test_jsonl_is_typed_messages_of_strict_json(sample, reports):
    lines = _render("jsonl", reports[sample]).splitlines()
    msgs = [strict_json(line) for line in lines]
    types = [m["type"] for m in msgs]
    assert types[0] == "begin" and types[-2:] == ["summary", "end"]
    assert set(types[1:-2]) <= {"finding"}
    assert all(m["v"] == 2 and set(m) == {"type", "v", "data"} for m in msgs)
    full = strict_json(_render("json", reports[sample]))
    assert [m["data"] for m in msgs if m["type"] == "finding"] == full["findings"]
    summary = next(m for m in msgs if m["type"] == "summary")["data"]
    assert summary["ranks"] == full["ranks"] and summary["verdict"] == full["verdict"]


def test_jsonl_keeps_nan_as_a_string(reports):
    summary = [strict_json(x) for x in _render("jsonl", reports[SAMPLES[0]]).splitlines()][-2]["data"]
    assert "NaN" not in json.dumps(summary).replace('"NaN"', "")  # only ever the string form


def _sarif_validator():
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema)


@pytest.mark.parametrize("sample", SAMPLES)
def test_sarif_validates_against_the_2_1_0_schema(sample, reports, monkeypatch):
    monkeypatch.chdir(ROOT)
    doc = strict_json(_render("sarif", reports[sample]))
    errors = sorted(_sarif_validator().iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, errors[0]
    run, = doc["runs"]
    driver = run["tool"]["driver"]
    assert (doc["version"], driver["name"], driver["semanticVersion"]) == ("2.1.0", "nanscope", __version__)
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids)) == reports[sample].signatures_loaded
    for r in driver["rules"]:
        assert r["shortDescription"]["text"] and r["help"]["text"] and r["help"]["markdown"]
        assert len(r["fullDescription"]["text"]) <= 1024
    assert "security-severity" not in json.dumps(doc)
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note")
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == sample  # relative to the working directory
        assert loc["region"]["startLine"] >= 1


def test_sarif_levels_and_locations_on_the_ddp_nan_log(reports, monkeypatch):
    monkeypatch.chdir(ROOT)
    run = strict_json(_render("sarif", reports[SAMPLES[0]]))["runs"][0]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    top = by_rule["nan-rank-local"]
    assert top["level"] == "warning"  # medium
    assert top["locations"][0]["physicalLocation"]["region"]["startLine"] == 166
    assert top["properties"]["initiating_rank"] == 2
    assert by_rule["nan-skip-recover"]["level"] == "note"  # low


def test_sarif_fingerprints_do_not_depend_on_line_numbers(tmp_path, monkeypatch):
    """The same failure 10 lines further down is the same alert (rule, rank and step are equal)."""
    monkeypatch.chdir(tmp_path)
    log = (ROOT / SAMPLES[0]).read_text(encoding="utf-8")
    (tmp_path / "a.log").write_text(log, encoding="utf-8")
    (tmp_path / "b.log").write_text("starting\n" * 10 + log, encoding="utf-8")

    def results(name: str) -> dict:
        run = strict_json(_render("sarif", api.diagnose([name])))["runs"][0]
        return {r["ruleId"]: r for r in run["results"]}

    a, b = results("a.log"), results("b.log")
    assert a.keys() == b.keys() and a
    for rule in a:
        assert a[rule]["locations"][0]["physicalLocation"]["region"]["startLine"] + 10 == \
            b[rule]["locations"][0]["physicalLocation"]["region"]["startLine"]
        assert a[rule]["partialFingerprints"] == b[rule]["partialFingerprints"]
    assert a["nan-rank-local"]["partialFingerprints"] != a["nan-skip-recover"]["partialFingerprints"]


@pytest.mark.parametrize("sample", SAMPLES)
def test_junit_parses_and_lists_every_signature(sample, reports):
    root = ET.fromstring(_render("junit", reports[sample]))
    suite, = root.findall("testsuite")
    assert suite.get("name") == "nanscope"
    cases = suite.findall("testcase")
    names = [(c.get("classname"), c.get("name")) for c in cases]
    assert len(names) == len(set(names))  # GitLab ignores duplicates after the first
    sig_cases = [c for c in cases if c.get("classname") != "nanscope.input"]
    assert len(sig_cases) == reports[sample].signatures_loaded
    failed = [c for c in cases if c.find("failure") is not None]
    assert suite.get("failures") == str(len(failed)) and suite.get("tests") == str(len(cases))
    if sample.endswith("healthy.log"):
        assert suite.get("failures") == "0" and not failed
    else:
        assert [c.get("name") for c in failed] == ["nan-rank-local"]
        failure = failed[0].find("failure")
        assert failure.get("type") == "nan-rank-local"
        assert "ddp_nan_rank2.log:166  [default2]:step=40, loss=nan" in failure.text
        # a low-severity finding passes, with its details in system-out
        skip = next(c for c in cases if c.get("name") == "nan-skip-recover")
        assert skip.find("failure") is None and "Step 40" in skip.find("system-out").text


def test_junit_survives_xml_illegal_characters(reports):
    report = reports[SAMPLES[0]]
    bad = "\x00\x1b[31m\x0b\x0c\ud800\ufffe\uffff end"
    f = report.findings[0]
    ev = dataclasses.replace(f.evidence[0], text="loss=nan " + bad, source="x\x01.log")
    poisoned = dataclasses.replace(report, findings=[dataclasses.replace(f, evidence=[ev], summary=bad)] + report.findings[1:])
    root = ET.fromstring(_render("junit", poisoned))
    failure = root.find(".//failure")
    assert "end" in failure.text and "end" in failure.get("message")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_xml_sanitizer_always_gives_parseable_xml(s):
    e = ET.Element("t", a=xml(s))
    e.text = xml(s)
    ET.fromstring(ET.tostring(e, encoding="unicode"))


# --- CI limits ---------------------------------------------------------------------------------

def _many(report, n: int, severity: str):
    f = report.findings[0]
    return dataclasses.replace(report, findings=[dataclasses.replace(f, severity=severity, id=f"sig-{i}")
                                                 for i in range(n)])


def test_github_annotations_stay_within_the_per_step_limits(reports):
    report = reports[SAMPLES[0]]
    mixed = dataclasses.replace(report, findings=_many(report, 25, "high").findings
                                + _many(report, 12, "medium").findings + _many(report, 3, "low").findings)
    lines = _render("github", mixed).splitlines()
    assert sum(line.startswith("::error ") for line in lines) == 10
    assert sum(line.startswith("::warning ") for line in lines) == 10
    notices = [line for line in lines if line.startswith("::notice ")]
    assert len(notices) == 4 and notices[-1].endswith("::17 more finding(s): see the job summary or the JSON report artifact")


def test_github_annotation_points_at_the_evidence_line(reports, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    first = _render("github", reports[SAMPLES[0]]).splitlines()[0]
    assert first.startswith("::warning file=sample_logs/torch/ddp_nan_rank2.log,line=166,title=nanscope nan-rank-local%3A ")
    monkeypatch.chdir(tmp_path)  # a log outside the workspace gets no file= (GitHub cannot place it)
    outside = api.diagnose([str(ROOT / SAMPLES[0])])
    first = _render("github", outside).splitlines()[0]
    assert first.startswith("::warning title=nanscope nan-rank-local%3A ")


def test_github_escaping_matches_actions_toolkit():
    # actions/toolkit packages/core/src/command.ts escapeData / escapeProperty
    assert gh_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert gh_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert gh_data("a:b,c") == "a:b,c"


def test_markdown_keeps_to_its_byte_budget(reports):
    big = _many(reports[SAMPLES[0]], 300, "high")
    text = io.StringIO()
    markdown_report.render(big, text, RenderOptions(), budget=20_000)
    out = text.getvalue()
    assert len(out.encode("utf-8")) <= 20_000
    m = re.search(r"\*\*…(\d+) more finding\(s\)\*\*", out)
    assert m and 0 < int(m.group(1)) < 300
    assert out.count("\n### ") + int(m.group(1)) == 300
    full = _render("markdown", big)
    assert len(full.encode("utf-8")) <= markdown_report.BUDGET and "more finding" not in full


def test_markdown_fence_is_longer_than_any_backtick_run():
    block = md_fence("a ```` b\n`````")
    assert block.startswith("``````text\n") and block.endswith("\n``````\n")


# --- hostile log text, every sink ----------------------------------------------------------------

_INJECT = ("::error::x   ::error::indented ##[error]y ::add-mask::x ::stop-commands::abc "
           "\x1b]0;pwned\x07 \x1b[2J \x9b31m ``` <img src=x> <script>alert(1)</script> \x00 \x1b end")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    lines = ["step 1 | loss 2.3012 | grad_norm 0.8123 | lr 1.0e-03"]
    lines += [f"step {i} | loss nan | grad_norm nan | lr 1.0e-03  {_INJECT}" for i in range(2, 7)]
    (d / "train.log").write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    return d


def _diagnose(hostile, fmt: str) -> str:
    p = run_cli("diagnose", "train.log", "--format", fmt, cwd=hostile)
    assert p.returncode == 1, p.stderr.decode()
    assert p.stderr == b""
    return p.stdout.decode("utf-8")


def test_hostile_line_is_a_finding(hostile):
    r = strict_json(_diagnose(hostile, "json"))
    assert r["findings"][0]["id"] == "nan-persistent"
    assert "::add-mask::x" in r["findings"][0]["evidence"][0]["text"]


_OWN = re.compile(r"^::(?:(?:error|warning|notice)(?: [^:]*)?::.*|stop-commands::[0-9a-f]{32}|[0-9a-f]{32}::)$")


def test_github_log_text_cannot_issue_runner_commands(hostile):
    out = _diagnose(hostile, "github")
    lines = out.split("\n")
    for line in lines:
        if line.lstrip().startswith("::"):  # the runner trims leading whitespace first
            assert _OWN.match(line), line
    assert "##[" not in out  # the legacy form is matched anywhere in a line
    start = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    token = lines[start].split("::")[2]
    end = lines.index(f"::{token}::")
    assert start < end
    inside = [i for i, line in enumerate(lines) if "::add-mask::x" in line or "<img" in line]
    assert inside and all(start < i < end for i in inside)
    assert lines[0].startswith("::error file=train.log,line=2,title=nanscope nan-persistent%3A")
    again = _diagnose(hostile, "github")
    assert again.split("\n")[start] != lines[start]  # a fresh token every run


def _fenced_regions(md: str) -> list[tuple[int, int]]:
    regions, lines, i = [], md.split("\n"), 0
    while i < len(lines):
        m = re.match(r"^(`{3,})\w*$", lines[i])
        if m:
            close = lines.index(m.group(1), i + 1)
            regions.append((i, close))
            i = close
        i += 1
    return regions


def test_markdown_renders_hostile_text_literally(hostile):
    md = _diagnose(hostile, "markdown")
    lines = md.split("\n")
    regions = _fenced_regions(md)
    for i, line in enumerate(lines):
        if "<img" in line or "```" in line and not re.match(r"^`{3,}\w*$", line):
            assert any(a < i < b for a, b in regions), line
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<img" not in html and "<script" not in html
    assert "&lt;img src=x&gt;" in html
    assert "\x1b" not in md and "\x9b" not in md and "\x07" not in md


def test_junit_parses_with_hostile_text(hostile):
    root = ET.fromstring(_diagnose(hostile, "junit"))
    failure = root.find(".//failure")
    assert failure.get("type") == "nan-persistent"
    assert "::add-mask::x" in failure.text and "<img src=x>" in failure.text


_BAD_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_text_has_no_control_bytes(hostile):
    out = _diagnose(hostile, "text")
    assert "::add-mask::x" in out
    assert not _BAD_TERMINAL.search(out)


@pytest.mark.parametrize("fmt", STRICT_JSON)
def test_machine_formats_stay_strict_json(hostile, fmt):
    out = _diagnose(hostile, fmt)
    docs = [strict_json(x) for x in out.splitlines()] if fmt == "jsonl" else [strict_json(out)]
    assert "::add-mask::x" in out
    assert not _BAD_TERMINAL.search(json.dumps(docs, ensure_ascii=False))
    if fmt == "sarif":
        assert not list(_sarif_validator().iter_errors(docs[0]))


# --- exit codes ------------------------------------------------------------------------------

_RETRYABLE_SIG = (ROOT / "signatures" / "numerics" / "nan-persistent.toml").read_text(encoding="utf-8")


@pytest.fixture()
def retry_pack(tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    text = _RETRYABLE_SIG.replace('id = "nan-persistent"', 'id = "flaky-node-nan"', 1)
    text = text.replace("retryable = false", "retryable = true", 1)
    assert 'id = "flaky-node-nan"' in text and "retryable = true" in text
    (pack / "flaky-node-nan.toml").write_text(text, encoding="utf-8")
    return pack


def test_exit_3_when_every_finding_is_retryable(retry_pack, hostile):
    log = str(hostile / "train.log")
    base = ("diagnose", log, "--signatures", str(retry_pack), "--format", "json")
    p = run_cli(*base, "--select", "flaky-node-nan")
    assert p.returncode == 3, p.stderr.decode()
    r = strict_json(p.stdout.decode())
    assert [f["id"] for f in r["findings"]] == ["flaky-node-nan"] and r["verdict"] == "retryable"
    assert run_cli(*base, "--select", "flaky-node-nan", "--exit-zero").returncode == 0
    assert run_cli(*base, "--select", "flaky-node-nan", "--fail-on", "critical").returncode == 0
    assert run_cli(*base, "--select", "flaky-node-nan", "--fail-on", "never").returncode == 0
    # one non-retryable finding among them: plain findings, exit 1
    assert run_cli(*base, "--select", "flaky-node-nan,nan-persistent").returncode == 1
    assert run_cli(*base, "--ignore", "flaky-node-nan").returncode == 1
    assert run_cli(*base, "--select", "no-such-signature").returncode == 2


@pytest.mark.parametrize("fmt", ["jsonl", "markdown", "github", "junit", "sarif"])
def test_exit_status_does_not_depend_on_the_format(fmt):
    assert run_cli("diagnose", SAMPLES[0], "--format", fmt).returncode == 1
    assert run_cli("diagnose", SAMPLES[1], "--format", fmt).returncode == 0
