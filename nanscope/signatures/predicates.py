"""Predicates of the form `FIELD OP VALUE`, compiled to plain Python closures.

  loss is nonfinite          grad_norm is not nonfinite     skipped == true
  action == "overflow"       new_scale <= 1                 error in ["cuda_oom", "host_oom"]
  message ~ "CUDA out of memory"                            fields.root_cause == true
  collective.seq > 10        event == "step"                exitcode < 0
  fields.reserved_unallocated_gib >= @fields.tried_gib      (a value may name another field with @)

`is` tests: finite, nonfinite, nan, inf, none, set, true, false. `~` is a regex search (the
`regex` module, with a time limit, so a user's pattern cannot hang a run). A condition is a
string, a list of strings (all must hold), or a table {all = [...], any = [...]}.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Optional

import regex

from nanscope.errors import SignatureError

Pred = Callable[[Any], bool]
REGEX_TIMEOUT_S = 0.25

_EXPR = re.compile(r"^\s*(?P<field>[A-Za-z_][\w.]*)\s+(?P<op>is not|is|==|!=|<=|>=|<|>|!~|~|not in|in)\s+(?P<value>.+?)\s*$")
_IS = {"finite", "nonfinite", "nan", "inf", "none", "set", "true", "false"}
FIELDS = {
    "event", "framework", "rank", "step", "text", "loss", "grad_norm", "lr", "loss_scale", "skipped",
    "nan_iters", "skipped_iters", "skipped_total", "tokens_per_s", "running", "waiting", "swapped",
    "preemptions", "kv_cache_usage", "prompt_tps", "generation_tps", "origin", "epoch", "action", "old_scale", "new_scale",
    "rank_is_printer_only", "error", "message", "exc_type", "exitcode", "signal", "warning",
    "collective", "fields", "raw_fields", "fingerprint",
}


class RegexTimeout(Exception):
    pass


REGEX_TIMEOUTS_BEFORE_GIVING_UP = 3  # per pattern and run: then its searches answer "unknown" at once
TIMED_OUT: list = []  # (pattern, event) of each search that ran out of time; the engine drains it
_RUN = [0]


def new_run() -> None:
    """A new diagnosis: patterns that gave up in an earlier one (same process) search again."""
    _RUN[0] += 1
    TIMED_OUT.clear()


def _getter(path: str) -> Callable[[Any], Any]:
    head, _, rest = path.partition(".")
    if head not in FIELDS:
        raise SignatureError(f"unknown field '{head}' (known: {', '.join(sorted(FIELDS))})")
    if head == "event":
        return lambda ev: ev.kind
    parts = rest.split(".") if rest else []
    if not parts:  # the hot path: a plain field
        return lambda ev: getattr(ev, head, None)

    def get(ev: Any) -> Any:
        v = getattr(ev, head, None)
        for p in parts:
            if v is None:
                return None
            v = v.get(p) if isinstance(v, dict) else getattr(v, p, None)
        return v

    return get


def _literal(text: str) -> Any:
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        return [_literal(x) for x in _split_list(inner)] if inner else []
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        raise SignatureError(f"cannot read value {t!r}: quote strings, e.g. \"{t}\"") from None


def _split_list(s: str) -> list[str]:
    out, cur, q = [], "", None
    for ch in s:
        if q:
            cur += ch
            if ch == q:
                q = None
        elif ch in "\"'":
            q = ch
            cur += ch
        elif ch == ",":
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def _num(v: Any) -> bool:
    t = type(v)
    return t is float or t is int or (t is not bool and isinstance(v, (int, float)))


def compile_expr(expr: str) -> Pred:
    m = _EXPR.match(expr)
    if m is None:
        raise SignatureError(f"cannot read condition {expr!r}: expected FIELD OP VALUE, e.g. 'loss is nonfinite'")
    get = _getter(m.group("field"))
    op, raw = m.group("op"), m.group("value").strip()
    if op in ("is", "is not"):
        what = raw.lower()
        if what not in _IS:
            raise SignatureError(f"'{op}' takes one of {', '.join(sorted(_IS))}, not {raw!r}")
        test = _is_test(what)
        if op == "is":
            return lambda ev: test(get(ev))
        return lambda ev: not test(get(ev))
    if op in ("~", "!~"):
        pat = _literal(raw)
        if not isinstance(pat, str):
            raise SignatureError(f"'{op}' takes a quoted regex, not {raw!r}")
        try:
            rx = regex.compile(pat)
        except regex.error as e:
            raise SignatureError(f"bad regex {pat!r}: {e}") from None

        tries = [0, 0]  # (run, time-outs in that run)

        def search(ev: Any) -> Optional[bool]:
            """True / False, or None when unknown: the search ran out of time on this line (noted
            in TIMED_OUT with the line, and the line is no match either way: `~` and `!~` both
            answer False), or the pattern gave up in this run. A time-out never stops the lines
            after it from being searched."""
            v = get(ev)
            if v is None:
                return False
            if tries[0] != _RUN[0]:
                tries[:] = [_RUN[0], 0]
            if tries[1] >= REGEX_TIMEOUTS_BEFORE_GIVING_UP:
                return None
            try:
                return rx.search(str(v), timeout=REGEX_TIMEOUT_S) is not None
            except TimeoutError:
                tries[1] += 1
                TIMED_OUT.append((pat, ev))
                return None

        if op == "~":
            return lambda ev: search(ev) is True
        return lambda ev: search(ev) is False
    if raw.startswith("@"):
        other = _getter(raw[1:])
        if op not in ("==", "!=", "<", "<=", ">", ">="):
            raise SignatureError(f"'{op}' cannot compare with a field reference")
        pyop = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
                "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}[op]

        def compare_fields(ev: Any) -> bool:
            a, b = get(ev), other(ev)
            if op in ("==", "!="):
                return pyop(a, b)
            return _num(a) and _num(b) and pyop(float(a), float(b))

        return compare_fields
    value = _literal(raw)
    if op in ("in", "not in"):
        if not isinstance(value, list):
            raise SignatureError(f"'{op}' takes a list, e.g. [\"a\", \"b\"], not {raw!r}")
        vals = value
        return (lambda ev: get(ev) in vals) if op == "in" else (lambda ev: get(ev) not in vals)
    if op == "==":
        return lambda ev: get(ev) == value
    if op == "!=":
        return lambda ev: get(ev) != value
    if not _num(value):
        raise SignatureError(f"'{op}' compares numbers, not {raw!r}")
    cmp = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}[op]

    def compare(ev: Any) -> bool:
        v = get(ev)
        return _num(v) and cmp(float(v), float(value))

    return compare


def _is_test(what: str) -> Callable[[Any], bool]:
    isfinite = math.isfinite
    if what == "finite":
        return lambda v: v is not None and _num(v) and isfinite(v)
    if what == "nonfinite":
        return lambda v: v is not None and _num(v) and not isfinite(v)
    if what == "nan":
        return lambda v: _num(v) and math.isnan(v)
    if what == "inf":
        return lambda v: _num(v) and math.isinf(v)
    if what == "none":
        return lambda v: v is None
    if what == "set":
        return lambda v: v is not None
    if what == "true":
        return lambda v: v is True
    return lambda v: v is False


def _all(preds: list) -> Pred:
    """Chained `and` without a generator per call: this runs for every event of every machine."""
    if not preds:
        return lambda ev: True
    f = preds[0]
    for g in preds[1:]:
        f = (lambda a, b: lambda ev: a(ev) and b(ev))(f, g)
    return f


def _any(preds: list) -> Pred:
    f = preds[0]
    for g in preds[1:]:
        f = (lambda a, b: lambda ev: a(ev) or b(ev))(f, g)
    return f


def compile_condition(cond: Any) -> Pred:
    """A string, a list (all), or a table with `all` and/or `any` lists."""
    if cond is None:
        return lambda ev: True
    if isinstance(cond, str):
        return compile_expr(cond)
    if isinstance(cond, list):
        return _all([compile_condition(c) for c in cond])
    if isinstance(cond, dict):
        unknown = set(cond) - {"all", "any"}
        if unknown:
            raise SignatureError(f"a condition table takes 'all' and 'any', not {', '.join(sorted(unknown))}")
        alls = [compile_condition(c) for c in cond.get("all", [])]
        anys = [compile_condition(c) for c in cond.get("any", [])]
        if not alls and not anys:
            raise SignatureError("empty condition table")
        if not anys:
            return _all(alls)
        return _all(alls + [_any(anys)])
    raise SignatureError(f"a condition is a string, a list or a table, not {type(cond).__name__}")


def required_values(cond: Any, name: str) -> Optional[frozenset]:
    """The values field `name` must hold for `cond` to hold (`error == 'x'`, `error in [...]`, and
    what all / any of them make), or None when the condition does not pin it. The engine gives an
    event only to the machines whose condition its value can satisfy."""
    if isinstance(cond, str):
        m = _EXPR.match(cond)
        if m is None or m.group("field") != name or m.group("value").startswith("@"):
            return None
        op, value = m.group("op"), _literal(m.group("value").strip())
        if op == "==" and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return frozenset([value])
        if op == "in" and isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
            return frozenset(value)
        return None
    if isinstance(cond, list):
        cond = {"all": cond}
    if not isinstance(cond, dict):
        return None
    got: Optional[frozenset] = None
    for part in cond.get("all", []):
        r = required_values(part, name)
        if r is not None:
            got = r if got is None else got & r
    anys = cond.get("any", [])
    if anys:
        parts = [required_values(c, name) for c in anys]
        if all(r is not None for r in parts):
            union = frozenset().union(*parts)  # type: ignore[arg-type]
            got = union if got is None else got & union
    return got


# --- the same conditions over a StepBatch (numpy masks) ------------------------------------------

VPred = Callable[[Any], Any]  # StepBatch -> numpy bool array, or None: evaluate row by row
_CONSTANT_FOR_BATCH = {"event", "framework", "rank", "origin"}
_STEP_COLUMNS = {"loss", "grad_norm", "lr", "loss_scale", "tokens_per_s", "epoch", "step"}
# StepEvent fields a native batch never sets, and other events' fields: None on every row
# (raw_fields are strings: a scalar predicate never sees them as numbers, so they stay row by row)
_NONE_FOR_BATCH = FIELDS - _STEP_COLUMNS - _CONSTANT_FOR_BATCH - {"text", "raw_fields"}
_SOMETIMES_SET = {"skipped", "nan_iters", "skipped_iters", "skipped_total"}  # StepBatch.unset says
_COUNT_COLUMNS = {"nan_iters", "skipped_iters", "skipped_total"}  # numbers, a column where set


class _Standin:
    """One row's constant fields (event kind, framework, rank, origin) for a scalar predicate."""

    kind = "step"

    def __init__(self, batch: Any):
        self.framework = batch.framework
        self.rank = batch.rank
        self.origin = batch.origin


