"""Bytes in, candidate lines out.

Inputs are read in large binary chunks and never loaded whole. Only lines that contain one of
the parsers' keywords leave this module (the hot path: one native regex search per candidate,
no per-line Python work for the rest). Lines end at \\n, \\r (tqdm redraws) or NUL; line
numbers count \\n only, so `file:line` points where an editor does. An over-long line is capped:
its head is kept, the rest is skipped and counted.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import sys
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Optional

from nanscope.errors import InputError
from nanscope.model import InputInfo

CHUNK_BYTES = 8 << 20
MAX_LINE_BYTES = 1 << 20
_TERMINATOR = re.compile(rb"[\r\n\x00]")
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass
class Source:
    """A named input: a file path, standard input, or bytes already in memory (examples, tests)."""

    name: str
    path: Optional[str]  # None for stdin and in-memory data
    data: Optional[bytes] = None

    @property
    def is_stdin(self) -> bool:
        return self.path is None and self.data is None


def expand_sources(paths: list[str]) -> list[Source]:
    """Resolve command-line paths: '-' is stdin, a folder means every file below it (sorted)."""
    if not paths:
        paths = ["-"]
    out: list[Source] = []
    for p in paths:
        if p == "-":
            out.append(Source("<stdin>", None))
        elif os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for f in sorted(files):
                    if not f.startswith("."):
                        found.append(os.path.join(root, f))
            if not found:
                raise InputError("folder contains no files", p)
            out.extend(Source(f, f) for f in found)
        elif os.path.exists(p):
            out.append(Source(p, p))
        else:
            raise InputError("no such file or folder", p)
    return out


class _ZstdStream:
    """A zstd reader that notices truncation (zstandard's stream_reader does not)."""

    def __init__(self, raw: BinaryIO):
        import zstandard  # optional dependency

        self._raw = raw
        self._d = zstandard.ZstdDecompressor().decompressobj()
        self._zstd = zstandard
        self.truncated = False
        self._eof = False

    def read(self, n: int) -> bytes:
        while not self._eof:
            data = self._raw.read(1 << 20)
            if not data:
                self._eof = True
                if not self._d.eof:
                    self.truncated = True
                break
            out = self._d.decompress(data)
            if self._d.eof:  # multi-frame: start a new frame with what is left
                rest = self._d.unused_data
                self._d = self._zstd.ZstdDecompressor().decompressobj()
                if rest:
                    out += self._d.decompress(rest)
            if out:
                return out
        return b""


def open_binary(source: Source) -> tuple[BinaryIO, Optional[int]]:
    """Open a source for binary reading, unwrapping gzip / zstd by magic bytes."""
    try:
        if source.data is not None:
            raw: BinaryIO = io.BufferedReader(io.BytesIO(source.data))  # type: ignore[arg-type]
        else:
            raw = sys.stdin.buffer if source.is_stdin else open(source.path, "rb")  # type: ignore[arg-type]
    except OSError as e:
        raise InputError(e.strerror or str(e), source.name) from None
    size = len(source.data) if source.data is not None else None
    if source.path is not None:
        try:
            size = os.fstat(raw.fileno()).st_size
        except OSError:
            size = None
    head = _peek(raw, 4)
    if head.startswith(_GZIP_MAGIC):
        return gzip.GzipFile(fileobj=raw, mode="rb"), size  # type: ignore[return-value]
    if head.startswith(_ZSTD_MAGIC):
        try:
            return _ZstdStream(raw), size  # type: ignore[return-value]
        except ImportError:
            raise InputError("zstd input needs the 'zstandard' package (pip install zstandard)", source.name) from None
    return raw, size


def _peek(raw: BinaryIO, n: int) -> bytes:
    if hasattr(raw, "peek"):
        try:
            return raw.peek(n)[:n]  # type: ignore[attr-defined]
        except (OSError, ValueError):
            return b""
    return b""


def scan(
    stream: BinaryIO,
    keywords: "re.Pattern[bytes]",
    info: InputInfo,
    chunk_bytes: int = CHUNK_BYTES,
    max_line: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, bytes]]:
    """Yield (line number, line bytes) for every line that contains a keyword."""
    lineno = 1
    carry = b""
    skipping = False  # inside an over-long line: drop bytes until the next terminator
    offset = 0
    while True:
        try:
            chunk = stream.read(chunk_bytes)
        except (EOFError, zlib.error, OSError) as e:
            info.complete = False
            info.error = f"input ends early ({type(e).__name__}: {e}) after line {lineno}"
            chunk = b""
        if getattr(stream, "truncated", False):
            info.complete = False
            info.error = f"zstd input ends early after line {lineno}"
        if not chunk:
            break
        offset += len(chunk)
        if b"\x00" in chunk:
            info.nul_bytes += chunk.count(b"\x00")
        if skipping:
            m = _TERMINATOR.search(chunk)
            if m is None:
                continue
            skipping = False
            lineno += chunk.count(b"\n", 0, m.start())
            chunk = chunk[m.start() :]
        buf = carry + chunk if carry else chunk
        last = max(buf.rfind(b"\n"), buf.rfind(b"\r"), buf.rfind(b"\x00"))
        region, carry = buf[: last + 1], buf[last + 1 :]
        if region:
            lineno = yield from _scan_region(region, lineno, keywords, info)
        if len(carry) > max_line:
            info.long_lines += 1
            if keywords.search(carry, 0, max_line):
                yield lineno, carry[:max_line]
            carry = b""
            skipping = True
    if carry:
        lineno = yield from _scan_region(carry, lineno, keywords, info)
        lineno += 1  # the last line had no terminator
    info.lines = lineno - 1


def _scan_region(region: bytes, lineno: int, keywords: "re.Pattern[bytes]", info: InputInfo):
    """Scan a region that ends at a line terminator (or the end of input)."""
    pos = 0
    counted = 0
    n = len(region)
    search = keywords.search
    term = _TERMINATOR.search
    while pos < n:
        m = search(region, pos)
        if m is None:
            break
        s = m.start()
        start = max(region.rfind(b"\n", 0, s), region.rfind(b"\r", 0, s), region.rfind(b"\x00", 0, s)) + 1
        e = term(region, m.end())
        end = e.start() if e else n
        lineno += region.count(b"\n", counted, start)
        counted = start
        info.candidate_lines += 1
        yield lineno, region[start:end]
        pos = end + 1
    return lineno + region.count(b"\n", counted)
