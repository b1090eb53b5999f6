"""Megatron-LM (and Megatron-DeepSpeed, gpt-neox) training lines, NaN checks and rerun verdicts.

NVIDIA/Megatron-LM megatron/training/training.py `training_log` (was megatron/training.py <= core 0.5),
printed by print_rank_last, so only by the last rank:
  [2024-05-01 12:00:00] iteration       29/    6069 | consumed samples:        14848 | elapsed time per iteration
  (ms): 26813.0 | [throughput per GPU (TFLOP/s/GPU): 412.3 |] learning rate: 5.800000E-05 | global batch size:
  512 | lm loss: 8.716962E-01 | [other losses |] loss scale: 1.0 | [grad norm: 0.852 |] [num zeros: .. |]
  [params norm: .. |] number of skipped iterations:   0 | number of nan iterations:   0 |
  (no timestamp <= core 0.5; '%Y-%m-%d %H:%M:%S.%f' at HEAD; learning rate '{:.3E}' in old releases.)
Megatron-DeepSpeed adds `consumed tokens`, `actual seqlen`, `samples per second`, `TFLOPs`; gpt-neox
(megatron/logging.py) starts with ` samples/sec: X |` and names the loss `lm_loss`. NeMo 2's progress bar
(`Training epoch 0, iteration 120/149 | ... | reduced_train_loss: 1.233`) is trainers.py's (priority 25).

How Megatron prints a NaN loss (training.py, read at HEAD d98e8a64):
  * a non-skipped iteration adds its loss to total_loss_dict; the line prints each loss only
    `if avg >= 0.0`, so a NaN (or negative) average is DROPPED from the line, not printed;
  * a skipped iteration (fp16 loss-scale overflow) adds nothing; it counts in "number of skipped
    iterations", and in "number of nan iterations" only if its loss was NaN/inf;
  * if every iteration of the interval was skipped, the loss is printed as 0/max(1, 0) = 0.000000E+00
    (or absent on the very first interval, before the key exists) -- a placeholder, not a loss;
  * on a skipped fp16 iteration Megatron's own optimizer returns no grad norm (the field is absent);
    `grad norm: nan` means the non-finite gradient went through (bf16/fp32, or DeepSpeed's engine).
So, for a Megatron line without its loss: loss = NaN when `number of nan iterations` > 0, or when no
iteration was skipped and `grad norm` is non-finite or absent; otherwise loss = None with raw_fields
['lm_loss_missing'] = True. A printed 0.0 with skipped iterations > 0 is treated like a missing loss
(raw_fields['lm_loss_all_skipped'] = True). gpt-neox prints every loss (`NAN` included).

Checks before the data-parallel collective (tier-1 evidence for the initiating rank):
  core <= 0.8 (assert): Rank 11: found NaN in local grad norm in backward pass before data-parallel
      communication collective. Device: 3, node: host   /   Rank 0: found NaN in local forward loss calculation. ...
  core/rerun_state_machine.py (validate_result):
      Rank 3, node n, device 3, iteration 5: Unexpected result nan (message='found NaN in local ...')   (mode disabled;
          `iteration -1` under NeMo 2 / ms-swift, whose loops never advance the state machine)
      Unexpected result inf (message='found Inf in local grad norm for bucket #6 ...')   (a paste without the head)
      Unexpected result nan on rank 3 at iteration #3 invocation #2 (message='found NaN in local grad norm for
          bucket #0 in backward pass before data-parallel communication collective')               (rerun enabled)
      message 'Spiky loss' -> WarningEvent loss_spike; 'found unexpected large grads in bucket #b ...' -> large_grads
  Verdicts (log_failure): `Rank r, node n, device d, iteration #i: Possible transient error!!`,
      `...: Possible persistent error!!`, `...: Correct result (but possible Application error) (msg)!`
core/utils.py StragglerDetector.report (rank 0, every log interval; megatron/core/README_STRAGGLER.md):
  [2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | ... | MnEtpt/Rnk: 296.02TF/0 | MxEtpt/Rnk: 297.32TF/8
"""

from __future__ import annotations

import math
import re
from typing import Optional

from nanscope.model import ErrorEvent, ScaleEvent, StepEvent, WarningEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float, to_int
from nanscope.parsers.python import EXC_LINE

FW = "megatron"
_LOSS_KEYS = ("lm loss", "lm_loss")
_FIELD = LazyPattern(r"^\s*(?P<k>[A-Za-z][^:|]*):(?P<v>[^|]*)$")  # k and v are stripped where read
# Megatron-LM v1 (pretrain_gpt2.py, GLM) printed `' {} {:.6E} |'.format(key, avg)` and
# `' loss scale {:.1f} |'`: `lm loss 6.758929E+00 | loss scale 64.0 |`, no colon.
_FIELD_V1 = LazyPattern(r"^\s*(?P<k>[A-Za-z](?:[ ]?[A-Za-z_-])*)\s+(?P<v>[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf|NAN|INF|NaN))\s*$")