def compile_vector(cond: Any, leaf: Optional[Callable[[str], VPred]] = None) -> VPred:
    """compile_condition for a whole StepBatch at once: a numpy bool mask per call, the same
    answer row by row as the scalar predicate on that row's StepEvent; None where it cannot say
    (a regex, a text field): the caller then evaluates the rows one by one. `leaf` compiles one
    FIELD OP VALUE (for another kind of batch)."""
    leaf = leaf or _vexpr
    if cond is None:
        return lambda b: _np().ones(len(b), dtype=bool)
    if isinstance(cond, str):
        return leaf(cond)
    if isinstance(cond, list):
        return _vall([compile_vector(c, leaf) for c in cond])
    alls = [compile_vector(c, leaf) for c in cond.get("all", [])]
    anys = [compile_vector(c, leaf) for c in cond.get("any", [])]
    if not anys:
        return _vall(alls)
    return _vall(alls + [_vany(anys)])


def compile_rows(cond: Any) -> VPred:
    """compile_condition for a MetricsRows (nanscope/metricsrows.py) at once: the same answer as
    the scalar predicate on each row's event, or None (row by row)."""
    return compile_vector(cond, _rexpr)


def _np():
    import numpy

    return numpy


def _vall(preds: list) -> VPred:
    # Stops at the first part that holds on no row: the rest cannot change the answer. A part the
    # batch cannot answer (a framework that differs between its rows) does not stop the others: if
    # they rule every row out, the batch still never goes row by row.
    def f(b: Any) -> Any:
        out = _np().ones(len(b), dtype=bool)
        unknown = False
        for p in preds:
            m = p(b)
            if m is None:
                unknown = True
                continue
            out &= m
            if not out.any():
                return out
        return None if unknown else out

    return f


