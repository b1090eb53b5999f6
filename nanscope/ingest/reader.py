"""Bytes in, candidate lines out.

Inputs are read in large binary chunks and never loaded whole. Only lines that contain one of
the parsers' keywords leave this module (the hot path: one native regex search per candidate,
no per-line Python work for the rest). Lines end at \\n, \\r (tqdm redraws) or NUL; line
numbers count \\n only, so `file:line` points where an editor does. An over-long line is capped:
its head is kept, the rest is skipped and counted.
"""

from __future__ import annotations

import codecs
import functools
import io
import os
import re
import struct
import sys
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterator, Optional, Sequence

from nanscope.columns import _arrow, _np_bool, _take, sliced  # noqa: F401 - the ingest floor reads them from here
from nanscope.errors import InputError
from nanscope.ingest.interleave import MID, MID_RE2, rejoin
from nanscope.ingest.prefixes import RECORD_SPAN, TRACEBACK_HEAD, layout_ranks
from nanscope.metricsrows import MetricsRows
from nanscope.model import InputInfo

CHUNK_BYTES = 2 << 20
CLAIM_BYTES = 8 << 20  # input whose candidates the native lane reads at once (see _Held) ...
CLAIM_CANDIDATES = 2 << 20  # ... or fewer, once its candidates are this big (memory)
WARM_ROWS = 4096  # a batch's rows that no reader read, past twice this: readers learned on these first (Prefilter._warm)
SMALL_REGION = 256 << 10  # below this, candidates are found in Python (no RE2 compile per call)
MAX_LINE_BYTES = 1 << 20
_TERMINATOR = re.compile(rb"[\r\n\x00]")
DIGIT0 = bytes.maketrans(b"123456789", b"000000000")  # line.translate(DIGIT0): its shape, digit for digit
_PRINTABLE = bytes(range(0x20, 0x7f)) + b"\t"


def plain(line: bytes) -> bool:
    """Printable ASCII or tab only: the lines RE2 (Latin-1) judges as Python would, and the only
    ones the native lane reads."""
    return not line.translate(None, _PRINTABLE)
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass
class Source:
    """A named input: a file path, standard input, or bytes already in memory (examples, tests)."""

    name: str
    path: Optional[str]  # None for stdin and in-memory data
    data: Optional[bytes] = None
    layout_rank: Optional[int] = None  # the rank its name gives among per-rank siblings (prefixes.layout_ranks)
    skip: Optional[str] = None  # why it is not read (a FIFO or device found in a folder): reported, not opened
    stream: Optional[Any] = None  # an open binary file object to read instead (live mode: follow.FollowStream)

    @property
    def is_stdin(self) -> bool:
        return self.path is None and self.data is None and self.stream is None


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
            srcs = [Source(f, f, skip=_not_regular(f)) for f in found]
            if all(s.skip is not None for s in srcs):
                raise InputError("folder contains no regular files (only FIFOs, sockets or devices)", p)
            out.extend(srcs)
        elif os.path.exists(p):
            out.append(Source(p, p))
        else:
            raise InputError("no such file or folder", p)
    ranks = layout_ranks([s.name for s in out if s.path is not None and s.skip is None])
    for s in out:
        s.layout_rank = ranks.get(s.name)
    return out


def source_sizes(sources: Sequence[Source]) -> list[tuple[str, Optional[int]]]:
    """(name, size in bytes or None) of each input, known before reading (the stream's begin)."""
    out: list[tuple[str, Optional[int]]] = []
    for s in sources:
        if s.data is not None:
            out.append((s.name, len(s.data)))
            continue
        try:
            out.append((s.name, os.path.getsize(s.path) if s.path is not None and s.skip is None else None))
        except OSError:
            out.append((s.name, None))
    return [(n, z) for (n, z), s in zip(out, sources) if s.skip is None]


def _not_regular(path: str) -> Optional[str]:
    """Why a file found in a folder is not read, or None: opening a FIFO waits for a writer that
    may never come, and a device never ends. (A FIFO named on the command line is read: the
    user asked for it.)"""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # opening it reports the error
    if stat.S_ISREG(mode):
        return None
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    return f"{kind} inside a folder: not read (name it on the command line to read it)"


class _Decompressed:
    """A decompressing reader that keeps every byte it could decode and notices damage.

    gzip.GzipFile raises EOFError on a truncated member and drops the data of that read call;
    zstandard's stream_reader returns truncated data with no error at all. Feeding a
    decompressobj ourselves keeps the readable prefix and tells, at the end, whether the last
    member/frame was complete (`truncated`) or where the data stopped making sense (`damaged`:
    a bad checksum, a corrupt block, trailing bytes that are not a member/frame). Concatenated
    members (rotated logs joined with cat) are followed.
    """

    READ = 1 << 20
    PIECE = 4 << 10  # zstd input per decompress call: an error loses at most this call's output

    def __init__(self, raw: BinaryIO, new: "Callable[[], Any]", padding_ok: bool, kind: str):
        self._raw = raw
        self._new = new
        self._d = new()
        self._padding_ok = padding_ok
        self.kind = kind
        self.truncated = False
        self.damaged: Optional[str] = None
        self._eof = False

    def read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n and not self._eof:
            data = self._raw.read(self.READ)
            if not data:
                self._eof = True
                if not self._d.eof and self._started:
                    self.truncated = True
                break
            self._started = True
            out += self._feed(data)
        return bytes(out)

    _started = False

    def _feed(self, data: bytes) -> bytes:
        out = bytearray()
        while data:
            got, err = self._decompress(data)
            out += got
            if err is not None:
                self.damaged = err
                self._eof = True  # no way to find the next member/frame reliably: stop here
                break
            if not self._d.eof:
                break
            rest = self._d.unused_data
            if not rest or (self._padding_ok and not rest.strip(b"\x00")):
                self._d = self._new()
                self._started = False
                break
            self._d = self._new()
            data = rest
        return bytes(out)

    def _decompress(self, data: bytes) -> tuple[bytes, Optional[str]]:
        """(what `data` decompresses to, an error message or None). On an error, as much of the
        output as the decoder gives before the bad byte is kept: zlib's state is copied and the
        longest prefix that still decodes is found by bisection; zstd is fed in small pieces."""
        copy = getattr(self._d, "copy", None)
        if copy is not None:  # zlib
            saved = copy()
            try:
                return self._d.decompress(data), None
            except Exception as e:  # noqa: BLE001 - zlib.error, the only kind
                err = f"{type(e).__name__}: {e}"
            lo, hi, best = 0, len(data), b""
            while lo < hi:  # the longest prefix that decodes without an error
                mid = (lo + hi + 1) // 2
                try:
                    best_mid = saved.copy().decompress(data[:mid])
                except Exception:  # noqa: BLE001
                    hi = mid - 1
                    continue
                lo, best = mid, best_mid
            return best, err
        out = bytearray()
        for i in range(0, len(data), self.PIECE):
            if self._d.eof:
                return bytes(out), None  # the frame ended inside this piece: _feed takes the rest
            try:
                out += self._d.decompress(data[i:i + self.PIECE])
            except Exception as e:  # noqa: BLE001 - zstandard.ZstdError and kin
                return bytes(out), f"{type(e).__name__}: {e}"
        return bytes(out), None

    def close(self) -> None:
        self._raw.close()