def _exc_split(text: str) -> tuple[Optional[str], str]:
    m = EXC_LINE.match(text)
    if m is not None and m.group("msg") is not None:
        return m.group("type"), m.group("msg").strip()
    return None, text.strip()


def _value(v: str):
    f = to_float(v)
    return f if f is not None else v


def _fields(text: str, raw: dict, v1: bool = True) -> None:
    """Megatron's ` key: value |` fields of a piece of a line into raw (first value of a key wins)."""
    for part in text.split("|"):
        f = _FIELD.match(part) or (_FIELD_V1.match(part) if v1 else None)
        if f is not None:
            raw.setdefault(f.group("k").rstrip(), _value(f.group("v").strip()))


def _step(loc, text: str, step: int, raw: dict) -> StepEvent:
    """The StepEvent of one training_log record (its fields in raw)."""
    def num(*keys):
        for k in keys:
            v = raw.get(k)
            if isinstance(v, float):
                return v
        return None

    skipped_iters = to_int(str(raw["number of skipped iterations"])) if "number of skipped iterations" in raw else None
    nan_iters = to_int(str(raw["number of nan iterations"])) if "number of nan iterations" in raw else None
    grad_norm = num("grad norm")
    loss_key = next((k for k in _LOSS_KEYS if k in raw), None)
    loss = num(loss_key) if loss_key else None
    megatron_line = skipped_iters is not None
    if megatron_line:
        all_skipped = loss == 0.0 and bool(skipped_iters)
        if all_skipped:
            raw["lm_loss_all_skipped"] = True
        if loss_key is None or all_skipped:
            nonfinite_grad = grad_norm is not None and not math.isfinite(grad_norm)
            # No loss, nothing skipped and no grad norm at all (Megatron-DeepSpeed under the DeepSpeed
            # engine, whose get_global_grad_norm() may return None): the last rank had the loss and
            # training_log dropped its average, which only a NaN (or a loss <= 0) is
            # (deepspeedai/Megatron-DeepSpeed#434). A finite grad norm beside a missing loss is a rank
            # without losses (forks that print the line on every rank, epfLLM/Megatron-LLM's
            # print_all_nodes: its first pipeline stages): not read as NaN.
            dropped = (loss_key is None and skipped_iters == 0 and not nan_iters and "grad norm" not in raw)
            if (nan_iters or 0) > 0 or (not skipped_iters and nonfinite_grad) or dropped:
                loss = math.nan
            else:
                loss = None
                raw["lm_loss_missing"] = True
    return StepEvent(
        loc=loc, text=text, framework=FW, step=step, loss=loss, grad_norm=grad_norm,
        lr=num("learning rate"), loss_scale=num("loss scale"),
        skipped=(skipped_iters > 0) if skipped_iters is not None else None,
        nan_iters=nan_iters, skipped_iters=skipped_iters,
        tokens_per_s=num("tokens per second", "tokens/s", "tokens per sec"),
        raw_fields=raw,
    )


# training_log ends every record with `number of skipped iterations: N | number of nan iterations: N |`. A
# record that stops after its first fields, with `|` last, was broken over several lines (a terminal or
# log viewer wrapping at a column, a paste reflowed at the `|`s): the head is held, and the lines right
# after it that are nothing but ` key: value |` fields complete it (up to the skipped / nan counters).
_CONT_SPAN = 4
# A continuation starts with one of training_log's own keys (or a loss: `lm loss`, `mtp_1 loss`,
# `load_balancing_loss`) and is nothing but ` key: value |` fields (checked part by part with _FIELD), at
# least one `|` among them.
_LOG_KEY = (r"(?:consumed (?:samples|tokens)|elapsed time per iteration(?: \(ms\))?|throughput per GPU(?: \(TFLOP/s/GPU\))?"
            r"|(?:decoupled )?learning rate|global batch size|loss scale|grad norm|num zeros|params norm"
            r"|number of (?:skipped|nan) iterations|(?:[A-Za-z][\w-]* )?loss|[A-Za-z]\w*_loss)")
_CONTINUATION = r"[ \t]*" + _LOG_KEY + r"[ \t]*:"  # matched at the line's start
_RECORD_END = ("number of skipped iterations", "number of nan iterations")
_STEP_VALUES = ("loss", "grad_norm", "lr", "loss_scale", "skipped", "nan_iters", "skipped_iters", "tokens_per_s", "raw_fields")