def _vany(preds: list) -> VPred:
    def f(b: Any) -> Any:
        out = _np().zeros(len(b), dtype=bool)
        for p in preds:
            m = p(b)
            if m is None:
                return None
            out |= m
        return out

    return f


def _parts(expr: str) -> tuple:
    """(the scalar predicate, field path, operator, raw value) of FIELD OP VALUE (validated)."""
    scalar = compile_expr(expr)
    m = _EXPR.match(expr)
    assert m is not None
    return scalar, m.group("field"), m.group("op"), m.group("value").strip()


def _vtext(op: str, raw: str) -> VPred:
    """text ~ / !~ REGEX over a batch's lines in one RE2 pass (native rows are printable ASCII, where
    RE2 and the regex module agree; a line holding a \r, an HF bar before its dict, is searched in
    its last piece, the event's text); None (row by row) for a pattern RE2 cannot take or a batch
    without its lines at hand."""
    pat = _literal(raw)

    def f(b: Any) -> Any:
        if not isinstance(pat, str):
            return None
        cache = _text_cache(b)  # (several machines ask the same batch the same pattern)
        got = cache.get(pat, False)
        if got is False:
            got = cache[pat] = _search_lines(b, cache, pat)
        if got is None:
            return None
        return got if op == "~" else ~got

    return f