def _gzip_stream(raw: BinaryIO) -> _Decompressed:
    return _Decompressed(raw, lambda: zlib.decompressobj(wbits=31), padding_ok=True, kind="gzip")


def _zstd_stream(raw: BinaryIO) -> _Decompressed:
    import zstandard  # a dependency; a missing one is reported as an unreadable input

    return _Decompressed(raw, lambda: zstandard.ZstdDecompressor().decompressobj(), padding_ok=False, kind="zstd")


class _Transcoded:
    """A UTF-16 input read as UTF-8, incrementally (line numbers and offsets stay the text's)."""

    READ = 1 << 20

    def __init__(self, raw: BinaryIO, encoding: str):
        import codecs

        self._raw = raw
        self._dec = codecs.getincrementaldecoder(encoding)("replace")
        self.encoding = encoding
        self._buf = b""
        self._eof = False

    def read(self, n: int) -> bytes:
        while len(self._buf) < n and not self._eof:
            data = self._raw.read(self.READ)
            self._eof = not data
            self._buf += self._dec.decode(data, final=self._eof).encode("utf-8", "surrogatepass")
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def close(self) -> None:
        self._raw.close()


def utf16_encoding(head: bytes) -> Optional[str]:
    """'utf-16' when the input starts with a UTF-16 byte-order mark (and what follows is not plain
    UTF-8 text); 'utf-16-le' / 'utf-16-be' for
    text without one whose first 64 bytes are ASCII characters each padded with a NUL (a NUL hole is
    NULs on both sides, and UTF-8 text has no NUL at every other byte); None otherwise."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") and head[:4] != b"\xff\xfe\x00\x00":  # (not UTF-32)
        rest = head[2:]
        try:  # UTF-8 text after two junk bytes (no NUL, valid UTF-8) is not UTF-16: ASCII in UTF-16
            codecs.utf_8_decode(rest, "strict", False)  # has NULs, other UTF-16 text is almost
            if b"\x00" not in rest and rest:          # never valid UTF-8
                return None
        except UnicodeDecodeError:
            pass
        return "utf-16"
    probe = head[: len(head) // 2 * 2][:64]
    if len(probe) < 8:
        return None
    even, odd = probe[0::2], probe[1::2]
    for zeros, chars, enc in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if not zeros.strip(b"\x00") and all(c == 9 or c == 10 or c == 13 or 0x20 <= c < 0x7F for c in chars):
            return enc
    return None


def open_binary(source: Source) -> tuple[BinaryIO, Optional[int]]:
    """Open a source for binary reading, unwrapping gzip / zstd by magic bytes."""
    try:
        if source.stream is not None:
            return source.stream, None
        if source.data is not None:
            raw: BinaryIO = io.BufferedReader(io.BytesIO(source.data))  # type: ignore[arg-type]
        else:
            raw = _stdin() if source.is_stdin else open(source.path, "rb")  # type: ignore[arg-type]
            if source.is_stdin and _is_terminal(raw):
                # text typed or pasted on a terminal: read it whole, so one Ctrl-D ends it (chunked
                # reads would each wait for an end-of-file of their own)
                raw = io.BufferedReader(io.BytesIO(raw.read()))  # type: ignore[arg-type]
    except OSError as e:
        raise InputError(e.strerror or str(e), source.name) from None
    size = len(source.data) if source.data is not None else None
    if source.path is not None:
        try:
            size = os.fstat(raw.fileno()).st_size
        except OSError:
            size = None
    head = _peek(raw, 64)
    enc = utf16_encoding(head)
    if enc is not None:
        return _Transcoded(raw, enc), size  # type: ignore[return-value]
    if head.startswith(_GZIP_MAGIC):
        return _gzip_stream(raw), size  # type: ignore[return-value]
    if head.startswith(_ZSTD_MAGIC):
        try:
            return _zstd_stream(raw), size  # type: ignore[return-value]
        except ImportError:
            raise InputError("zstd input needs the 'zstandard' package (pip install zstandard); not read", source.name) from None
    return raw, size


def _is_terminal(raw: BinaryIO) -> bool:
    try:
        return raw.isatty()
    except (OSError, ValueError):
        return False


class ReadAhead:
    """A stream whose first bytes were read ahead (for what they say about the job, see
    ingest/topology.py) and are handed out again first. A read error met while reading ahead is
    raised where the scan would have met it, after the bytes before it."""

    def __init__(self, stream: BinaryIO, n: int):
        self._stream = stream
        self._error: Optional[BaseException] = None
        try:
            self.head = stream.read(n)
        except (EOFError, zlib.error, OSError) as e:
            self.head, self._error = b"", e
        self.whole = self._error is None and len(self.head) < n  # the head is the entire input
        self._pos = 0

    def read(self, n: int) -> bytes:
        if self._pos < len(self.head):
            out = self.head[self._pos:self._pos + n]
            self._pos += len(out)
            if self._pos >= len(self.head):
                self.head = b""
                self._pos = 0
            return out
        if self._error is not None:
            e, self._error = self._error, None
            raise e
        return self._stream.read(n)

    @property
    def truncated(self) -> bool:
        return bool(getattr(self._stream, "truncated", False))

    @property
    def damaged(self) -> Optional[str]:
        return getattr(self._stream, "damaged", None)

    @property
    def kind(self) -> Optional[str]:
        return getattr(self._stream, "kind", None)

    @property
    def encoding(self) -> Optional[str]:
        return getattr(self._stream, "encoding", None)

    def close(self) -> None:
        self._stream.close()


class _PatientPipe(io.RawIOBase):
    """A pipe read so that a signal always gets through: select() with a short time-out before
    each read brings the main thread back to the interpreter, where Python runs signal handlers,
    even when the kernel delivered SIGTERM to one of Arrow's threads (a blocking read in the main
    thread would never see it)."""

    WAKE_S = 0.25

    def __init__(self, fd: int):
        super().__init__()
        self._fd = fd

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, b) -> int:  # type: ignore[override]
        import select

        while not select.select([self._fd], [], [], self.WAKE_S)[0]:
            pass
        return os.readv(self._fd, [b])


def _stdin() -> BinaryIO:
    """Standard input for binary reading (a pipe or FIFO through _PatientPipe)."""
    import stat

    buf = sys.stdin.buffer
    try:
        fd = buf.fileno()
        pipe = os.name == "posix" and stat.S_ISFIFO(os.fstat(fd).st_mode)
    except (OSError, ValueError, AttributeError):
        return buf
    if not pipe:
        return buf
    return io.BufferedReader(_PatientPipe(fd), buffer_size=1 << 16)  # type: ignore[return-value]


def _peek(raw: BinaryIO, n: int) -> bytes:
    if hasattr(raw, "peek"):
        try:
            return raw.peek(n)[:n]  # type: ignore[attr-defined]
        except (OSError, ValueError):
            return b""
    return b""


class Prefilter:
    """The parsers' keywords, compiled once: which lines are candidates, and which keywords they hold.

    Over a chunk of lines the mask runs in native code (RE2 through pyarrow.compute): one regex
    over every line keeps the candidates. The keywords each remaining candidate holds are listed
    (so the pipeline can go straight to the rules that own them); `possible()` adds keywords a
    listed one may hide, and every rule still checks its own keywords exactly before its regex
    runs.
    """

    def __init__(self, words: Sequence[str]):
        uniq = sorted({w for w in words}, key=lambda w: (-len(w), w))
        self.match_all = "" in uniq
        self.words: tuple[str, ...] = tuple(w for w in uniq if w)
        self.bwords: tuple[bytes, ...] = tuple(w.encode() for w in self.words)
        self._re2 = _unions([_re2_escape(w) for w in _cover(self.bwords)])
        self._possible: dict[tuple, Optional[frozenset]] = {}
        # The keywords are found per line shape (the line without its digits, cached): those with a
        # digit (`[Errno 5]`, `exit code 137`) cannot be, and are looked for in every line (few).
        # A line can hold a digit keyword only if its shape holds that keyword without digits, so
        # the shape's cache entry also names the digit keywords worth looking for in the line.
        self._digit_words = tuple(w for w in self.bwords if any(c in b"0123456789" for c in w))
        self._digit_shapes = tuple((w, w.translate(None, b"0123456789")) for w in self._digit_words)
        self._shape_words = tuple(w for w in self.bwords if w not in self._digit_words)
        self._found: dict[bytes, tuple] = {}
        self._sorted: dict[bytes, tuple] = {}
        self._hidden: dict[str, frozenset] = {}  # per keyword, when first needed (all pairs: 30 ms a start)
        self.read_rows = 0  # rows the native lane read in the last candidates() call

    @functools.cached_property
    def regex(self) -> "re.Pattern[bytes]":
        """The pure-Python form, compiled when first needed (a line over the length cap, the head
        of a pipe): the union of all keywords costs ~40 ms to compile, at every start."""
        alt = b"|".join(re.escape(w) for w in self.bwords) if self.bwords else b"(?!)"
        return re.compile(b"(?:)" if self.match_all else alt)

    @property
    def pattern(self) -> bytes:
        return self.regex.pattern

    def search(self, line: bytes) -> "Optional[re.Match[bytes]]":
        return self.regex.search(line)

    def _hides(self, w: str) -> frozenset:
        """The keywords that may start inside a match of `w` (or it inside theirs)."""
        got = self._hidden.get(w)
        if got is None:
            got = self._hidden[w] = frozenset(o for o in self.words if _starts_inside(o, w)) if w in self.words else frozenset()
        return got

    def possible(self, found: tuple) -> Optional[frozenset]:
        """Keywords that may occur in a line where `found` (bytes, in order) were found; None: any."""
        got = self._possible.get(found, False)
        if got is not False:
            return got  # type: ignore[return-value]
        if found is ALL or self.match_all:
            out = None
        else:
            s: set = set()
            for b in found:
                w = b.decode("utf-8", "replace")
                s.add(w)
                s.update(self._hides(w))
            out = frozenset(s)
        self._possible[found] = out
        return out

    def keep(self, lines) -> tuple[Any, "Any"]:
        """The candidates of an Arrow binary array of lines (one RE2 pass) and their indices."""
        import numpy as np

        pa, pc, pool = _arrow()
        if self.match_all:
            return lines, np.arange(len(lines), dtype=np.int64)
        if not self.bwords:
            return lines.slice(0, 0), np.zeros(0, dtype=np.int64)
        idx = pc.indices_nonzero(self.holds(lines), memory_pool=pool)
        return pc.take(lines, idx, memory_pool=pool), idx.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)

    def holds(self, lines) -> Any:
        """Which lines of an Arrow binary array hold a keyword (an Arrow boolean array): one RE2 pass
        per union of keywords (see _unions)."""
        pa, pc, pool = _arrow()
        got = None
        for union in self._re2:
            hit = sliced(pc.match_substring_regex, lines, union, memory_pool=pool)
            got = hit if got is None else pc.or_(got, hit, memory_pool=pool)
        return got

    def candidates(self, cand, lns: "Any", lane: Optional[Any] = None, claimable: Optional[Any] = None,
                   max_line: int = 0, info: Optional[InputInfo] = None,
                   read: Optional[tuple] = None, heads: Optional[list] = None) -> tuple[list[int], list[bytes], list[tuple], Any]:
        """For candidate lines (an Arrow binary array, from keep()) and their line numbers: the
        line numbers, bytes and found keywords of those left to the per-line path, and the
        native lane's payload for the lines it read (None when it read none).

        The native lane (nanscope/ingest/native.py) reads the step lines of known shapes first,
        in RE2. The rest come to Python once, as bytes, and are sorted by the keywords they hold
        (cached per shape): `claimable` (nanscope/ingest/claimable.py, a Claimable) drops the
        plain ones no rule could claim, in one small RE2 union per keyword set (still counted in
        info.candidate_lines, as the per-line path would); the lane reads HF progress lines and
        learns readers for new shapes among the rest. `read`: what the readers read before the
        keyword pass (_release_lines): (found, the positions in cand they left).

        `heads`: [the line of the last traceback header before this batch, or None], updated here.
        A line the per-line path would see but this one takes out (dropped by `claimable`, read
        into a StepBatch or by the HF lane) still ends a logged record that a header opened (RecordContinuation):
        within RECORD_SPAN lines after a header such lines go out as RecordLine items, in line
        order, for the record tracker alone (none in a log without tracebacks)."""
        pa, pc, pool = _arrow()
        self.read_rows = 0
        if len(cand) == 0:
            return [], [], [], None
        if lane is None and claimable is None or self.match_all:
            lines_out = cand.to_pylist()
            found_out = [ALL] * len(lines_out) if self.match_all else [self.found_in(line) for line in lines_out]
            return lns.tolist(), lines_out, found_out, None
        import numpy as np

        n = len(cand)
        fits = None  # rows no longer than max_line (None: all), the only ones read natively or judged
        if max_line and pc.max(pc.binary_length(cand, memory_pool=pool)).as_py() > max_line:
            fits = ~_np_bool(pc.greater(pc.binary_length(cand, memory_pool=pool), max_line, memory_pool=pool))
        found: list = []
        if read is not None:
            found, rest = read
        elif lane is not None:
            rest = lane.read(cand, np.arange(n) if fits is None else np.nonzero(fits)[0], found)
            if len(rest) > 2 * WARM_ROWS:
                rest = self._warm(cand, rest, lane, found)
            if fits is not None:
                rest = np.sort(np.concatenate([rest, np.nonzero(~fits)[0]]))
        else:
            rest = np.arange(n)
        rest_lines = (cand if len(rest) == n else _take(cand, rest)).to_pylist()
        kinds = [self.sort(line) for line in rest_lines]  # (found keywords, plain)
        keep = np.ones(len(rest), dtype=bool)
        hf = None  # the lane's first segment of HF lines, when no hf line left per line is before it
        hf_runs: list = []  # its other segments, handed out in line order among the per-line candidates
        dropped: list = []  # positions in cand of the candidates the HF lane reads and claimable drops
        if lane is not None and lane.hf.ok:
            for cols, texts, at_hf, after, origin in lane.hf.claim(cand, rest, rest_lines, kinds, max_line):
                keep[at_hf] = False
                if heads is not None:
                    dropped.append(rest[at_hf])
                if hf is None and not after and not hf_runs:
                    hf = (cols, texts, at_hf, origin)
                else:
                    hf_runs.append(HFRun(lns[rest[at_hf]], cols, texts, origin))
        learn: list = []
        groups: dict = {}
        for i, (f, plain) in enumerate(kinds):
            if plain and keep[i] and (not max_line or len(rest_lines[i]) <= max_line):
                groups.setdefault(f, []).append(i)
        for f, at in groups.items():
            at_np = np.array(at, dtype=np.int64)
            if claimable is not None:
                union = claimable.union_for(f)
                ok = (np.zeros(len(at), dtype=bool) if union is None else
                      _np_bool(pc.match_substring_regex(_take(cand, rest[at_np]), union, memory_pool=pool)))
                keep[at_np[~ok]] = False
                if heads is not None and not ok.all():
                    dropped.append(rest[at_np[~ok]])
                if info is not None:
                    info.candidate_lines += int((~ok).sum())
                at_np = at_np[ok]
            learn.append(at_np)
        if lane is not None and learn:
            at_np = np.sort(np.concatenate(learn))
            read = lane.learn(cand, rest[at_np], [rest_lines[i] for i in at_np.tolist()], found)
            keep[at_np[read]] = False
        self.read_rows = sum(len(x[0]) for x in found)
        payload = None
        back = None
        made: list = []
        claimed = None
        if found or hf is not None:
            claimed, batches, formats, made = lane.columns(cand, lns, found) if found else (
                np.zeros(0, dtype=np.int64), [], {}, [])
            if batches or hf is not None:
                payload = (batches, formats, None if hf is None else (lns[rest[hf[2]]], hf[0], hf[1], hf[3]))
            # rows a reader matched but left to the per-line path (a fractional step) go back
            left = np.zeros(n, dtype=bool)  # (a mask: setdiff1d sorts, a tenth of the batch)
            for at_, _, _ in found:
                left[at_] = True
            left[claimed] = False
            back = np.flatnonzero(left)
        at = np.nonzero(keep)[0]
        pos = rest[at]
        out_lines = [rest_lines[i] for i in at.tolist()]
        out_found = [kinds[i][0] for i in at.tolist()]
        if back is not None and len(back):
            extra = _take(cand, back).to_pylist()
            pos = np.concatenate([pos, back])
            out_lines += extra
            out_found += [self.sort(line)[0] for line in extra]
            order = np.argsort(pos, kind="stable").tolist()
            pos = pos[order]
            out_lines = [out_lines[i] for i in order]
            out_found = [out_found[i] for i in order]
        if heads is not None:
            got = _record_lines(cand, lns, pos, out_lines, heads, dropped, claimed, made)
            if got is not None:
                pos = np.concatenate([pos, got])
                out_lines += _take(cand, got).to_pylist()
                out_found += [RECORD_LINE] * len(got)
                order = np.argsort(pos, kind="stable").tolist()
                pos = pos[order]
                out_lines = [out_lines[i] for i in order]
                out_found = [out_found[i] for i in order]
        out_idx = lns[pos].tolist()
        if made or hf_runs:
            return (*_runs(out_idx, out_lines, out_found, made + hf_runs), payload)
        return out_idx, out_lines, out_found, payload

    def _warm(self, cand, rest: "Any", lane: Any, found: list) -> "Any":
        """Rows no reader read, many of them (a new input's first batch): readers are learned on
        the first WARM_ROWS of them and read the rest in RE2, before those come to Python one by
        one (sorted, then grouped by shape to learn: 40% of a run over ten per-rank files).

        Lines with an HF keyword are left to the HF lane, as they are below; every row a reader
        does not read here goes on as before (learn skips the readers tried on it)."""
        import numpy as np

        head = rest[:WARM_ROWS]
        lines = _take(cand, head).to_pylist()
        words = lane.hf.words if lane.hf.ok else frozenset()
        pick = []
        for i, line in enumerate(lines):
            f, ok = self.sort(line)
            if ok and not any(w in words for w in f):
                pick.append(i)
        if not pick:
            return rest
        at = np.array(pick, dtype=np.int64)
        before = len(found)
        read = lane.learn(cand, head[at], [lines[i] for i in pick], found)
        if len(found) == before:
            return rest
        left = np.ones(len(head), dtype=bool)
        left[at[read]] = False
        tail = lane.read(cand, rest[WARM_ROWS:], found)
        _merge_found(found)
        return np.concatenate([head[left], tail])

    def sort(self, line: bytes) -> tuple[tuple, bool]:
        """(the keywords a line holds, as found_in; whether it is plain: printable ASCII or tab,
        the lines RE2 judges as Python would), cached per shape like found_in."""
        key = line.translate(None, b"0123456789")
        got = self._sorted.get(key)
        if got is None:
            if len(self._sorted) > 4096:
                self._sorted.clear()
            found, maybe = self._shape_found(key)
            got = self._sorted[key] = (found, plain(key), maybe)  # (digits are printable)
        if got[2]:
            extra = tuple(w for w in got[2] if w in line)
            if extra:
                return got[0] + extra, got[1]
        return got[0], got[1]

    def found_in(self, line: bytes) -> tuple:
        """The keywords a line holds (a superset does no harm: every rule checks its own keywords
        again). The keywords without a digit are found in the line without its digits, the same
        for every line of that shape (a log repeats a few): kept per shape."""
        got, maybe = self._shape_found(line.translate(None, b"0123456789"))
        if maybe:
            extra = tuple(w for w in maybe if w in line)
            if extra:
                return got + extra
        return got

    def _shape_found(self, key: bytes) -> tuple[tuple, tuple]:
        """(the keywords without a digit in a line shape, the digit keywords it may hold)."""
        got = self._found.get(key)
        if got is None:
            if len(self._found) > 4096:
                self._found.clear()
            got = self._found[key] = (tuple(w for w in self._shape_words if w in key),
                                      tuple(w for w, bare in self._digit_shapes if bare in key))
        return got

    def candidates_small(self, data: bytes) -> tuple[list[int], list[bytes], list[tuple]]:
        """candidates() for a small region, in Python: first which keywords occur at all, then
        which lines hold them (the found tuples are exact)."""
        lines = data.split(b"\n")
        if self.match_all:
            return list(range(len(lines))), lines, [ALL] * len(lines)
        present = [w for w in self.bwords if w in data]
        idx: list[int] = []
        cands: list[bytes] = []
        found: list[tuple] = []
        if not present:
            return idx, cands, found
        for i, line in enumerate(lines):
            f = tuple(w for w in present if w in line)
            if f:
                idx.append(i)
                cands.append(line)
                found.append(f)
        return idx, cands, found


ALL: tuple = ("\x00all",)  # "found" marker: any keyword may be present
def _merge_found(found: list) -> None:
    """One (rows, captures, reader) item per reader, in place: a reader that read rows twice in a
    batch (learned on its head, then over the rest) has its rows and captures joined in row order."""
    by: dict = {}
    for item in found:
        by.setdefault(id(item[2]), []).append(item)
    if len(by) == len(found):
        return
    import numpy as np

    pa = _arrow()[0]
    out = []
    for items in by.values():
        if len(items) == 1:
            out.append(items[0])
            continue
        idx = np.concatenate([x[0] for x in items])
        got = pa.concat_arrays([x[1] for x in items])
        if (np.diff(idx) < 0).any():
            order = np.argsort(idx, kind="stable")
            idx, got = idx[order], got.take(pa.array(order))
        out.append((idx, got, items[0][2]))
    found[:] = out


# RE2 matches with a DFA built in a fixed memory budget (8 MiB in Arrow's kernels, which take no
# options); past it, it falls back to a much slower engine. One union of the 586 keywords of session 10
# (21,786 characters as RE2 escapes), longest first, did: the keyword pass took 1.1 s per 4 MB instead
# of 9 ms for each half, and the whole run five times as long. In byte order, RE2 factors the common
# prefix of adjacent alternatives into a trie and the same union stays in budget (on 22 MiB of the
# replay corpus's non-step lines: one union 23 ms, two 49 ms, three longest first 92 ms), but one of
# twice the keywords does not (1.6 s). The keywords go in byte order in unions of at most this many
# characters, each its own pass: two today, with room for the keywords to come.
_UNION_CHARS = 12000


class RecordLine:
    """The `found` slot of a line the native lane took out of the per-line stream (claimable
    dropped it, a reader read it into a StepBatch, the HF lane read it) that still goes to the record tracker
    (ingest/prefixes.RecordContinuation) at its place: an unprefixed line that is no traceback's
    ends the logged record a rank-prefixed header opened, as it does on the per-line path."""

    __slots__ = ()


RECORD_LINE = RecordLine()


def _record_lines(cand, lns, pos, out_lines: list, heads: list, dropped: list, claimed, made: list):
    """The positions in cand of the lines taken out of the per-line stream (`dropped`: by
    claimable and the HF lane; and the StepBatch rows: `claimed` but for the MetricsRows rows, which end a record where they are
    delivered) that lie within RECORD_SPAN lines after a traceback header (a per-line candidate
    whose text holds one; heads[0]: the last one before this batch). None when there are none;
    heads[0] becomes the batch's last header."""
    import numpy as np

    at = [lns[p] for p, line in zip(pos.tolist(), out_lines) if TRACEBACK_HEAD in line]
    last = heads[0]
    if at:
        heads[0] = at[-1]
    if last is None and not at:
        return None
    gone = list(dropped)
    if claimed is not None and len(claimed):
        if made:
            rows = np.concatenate([m.lines for m in made])
            claimed = claimed[~np.isin(lns[claimed], rows)]
        gone.append(claimed)
    if not gone:
        return None
    gone_pos = np.unique(np.concatenate(gone))
    if not len(gone_pos):
        return None
    h = np.asarray(([] if last is None else [last]) + at, dtype=np.int64)
    ln = lns[gone_pos]
    k = np.searchsorted(h, ln, side="left") - 1  # the last header before each line
    near = (k >= 0) & (ln - h[np.maximum(k, 0)] <= RECORD_SPAN)
    return gone_pos[near] if near.any() else None


def _unions(alternatives: list[str]) -> list[str]:
    """The alternatives, in byte order (see _UNION_CHARS), joined with | in as few unions as keep each
    under _UNION_CHARS characters."""
    out: list[str] = []
    run: list[str] = []
    size = 0
    for alt in sorted(alternatives):
        if run and size + len(alt) + 1 > _UNION_CHARS:
            out.append("|".join(run))
            run, size = [], 0
        run.append(alt)
        size += len(alt) + 1
    if run:
        out.append("|".join(run))
    return out


def _cover(words: Sequence[bytes]) -> list[bytes]:
    """The words that hold none of the others: a line holds some word iff it holds one of these
    (`loss` covers `train_loss`), so the keyword pass looks for fewer (884 -> 769 alternatives: one
    RE2 union fewer, a quarter of the pass). Each kept word is looked for once in all the words
    joined by newlines (no keyword holds one), shortest first: a word it is found in is covered."""
    import bisect

    ws = sorted(set(words), key=len)
    if any(b"\n" in w for w in ws):
        return ws
    hay = b"\n".join(ws)
    starts = []
    at = 0
    for w in ws:
        starts.append(at)
        at += len(w) + 1
    covered = [False] * len(ws)
    out: list[bytes] = []
    for i, w in enumerate(ws):
        if covered[i]:
            continue  # (what holds it holds its cover too)
        out.append(w)
        pos = hay.find(w)
        while pos != -1:
            j = bisect.bisect_right(starts, pos) - 1
            if j != i:
                covered[j] = True
            pos = hay.find(w, pos + 1)
    return out


def _re2_escape(word: bytes) -> str:
    """A literal for RE2 over binary data (Latin-1 mode in Arrow): every non-alphanumeric byte as \\xHH."""
    return "".join(chr(c) if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122) else f"\\x{c:02x}" for c in word)


