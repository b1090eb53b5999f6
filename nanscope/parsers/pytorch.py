"""Plain PyTorch training scripts: the step lines people print, and PyTorch's own warnings.

Step lines have no fixed template, so this parser reads `key value`, `key=value` and `key: value`
pairs and maps common key names onto the event fields. A line is a step line only when it has a
loss and a step counter (or a loss with a grad norm / lr / scale), so prose that mentions a loss
is not one. Examples, all seen in real scripts:
  step 12 | loss nan | grad_norm 0.9 | lr 1.0e-03 | scale 32768.0
  step=12, loss=2.3012, grad_norm=0.9134, lr=0.001
  Step 12: loss: nan
  iter 120: loss 4.2345, time 12.34ms, mfu 1.20%          (nanoGPT)
  Epoch 1 Step 12 Loss 2.3
  Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.300024             (pytorch/examples mnist: its own rule)
  epoch: 3451 loss: nan                   (a line of nothing but pairs: the epoch is the counter)
  ... | E6 iter[ 14/ 15] | [Loss] nan | [exp] ./exp/car | [step]   104 | ...   (bracketed keys: own rule)
  100000 | loss nan | lr 0.000000e+00 | 2006.12ms | mfu 1.68%
                                          (llama2.c train.py and its copies: `f"{iter_num} | loss {lossf:.4f} |
                                          lr {lr:e} | {dt*1000:.2f}ms | mfu ..."`: a bare leading count
                                          before a `|` is the step)
  [2018-11-26 15:06:01,481 INFO] Step 5650/50000; acc:   0.19; ppl:   nan; xent:  nan; lr: 0.00070; ...
                                          (OpenNMT-py onmt/utils/statistics.py Statistics.output: the loss is
                                          `xent`, the cross-entropy; `ppl` is exp(xent))
  333 154 Loss=nan Time=0.040             (`print("%d %d Loss=%.3f Time=%.3f" % (epoch, cnt, ...))`,
                                          Learning-to-See-in-the-Dark and its forks: bare counts, then
                                          nothing but pairs; two counts are epoch and batch, and the
                                          batch restarts each epoch, so the line is numbered in order)
  2020-09-22 05:48:01,435-INFO: iter: 760, lr: 0.000500, 'loss_xy': 'nan', ..., 'loss': 'nan', time: 32.612
                                          (PaddleDetection 0.x: the stats' keys and values repr-quoted; own rule)
  2018-03-23 15:40:22,720:INFO: train loss:nan
                                          (`logger.info("train loss:{}".format(loss))` under a logging
                                          stamp: a record that is a loss and nothing else is a step line;
                                          it has no counter, its place in the log orders it)
  cls:nan, loc:nan, reg:nan, loss: nan    (Point-GNN's train.py: a record of nothing but three or more pairs,
                                          the loss among them, is a step line without a counter)
  BMN training loss(epoch 0): tem_loss: 1.184, pem class_loss: 0.458, pem reg_loss: 0.024, total_loss: 1.883
                                          (the loss next to two or more other losses, its components: a
                                          record of losses, not prose; the epoch is read when it is there)
  Steps desc_loss det_loss train_accuracy d_pos d_neg time memory
  9753 nan nan 0.00 nan nan 1698.001 16280.8.
                                          (D3Feat / KPConv's column table: a header of names, a step column
                                          first and a loss column, then rows of bare numbers: own rules)
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from nanscope.model import StepEvent, WarningEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float, to_int

# A non-finite value may carry Lightning's padding (its progress bar's Tqdm.format_num pads every float to five
# characters: nan -> `nan.0`, inf -> `inf.0`, -inf -> `-inf.`) or a sentence's full stop (`Training Loss: nan.`).
NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?:nan|inf(?:inity)?)(?:\.0?)?)"
KEY = r"grad[ _]norm|loss[ _]scale|lm[ _]loss|train[ _]loss|[A-Za-z_][\w./]*"
SEP = r"[ \t]*[:=][ \t]*|[ \t]+"
PAIR = LazyPattern(rf"(?<![\w./])(?P<key>{KEY})(?:{SEP})(?P<val>{NUM})(?![\w.])", re.I)

STEP_KEYS = {"step", "steps", "iter", "iters", "iteration", "global_step", "it", "batch"}
LOSS_KEYS = {"loss", "train_loss", "train loss", "lm loss", "lm_loss", "total_loss", "loss/train", "train/loss", "xent"}
GRAD_KEYS = {"grad_norm", "grad norm", "gnorm", "grad_norm/total", "total_norm", "gradnorm", "norm"}
LR_KEYS = {"lr", "learning_rate", "learning-rate"}
SCALE_KEYS = {"scale", "loss_scale", "loss scale", "grad_scale", "lossscale"}
TPS_KEYS = {"tps", "tokens/s", "tok/s", "tokens_per_s", "tokens_per_sec", "throughput"}
EPOCH_KEYS = {"epoch"}
_CLASSES = (("loss", LOSS_KEYS), ("step", STEP_KEYS), ("grad_norm", GRAD_KEYS), ("lr", LR_KEYS),
            ("loss_scale", SCALE_KEYS), ("tokens_per_s", TPS_KEYS), ("epoch", EPOCH_KEYS))


def norm_key(key: str) -> str:
    return key.lower().replace("-", "_")


def classify(keys: Sequence[str], only_pairs: bool = False) -> Optional[dict[str, int]]:
    """field -> index into `keys` (normalized, first occurrence of each, in line order), or None
    when the line is not a step line: it needs a loss, and a step counter or a grad norm / lr /
    scale next to it, so prose that mentions a loss is not one. A line that is nothing but pairs
    (`only_pairs`) may count epochs instead of steps (`epoch: 12 loss: 0.21`)."""
    out: dict[str, int] = {}
    for i, key in enumerate(keys):
        for fld, names in _CLASSES:
            if key in names:
                out.setdefault(fld, i)
                break
    if "loss" not in out:
        return None
    counters = {"step", "grad_norm", "lr", "loss_scale"} | ({"epoch"} if only_pairs else set())
    if not (counters & out.keys()):
        return None
    return out


_PAIRS_ONLY_REST = LazyPattern(r"[\s,;|]*")
# bare counts at the start of a line, before a `|` column or straight before the first key
_LEAD = LazyPattern(r"^[ \t]*(?P<a>\d+)(?:[ \t]+(?P<b>\d+))?[ \t]*(?:(?P<bar>\|)[ \t]*)?(?=[A-Za-z])")


def only_pairs(text: str) -> bool:
    """Nothing but key/value pairs and separators on the line."""
    return _PAIRS_ONLY_REST.fullmatch(PAIR.sub("", text)) is not None


# A Python logging stamp in front of a record: asctime (`%Y-%m-%d %H:%M:%S,mmm`, optionally in brackets), then
# optionally the levelname and a logger name, joined by the `:`, ` - `, ` | ` or spaces people put in their formats:
# `2018-03-23 15:40:22,720:INFO: `, `2021-08-07 02:16:27 - __main__ - INFO - `, `[2024-01-02 10:00:00] INFO: `.
# Read piecewise (a stamp, then at most three words) so no pattern repeats whitespace next to another.
_LOG_STAMP = LazyPattern(r"\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?")
_STAMP_WORD = LazyPattern(r"\[?(?:DEBUG|INFO|WARNING|WARN)\]?(?=[\s:|-])|[A-Za-z_][\w.]{0,63}(?=[ \t]+-[ \t])")
_STAMP_SEP = " \t:|-"


def _after_stamp(text: str) -> Optional[str]:
    """The message of a record that starts with a logging stamp, or None when the line has no stamp."""
    text = text.lstrip()
    m = _LOG_STAMP.match(text)
    if m is None:
        return None
    rest = text[m.end():]
    for _ in range(3):
        rest = rest.lstrip(_STAMP_SEP)
        w = _STAMP_WORD.match(rest)
        if w is None:
            break
        rest = rest[w.end():]
    return rest.lstrip(_STAMP_SEP)


_NUMBERED_LOSS = LazyPattern(r"loss_?\d{1,2}")
# A label padded to a column before its colon, `LOSS     :  nan` (speech-recognition-primer's
# `print("LOSS     : ", loss)` under `print("Epoch    : ", epoch)`): a script's aligned print of one value a line,
# not prose (`the loss: nan`) and not a config dump (YAML and INI put no blanks before the colon).
# wandb's run summary at the end of a run (wandb_run.py's footer: `Run summary:`, then one `{key:>{width}} {value}`
# row per summary key behind the printer's `wandb: ` prefix): `wandb:     loss nan`. The history rows above it hold
# sparklines, not numbers, so only the summary's last values are read.
_WANDB_ROW = LazyPattern(r"^[ \t]{0,16}wandb:[ \t]{1,64}")
_ALIGNED_LABEL = LazyPattern(r"^[ \t]{0,16}[A-Za-z_]\w{0,63}[ \t]{2,32}:")


def _loss_record(text: str, keys: Sequence[str]) -> Optional[dict[str, int]]:
    """{"loss": 0} for a logging record whose whole message is one loss pair (`train loss:nan`), or a line that
    is nothing but one numbered loss (`loss3  : 977.22`, VT-ADL's `print(' loss3  :', loss3.item())`: scripts
    that print their losses one a line number them) or one loss under a label padded to a column
    (`LOSS     :  nan`), or a row of wandb's run summary (`wandb:     loss nan`), else None."""
    if len(keys) != 1:
        return None
    if _NUMBERED_LOSS.fullmatch(keys[0]) and only_pairs(text):
        return {"loss": 0}
    if keys[0] not in LOSS_KEYS:
        return None
    if _ALIGNED_LABEL.match(text) and only_pairs(text):
        return {"loss": 0}
    rest = _after_stamp(text)
    if rest is None:
        w = _WANDB_ROW.match(text)
        rest = text[w.end():] if w is not None else None
    if rest is None or not only_pairs(rest):
        return None
    return {"loss": 0}


