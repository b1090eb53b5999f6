"""Headless Chromium for the HTML report's tests: render a page, take a screenshot, read its pixels.

Debian's `chromium` package (.ci/run installs it when missing). No Python browser driver: the
screenshot comes from `chromium --headless --screenshot`, the pixels from a small PNG reader
(zlib + numpy), so the tests need nothing beyond the project's own dependencies.

    python tests/browser.py     # remake docs/img/report.png from sample_logs/torch/ddp_nan_rank2.log
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Optional

import numpy as np

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> Optional[str]:
    for name in (os.environ.get("NANSCOPE_CHROMIUM"), *NAMES):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _base_args(exe: str, profile: str) -> list[str]:
    args = [exe, "--headless=new", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--mute-audio", f"--user-data-dir={profile}",
            "--force-device-scale-factor=1"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    return args


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 2400, dark: bool = False) -> None:
    """Render `page` (a local file) at width x height CSS pixels into `png`."""
    exe = find_chromium()
    if exe is None:
        raise RuntimeError("no chromium on PATH")
    with tempfile.TemporaryDirectory() as profile:
        args = _base_args(exe, profile) + [f"--window-size={width},{height}", f"--screenshot={png}"]
        if dark:
            args.append("--force-dark-mode")
            args.append("--blink-settings=preferredColorScheme=0")
        p = subprocess.run(args + [page.resolve().as_uri()], capture_output=True, timeout=120)
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot (status {p.returncode}): {p.stderr.decode()[-2000:]}")


def dump_dom(page: Path) -> str:
    """The page's DOM after load, as Chromium serializes it (a script that ran would show here)."""
    exe = find_chromium()
    if exe is None:
        raise RuntimeError("no chromium on PATH")
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run(_base_args(exe, profile) + ["--dump-dom", page.resolve().as_uri()],
                           capture_output=True, timeout=120)
    return p.stdout.decode("utf-8", "replace")


def page_requests(page: Path) -> list[str]:
    """The URLs the page itself asked for while it loaded (Chromium's net log: requests with the
    page as initiator; the browser's own background requests have none)."""
    import json

    exe = find_chromium()
    if exe is None:
        raise RuntimeError("no chromium on PATH")
    with tempfile.TemporaryDirectory() as profile:
        log = Path(profile) / "net.json"
        subprocess.run(_base_args(exe, profile) + ["--window-size=800,600", f"--log-net-log={log}",
                                                   f"--screenshot={Path(profile) / 'x.png'}", page.resolve().as_uri()],
                       capture_output=True, timeout=120)
        d = json.loads(log.read_text(encoding="utf-8"))
    start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    own = page.resolve().as_uri()
    out = []
    for e in d["events"]:
        p = e.get("params") or {}
        if e.get("type") == start and "url" in p and p.get("initiator") not in (None, "not an origin") and p["url"] != own:
            out.append(p["url"])
    return out


def read_png(path: Path) -> np.ndarray:
    """An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes) as an H x W x 3 array."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, [], 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {color}, interlace {interlace})")
            ch = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(h, 1 + w * ch)
    out = np.zeros((h, w * ch), dtype=np.uint8)
    prev = np.zeros(w * ch, dtype=np.int64)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int64)
        if f == 0:
            cur = line
        elif f == 1:  # sub: a running sum per channel
            cur = np.cumsum(line.reshape(w, ch), axis=0).reshape(-1) & 0xFF
        elif f == 2:
            cur = (line + prev) & 0xFF
        else:  # average, paeth: left to right, on plain ints
            cur = _sequential(int(f), line.tolist(), prev.tolist(), ch)
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch)[:, :, :3]


def _sequential(f: int, line: list, prev: list, ch: int) -> np.ndarray:
    cur = [0] * len(line)
    for x, v in enumerate(line):
        a = cur[x - ch] if x >= ch else 0
        b = prev[x]
        if f == 3:
            pred = (a + b) >> 1
        else:
            c = prev[x - ch] if x >= ch else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        cur[x] = (v + pred) & 0xFF
    return np.array(cur, dtype=np.int64)


def make_readme_screenshot(root: Path) -> Path:
    """docs/img/report.png: the bundled DDP NaN sample's HTML report, findings and curves."""
    sys.path.insert(0, str(root))
    from nanscope import api
    from nanscope.report import RenderOptions, render

    cwd = os.getcwd()
    os.chdir(root)
    try:
        report = api.diagnose(["sample_logs/torch/ddp_nan_rank2.log"])
    finally:
        os.chdir(cwd)
    out = root / "docs" / "img" / "report.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        page = Path(d) / "report.html"
        with page.open("w", encoding="utf-8") as f:
            render("html", report, f, RenderOptions())
        screenshot(page, out, width=1280, height=1500)
    return out


if __name__ == "__main__":
    print(make_readme_screenshot(Path(__file__).resolve().parent.parent))