def _starts_inside(other: str, word: str) -> bool:
    """Can `other` occur at the same byte as a match of `word` (and so not be reported itself)?"""
    return other != word and (other.startswith(word) or word.startswith(other))


def _split_lines(region: memoryview):
    """The region's \n-separated lines as an Arrow binary array (the region is not copied)."""
    pa, pc, pool = _arrow()
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(region)))
    one = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, pa.py_buffer(region)])
    return pc.split_pattern(one, b"\n", memory_pool=pool)[0].values


def scan(
    stream: BinaryIO,
    keywords: "Prefilter",
    info: InputInfo,
    chunk_bytes: int = CHUNK_BYTES,
    max_line: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, bytes]]:
    """Yield (line number, line bytes) for every line that contains a keyword."""
    for lineno, line, _found in scan_candidates(stream, keywords, info, chunk_bytes, max_line):
        yield lineno, line


def scan_candidates(
    stream: BinaryIO,
    prefilter: "Prefilter",
    info: InputInfo,
    chunk_bytes: int = CHUNK_BYTES,
    max_line: int = MAX_LINE_BYTES,
    progress: Optional[Callable[[int, int], None]] = None,
    marks: Optional[dict] = None,
    native: Optional[Any] = None,
    claimable: Optional[Any] = None,
    lineno: int = 1,
    offset: int = 0,
    sync: Optional[frozenset] = None,
) -> Iterator[tuple[int, bytes, tuple]]:
    """Yield (line number, line bytes, keywords found) for every line that contains a keyword.

    Lines are split at \\n, \\r and NUL; a line longer than max_line keeps its first max_line
    bytes (counted in info.long_lines). progress(bytes, newlines) is called for every chunk read;
    `marks` receives where the first NUL byte ("nul": (line, offset)) and the first over-long line
    ("long": line) are. With `native` (a NativeLane, see nanscope/ingest/native.py), a region's
    natively read lines come first as one (line, b"", Claimed(payload)) item, then the rest of its
    candidates; `claimable` (a Claimable) drops candidates no rule could claim.

    A read of one piece of a file (nanscope/pieces.py) starts at `offset` (a line start, where
    the whole file's read has a region boundary) with that line's number `lineno`. `sync`: the
    offsets where a read ends after which, when the region ends at a newline of that read, the
    held candidates are released and a (line, b"", SyncMark(offset)) item marks the boundary:
    every read of the file, whatever its start, has the same regions there."""
    marks = marks if marks is not None else {}
    if not isinstance(prefilter, Prefilter):
        raise TypeError("scan needs a Prefilter (nanscope.parsers.registry.keyword_regex)")
    carry = b""
    skipping = False  # inside an over-long line: drop bytes until the next terminator
    held = _Held()
    while True:
        try:
            chunk = stream.read(chunk_bytes)
        except (EOFError, zlib.error, OSError) as e:
            info.complete = False
            info.error = f"input ends early ({type(e).__name__}: {e}) after line {lineno}"
            chunk = b""
        if not chunk:
            if getattr(stream, "damaged", None):
                info.complete = False
                info.error = (f"{stream.kind} input is damaged ({stream.damaged}): read up to line {lineno}, "  # type: ignore[attr-defined]
                              "the rest could not be decoded")
            elif getattr(stream, "truncated", False):
                info.complete = False
                info.error = f"compressed input ends early (truncated) after line {lineno}"
            break
        if progress is not None:
            progress(len(chunk), chunk.count(b"\n"))
        offset += len(chunk)
        if skipping:
            m = _TERMINATOR.search(chunk)  # (no NUL before it: a NUL is a terminator)
            if m is None:
                continue
            skipping = False
            lineno += chunk.count(b"\n", 0, m.start())
            chunk = chunk[m.start() :]
        buf = carry + chunk if carry else chunk
        del chunk
        last = buf.rfind(b"\n")
        if len(buf) - last - 1 > max_line:  # no newline for a long stretch: \r / NUL end lines too
            last = max(last, buf.rfind(b"\r"), buf.rfind(b"\x00"))
        carry = buf[last + 1 :]
        clean = last >= 0 and buf[last] == 10 and len(carry) <= max_line  # a region boundary every read shares
        if last >= 0:
            _count_nuls(buf, last + 1, offset - len(buf), lineno, info, marks)
            lineno = yield from _scan_region(memoryview(buf)[: last + 1], lineno, prefilter, info, max_line, marks, native,
                                             claimable, held)
        del buf
        if sync is not None and clean and offset in sync:
            yield from _release(held, prefilter, info, max_line, native, claimable)
            yield lineno, b"", SyncMark(offset - len(carry))
        if len(carry) > max_line:
            yield from _release(held, prefilter, info, max_line, native, claimable)
            info.long_lines += 1
            marks.setdefault("long", lineno)
            head = carry[:max_line]
            info.replaced_bytes += invalid_utf8(head, final=False)  # (the cut may split a character)
            if prefilter.search(head):
                yield lineno, head, ALL
            carry = b""
            skipping = True
    if carry:
        _count_nuls(carry, len(carry), offset - len(carry), lineno, info, marks)
        lineno = yield from _scan_region(memoryview(carry), lineno, prefilter, info, max_line, marks, native, claimable,
                                         held)
        lineno += 1  # the last line had no terminator
    yield from _release(held, prefilter, info, max_line, native, claimable)
    info.lines = lineno - 1