def _loss_components(text: str, keys: Sequence[str]) -> Optional[dict[str, int]]:
    """{"loss": i} for a record of several losses with no counter: the loss and two or more other pairs named
    as losses (`tem_loss: nan, pem class_loss: nan, ..., total_loss: nan`), or a line of nothing but three or
    more pairs, the loss among them (`cls:nan, loc:nan, reg:nan, loss: nan`); else None. Prose names a loss
    once, it does not list its values."""
    at = next((i for i, k in enumerate(keys) if k in LOSS_KEYS), None)
    if at is None:
        return None
    others = sum(1 for i, k in enumerate(keys) if i != at and "loss" in k)
    if others >= 2 or (len(keys) >= 3 and only_pairs(text)):
        return {"loss": at}
    return None


@rule("step-line", ("loss", "Loss", "LOSS", "xent:"), PAIR.pattern, re.I)
def _step(m: "re.Match[str]", rec, state):
    return _step_from(rec.text, rec, state)


# A stats dict printed with repr-quoted keys and values: PaddleDetection 0.x's tools/train.py
# (`logger.info("iter: {}, lr: {:.6f}, {}, eta: {}".format(it, lr, strs, eta))`, the stats' keys and values
# formatted as strings), e.g. `2020-09-22 05:48:01,435-INFO: iter: 760, lr: 0.000500, 'loss_xy': 'nan', ...,
# 'loss': 'nan', time: 32.612, eta: 3:59:09`. The quotes are dropped and the line read as any step line.
_QUOTED_PAIR = LazyPattern(rf"'(?P<key>[A-Za-z_][\w./]*)': '(?P<val>{NUM})'", re.I)