def _text_cache(b: Any) -> dict:
    cache = getattr(b, "_text_hits", None)
    if cache is None:
        cache = {}
        try:
            b._text_hits = cache
        except AttributeError:  # (a stand-in without attributes: no cache)
            pass
    return cache


def _search_lines(b: Any, cache: dict, pat: str) -> Any:
    """Which of the batch's lines `pat` finds something in (a bool array), or None. A line holding
    a \r (an HF bar before its dict) is judged on its last piece: only the lines the whole-line
    search hits are cut and searched again (cutting every line cost 20x the search); a pattern with
    an anchor, which a later piece can match alone, searches every line's last piece."""
    arr = cache.get("\0lines", False)
    if arr is False:
        arr = cache["\0lines"] = _batch_lines(b)
        if arr is not None:
            import pyarrow.compute as pc

            cache["\0cr"] = pc.any(pc.match_substring(arr, "\r")).as_py()
    if arr is None:
        return None
    import numpy as np
    import pyarrow.compute as pc

    try:
        if cache.get("\0cr") and ("^" in pat or "\\A" in pat):  # (a match in the last piece only)
            last = cache.get("\0last")
            if last is None:
                last = cache["\0last"] = pc.replace_substring_regex(arr, "^.*\r", "", max_replacements=1)
            return pc.match_substring_regex(last, pat).to_numpy(zero_copy_only=False)
        got = pc.match_substring_regex(arr, pat).to_numpy(zero_copy_only=False)
        if cache.get("\0cr"):
            at = np.flatnonzero(got)
            if len(at):
                sub = arr.take(at)
                cr = pc.match_substring(sub, "\r").to_numpy(zero_copy_only=False)
                if cr.any():
                    at, sub = at[cr], sub.filter(cr)
                    last = pc.replace_substring_regex(sub, "^.*\r", "", max_replacements=1)
                    got = got.copy()
                    got[at] = pc.match_substring_regex(last, pat).to_numpy(zero_copy_only=False)
        return got
    except Exception:  # noqa: BLE001 - RE2 refuses the pattern (a look-around): row by row
        return None


def _batch_lines(b: Any) -> Any:
    """A StepBatch's lines as one Arrow binary array (a native batch's, its events' texts, or its
    parts'), or None."""
    parts = getattr(b, "parts", None)
    if parts is not None:
        got = [_batch_lines(q) for q in parts]
        if any(x is None for x in got):
            return None
        import pyarrow as pa

        return pa.concat_arrays(got) if len(got) > 1 else got[0]
    evs = getattr(b, "evs", None)
    if evs is not None:  # the per-line path's events: their texts, where RE2 reads them as `regex` does
        texts = [str(e.text).encode("utf-8", "replace") for e in evs]
        if not all(t.isascii() for t in texts):
            return None
        import pyarrow as pa

        return pa.array(texts, pa.binary())
    texts = getattr(b, "texts", None)
    if texts is None or not hasattr(texts, "arr"):
        return None
    arr = texts.arr if texts.idx is None else texts.arr.take(texts.idx)
    return arr


def _vexpr(expr: str) -> VPred:
    scalar, path, op, raw = _parts(expr)  # (the scalar: the answer for constant fields)
    head = path.partition(".")[0]
    if path == "text" and op in ("~", "!~"):
        return _vtext(op, raw)
    if raw.startswith("@"):
        return _vfields(path, op, raw[1:])
    if head in _CONSTANT_FOR_BATCH or head in _NONE_FOR_BATCH:

        ctest = _column_test(op, raw) if path in _COUNT_COLUMNS else None

        def constant(b: Any) -> Any:
            if head in _SOMETIMES_SET and head not in b.unset:
                # a counter this batch read (DeepSpeed's skipped=K, Megatron's skipped iterations)
                return _on_column(b, path, ctest) if ctest is not None else None
            if (head == "framework" and b.framework is None) or (head == "origin" and b.origin is None):
                parts = getattr(b, "parts", None)  # a joined batch: each part may be one framework's
                if parts is None:
                    return None  # not the same on every row: row by row
                got = [constant(q) for q in parts]
                return None if any(g is None for g in got) else _np().concatenate(got)
            return _np().full(len(b), bool(scalar(_Standin(b))))

        return constant
    test = _column_test(op, raw) if path in _STEP_COLUMNS else None
    if test is None:
        return lambda b: None
    return lambda b: _on_column(b, path, test)


