"""Hugging Face Trainer progress lines read natively: a tqdm redraw, then the log dict.

transformers prints a log dict right after tqdm redraws its bar, so a training log is full of
lines like `\\r 20%|##  | 6/50 [00:06<00:32, 2.3it/s]\\r      \\r{'loss': '6.79', 'grad_norm':
'1.2', 'learning_rate': '0.0004', 'epoch': '0.04'}`. Per line, the hf parser (parsers/hf.py)
reads the bar (its count is the step of the dict held from the line before) and holds the dict
until the next bar. This lane reads a chunk's such lines in RE2 and hands the pipeline what the
parser would have done: the held dict of each line gets the next line's count.

A line is read here only if it is one of those shapes (bars, then perhaps the dict; or a dict
alone; any launcher prefix before the first \\r; the bar: printable ASCII or tqdm's block
characters; the dict: the four keys transformers logs during training, numbers quoted or bare)
and its pieces read as hf's bars and dict and nothing else (checked once per shape, piece by
piece, with the per-line dispatch). The chunk's hf lines from the first one it cannot read on
stay per line (the pipeline hands out this lane's lines before the chunk's per-line candidates,
so the parser's held dict passes between the lanes only there); an hf line of another stream
(a rank's own bar) is no such line: it never touches this stream's state.

A dict alone behind a launcher's prefix (`[default0]:{'loss': ...}`: torchrun --tee, where the
Trainer logs on rank 0) is its prefix's stream's, as the per-line path peels it: the lane reads
it on that stream (HFLane._stream, once per prefix), a segment ends where the stream changes, and
each segment goes on with its own stream's parser state.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

from nanscope.lazynp import np

from nanscope.columns import sliced
from nanscope.ingest.reader import DIGIT0, _arrow
from nanscope.model import Loc, Origin, Record
from nanscope.parsers.base import Parser
from nanscope.keys import stream_key
from nanscope.stepbatch import Lines

_CH = r"(?:[\x20-\x7e]|\xe2\x96[\x88-\x8f])"  # printable ASCII, tqdm's partial blocks
_NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf)"
KEYS = ("loss", "grad_norm", "learning_rate", "epoch")
FIELDS = ("loss", "grad_norm", "lr", "epoch")


def nocap(regex: str) -> str:
    """The regex without its named groups (a match only: RE2 then needs no capture engine)."""
    return re.sub(r"\(\?P<\w+>", "(?:", regex)


def _value(k: str) -> str:
    return rf"(?:'(?P<{k}q>{_NUM})'|(?P<{k}b>{_NUM}))"


_BAR = rf"{_CH}*?\| *\d+/\d+ *\[{_CH}*"
# transformers logs grad_norm since 4.38; before, the dict is `{'loss': ..., 'learning_rate': ..., 'epoch': ...}`
OPTIONAL = ("grad_norm",)


def _pairs(value) -> str:
    """The dict's pairs in the Trainer's order, an OPTIONAL one perhaps absent."""
    out = ""
    for k in KEYS:
        pair = rf"'{k}': {value(k)}"
        if k in OPTIONAL:
            out += rf"(?:, {pair})?"
        else:
            out += (", " if out else "") + pair
    return out


_DICT_ANY = r"\{" + _pairs(_value) + r"\}"
LINE = (rf"^(?:(?P<lead>[\x20-\x7e]*)(?:\r(?P<bar>{_CH}*?\| *(?P<n>\d+)/\d+ *\[{_CH}*)(?:\r{_BAR})*"
        rf"(?:\r *\r{_DICT_ANY}|(?:\r *)?)|\r *\r{_DICT_ANY})|[\x20-\x7a\x7c-\x7e]*?{_DICT_ANY})$")
# What comes before the first \r (`lead`) is a launcher's prefix (docker compose's `trainer-1  | `,
# kubectl's `[pod/x/c] <time> `, torchrun's `[default0]:`) or nothing: the per-line path splits
# the line at \r and skips a piece that holds no keyword, so the bars and the dict are read with
# no prefix, on the input's own stream, either way (_check makes sure the lead holds no keyword).
# LINE checks a whole line in one DFA pass; the captures are then taken from its pieces between
# the \r (a capture over the whole line backtracks: lazy bar, ten groups): the first bar's count
# (the first `|` followed by `count/total [`, as the lazy bar in LINE finds it) and the dict's
# four numbers (quoted or not: LINE has checked that the quotes pair up), within RE2's one-pass
# limit of four groups. tqdm may redraw more than once before the dict (`\r 32%|...| 16/50
# [...]\r 34%|...| 17/50 [...]\r   \r{...}`, sample_logs/hf/trainer_nan_filter_off.log): the
# held dict takes the first bar's count, as the per-line parser does (the later bars find no
# dict held; _check makes sure they are no step of their own). A line of bars alone (tqdm's
# first `0/N` redraw, text glued after a bar, the last redraws) releases the dict held before it
# and holds none; a dict with no bar before it (`\r   \r{...}`, or a line of its own with tqdm
# off) releases the one held before it without a step (streams give it one) and is held itself.
_LINE_NOCAP = nocap(LINE)
_BAR_COUNT = r"\| *(?P<n>\d+)/\d+ *\["
_DICT = r"^[^{]*\{" + _pairs(lambda k: rf"'?(?P<{k}>{_NUM})'?") + r"\}$"
_DICT_PY = re.compile(nocap(_DICT_ANY) + "$")  # the dict piece LINE takes
_PARSER = "hf"  # whose lines these are
_OWN = "own"  # HFLane._stream: the input's own stream


class HFLane:
    def __init__(self, parsers: Sequence[Parser], source: str, base: Origin):
        self.parsers = tuple(parsers)
        names = [p.name for p in parsers]
        self.ok = _PARSER in names
        if not self.ok:
            return
        hf = self.parsers[names.index(_PARSER)]
        self.words = frozenset(k.encode() for k in hf.keywords)
        self._mine: dict[tuple, bool] = {}  # found keywords -> any of hf's
        self.source = source
        self.base = base
        self._shapes: dict[bytes, Optional[tuple[int, bool, bool]]] = {}
        self._keywords = tuple({k for p in self.parsers for k in p.keywords})  # the prefilter's words
        self._rules = {r.name: r for r in hf.rules}
        self._prefix_streams: dict[bytes, Any] = {}  # a dict line's prefix -> its stream (HFLane._stream)

    def claim(self, cand, rest: np.ndarray, lines: list, kinds: list, max_line: int) -> list:
        """The chunk's HF progress lines among cand[rest] (`lines` their bytes, `kinds` their
        (keywords, plain) from Prefilter.sort) that this lane reads, in segments: each ends at an
        hf line the lane does not read (a dict alone, a bar with text glued to it, an eval dict,
        the `train_runtime` dict, the start of a restarted run), which stays per line between two
        segments. Each segment: (its columns, its texts, its indices into rest, whether an hf line
        the lane left comes before it). The pipeline hands out the first segment, when none comes
        before it, ahead of the chunk's per-line candidates and each other one in line order among
        them (reader._runs), so the dict a segment leaves held is the one the hf parser holds when
        it reads the next hf line. Lines a step reader took never touch the hf parser's state."""
        if not self.ok:
            return []
        mine = self._mine
        for kind in set(kinds):  # (a batch holds a few kinds of lines)
            if kind[0] not in mine:
                mine[kind[0]] = any(w in self.words for w in kind[0])
        hfish = [i for i, kind in enumerate(kinds) if mine[kind[0]]]
        if not hfish:
            return []
        pa, pc, pool = _arrow()
        at = np.array(hfish, dtype=np.int64)
        sub = pc.take(cand, pa.array(rest[at]), memory_pool=pool)
        ok = sliced(pc.match_substring_regex, sub, _LINE_NOCAP, memory_pool=pool).to_numpy(zero_copy_only=False)
        mine_at, shapes, cuts = self._segments([lines[i] for i in hfish], ok, max_line)
        if not len(mine_at):
            return []
        if len(mine_at) < len(hfish):
            at = at[mine_at]
            sub = pc.take(sub, pa.array(mine_at, type=pa.int64()), memory_pool=pool)
        pieces = pc.split_pattern(sub, "\r", memory_pool=pool)  # '', bar, [more bars], spaces, dict
        if isinstance(pieces, pa.ChunkedArray):
            pieces = pieces.combine_chunks()
        last = pa.array(pieces.offsets.to_numpy()[1:] - 1)
        # (the first bar is the piece after the lead; a dict alone has no such piece to count)
        second = pc.list_element(pieces, 1, memory_pool=pool) if pc.min(pc.list_value_length(pieces)).as_py() > 1 else \
            pc.list_element(pc.list_slice(pieces, 0, 2, return_fixed_size_list=True, memory_pool=pool), 1, memory_pool=pool)
        count = pc.extract_regex(second, _BAR_COUNT, memory_pool=pool).flatten(memory_pool=pool)[0]
        got = sliced(pc.extract_regex, pc.take(pieces.flatten(), last, memory_pool=pool), _DICT, memory_pool=pool)
        # pieces the per-line path claims (each bar and the dict), and whether the line ends in a dict
        claims, dicts, bars = shapes
        cols = {"n": floats(count), "claims": claims, "dict": dicts, "bar": bars}
        values = dict(zip(KEYS, got.flatten(memory_pool=pool)))  # (null on a line of bars alone)
        for k, name in zip(KEYS, FIELDS):
            v = values[k]
            if k in OPTIONAL:  # where the dict has the pair (RE2 captures '' for an absent one: no value, never a NaN)
                has = pc.greater(pc.fill_null(pc.binary_length(v), 0), 0, memory_pool=pool)
                v = pc.if_else(has, v, pa.scalar(b"nan", v.type), memory_pool=pool)
                cols[f"present.{name}"] = cols[f"present.raw_fields.{k}"] = has.to_numpy(zero_copy_only=False)
            vals = floats(v)
            cols[name] = vals
            cols[f"raw_fields.{k}"] = vals
        texts = Lines(sub)
        ends = [c for c, _, _ in cuts[1:]] + [len(at)]
        return [({k: v[a:b] for k, v in cols.items()}, texts.slice(a, b - a), at[a:b], after, origin)
                for (a, after, origin), b in zip(cuts, ends)]

    def _segments(self, rows: list, ok: np.ndarray, max_line: int) -> tuple[np.ndarray, tuple, list]:
        """Which of the hf-ish `rows` (bytes; `ok`: LINE matched) the lane reads, their pieces
        (claims, dict, bar: three arrays), and the segments they fall in: (where in the rows read a
        segment starts, whether a line of its stream left per line is before it, its stream's
        origin: None for the input's own). A segment ends where the stream changes, and where a
        line of its stream stays per line (the next one read starts it anew).

        The shape of a line (its digits as 0) and its stream are worked out once per distinct
        shape and prefix; the rows are then walked only where something changes (a line left per
        line, the line after it, another stream): a batch of one stream's lines is one segment."""
        n = len(rows)
        codes: dict = {}
        code = np.fromiter((codes.setdefault(r.translate(DIGIT0), len(codes)) for r in rows), dtype=np.int64, count=n)
        fits = ok.copy()  # (only a line LINE matched is checked: printable, the pieces in place)
        if max_line:
            fits &= np.fromiter((len(r) <= max_line for r in rows), dtype=bool, count=n)
        table = np.zeros((len(codes), 4), dtype=np.int64)  # per shape: verified, claims, dict, bar
        keys = list(codes)
        at = np.flatnonzero(fits)
        shape, first = np.unique(code[at], return_index=True)  # each shape's first such row
        for c, j in zip(shape.tolist(), at[first].tolist()):
            got = self._verified(keys[c], rows[j])
            if got is not None:
                table[c] = (1, got[0], got[1], got[2])
        good = table[code, 0].astype(bool) & fits
        streams: list = [_OWN]  # a stream's id is its index here
        ids: dict = {_OWN: 0}  # (Origins are frozen: equal ones are one stream)
        kid = np.zeros(n, dtype=np.int64)
        for j in np.flatnonzero(np.fromiter((b"\r" not in r for r in rows), dtype=bool, count=n)).tolist():
            k = self._stream(rows[j])  # (a line with a \r is the input's own, read or not)
            if k is False:
                good[j] = False  # (a prefix the lane does not take: the line stays per line)
                continue
            got = ids.get(k)
            if got is None:
                got = ids[k] = len(streams)
                streams.append(k)
            kid[j] = got
        walk = np.ones(n, dtype=bool)  # the rows where a segment may start or a stream turn dirty
        walk[1:] = ~good[1:] | ~good[:-1] | (kid[1:] != kid[:-1])
        cuts: list = []
        left: set = set()  # the streams of the hf lines left per line so far
        dirty: set = set()  # ... since their last line read here: the next one read starts a segment anew
        at_stream = None
        taken = np.cumsum(good) - good  # each row's place among the rows read
        for j in np.flatnonzero(walk).tolist():
            k = int(kid[j])
            if good[j]:
                if not cuts or k != at_stream or k in dirty:
                    cuts.append((int(taken[j]), k in left, None if k == 0 else streams[k]))
                    dirty.discard(k)
                at_stream = k
            else:
                left.add(k)  # (this line stays per line: a segment of its stream after it starts anew)
                dirty.add(k)
        mine = np.flatnonzero(good)
        rows_code = code[mine]
        return mine, (table[rows_code, 1], table[rows_code, 2].astype(bool), table[rows_code, 3].astype(bool)), cuts

    def _stream(self, row: bytes):
        """The stream of an hf line as the per-line path reads it: _OWN (the input's own: every piece
        after a \\r is read without a prefix, and so is a line with none), or, for a log dict behind a
        launcher's prefix (`[default0]:{'loss': ...}`, torchrun --tee), the Origin peel gives it
        (False where the per-line path would not read that origin from the prefix alone: srun's label,
        which an agent's topology may turn into a node). Peeled once per prefix: peel reads the prefix
        alone, so its answer is the prefix's."""
        from nanscope.ingest.prefixes import _SRUN_ALONE, peel

        if b"\r" in row:
            return _OWN
        cut = row.find(b"{'")
        if cut <= 0:
            return _OWN
        got = self._prefix_streams.get(row[:cut])
        if got is None:
            text = row.decode("utf-8", "replace")
            msg, origin = peel(text, self.base)
            if msg is text or stream_key(origin, self.source) == stream_key(self.base, self.source):
                got = _OWN
            elif origin.rank is not None and origin.local_rank is None and origin.node is None \
                    and _SRUN_ALONE.match(text) is not None:
                got = False
            else:
                got = origin
            if len(self._prefix_streams) < 4096:
                self._prefix_streams[row[:cut]] = got
        return got

    def _verified(self, shape: bytes, row: bytes) -> Optional[tuple[int, bool, bool]]:
        """How the per-line path reads a line of this shape (once per shape): (how many of its
        pieces it claims, whether the last is a dict to hold, whether it has a bar), or None when that is not as bars
        for hf's tqdm rule, then perhaps a dict for its log-dict rule, and nothing else."""
        got = self._shapes.get(shape, False)
        if got is False:
            got = self._shapes[shape] = self._check(row)
        return got  # type: ignore[return-value]

    def _check(self, row: bytes) -> Optional[tuple[int, bool, bool]]:
        from nanscope.ingest.prefixes import peel

        text = row.decode("utf-8")
        pieces = text.split("\r")
        claimed = bars = 0
        held = False
        for j, piece in enumerate(pieces):
            if not any(k in piece for k in self._keywords):
                continue  # (reader._per_line skips it: the lead, the spaces tqdm clears the bar with)
            if j == 0 and len(pieces) > 1:
                return None  # a lead the per-line path reads (a bar, say) would come first
            msg, origin = peel(piece, self.base)
            if msg != piece and not (len(pieces) == 1 and _DICT_PY.match(msg) is not None):
                return None  # (a prefix only before a dict alone: the per-line path peels it, its stream is _stream's)
            rec = Record(Loc(self.source, 1), msg, origin, piece)
            for p in self.parsers:
                st: dict = {}
                events = p.parse(rec, st)
                if events is not None:
                    if events or p.name != _PARSER:
                        return None  # a bar that is a step of its own (a postfix loss), another parser's
                    break
            else:
                return None
            as_dict = self._parse_one(rec, "log-dict") is not None  # (hf's first rule)
            if as_dict != (j == len(pieces) - 1 and _DICT_PY.match(msg) is not None):
                return None  # a dict only last, and only the dict LINE reads (held: it has a loss)
            if not as_dict and self._parse_one(rec, "tqdm") is None:
                return None
            claimed += 1
            bars += not as_dict
            held = as_dict
        return (claimed, held, bars > 0) if claimed else None

    def _parse_one(self, rec: Record, name: str) -> Optional[list]:
        rule = self._rules[name]
        return self.parsers[[p.name for p in self.parsers].index(_PARSER)].parse_rules(rec, {}, (rule,))


def floats(arr) -> np.ndarray:
    """Captured numbers (an Arrow binary array) as float64 (Arrow parses them as Python would:
    nan, inf, signs, exponents)."""
    pa, pc, pool = _arrow()
    return sliced(pc.cast, arr, pa.float64(), memory_pool=pool).to_numpy(zero_copy_only=False)