@rule("quoted-pairs", ("': '",), _QUOTED_PAIR.pattern, re.I)
def _quoted_pairs(m: "re.Match[str]", rec, state):
    return _step_from(_QUOTED_PAIR.sub(r"\g<key>: \g<val>", rec.text), rec)


# A meter's value printed with its running average in parentheses (maskrcnn_benchmark's and torchvision's
# MetricLogger: `loss: 23.3687 (nan)`, median then global average; AverageMeter: `Loss 2.13 (nan)`): an average
# is non-finite only once a non-finite value entered it, so the loss went non-finite by the first such line (a global
# average stays nan after a step the loss scaler skipped, so only the first one is news: later lines give their value).
# The flag stays in the stream's state to the end, so on such a log a --jobs piece's overrun never meets the next
# piece's state and reads on to the end of the file: still exact, only not split (pieces.py).
_AVG_NONFINITE = LazyPattern(r"[ \t]{0,8}\([ \t]{0,4}(?P<avg>[-+]?(?:nan|inf))[ \t]{0,4}\)", re.I)


def _step_from(text: str, rec, state: Optional[dict] = None):
    fields: dict[str, str] = {}
    ends: dict[str, int] = {}
    for p in PAIR.finditer(text):
        key = norm_key(p.group("key"))
        if key not in fields:
            fields[key] = p.group("val")
            ends[key] = p.end()
    keys = list(fields)
    lead = _lead(text)
    where = (classify(keys) or (classify(keys, only_pairs=True) if "epoch" in fields and _epoch_record(text) else None)
             or (classify(keys + ["step"]) if lead is not None else None) or _loss_record(text, keys))
    components = where is None
    if components:
        where = _loss_components(text, keys)
        if where is None:
            return None
    vals = list(fields.values())
    got = {fld: vals[i] for fld, i in where.items() if i < len(vals)}
    if "loss" in where and where["loss"] < len(vals):
        avg = _AVG_NONFINITE.match(text, ends[keys[where["loss"]]])
        if avg is not None and state is not None and not state.get("loss_avg_nonfinite"):
            state["loss_avg_nonfinite"] = True
            got["loss"] = avg.group("avg")
    step = to_int(got.get("step"))
    epoch = to_float(got.get("epoch"))
    if step is None and lead is not None:
        if lead.group("b") is None:
            step = int(lead.group("a"))
        elif epoch is None:
            epoch = float(lead.group("a"))  # epoch and batch: numbered in order
    elif components:
        epoch = to_float(fields.get("epoch"))  # a record of losses: the epoch it is in, not a counter of lines
    elif step is None and not ({"grad_norm", "lr", "loss_scale"} & got.keys()):
        step = to_int(got.get("epoch"))  # the line counts epochs: that number is its logged point
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", step=step, loss=to_float(got["loss"]),
        grad_norm=to_float(got.get("grad_norm")), lr=to_float(got.get("lr")), loss_scale=to_float(got.get("loss_scale")),
        tokens_per_s=to_float(got.get("tokens_per_s")), epoch=epoch, raw_fields=fields,
    )


