"""A small static SVG writer for the HTML report's plots: line charts over steps (linear or log y),
shaded step ranges, point marks, and event lanes. No script, no external reference; styling is by
class names that the page's own stylesheet colours (light and dark).

Why our own: the plotting libraries that write SVG (matplotlib, plotly, pygal, bokeh) either add
tens of MB of dependencies for three line charts, or embed JavaScript, fonts or ids that a strict
CSP page cannot use; what is needed here is a polyline per bucket series and a few rectangles.
Every text that reaches the SVG goes through `esc` (the caller has made log text inert first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import Sequence

from nanscope.lazynp import np


def esc(text: str) -> str:
    return escape(text, quote=True)


def fmt(v: float) -> str:
    """A short axis label: 3 significant digits, powers of two for loss scales."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        e = math.log2(a)
        if abs(e - round(e)) < 1e-9 and a >= 1:
            return f"2^{int(round(e))}"
        return f"{v:.2g}"
    return f"{v:.3g}"


@dataclass
class Curve:
    """One line: per pixel bucket the step it starts at, and the min and max there (NaN: none)."""

    steps: np.ndarray
    mins: np.ndarray
    maxs: np.ndarray
    cls: str  # "init", "other" or "solo"
    title: str = ""


@dataclass
class Mark:
    step: int
    kind: str  # "nan" (drawn at the top) or "skip" (at the bottom)
    title: str
    rank: str = ""


@dataclass
class Shade:
    lo: int
    hi: int
    title: str


@dataclass
class Chart:
    title: str
    lo: int  # steps of the x axis
    hi: int
    curves: list = field(default_factory=list)
    marks: list = field(default_factory=list)
    shades: list = field(default_factory=list)
    width: int = 640
    height: int = 150
    left: int = 58
    right: int = 10
    top: int = 20
    bottom: int = 22
    name: str = ""  # data-chart attribute (tests find a chart by it)

    @property
    def plot_w(self) -> int:
        return self.width - self.left - self.right

    def x(self, step: float) -> float:
        span = max(1, self.hi - self.lo)
        return self.left + (step - self.lo) / span * self.plot_w


def _scale(curves: Sequence[Curve]) -> tuple[float, float, bool]:
    lo, hi = math.inf, -math.inf
    for c in curves:
        if len(c.mins) and np.isfinite(c.mins).any():
            lo = min(lo, float(np.nanmin(c.mins)))
            hi = max(hi, float(np.nanmax(c.maxs)))
    if not math.isfinite(lo):
        return 0.0, 1.0, False
    log = lo > 0 and hi / lo >= 50  # a loss scale from 2^16 to 1, a loss that blew up
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    if hi - lo < 1e-12:
        pad = abs(hi) * 0.05 or 0.5
        lo, hi = lo - pad, hi + pad
    return lo, hi, log


def line_chart(ch: Chart) -> str:
    """The chart as an <svg> element. Curves of class "init" are drawn last, over the others."""
    y0, y1, log = _scale(ch.curves)
    ph = ch.height - ch.top - ch.bottom

    def y(v: np.ndarray) -> np.ndarray:
        vv = np.log10(v) if log else v
        return ch.top + (1 - (vv - y0) / (y1 - y0)) * ph

    out = [f'<svg class="chart" data-chart="{esc(ch.name)}" '
           f'data-lo="{ch.lo}" data-hi="{ch.hi}" data-left="{ch.left}" data-plot-w="{ch.plot_w}" '
           f'viewBox="0 0 {ch.width} {ch.height}" width="{ch.width}" height="{ch.height}" role="img">',
           f"<title>{esc(ch.title)}</title>",
           f'<rect class="frame" x="{ch.left}" y="{ch.top}" width="{ch.plot_w}" height="{ph}"/>']
    for s in ch.shades:
        x0 = max(ch.x(max(s.lo, ch.lo)) - 1.5, ch.left)
        x1 = min(ch.x(min(s.hi, ch.hi)) + 1.5, ch.left + ch.plot_w)
        out.append(f'<rect class="shade" x="{x0:.1f}" y="{ch.top}" width="{x1 - x0:.1f}" height="{ph}">'
                   f"<title>{esc(s.title)}</title></rect>")
    # axes: y at the bottom, middle and top of the range; x at the ends and the middle
    for frac in (0.0, 0.5, 1.0):
        v = y0 + frac * (y1 - y0)
        label = fmt(10 ** v if log else v)
        yy = ch.top + (1 - frac) * ph
        out.append(f'<line class="grid" x1="{ch.left}" x2="{ch.left + ch.plot_w}" y1="{yy:.1f}" y2="{yy:.1f}"/>')
        out.append(f'<text class="tick" x="{ch.left - 4}" y="{yy + 3:.1f}" text-anchor="end">{esc(label)}</text>')
    for frac in (0.0, 0.5, 1.0):
        st = ch.lo + frac * (ch.hi - ch.lo)
        anchor = "start" if frac == 0 else "end" if frac == 1 else "middle"
        out.append(f'<text class="tick" x="{ch.x(st):.1f}" y="{ch.height - 6}" text-anchor="{anchor}">{int(round(st))}</text>')
    out.append(f'<text class="ctitle" x="{ch.left}" y="13">{esc(ch.title)}{" (log)" if log else ""}</text>')
    for c in sorted(ch.curves, key=lambda c: c.cls == "init"):
        d = _path(ch, c, y)
        if d:
            out.append(f'<path class="curve {c.cls}" d="{d}"><title>{esc(c.title)}</title></path>')
    for m, last in _runs(ch):
        xx = ch.x(m.step)
        if last is not None:  # a run of marks (a NaN that persists): one mark at its start, a bar along it
            x1 = ch.x(last)
            yb = ch.top if m.kind == "nan" else ch.top + ph - 3
            out.append(f'<rect class="markrun {m.kind}" x="{xx:.1f}" y="{yb:.1f}" width="{max(x1 - xx, 1):.1f}" height="3">'
                       f"<title>{esc(m.title)} through step {last}</title></rect>")
        if m.kind == "nan":
            yy = ch.top + 1
            pts = f"{xx - 5:.1f},{yy:.1f} {xx + 5:.1f},{yy:.1f} {xx:.1f},{yy + 9:.1f}"
            out.append(f'<line class="nanline" x1="{xx:.1f}" x2="{xx:.1f}" y1="{ch.top}" y2="{ch.top + ph}"/>')
        else:
            yy = ch.top + ph - 1
            pts = f"{xx - 5:.1f},{yy:.1f} {xx + 5:.1f},{yy:.1f} {xx:.1f},{yy - 9:.1f}"
        out.append(f'<polygon class="mark {m.kind}" data-step="{m.step}" data-rank="{esc(m.rank)}" points="{pts}">'
                   f"<title>{esc(m.title)}</title></polygon>")
    out.append("</svg>")
    return "".join(out)