def _count_nuls(buf: bytes, end: int, at: int, lineno: int, info: InputInfo, marks: dict) -> None:
    """NUL bytes of a region (buf[:end], starting at file offset `at` on line `lineno`), counted
    when the region is read (so a piece of a file counts its own), and where the first one is."""
    n = buf.count(b"\x00", 0, end)
    if n:
        info.nul_bytes += n
        if "nul" not in marks:
            p = buf.find(b"\x00", 0, end)
            marks["nul"] = (lineno + buf.count(b"\n", 0, p), at + p)


class SyncMark:
    """The `found` slot of scan_candidates' item at a sync point: the file offset of that line start."""

    __slots__ = ("offset",)

    def __init__(self, offset: int):
        self.offset = offset


def invalid_utf8(data, final: bool = True) -> int:
    """How many invalid UTF-8 sequences `data` holds (each becomes one U+FFFD when decoded), on
    every line, not only those a parser reads. Valid input costs one pass of Arrow's UTF-8
    validation (a twentieth of a strict decode, which made a str of the region); a region ends
    at a line terminator, so no character is cut in two."""
    if len(data) >= SMALL_REGION and _valid_utf8(data):
        return 0
    try:
        codecs.utf_8_decode(data, "strict", final)
        return 0
    except UnicodeDecodeError:
        text = codecs.utf_8_decode(data, "replace", final)[0]
        return text.count("\ufffd") - bytes(data).count("\ufffd".encode())