def _epoch_record(text: str) -> bool:
    """A line of nothing but pairs, or one that opens with its epoch counter (after any logging stamp): the
    per-epoch record scripts print at an epoch's end, `Epoch : 0 finished. Training Loss: nan. Validation
    Loss: nan` (NVlabs/wetectron#83), where the words between the pairs are the record's, not prose."""
    if only_pairs(text):
        return True
    m = PAIR.match((_after_stamp(text) or text).lstrip())
    return m is not None and norm_key(m.group("key")) == "epoch"


def _lead(text: str) -> Optional["re.Match[str]"]:
    """The bare leading count(s) of a step line, when they are its counter: one count before a `|`
    column, or one or two counts before a line of nothing but pairs (see the module docstring)."""
    m = _LEAD.match(text)
    if m is None:
        return None
    if m.group("bar") is not None:
        return m if m.group("b") is None else None
    return m if only_pairs(text[m.end():]) else None


# Keys in brackets, `[Loss] 51566519.44 | [exp] ./exp/0125/car | [step]    89 |` (LION's base_trainer and other
# loguru-style loggers): the same keys, the same two-counter rule.
BRACKET_PAIR = LazyPattern(rf"\[(?P<key>{KEY})\][ \t]*(?:[:=][ \t]*)?(?P<val>{NUM})(?![\w.])", re.I)


@rule("bracket-pairs", ("[Loss]", "[loss]", "[LOSS]"), BRACKET_PAIR.pattern, re.I)
def _bracket_pairs(m: "re.Match[str]", rec, state):
    fields: dict[str, str] = {}
    for p in BRACKET_PAIR.finditer(rec.text):
        fields.setdefault(norm_key(p.group("key")), p.group("val"))
    keys = list(fields)
    where = classify(keys)
    if where is None:
        return None
    vals = list(fields.values())
    got = {fld: vals[i] for fld, i in where.items()}
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", step=to_int(got.get("step")), loss=to_float(got["loss"]),
        grad_norm=to_float(got.get("grad_norm")), lr=to_float(got.get("lr")), loss_scale=to_float(got.get("loss_scale")),
        epoch=to_float(got.get("epoch")), raw_fields=fields,
    )


@rule(
    "examples-train-epoch",
    ("Train Epoch: ",),
    r"Train Epoch: (?P<ep>\d+) \[(?P<n>\d+)/(?P<tot>\d+) \(\s*\d+%\)\]\s+Loss: (?P<loss>" + NUM + r")(?![\w.])",
)
def _train_epoch(m, rec, state):
    # pytorch/examples mnist/main.py (and the many scripts copied from it):
    #   print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(epoch, batch_idx * len(data),
    #         len(train_loader.dataset), 100. * batch_idx / len(train_loader), loss.item()))
    # It prints samples seen, not the batch index (the batch size is not printed): the step counts
    # samples over the epochs, (epoch - 1) * dataset size + samples.
    ep, n, tot = int(m.group("ep")), int(m.group("n")), int(m.group("tot"))
    return StepEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", step=max(ep - 1, 0) * tot + n,
        loss=to_float(m.group("loss")), epoch=float(ep),
    )