@rule(
    "iteration",
    ("iteration",),
    r"\biteration\s+(?P<it>\d+)\s*/\s*(?P<total>\d+)\s*\|",
)
def _iteration(m, rec, state):
    raw: dict = {"train_iters": int(m.group("total"))}
    _fields(rec.text[m.end():], raw)
    for part in rec.text[: m.start()].split("|"):  # gpt-neox puts samples/sec before the iteration
        f = _FIELD.match(part)
        if f is not None and not f.group("k").startswith("["):
            raw.setdefault(f.group("k").rstrip(), _value(f.group("v").strip()))
    ev = _step(rec.loc, rec.text, int(m.group("it")), raw)
    if rec.text.rstrip().endswith("|") and not any(k in raw for k in _RECORD_END) \
            and not any(k in raw for k in _LOSS_KEYS) and "grad norm" not in raw:
        out = _release_record(state)
        state["pending"] = ev  # the head of a record broken over lines: the next lines may complete it
        state["record_line"] = rec.loc.line
        return out
    # A whole record never touches the parser state, so the native lane reads such lines (a head still
    # held when one comes is released by the next continuation, head or the end of the input).
    return ev


def _release_record(state: dict) -> list:
    held = state.pop("pending", None)
    state.pop("record_line", None)
    return [held] if held is not None else []


@rule(
    "iteration-continued",
    ("grad norm", "lm loss", "lm_loss", "loss scale", "learning rate") + _RECORD_END,
    _CONTINUATION,
    match_start=True,
)
def _iteration_continued(m, rec, state):
    if "|" not in rec.text or not all(_FIELD.match(p) for p in rec.text.split("|") if p.strip()):
        return None  # not a line of fields only
    held = state.get("pending")
    if held is None or "record_line" not in state:
        return None
    if rec.loc.line - state["record_line"] > _CONT_SPAN:
        return _release_record(state)
    raw = dict(held.raw_fields or {})
    raw.pop("lm_loss_missing", None)
    _fields(rec.text, raw, v1=False)
    done = _step(held.loc, held.text, held.step, raw)
    for attr in _STEP_VALUES:  # in place: the pending event already has its line, origin and stream
        setattr(held, attr, getattr(done, attr))
    state["record_line"] = rec.loc.line
    if any(k in raw for k in _RECORD_END):
        return _release_record(state)
    return []


# --- NaN checks and rerun state machine ------------------------------------------------------

def _check_kind(message: str) -> tuple[str, str]:
    """(event class, kind) for a validate_result / assert message."""
    if message.startswith("Spiky loss"):
        return "warning", "loss_spike"
    if "unexpected large grads" in message:
        return "warning", "large_grads"
    return "error", "nan_check"


def _where(message: str) -> Optional[str]:
    if "forward loss" in message:
        return "forward_loss"
    if "grad norm" in message:
        return "grad_norm"
    if "large grads" in message:
        return "grads"
    if "Spiky loss" in message:
        return "loss"
    return None


def _check_event(rec, message: str, rank: Optional[int], step: Optional[int], node: Optional[str], device: Optional[int],
                 result: Optional[str]):
    cls, kind = _check_kind(message)
    bucket = re.search(r"bucket #(\d+)", message)
    fields = {"where": _where(message), "check_message": message, "node": node, "device": device,
              "iteration": step, "result": result, "bucket": int(bucket.group(1)) if bucket else None,
              "nonfinite": "Inf" if "found Inf" in message else ("NaN" if "found NaN" in message else None)}
    exc_type, text = _exc_split(rec.text)
    if cls == "warning":
        return WarningEvent(loc=rec.loc, text=rec.text, framework=FW, warning=kind, message=text, rank=rank,
                            step=step, fields=fields)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error=kind, message=text, exc_type=exc_type,
                      rank=rank, step=step, fields=fields)


@rule(
    "rerun-disabled",
    ("Unexpected result",),
    r"Rank (?P<rank>\d+), node (?P<node>\S+), device (?P<dev>\d+), iteration #?(?P<it>-?\d+): "
    r"Unexpected result (?P<result>.+?) \(message='(?P<msg>.*)'\)",
)
def _rerun_disabled(m, rec, state):
    return _check_event(rec, m.group("msg"), int(m.group("rank")), _iteration_of(m.group("it")), m.group("node"),
                        int(m.group("dev")), m.group("result"))


def _iteration_of(it: str) -> Optional[int]:
    """The rerun state machine's current_iteration starts at -1 and only its own training loop
    (should_run_forward_backward) advances it: NeMo 2 / Lightning, ms-swift, slime print
    `iteration -1`, which says nothing about the step."""
    n = int(it)
    return n if n >= 0 else None