def _valid_utf8(data) -> bool:
    """Is `data` (bytes or a memoryview) valid UTF-8, as Arrow checks a string array's data?"""
    pa = _arrow()[0]
    one = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(struct.pack("<ii", 0, len(data))), pa.py_buffer(data)])
    try:
        one.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _runs(idx: list, lines: list, found: list, made: list) -> tuple[list, list, list]:
    """The per-line candidates (line numbers, bytes, keywords) with the metrics readers' rows
    (MetricsRows) in line order among them: each run of one reader's rows with no other
    candidate between them is one item (b"" for its bytes, the run in the keywords' slot)."""
    import numpy as np

    label = np.concatenate([np.full(len(idx), -1, dtype=np.int64)] + [np.full(len(m), k, dtype=np.int64) for k, m in enumerate(made)])
    at = np.concatenate([np.asarray(idx, dtype=np.int64)] + [m.lines for m in made])
    pos = np.concatenate([np.arange(len(idx))] + [np.arange(len(m)) for m in made])
    order = np.argsort(at, kind="stable")
    label, at, pos = label[order], at[order], pos[order]
    new = np.ones(len(label), dtype=bool)
    new[1:] = (label[1:] != label[:-1]) | (label[1:] < 0)
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(label))
    out_idx, out_lines, out_found = at[starts].tolist(), [], []
    for k, p, q in zip(label[starts].tolist(), pos[starts].tolist(), pos[ends - 1].tolist()):
        if k < 0:
            out_lines.append(lines[p])
            out_found.append(found[p])
        else:
            m = made[k]
            out_lines.append(b"")
            out_found.append(m if p == 0 and q == len(m) - 1 else m.take(p, q + 1))
    return out_idx, out_lines, out_found