def _runs(ch: Chart) -> list:
    """Marks as (first mark, last step or None): marks of one kind and rank whose x positions are
    within 3 px of each other become one run (a NaN that persists for 50,000 steps is one mark
    with a bar, not a comb of triangles)."""
    groups: dict = {}
    for m in ch.marks:
        groups.setdefault((m.kind, m.rank), []).append(m)
    out = []
    for ms in groups.values():
        ms.sort(key=lambda m: m.step)
        start, prev = ms[0], ms[0]
        for m in ms[1:] + [None]:
            if m is not None and ch.x(m.step) - ch.x(prev.step) <= 3:
                prev = m
                continue
            out.append((start, prev.step if prev is not start else None))
            if m is not None:
                start = prev = m
    return sorted(out, key=lambda r: r[0].step)


def _path(ch: Chart, c: Curve, y) -> str:
    """min/max per bucket as one path: up and down each column, broken where a bucket has no
    finite value."""
    if len(c.steps) == 0:
        return ""
    xs = ch.left + (c.steps - ch.lo) / max(1, ch.hi - ch.lo) * ch.plot_w
    ok = np.isfinite(c.mins)
    ya, yb = y(np.where(ok, c.maxs, 1.0)), y(np.where(ok, c.mins, 1.0))
    parts: list[str] = []
    pen = False
    for xv, a, b, good in zip(xs.tolist(), ya.tolist(), yb.tolist(), ok.tolist()):
        if not good:
            pen = False
            continue
        parts.append(f"{'L' if pen else 'M'}{xv:.1f} {a:.1f}")
        if abs(a - b) >= 0.1:
            parts.append(f"L{xv:.1f} {b:.1f}")
        pen = True
    return "".join(parts)


@dataclass
class LaneEvent:
    step: int
    kind: str  # nonfinite | error | timeout | exit | teardown | end | skip | restart
    title: str


def timeline(lanes: list[tuple[str, bool, list]], lo: int, hi: int, width: int = 640) -> str:
    """One lane per rank (label, is the initiating rank, LaneEvents), x = step as in the charts."""
    left, right, row = 58, 10, 22
    height = 20 + row * len(lanes) + 6
    ch = Chart(title="", lo=lo, hi=hi, width=width, left=left, right=right)
    out = [f'<svg class="timeline" data-chart="timeline" data-lo="{lo}" '
           f'data-hi="{hi}" data-left="{left}" data-plot-w="{ch.plot_w}" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img"><title>decisive events per rank, by step</title>']
    for frac in (0.0, 0.5, 1.0):
        st = lo + frac * (hi - lo)
        anchor = "start" if frac == 0 else "end" if frac == 1 else "middle"
        out.append(f'<text class="tick" x="{ch.x(st):.1f}" y="12" text-anchor="{anchor}">step {int(round(st))}</text>')
    for i, (label, init, evs) in enumerate(lanes):
        yy = 20 + row * i + row / 2
        cls = "lane init" if init else "lane"
        out.append(f'<line class="{cls}" x1="{left}" x2="{width - right}" y1="{yy:.1f}" y2="{yy:.1f}"/>')
        out.append(f'<text class="tick{" strong" if init else ""}" x="{left - 4}" y="{yy + 3:.1f}" '
                   f'text-anchor="end">{esc(label)}</text>')
        for ev in evs:
            xx = ch.x(min(max(ev.step, lo), hi))
            out.append(f'<circle class="ev {esc(ev.kind)}" cx="{xx:.1f}" cy="{yy:.1f}" r="5" data-step="{ev.step}">'
                       f"<title>{esc(ev.title)}</title></circle>")
    out.append("</svg>")
    return "".join(out)