@rule("cifar-tutorial", ("] loss: ",), r"^\[(?P<ep>\d+),\s*(?P<i>\d+)\] loss: (?P<loss>" + NUM + r")\s*$", match_start=True)
def _cifar_tutorial(m, rec, state):
    # pytorch/tutorials beginner_source/blitz/cifar10_tutorial.py (and the many scripts copied from it):
    #   print(f'[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 2000:.3f}')   (older: '[%d, %5d] loss: %.3f')
    # The batch count restarts every epoch: the step is the count plus the last count of the epochs before.
    ep, i = int(m.group("ep")), int(m.group("i"))
    if state.get("cifar_epoch") != ep:
        state["cifar_base"] = state.get("cifar_base", 0) + state.get("cifar_last", 0) if "cifar_epoch" in state else 0
        state["cifar_epoch"] = ep
    state["cifar_last"] = i
    return StepEvent(loc=rec.loc, text=rec.text, framework="pytorch", step=state["cifar_base"] + i,
                     loss=to_float(m.group("loss")), epoch=float(ep))


@rule("epoch-bracket-count", ("Epoch:[",),
      r"\bEpoch:\[(?P<ep>\d+)/(?P<eps>\d+)\]\((?P<i>\d+)/(?P<n>\d+)\) loss:(?P<loss>" + NUM + r")(?: lr:(?P<lr>" + NUM + r"))?")
def _epoch_bracket_count(m, rec, state):
    # DLLXW/baby-llama2-chinese pretrain.py / sft.py train_epoch (and the Chinese LLM trainers copied from it):
    #   logger.info('Epoch:[{}/{}]({}/{}) loss:{:.3f} lr:{:.7f} epoch_Time:{}min:'.format(epoch, max_epoch, step,
    #               iter_per_epoch, loss.item(), lr, ...))
    # `epoch` counts from 0 (range(max_epoch)) and `step` restarts each epoch; the script's own global step (its
    # get_lr and checkpoint names) is epoch * iter_per_epoch + step.
    ep, i, n = int(m.group("ep")), int(m.group("i")), int(m.group("n"))
    return StepEvent(loc=rec.loc, text=rec.text, framework="pytorch", step=ep * n + i, loss=to_float(m.group("loss")),
                     lr=to_float(m.group("lr")), epoch=float(ep))


@rule(
    "lr-scheduler-before-optimizer",
    ("lr_scheduler.step()",),
    r"Detected call of `?lr_scheduler\.step\(\)`? before `?optimizer\.step\(\)`?",
)
def _lr_warning(m, rec, state):
    # torch/optim/lr_scheduler.py: printed when the first optimizer step was skipped (e.g. by
    # GradScaler on an overflow) or when the script really calls them in the wrong order.
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", warning="lr_scheduler_before_optimizer",
        message=rec.text,
    )


# lanpa/tensorboardX tensorboardX/x2num.py check_nan, on every value handed to the SummaryWriter (add_scalar,
# add_histogram, ... through make_np): np.sum(array) is NaN or inf. By release: 1.7-1.8 `print('Warning: NaN or Inf
# found in input tensor.')`; 1.9-2.4 `logging.warning(...)` on the root logger (`WARNING:root:NaN or Inf found in
# input tensor.`); 2.5+ the module's logger (`WARNING:tensorboardX.x2num:NaN or Inf found in input tensor.`, or
# the application's format: `WARNING - tensorboardX.x2num - ...`). The writer was given a non-finite value: a NaN
# loss, but as often a NaN grad norm on a step the scaler skipped or the std of a one-element tensor, so the
# warning alone is not the failure; the loss lines say whether the loss itself went non-finite. A tqdm bar glued
# before it (a terminal capture) is read by the bar's own parser, which hands the rest of the line here.
_TBX_NAN = r"NaN or Inf found in input tensor\."