class Claimed:
    """The `found` slot of an item that carries the native lane's payload for a region."""

    __slots__ = ("payload",)

    def __init__(self, payload: Any):
        self.payload = payload


class HFRun:
    """The `found` slot of an item that carries a segment of HF progress lines the lane read
    (native_hf.HFLane.claim) after an hf line it left per line: (their line numbers, columns,
    texts), handed out at its first line among the per-line candidates, as one item (_runs sees
    a run of one row there, so it never cuts it)."""

    __slots__ = ("hf", "lines")

    def __init__(self, lns: Any, cols: dict, texts: Any, origin: Any = None):
        self.hf = (lns, cols, texts, origin)  # origin: the lines' stream, None for the input's own
        self.lines = lns[:1]

    def __len__(self) -> int:
        return 1


class _Held:
    """Candidates of consecutive big regions, not yet handed to the native lane: it takes them
    CLAIM_BYTES of input at a time (fewer when the candidates reach CLAIM_CANDIDATES bytes: a log
    of little else), so each of its RE2 programs compiles once per batch, not once per chunk.

    Once the lane has readers, a region is held as all its lines (`regions`: lines, first line
    number, the region) and the keyword pass waits for the release: the readers go first, and
    only the lines they leave are searched for keywords (most of a training log is step lines)."""

    def __init__(self) -> None:
        self.cands: list = []
        self.lns: list = []
        self.regions: list = []
        self.bytes = 0
        self.cand_bytes = 0
        self.lines = 0
        # the readers go first while they read most lines (in the last batch, over half of them);
        # on a log of few step lines the keyword pass first is cheaper
        self.readers_first = False
        self.heads: list = [None]  # the line of the last traceback header seen (Prefilter.candidates)

    def add(self, cand, lns, size: int, lines: int) -> None:
        if len(cand):
            self.cands.append(cand)
            self.lns.append(lns)
            self.cand_bytes += cand.nbytes
        self.bytes += size
        self.lines += lines

    def add_lines(self, lines, lineno: int, region: memoryview, marks: dict) -> None:
        self.regions.append((lines, lineno, region, marks))
        self.bytes += len(region)
        self.lines += len(lines)
        self.cand_bytes += len(region)  # (a region of CHUNK_BYTES is a batch: no copy to join regions)

    def full(self) -> bool:
        return self.bytes >= CLAIM_BYTES or self.cand_bytes >= CLAIM_CANDIDATES

    def take(self) -> tuple[list, list, list, int]:
        got = self.cands, self.lns, self.regions, self.lines
        self.cands, self.lns, self.regions, self.bytes, self.cand_bytes, self.lines = [], [], [], 0, 0, 0
        return got