def _vfields(path: str, op: str, other: str) -> VPred:
    """FIELD OP @OTHER over a StepBatch, as compare_fields answers it row by row: an order test
    is false on a row where either side is not a number; == / != on two fields None on every row
    compare None with None. Other cases (a text, a constant field): None, row by row."""
    import operator

    def none_everywhere(b: Any, f: str) -> bool:
        h = f.partition(".")[0]
        return f == h and h in _NONE_FOR_BATCH and (h not in _SOMETIMES_SET or h in b.unset)

    def column(b: Any, f: str) -> Any:
        if f in _STEP_COLUMNS or (f in _COUNT_COLUMNS and f not in b.unset):
            return b.col(f)
        return None

    cmp = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}.get(op)

    def f(b: Any) -> Any:
        np = _np()
        if cmp is None:
            if op in ("==", "!=") and none_everywhere(b, path) and none_everywhere(b, other):
                return np.full(len(b), op == "==")
            return None
        if none_everywhere(b, path) or none_everywhere(b, other):
            return np.zeros(len(b), dtype=bool)
        x, y = column(b, path), column(b, other)
        if x is None or y is None:
            return None
        with np.errstate(invalid="ignore"):
            return x[1] & y[1] & cmp(x[0], y[0])

    return f


def _rexpr(expr: str) -> VPred:
    """One condition over a MetricsRows: a field every row has the same (answered on row 0's
    event), a column the reader read, or None (a text, an origin, a regex, another field)."""
    scalar, path, op, raw = _parts(expr)
    other = raw[1:] if raw.startswith("@") else None
    test = _column_test(op, raw)

    def f(rows: Any) -> Any:
        how = rows.vary(path)
        if how == "same" and op not in ("~", "!~") and (other is None or rows.vary(other) == "same"):
            return _np().full(len(rows), bool(scalar(rows.event(0))))
        if how == "column" and test is not None:
            return _on_column(rows, path, test)
        return None

    return f


def _column_test(op: str, raw: str) -> Optional[Callable]:
    """test(values, present) -> mask: FIELD OP VALUE on a numeric column, as the scalar predicate
    answers it on each row's number (or None: not on a column)."""
    if op in ("~", "!~") or raw.startswith("@"):
        return None
    if op in ("is", "is not"):
        test = _vis(raw.lower())
        return test if op == "is" else lambda v, p: ~test(v, p)
    value = _literal(raw)
    if isinstance(value, bool) or (isinstance(value, list) and any(isinstance(x, bool) for x in value)):
        return None  # True == 1.0 in Python: leave these to the scalar path

    if op in ("==", "!="):
        def eq(v: Any, p: Any) -> Any:
            np = _np()
            if value is None:
                return ~p
            if not _num(value):
                return np.zeros(len(p), dtype=bool)
            return p & (v == float(value))

        return eq if op == "==" else lambda v, p: ~eq(v, p)
    if op in ("in", "not in"):
        nums = [float(x) for x in value if _num(x)]
        has_none = any(x is None for x in value)

        def isin(v: Any, p: Any) -> Any:
            np = _np()
            out = p & np.isin(v, nums) if nums else np.zeros(len(p), dtype=bool)
            return out | ~p if has_none else out

        return isin if op == "in" else lambda v, p: ~isin(v, p)
    limit = float(value)
    import operator

    cmp = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]

    def compare(v: Any, p: Any) -> Any:
        with _np().errstate(invalid="ignore"):
            return p & cmp(v, limit)

    return compare


def _on_column(b: Any, path: str, test: Callable) -> Any:
    got = b.col(path)
    if got is None:
        return None
    return test(*got)


def _vis(what: str) -> Callable:
    def t(v: Any, p: Any) -> Any:
        np = _np()
        if what == "finite":
            return p & np.isfinite(v)
        if what == "nonfinite":
            return p & ~np.isfinite(v)
        if what == "nan":
            return p & np.isnan(v)
        if what == "inf":
            return p & np.isinf(v)
        if what == "none":
            return ~p
        if what == "set":
            return p.copy()
        return np.zeros(len(p), dtype=bool)  # numbers are never `true` / `false`

    return t
