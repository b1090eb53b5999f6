"""--format html: the page a person opens. Static checks (self-contained, inert, marks where the
findings say) and, in headless Chromium, what the page looks like: the plots are drawn, the NaN
marker sits at the step the finding names, nothing is fetched and no script runs.

Chromium is Debian's `chromium` package (.ci/run installs it); the browser tests skip, saying why,
only where no Chromium is on PATH.
"""

from __future__ import annotations

import io
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from browser import dump_dom, find_chromium, page_requests, read_png, screenshot
from conftest import ROOT, run_cli
from nanscope import api
from nanscope.model import Loc, Origin, StepEvent
from nanscope.report import RenderOptions, render
from nanscope.report.html import CSP
from nanscope.series import CAP, SeriesRecorder

SAMPLE = "sample_logs/torch/ddp_nan_rank2.log"
if find_chromium() is None and os.environ.get("NANSCOPE_REQUIRE_CHROMIUM"):
    raise RuntimeError("NANSCOPE_REQUIRE_CHROMIUM is set but no chromium is on PATH")
needs_chromium = pytest.mark.skipif(find_chromium() is None,
                                    reason="no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")


def _html(report) -> str:
    out = io.StringIO()
    render("html", report, out, RenderOptions())
    return out.getvalue()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        report = api.diagnose([SAMPLE])
    finally:
        os.chdir(cwd)
    text = _html(report)
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(text, encoding="utf-8")
    return report, text, path


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.style += data


def _loads_nothing(text: str) -> list[str]:
    """What in a page could fetch or run something: the list of offenders."""
    p = _Tags()
    p.feed(text)
    bad = [t for t, _ in p.tags if t in ("script", "iframe", "object", "embed", "link", "img", "base", "form",
                                        "frame", "audio", "video", "source", "use", "image", "foreignobject")]
    for tag, attrs in p.tags:
        for k, v in attrs.items():
            if k.startswith("on") or k in ("src", "href", "xlink:href", "srcset", "action", "formaction"):
                bad.append(f"{tag} {k}=")
            if v and re.search(r"url\(|javascript:|https?:|//", v) and not (tag == "meta" and k == "content"):
                bad.append(f"{tag} {k}={v[:40]}")
    if re.search(r"url\(|@import|https?:", p.style):
        bad.append("style fetches")
    return bad


def test_page_is_self_contained_and_declares_its_csp(page):
    _, text, _ = page
    assert _loads_nothing(text) == []
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in text
    assert "prefers-color-scheme:dark" in text and "@media print" in text
    # the check itself catches what it must
    assert _loads_nothing('<img src="https://x/a.png"><p onclick="x()">') == ["img", "img src=", "img src=https://x/a.png", "p onclick="]


def test_page_shows_findings_curves_timeline_and_table(page):
    report, text, _ = page
    for f in report.findings:
        assert f'data-id="{f.id}"' in text
        assert re.sub(r"[&<>\"']", "", f.verify[:40]) in re.sub(r"&\w+;|&#x?\w+;", "", text)
    assert "ddp_nan_rank2.log:166  [default2]:step=40, loss=nan" in text
    assert {"all:loss", "all:grad_norm", "rank 2:loss", "rank 0:grad_norm", "timeline"} <= set(re.findall(r'data-chart="([^"]+)"', text))
    assert "<th>non-finite</th>" in text and '<tr class="init"><td>rank 2</td>' in text
    # the initiating rank's curve is set apart: one "init" curve per chart it appears in
    overview = re.search(r'<svg[^>]*data-chart="all:loss".*?</svg>', text).group(0)
    assert overview.count('class="curve init"') == 1 and overview.count('class="curve other"') == 3


def _marks(svg: str, kind: str) -> list[tuple[int, str, float]]:
    out = []
    for m in re.finditer(rf'<polygon class="mark {kind}" data-step="(\d+)" data-rank="([^"]*)" points="([^"]+)"', svg):
        xs = [float(p.split(",")[0]) for p in m.group(3).split()]
        out.append((int(m.group(1)), m.group(2), sum(xs) / len(xs)))
    return out


def _chart(text: str, name: str) -> tuple[str, dict]:
    svg = re.search(rf'<svg[^>]*data-chart="{re.escape(name)}".*?</svg>', text, re.S).group(0)
    attrs = {k: float(v) for k, v in re.findall(r'data-(lo|hi|left|plot-w)="([\d.]+)"', svg.split(">", 1)[0])}
    return svg, attrs