def _keep_region(lines, lineno: int, region: memoryview, prefilter: Prefilter) -> tuple[Any, Any, Any]:
    """A region's candidates, their line numbers and the lines they are from: the keyword pass,
    and if two ranks' writes split a line (ingest/interleave.py), the same over the rejoined region."""
    cand, at = prefilter.keep(lines)
    if len(cand) and _arrow()[1].any(sliced(_arrow()[1].match_substring_regex, cand, MID_RE2)).as_py():
        lines = _split_lines(memoryview(rejoin(bytes(region))))
        cand, at = prefilter.keep(lines)
    return cand, at + lineno, lines


def _note_long(lines, lineno: int, size: int, info: InputInfo, marks: dict, max_line: int) -> None:
    """Count a region's over-long lines (pieces) and note where the first is."""
    if size > max_line:
        pc = _arrow()[1]
        if pc.max(pc.binary_length(lines)).as_py() > max_line:
            n, first = _count_long(lines, max_line)
            info.long_lines += n
            if n:
                marks.setdefault("long", lineno + first)


def _release(held: _Held, prefilter: Prefilter, info: InputInfo, max_line: int, native: Optional[Any],
             claimable: Optional[Any]):
    """The held candidates: the native lane's payload first, then the per-line candidates."""
    cands, lns, regions, n_lines = held.take()
    read = None
    if regions:
        got = _release_lines(regions, prefilter, native) if not cands else None
        if got is None:  # (a batch that began before the lane had readers, or a split line)
            for lines, lineno, region, marks in regions:
                cand, at, used = _keep_region(lines, lineno, region, prefilter)
                _note_long(used, lineno, len(region), info, marks, max_line)
                if len(cand):
                    cands.append(cand)
                    lns.append(at)
        else:
            cand, at, read = got
            cands, lns = [cand], [at]
            for lines, lineno, region, marks in regions:
                _note_long(lines, lineno, len(region), info, marks, max_line)
        del regions
    if not cands:
        held.readers_first = False
        return
    import numpy as np

    pa = _arrow()[0]
    cand = cands[0] if len(cands) == 1 else pa.concat_arrays(cands)
    at = lns[0] if len(lns) == 1 else np.concatenate(lns)
    del cands, lns
    idx, lines, found, payload = prefilter.candidates(cand, at, native, claimable, max_line, info, read, held.heads)
    held.readers_first = prefilter.read_rows * 2 > n_lines
    if payload:
        yield int(at[0]), b"", Claimed(payload)
    yield from _per_line(idx, lines, found, prefilter, info, max_line)