@rule(
    "rerun-detected",
    ("Unexpected result",),
    r"Unexpected result (?P<result>.+?) on rank (?P<rank>\d+) at iteration #(?P<it>\d+) invocation #(?P<inv>\d+) "
    r"\(message='(?P<msg>.*)'\)",
)
def _rerun_detected(m, rec, state):
    ev = _check_event(rec, m.group("msg"), int(m.group("rank")), int(m.group("it")), None, None, m.group("result"))
    ev.fields["invocation"] = int(m.group("inv"))
    return ev


@rule(
    "rerun-headless",
    ("Unexpected result",),
    r"Unexpected result (?P<result>[^\s(]+) \(message='(?P<msg>.*)'\)",
)
def _rerun_headless(m, rec, state):
    """The validate_result message whose `Rank r, node n, device d, iteration i: ` head a paste cut
    off (or a wrapper dropped): the check and the value, with no rank of its own."""
    return _check_event(rec, m.group("msg"), None, None, None, None, m.group("result"))


@rule(
    "neox-overflow-monitor",
    ("iterations in a row due to Overflow",),
    r"Skipped (?P<n>\d+) iterations in a row due to Overflow",
)
def _neox_overflow(m, rec, state):
    """EleutherAI/gpt-neox megatron/utils.py OverflowMonitor.check: `raise Exception(f"Skipped
    {self.n} iterations in a row due to Overflow - Exiting training.")`: the fp16 scaler gave up,
    as DeepSpeed's `Current loss scale already at minimum` (action "minimum")."""
    return ScaleEvent(loc=rec.loc, text=rec.text, framework=FW, action="minimum")


@rule(
    "nan-check-assert",
    ("found NaN in local", "found Inf in local"),
    r"Rank (?P<rank>\d+): (?P<msg>found (?:NaN|Inf) in local [^.]*)\.(?: Device: (?P<dev>\d+), node: (?P<node>\S+))?",
)
def _nan_assert(m, rec, state):
    return _check_event(rec, m.group("msg"), int(m.group("rank")), None, m.group("node"), to_int(m.group("dev")), None)


_VERDICTS = (
    ("Possible transient error", "transient"),
    ("Possible persistent error", "persistent"),
    ("Correct result (but possible Application error)", "correct"),
)


@rule(
    "rerun-verdict",
    ("Possible transient error", "Possible persistent error", "Correct result (but possible Application error)",
     "First rerun:"),
    r"Rank (?P<rank>\d+), node (?P<node>\S+), device (?P<dev>\d+), iteration #(?P<it>\d+): (?P<msg>.*)$",
)
def _verdict(m, rec, state):
    msg = m.group("msg")
    verdict = next((v for text, v in _VERDICTS if msg.startswith(text)), None)
    if verdict is None:
        return []  # "First rerun: ..." is a step of the state machine, not its verdict
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="sdc_verdict", message=_exc_split(rec.text)[1],
        rank=int(m.group("rank")), step=int(m.group("it")),
        fields={"verdict": verdict, "node": m.group("node"), "device": int(m.group("dev"))},
    )


_STRAGGLER = LazyPattern(r"(?P<k>M[nx]\w+)/Rnk: (?P<v>[-\d.]+)(?P<u>[A-Za-z%]*)/(?P<r>\d+)")


@rule("straggler", ("MnRtt/Rnk:",), r"MnRtt/Rnk: [-\d.]+(?:[^\W\d]\w*)?/\d+ \| MxRtt/Rnk:")
def _straggler(m, rec, state):
    fields: dict = {}
    for s in _STRAGGLER.finditer(rec.text):
        key = s.group("k").lower()
        fields[key] = float(s.group("v"))
        fields[key + "_rank"] = int(s.group("r"))
    lo, hi = fields.get("mnrtt"), fields.get("mxrtt")
    fields["rtt_ratio"] = round(hi / lo, 4) if lo and hi else None
    fields["slowest_rank"] = fields.get("mxrtt_rank")
    return WarningEvent(loc=rec.loc, text=rec.text, framework=FW, warning="straggler", message=rec.text.strip(),
                        rank=None, fields=fields)


PARSER = Parser(
    name="megatron",
    framework=FW,
    priority=40,
    description="Megatron-LM / Megatron-DeepSpeed / gpt-neox iteration lines, NaN checks, rerun verdicts, straggler reports",
    rules=[_iteration, _iteration_continued, _rerun_disabled, _rerun_detected, _rerun_headless, _neox_overflow, _nan_assert, _verdict,
           _straggler],
)