def test_nan_marker_sits_at_the_finding_step(page):
    report, text, _ = page
    top = report.findings[0]
    assert (top.id, top.first_step, top.initiating_rank) == ("nan-rank-local", 40, 2)
    svg, a = _chart(text, "all:loss")
    marks = _marks(svg, "nan")
    assert [(s, r) for s, r, _ in marks] == [(40, "rank 2")]  # only rank 2's loss was NaN
    expect_x = a["left"] + (40 - a["lo"]) / (a["hi"] - a["lo"]) * a["plot-w"]
    assert abs(marks[0][2] - expect_x) < 0.5
    grad, _ = _chart(text, "all:grad_norm")  # every rank's grad norm was NaN at step 40
    assert sorted(r for s, r, _ in _marks(grad, "nan") if s == 40) == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert 'class="shade"' in svg


def test_hostile_log_text_stays_inert(tmp_path):
    inject = ("<script>alert(1)</script> <img src=x onerror=alert(2)> \"'><svg onload=alert(3)> "
              "\x1b]0;pwned\x07 \x1b[2J \u202e </style><style>body{background:url(http://x)}</style>")
    lines = ["step 1 | loss 2.3012 | grad_norm 0.8123 | lr 1.0e-03"]
    lines += [f"step {i} | loss nan | grad_norm nan | lr 1.0e-03  {inject}" for i in range(2, 7)]
    (tmp_path / "train<b>.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    p = run_cli("diagnose", "train<b>.log", "--format", "html", cwd=tmp_path)
    assert p.returncode == 1, p.stderr.decode()
    text = p.stdout.decode("utf-8")
    assert _loads_nothing(text) == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "train&lt;b&gt;.log" in text
    assert "<b>" not in text and "\x1b" not in text and "\u202e" not in text and "\x07" not in text


def _step(rank: int, step: int, loss: float, scale: float = None, skipped: bool = None) -> StepEvent:
    return StepEvent(loc=Loc("x.log", step + 1), text="", framework="pytorch", origin=Origin(rank=rank), rank=rank,
                     step=step, loss=loss, grad_norm=1.0, loss_scale=scale, skipped=skipped, stream=("rank", None, rank))


def test_series_memory_is_bounded_and_marks_are_never_dropped():
    rec = SeriesRecorder()
    nan_at = {7, 123_457, 999_999}
    skip_at = {500_001}
    for step in range(0, 1_000_000, 1):
        if step % 997 and step not in nan_at and step not in skip_at:
            continue  # every 997th step is enough to spread the range
        rec.feed(_step(0, step, float("nan") if step in nan_at else 2.0 - step / 1e6, skipped=step in skip_at or None))
    s, = rec.series()
    assert len(s.count) == CAP and s.width >= 1_000_000 // CAP
    assert sorted(s.nonfinite_steps("loss")) == sorted(nan_at)
    assert s.skipped_steps() == sorted(skip_at)
    b = s.buckets(0, 999_999, 300)
    assert len(b.lo) <= 300 and sorted(int(x) for x in b.nonfinite["loss"] if x >= 0) == sorted(nan_at)


def test_single_step_events_keep_the_timeline_in_the_order_they_were_read():
    # single step events are gathered and added together (series.PENDING): a NaN read before a
    # crash still comes first on the timeline, at its own step and line, whatever the gathering
    from nanscope.model import ErrorEvent
    from nanscope import series

    for pending in (1, 3, series.PENDING):
        rec = SeriesRecorder()
        saved, series.PENDING = series.PENDING, pending
        try:
            for step in range(10):
                rec.feed(_step(0, step, float("nan") if step == 5 else 2.0))
            rec.feed(ErrorEvent(loc=Loc("x.log", 20), text="", framework="pytorch", origin=Origin(rank=0), rank=0,
                                error="cuda_oom", exc_type="torch.OutOfMemoryError", stream=("rank", None, 0)))
            for step in range(10, 20):
                rec.feed(_step(0, step, 2.0))
            s, = rec.series()
        finally:
            series.PENDING = saved
        assert [(e.kind, e.step, e.line) for e in s.events] == [("nonfinite", 5, 6), ("error", None, 20)]
        assert s.nonfinite_steps("loss") == [5] and (s.first_step, s.last_step) == (0, 19)


def test_a_long_many_rank_run_gives_a_small_page():
    from nanscope.model import Report

    rec = SeriesRecorder()
    for rank in range(64):
        for step in range(0, 200_000, 40):
            rec.feed(_step(rank, step, float("nan") if (rank == 5 and step == 80_000) else 3.0 + np.sin(step / 900.0 + rank),
                           scale=2.0 ** (16 - (step // 20_000) % 6)))
    report = Report(tool_version="x", inputs=[], ranks=[], findings=[], diagnostics=[], verdict="clean",
                    signatures_loaded=0, series=rec.series())
    text = _html(report)
    assert len(text.encode("utf-8")) <= 2_000_000
    svg, _ = _chart(text, "all:loss")
    assert [(s, r) for s, r, _ in _marks(svg, "nan")] == [(80_000, "rank 5")]


def test_a_nan_that_persists_is_one_mark_with_a_bar():
    from nanscope.model import Report

    rec = SeriesRecorder()
    for step in range(0, 100_000, 10):
        rec.feed(_step(0, step, float("nan") if step >= 60_000 else 2.0))
    text = _html(Report(tool_version="x", inputs=[], ranks=[], findings=[], diagnostics=[], verdict="clean",
                        signatures_loaded=0, series=rec.series()))
    svg, _ = _chart(text, "all:loss")
    assert [s for s, _, _ in _marks(svg, "nan")] == [60_000]
    assert re.search(r'<rect class="markrun nan"[^>]*><title>rank 0: loss non-finite at step 60000 through step 99\d\d\d</title>', svg)


# --- in the browser -----------------------------------------------------------------------------

def _only_chart(text: str, name: str, path: Path) -> tuple[Path, dict]:
    """The page with nothing but one chart at the top-left corner, so SVG units are pixels."""
    svg, attrs = _chart(text, name)
    head = text.split("<body>", 1)[0]
    path.write_text(head + '<body style="margin:0;padding:0;max-width:none">' + svg + "</body></html>", encoding="utf-8")
    return path, attrs


def _hex(c: str) -> np.ndarray:
    return np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)])


def _near(img: np.ndarray, color: str, tol: int = 40) -> np.ndarray:
    return np.abs(img.astype(int) - _hex(color)).sum(axis=2) < tol


@needs_chromium
def test_chromium_draws_the_curves_and_puts_the_nan_marker_at_step_40(page, tmp_path):
    _, text, _ = page
    chart, a = _only_chart(text, "all:loss", tmp_path / "chart.html")
    png = tmp_path / "chart.png"
    screenshot(chart, png, width=700, height=200)
    img = read_png(png)
    plot = img[20:128, 58:590]
    assert _near(plot, "#8c959f", 60).sum() > 300  # the other ranks' grey curves
    assert _near(plot, "#8250df", 60).sum() > 150  # the initiating rank's purple curve
    # the NaN marker: a red triangle in the top rows of the plot, centred on step 40's x
    red = _near(img, "#cf222e", 60)
    band = red[21:30, 58:590]
    ys, xs = np.nonzero(band)
    assert len(xs) > 15
    expect_x = a["left"] + (40 - a["lo"]) / (a["hi"] - a["lo"]) * a["plot-w"]
    assert abs((xs + 58).mean() - expect_x) < 2.0


@needs_chromium
def test_chromium_renders_the_whole_page_not_blank_light_and_dark(page, tmp_path):
    _, _, path = page
    for dark, bg in ((False, "#ffffff"), (True, "#0d1117")):
        png = tmp_path / f"page{dark}.png"
        screenshot(path, png, width=1280, height=2400, dark=dark)
        img = read_png(png)
        assert _near(img[:5, :5], bg, 6).all()
        ink = ~_near(img, bg, 30)
        # text and plots everywhere down the page: every 300 px band has ink
        for y in range(0, 2100, 300):
            assert ink[y:y + 300].mean() > 0.01, (dark, y)


@needs_chromium
def test_chromium_fetches_nothing_and_runs_no_script(page, tmp_path):
    _, text, path = page
    assert page_requests(path) == []
    dom = dump_dom(path)
    assert "<script" not in dom and dom.count("<svg") == text.count("<svg") > 5
    # the probes catch what they must: a page that fetches, a page whose script runs
    canary = tmp_path / "canary.html"
    canary.write_text('<html><body><img src="http://example.invalid/a.png"><script>document.body.setAttribute'
                      '("data-ran","yes")</script></body></html>', encoding="utf-8")
    assert page_requests(canary) == ["http://example.invalid/a.png"]
    assert 'data-ran="yes"' in dump_dom(canary)