def _release_lines(regions: list, prefilter: Prefilter, native: Any) -> Optional[tuple]:
    """Regions held as lines: the lane's readers over every line first, then the keyword pass
    over the lines they left. (the lines, their line numbers, (found, the positions of the
    candidates left)), or None when a line two ranks' writes split is among those left: then the
    regions go the keyword pass first, as before the lane had readers.

    A reader matches a whole line of the shape it learned (literal text, digits), and learned it on
    a line that held a keyword and no split, so a line it reads holds the same keyword and no
    split (tests/test_native.py checks it on the bench corpora)."""
    import numpy as np

    pa, pc, pool = _arrow()
    lines = regions[0][0] if len(regions) == 1 else pa.concat_arrays([r[0] for r in regions])
    lns = np.concatenate([np.arange(len(r[0]), dtype=np.int64) + r[1] for r in regions])
    n = len(lines)
    max_line = native.max_line
    fits = None
    if max_line and pc.max(pc.binary_length(lines, memory_pool=pool)).as_py() > max_line:
        fits = ~_np_bool(pc.greater(pc.binary_length(lines, memory_pool=pool), max_line, memory_pool=pool))
    found: list = []
    rest = native.read(lines, np.arange(n) if fits is None else np.nonzero(fits)[0], found)
    if fits is not None:
        rest = np.sort(np.concatenate([rest, np.nonzero(~fits)[0]]))
    left, at = prefilter.keep(_take(lines, rest) if len(rest) < n else lines)
    kept = rest[at]
    if len(left) and pc.any(sliced(pc.match_substring_regex, left, MID_RE2)).as_py():
        return None
    return lines, lns, (found, kept)  # (the lines no reader read and no keyword is in: never looked at)


def _scan_region(region: memoryview, lineno: int, prefilter: Prefilter, info: InputInfo, max_line: int,
                 marks: dict, native: Optional[Any], claimable: Optional[Any], held: _Held):
    """Candidates of a region that ends at a line terminator (or the end of input). A big
    region's join `held` (released once enough input is held); a small one's go out at once,
    after what is held."""
    info.replaced_bytes += invalid_utf8(region)
    # a NUL hole: one NUL ends a piece as well as a million (\n, so lines, stay). Every NUL of the
    # region was counted in info.nul_bytes as its chunk was read, so a log without any skips the
    # search (Python's re over 2 MiB is a sixth of a region's scan)
    if info.nul_bytes and _NUL_RUN.search(region):
        region = memoryview(_NUL_RUN.sub(b"\x00", region))
    region = _plain_ends(region)
    if len(region) < SMALL_REGION:  # a small file: compiling the RE2 program would cost more
        yield from _release(held, prefilter, info, max_line, native, claimable)
        data = bytes(region)
        newlines = data.count(b"\n")
        idx, cands, found = prefilter.candidates_small(data)
        if any(MID.search(c) for c in cands):  # a line two ranks' writes split (ingest/interleave.py)
            data = rejoin(data)
            idx, cands, found = prefilter.candidates_small(data)
        if len(data) > max_line:
            for i, line in enumerate(data.split(b"\n")):
                n = _long_pieces(line, max_line) if len(line) > max_line else 0
                if n:
                    info.long_lines += n
                    marks.setdefault("long", lineno + i)
        for i, line in zip(reversed(idx), reversed(cands)):
            if TRACEBACK_HEAD in line:
                held.heads[0] = lineno + i  # (Prefilter.candidates: the last header seen)
                break
        yield from _per_line([lineno + i for i in idx], cands, found, prefilter, info, max_line)
        return lineno + newlines
    lines = _split_lines(region)
    newlines = len(lines) - 1  # the element after the last \n is empty or a \r-ended partial line
    if native is not None and native.has_readers() and held.readers_first and not prefilter.match_all:
        held.add_lines(lines, lineno, region, marks)  # (the readers first: _release_lines)
    else:
        cand, at, used = _keep_region(lines, lineno, region, prefilter)
        held.add(cand, at, len(region), len(lines))
        _note_long(used, lineno, len(region), info, marks, max_line)
        del used
    del lines
    if held.full():
        yield from _release(held, prefilter, info, max_line, native, claimable)
    return lineno + newlines


def _per_line(idx: list, cands: list, found: list, prefilter: Prefilter, info: InputInfo, max_line: int):
    """(line number, bytes, keywords) of each candidate left to the per-line path: a line with
    \r or NUL in it is split into its pieces (each with its own keywords), an over-long one cut."""
    term = _TERMINATOR.split
    for ln, line, f in zip(idx, cands, found):
        if f.__class__ is MetricsRows or f.__class__ is HFRun:
            yield ln, line, f
            continue
        record = f is RECORD_LINE  # (counted where the lane took it; its pieces as the per-line path has them)
        if b"\r" in line or b"\x00" in line:
            for piece in term(line):
                if len(piece) > max_line:
                    piece = piece[:max_line]
                if prefilter.match_all:
                    pf: tuple = ALL
                else:
                    pf = prefilter.found_in(piece)  # the piece's own keywords (cached per shape)
                    if not pf or not any(w in piece for w in pf):  # (found_in may say more than there is)
                        continue
                if record:
                    yield ln, piece, f
                    continue
                info.candidate_lines += 1
                yield ln, piece, pf
            continue
        if record:
            yield ln, line, f
            continue
        if len(line) > max_line:
            line = line[:max_line]
            if not prefilter.search(line):
                continue
        info.candidate_lines += 1
        yield ln, line, f


def _count_long(lines, max_line: int) -> tuple[int, int]:
    """Pieces longer than max_line, and the index of the first line with one (only called when
    one exists)."""
    pc = _arrow()[1]
    n = 0
    first = -1
    big = pc.indices_nonzero(pc.greater(pc.binary_length(lines), max_line)).to_pylist()
    for i in big:
        k = _long_pieces(lines[i].as_py(), max_line)
        if k and first < 0:
            first = i
        n += k
    return n, first


_PIECE = re.compile(rb"[^\r\n\x00]+")
_CSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]")
_LOOK = 1 << 16


def _plain_ends(region: memoryview) -> memoryview:
    """The region with Windows line ends (\r\n) as \n and terminal escapes (colours, cursor moves)
    removed, when its first 64 KiB show them (a log has them on every line or on none): a line with
    a \r or an escape is never read natively, so such a log went the per-line way whole (7-10x
    slower). What the lines say is unchanged: a \r before \n ends an empty piece, and the per-line
    path strips escapes before any rule sees the text (ingest/prefixes.py strip_ansi)."""
    head = bytes(region[:_LOOK])
    if b"\r\n" in head:
        region = memoryview(bytes(region).replace(b"\r\n", b"\n"))
    if b"\x1b[" in head:
        region = memoryview(_CSI.sub(b"", region))
    return region
_NUL_RUN = re.compile(rb"\x00{2,}")


def _long_pieces(line: bytes, max_line: int) -> int:
    """How many of the line's pieces (between \r / NUL) are longer than max_line. Only the
    non-empty pieces are looked at: splitting a NUL hole made one empty bytes object per NUL (8 MiB
    of NULs: 8 million objects, 30 MB and most of the run)."""
    return sum(1 for m in _PIECE.finditer(line) if m.end() - m.start() > max_line)