def tensorboard_nonfinite(rec, state) -> list:
    """The event of tensorboardX's warning: once per stream until a few hundred lines pass without it."""
    seen = state.get("tbx_nan")
    state["tbx_nan"] = rec.loc.line
    if seen is not None and rec.loc.line - seen <= 300:
        state["tbx_nan_count"] = state.get("tbx_nan_count", 1) + 1
        return []
    return [WarningEvent(loc=rec.loc, text=rec.text, framework="pytorch", warning="tensorboard_nonfinite",
                         message="NaN or Inf found in input tensor.", fields={"writer": "tensorboardX"})]


@rule("tensorboardx-nonfinite", ("NaN or Inf found in input tensor",), _TBX_NAN)
def _tbx_nan(m, rec, state):
    return tensorboard_nonfinite(rec, state)


@rule(
    "clip-grad-nonfinite",
    ("is non-finite, so it cannot be clipped",),
    r"The total norm of order (?P<p>\S+) for gradients from `parameters` is non-finite",
)
def _clip(m, rec, state):
    # torch/nn/utils/clip_grad.py with error_if_nonfinite=True
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="pytorch", warning="grad_norm_nonfinite", message=rec.text,
    )


# A table of columns: a header line of names (`Steps desc_loss det_loss train_accuracy d_pos d_neg time memory`,
# D3Feat / KPConv's training loop), then one row of bare numbers per logged step (`9753 nan nan 0.00 nan nan
# 1698.001 16280.8.`). The header is a table's when its first column counts steps and another is a loss; a row
# is read against the last such header when it has as many numbers as the header has names. A row of bare
# numbers has no word the prefilter could find it by: the rows read are those with a non-finite value in them
# (`nan`, `inf`), which is what the table can tell that no other line does.
_TABLE_STEP = {"step", "steps", "iter", "iters", "iteration", "iterations", "it", "epoch", "epochs"}
# (one character class each, the names and numbers checked in the builders: no nested repeat)
_TABLE_HEAD = LazyPattern(r"^[ \t]*(?P<h>[A-Za-z][\w./ \t]*)$")
_TABLE_ROW = LazyPattern(r"^[ \t]*(?P<r>\d[\w.+\- \t]*)$")
_TABLE_NAME = LazyPattern(r"[A-Za-z][\w./]*")


@rule("column-table-header", ("loss", "Loss", "LOSS"), _TABLE_HEAD.pattern, match_start=True)
def _table_header(m, rec, state):
    cols = [norm_key(c) for c in m.group("h").split()]
    if len(cols) < 3 or cols[0] not in _TABLE_STEP or not all(_TABLE_NAME.fullmatch(c) for c in cols):
        return None
    loss = next((i for i, c in enumerate(cols) if c in LOSS_KEYS), None)
    if loss is None:
        loss = next((i for i, c in enumerate(cols) if c.endswith("loss") and i), None)
    if loss is None:
        return None
    state["column_table"] = (cols, loss)
    return []


# (the non-finite value as a column: after a blank, never first; an infinity between blanks. A bare `INF` /
# `inf` made every INFO line a candidate, a tenth of a console's lines sent to Python for nothing, and ` inf`
# every `inference` / `info`)
@rule("column-table-row", (" nan", " NaN", " NAN", "\tnan", "\tNaN", " inf ", " -inf ", "\tinf", "\t-inf"),
      _TABLE_ROW.pattern, match_start=True)
def _table_row(m, rec, state):
    table = state.get("column_table")
    if table is None:
        return None
    cols, loss = table
    vals = m.group("r").rstrip().removesuffix(".").split()  # `... 16280.8.`: the paste's full stop
    if len(vals) != len(cols) or to_int(vals[0]) is None or any(to_float(v) is None for v in vals):
        return None
    step = to_int(vals[0])
    epoch = float(step) if step is not None and cols[0].startswith("epoch") else None
    return StepEvent(loc=rec.loc, text=rec.text, framework="pytorch", step=None if epoch is not None else step,
                     loss=to_float(vals[loss]), epoch=epoch, raw_fields=dict(zip(cols, vals)))


PARSER = Parser(
    name="pytorch",
    framework="pytorch",
    priority=90,
    description="plain PyTorch step prints and PyTorch warnings",
    rules=[_lr_warning, _clip, _tbx_nan, _epoch_bracket_count, _train_epoch, _cifar_tutorial, _bracket_pairs, _quoted_pairs,
           _step, _table_header, _table_row],
)
