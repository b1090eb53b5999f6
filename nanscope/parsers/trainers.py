"""Step lines of trainers whose format the generic pytorch.py parser misses or misreads.

Each rule exists because the generic `key value` reader gets that format wrong (no step, a wrong
loss key, a number cut at a thousands separator) or takes a summary line for a step:
  torchtitan  (torchtitan/components/metrics.py, MetricsProcessor.log; ANSI colours stripped by the reader)
      [rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%
      generic: tps read as 7 (stops at the comma)
  OLMo  (olmo/train.py, Trainer.log_metrics_to_console: a header, then one metric per line)
      ... olmo.train:908  INFO    [step=2/739328,epoch=0]
          optim/total_grad_norm=0.0002
          train/CrossEntropyLoss=1.7872662283480167e-06
      generic: nothing (no loss key it knows)
  fairseq  (fairseq/logging/progress_bar.py SimpleProgressBar / JsonProgressBar, fairseq/trainer.py)
      ... | INFO | train_inner | epoch 145:     21 / 282 loss=3.12, nll_loss=1.209, ..., num_updates=40600, lr=0.000156941, gnorm=0.48, clip=0, loss_scale=32768, ...
      | epoch 001:    200 / 1374 loss=14.351, ppl=20899.56, ..., num_updates=190, lr=4.84525e-06, gnorm=3.901, ..., loss_scale=0.062, ...
      ... | INFO | train_inner | {"epoch": 1, "update": 0.001, "loss": "16.3", ..., "num_updates": "10", "gnorm": "27.354", "loss_scale": "16", ...}
      NOTE: overflow detected, setting loss scale to: 16384.0   (older: `| WARNING: overflow detected, ...`)
      FloatingPointError: Minimum loss scale reached (0.0001). ...
      grad_norm across the workers:  /  rank   0 = nan   (the table of "gradients are inconsistent between workers")
      generic: no step (num_updates is the step), the epoch summaries taken for steps, json missed
  Lightning / NeMo 1 tqdm bar  (lightning/pytorch/callbacks/progress/tqdm_progress.py; postfix = progress-bar metrics)
      Epoch 0:  22%|██▏       | 4/18 [00:17<01:02,  4.47s/it, loss=10.072, v_num=193315]
      Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1, v_num=, reduced_train_loss=3.090, global_step=794.0, consumed_samples=1.63e+6]
      Epoch 12: : 1200it [20:40,  1.03s/it, loss=nan, v_num=0, val_loss=nan.0]     (length unknown, no bar_format)
      Epoch 1: |          | 43/? [00:26<00:00,  1.63it/s, v_num=0]                  (length unknown, BAR_FORMAT)
      generic: never sees them (hf.py's tqdm rule claims bars); tqdm redraws one count several times
      Monitored metric val_loss = nan is not finite. Previous best value was 0.045. Signaling Trainer to stop.
                                   (EarlyStopping's check_finite: the run stops on a non-finite metric)
  NeMo 2  (MegatronProgressBar)
      Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | global_step: 120 | reduced_train_loss: 1.233 | ...
  mmcv / mmengine  (mmcv/runner/hooks/logger/text.py, mmengine/runner/log_processor.py)
      ... - mmdet - INFO - Epoch [3][50/1749]	lr: 2.000e-02, eta: 0:52:33, ..., loss_rpn_cls: 0.2532, ..., loss: 0.7339, grad_norm: 0.0668
      08/03 22:09:24 - mmengine - INFO - Epoch(train)  [1][ 500/2931]  lr: 2.0000e-02  eta: 0:39:15  ...  loss: nan  loss_rpn_cls: nan ...
      generic: no step (the iteration is inside brackets)
  detectron2  Loss became infinite or NaN at iteration=27!      (SimpleTrainer's loss check)
              FloatingPointError: Predicted boxes or scores contain Inf/NaN. Training has diverged.  (the RPN's check)
  DeiT / BEiT / MAE MetricLogger, timm train.py  (value then running average in parentheses)
      Epoch: [115]  [1298/1299]  eta: 0:00:00  lr: 0.001435  ...  loss: 6.5993 (6.5971)  loss_scale: 8192.0000 (8646.0600)  ...  grad_norm: 0.3922 (nan)  ...
      Train: 0 [   0/2502 (  0%)]  Loss:  7.023479 (7.0235)  Time: 3.680s,  139.14/s  (3.680s,  139.14/s)  LR: 1.000e-06  Data: 1.776 (1.776)
      generic: no step; epoch averages (`Averaged stats:`) taken for steps
      Loss is nan, stopping training        (the loop's own check on every iteration, then sys.exit(1))
  pytorch/examples ImageNet ProgressMeter and its copies  (imagenet/main.py: prefix "Epoch: [{}]", batch
      '[{:Nd}/N]', then '\t'.join of AverageMeter '{name} {val:fmt} ({avg:fmt})', the loss meter named Loss)
      Epoch: [23][280/715]    Time 0.290 (0.318)      Loss 1.1693 (1.1644)    Acc@1 72.656 (72.098)   ...
      Train - Epoch: [127/300][ 35/464]	Time  0.738 ( 0.738)	Data  0.000 ( 0.014)	Loss 2.1274e+00 (1.5406e+00)
      generic: no step (the counters are in brackets); the DeiT rule wants `loss:`. `Test: [..]` lines are
      validation.
  NVIDIA/tacotron2 train.py and its copies (mellotron, tacotron2-gst):
      print("Train loss {} {:.6f} Grad Norm {:.6f} {:.2f}s/it".format(iteration, reduced_loss, grad_norm, duration))
      Train loss 1 35.229748 Grad Norm 25.020286 3.79s/it
      generic: `loss 1` - the iteration taken for the loss (a healthy run's loss would climb with the count)
  torchtune recipes' tqdm bar  (recipes/*_finetune_*.py: pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss: {loss_to_log}"))
      1|3|Loss: nan:   0%|                         | 3/3073 [00:15<4:04:50,  4.79s/it]
      generic: the loss is in the bar's description, which the tqdm readers do not read; a paste can
      lose the `epoch|step` part, and then the bar's count is the step.
  Ultralytics YOLOv8+ and YOLOv5 epoch bars  (a header, then the tqdm description of every redraw)
      v8 (ultralytics/yolo/v8/detect/train.py progress_string: '%11s' * (4 + len(loss_names)) % ('Epoch',
      'GPU_mem', *loss_names, 'Instances', 'Size'); row '%11s' * 2 + '%11.4g' * (2 + n) % (f'{epoch + 1}/{epochs}',
      mem, *losses, instances, size)):
            Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
           1/1000      17.2G        nan        nan        nan         55        640: 100%|██████████| 4/4 [01:28<00:00, 22.19
      v5 (yolov5/train.py: the same row with f'{epoch}/{epochs - 1}', '%10s' before v6.2, header
      `Epoch gpu_mem box obj cls labels img_size` in older releases):
            1/99     2.64G         nan       nan       nan         4       416: 100%|██████████| 7/7 [00:15<00:00,  2.27s/it]
      generic: nothing (no key names on the row). Every column between the memory and the last two
      counts is a loss component: the loss is their sum (non-finite when one is).
  MXNet Speedometer and the Gluon scripts copied from it  (python/mxnet/callback.py Speedometer:
      'Epoch[%d] Batch [%d]\tSpeed: %.2f samples/sec' + '\t%s=%f' per metric; older `Train-%s=%f`;
      `Batch [%d-%d]` in 1.x), e.g. `Epoch[1] Batch[7] Speed: 143.86 samples/sec,  IDLoss=nan,`
      generic: no loss key (the metric is named by the user): the loss is the metric named `loss`,
      `cross-entropy` or ending in `loss`.
  nanoGPT  `iter 100: loss 4.2345, time 12.34ms, mfu 1.20%` is read right by the generic parser; only its
      eval line `step 2000: train loss 1.7533, val loss 1.8947` is claimed here (it repeats a step number).
"""

from __future__ import annotations

import json
import math
import re
from typing import Optional

from nanscope.model import ErrorEvent, ScaleEvent, StepEvent, WarningEvent
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_float, to_int

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"
_EQ_PAIR = LazyPattern(r"(?:^|[\s,\[|(])(?P<k>[A-Za-z_][\w/.\-]*)=(?P<v>[^,\s\]]*)")
_COLON_PAIR = LazyPattern(r"(?<![\w/.\-])(?P<k>[A-Za-z_][\w/.\-]*):\s*(?P<v>" + _F + r")(?![\w.])")


def _step_event(rec, framework: str, **kw) -> StepEvent:
    return StepEvent(loc=rec.loc, text=rec.text, framework=framework, **kw)


def _first(pairs: dict, keys: tuple[str, ...]) -> Optional[float]:
    for k in keys:
        v = to_float(pairs.get(k))
        if v is not None:
            return v
    return None


# --- torchtitan ----------------------------------------------------------------------------------

@rule(
    "torchtitan",
    ("tps:",),
    r"\bstep:\s*(?P<step>\d+)\s+loss:\s*(?P<loss>" + _F + r")(?![\d.])(?P<rest>.*\btps:\s*(?P<tps>[\d,]+).*)$",
)
def _torchtitan(m, rec, state):
    rest = m.group("rest")
    gn = re.search(r"grad_norm:\s*(" + _F + r")", rest)
    mem = re.search(r"memory:\s*(" + _F + r")GiB", rest)
    mfu = re.search(r"mfu:\s*(" + _F + r")%", rest)
    return _step_event(
        rec, "torchtitan", step=int(m.group("step")), loss=to_float(m.group("loss")),
        grad_norm=to_float(gn.group(1)) if gn else None, tokens_per_s=to_float(m.group("tps").replace(",", "")),
        raw_fields={"memory_gib": to_float(mem.group(1)) if mem else None, "mfu": to_float(mfu.group(1)) if mfu else None},
    )


# --- OLMo ----------------------------------------------------------------------------------------

@rule("olmo-header", ("[step=",), r"\[step=(?P<step>\d+)/(?P<max>\d+)")
def _olmo_header(m, rec, state):
    state["olmo_step"] = int(m.group("step"))
    state.pop("olmo_grad", None)
    return []


@rule("olmo-grad-norm", ("optim/total_grad_norm=",), r"^\s*optim/total_grad_norm=(?P<v>\S+)\s*$")
def _olmo_grad(m, rec, state):
    state["olmo_grad"] = to_float(m.group("v").replace(",", ""))
    return []


@rule("olmo-loss", ("train/CrossEntropyLoss=",), r"^\s*train/CrossEntropyLoss=(?P<v>\S+)\s*$")
def _olmo_loss(m, rec, state):
    # OLMo prints metrics in dict order: optim/total_grad_norm comes before the loss.
    return _step_event(
        rec, "olmo", step=state.get("olmo_step"), loss=to_float(m.group("v").replace(",", "")),
        grad_norm=state.pop("olmo_grad", None),
    )


# --- fairseq -------------------------------------------------------------------------------------

@rule("fairseq-json", ('"num_updates":',), r"\{[^{]*\"num_updates\":")
def _fairseq_json(m, rec, state):
    text = rec.text[m.start():]
    try:
        d = json.loads(text[: text.rindex("}") + 1])
    except ValueError:
        return None
    if not isinstance(d, dict) or "loss" not in d:
        return None
    pairs = {k: str(v) for k, v in d.items()}
    return _step_event(
        rec, "fairseq", step=to_int(pairs.get("num_updates")), loss=to_float(pairs.get("loss")),
        grad_norm=to_float(pairs.get("gnorm")), lr=to_float(pairs.get("lr")),
        loss_scale=to_float(pairs.get("loss_scale")), tokens_per_s=to_float(pairs.get("wps")),
        epoch=to_float(pairs.get("epoch")), raw_fields=pairs,
    )


@rule("fairseq-inner", ("num_updates=",), r"num_updates=(?P<n>\d+)")
def _fairseq_inner(m, rec, state):
    pairs = {p.group("k"): p.group("v") for p in _EQ_PAIR.finditer(rec.text)}
    if "loss" not in pairs:
        return None
    ep = re.search(r"\bepoch (\d+)", rec.text)
    return _step_event(
        rec, "fairseq", step=int(m.group("n")), loss=to_float(pairs["loss"]), grad_norm=to_float(pairs.get("gnorm")),
        lr=to_float(pairs.get("lr")), loss_scale=to_float(pairs.get("loss_scale")),
        tokens_per_s=to_float(pairs.get("wps")), epoch=to_float(ep.group(1)) if ep else None, raw_fields=pairs,
    )


# fairseq/logging/progress_bar.py, end-of-epoch stats (print(stats, tag="train"|"valid")):
#   SimpleProgressBar: logger.info("{} | {}".format(self.prefix, postfix)) under the logger renamed to the tag:
#       ... | INFO | train | epoch 073 | loss 3.12 | ... | num_updates 9291 | ...
#   JsonProgressBar: each key prefixed with the tag, "epoch" first, the loss the first stat:
#       ... | INFO | train | {"epoch": 73, "train_loss": "nan", "train_ntokens": ..., "train_num_updates": "9291", ...}
# An epoch average is not a step (the train_inner lines carry the steps, and a finite average would put
# a point that is no step's loss into the curve). A non-finite *training* average is different: a NaN/inf
# loss entered the average (fairseq leaves the updates an fp16 overflow skipped out of it), and an
# excerpt may hold nothing else. Only that one becomes an event, at the epoch's last update when the
# line says it (a terminal can wrap the JSON record before "train_num_updates").
def _epoch_nan(rec, loss: Optional[float], updates: Optional[str]) -> list:
    if loss is None or math.isfinite(loss):
        return []
    return [_step_event(rec, "fairseq", step=to_int(updates), loss=loss, raw_fields={"epoch_average": True})]


@rule("fairseq-epoch-summary", ("| num_updates ",), r"\bepoch \d+ \|.*\| num_updates (?P<n>\d+)")
def _fairseq_summary(m, rec, state):
    train = re.search(r"\| train \| epoch \d+ \| loss (?P<loss>\S+) \|", rec.text)
    got = _epoch_nan(rec, to_float(train.group("loss")), m.group("n")) if train else []
    if got:
        return got
    # the epoch line (legacy `| epoch 028 | loss 3.976 | ... | loss_scale 0.000 | ...`, fairseq's
    # progress_bar format_stat prints three decimals; later `| train | epoch 002 | ... | loss_scale 0 |`):
    # a scale printed as 0.000 is under 5e-4, within two halvings of the --min-loss-scale default of
    # 1e-4 (fairseq#1529)
    scale = _LEGACY_SCALE.search(rec.text)
    if scale is not None and to_float(scale.group(1)) is not None and to_float(scale.group(1)) < 1e-3:
        return ScaleEvent(loc=rec.loc, text=rec.text, framework="fairseq", action="minimum",
                          new_scale=to_float(scale.group(1)), rank_is_printer_only=True)
    return []


_LEGACY_SCALE = LazyPattern(r"\| loss_scale (" + _F + r") \|")


@rule("fairseq-epoch-json", ('"train_loss": "',), r'\| train \| \{"epoch": \d+, "train_loss": "(?P<loss>[^"]*)"')
def _fairseq_epoch_json(m, rec, state):
    n = re.search(r'"train_num_updates": "(\d+)"', rec.text)
    return _epoch_nan(rec, to_float(m.group("loss")), n.group(1) if n else None)


@rule(
    "fairseq-overflow",
    ("overflow detected, setting loss scale to",),
    r"overflow detected, setting loss scale to:? (?P<s>" + _F + r")",
)
def _fairseq_overflow(m, rec, state):
    # Printed by the master process only (fairseq silences INFO on the other ranks): not evidence of a rank.
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="fairseq", action="overflow", new_scale=to_float(m.group("s")),
        rank_is_printer_only=True,
    )


@rule("fairseq-min-scale", ("Minimum loss scale reached",), r"Minimum loss scale reached \((?P<s>" + _F + r")\)")
def _fairseq_min(m, rec, state):
    return ScaleEvent(
        loc=rec.loc, text=rec.text, framework="fairseq", action="minimum", new_scale=to_float(m.group("s")),
        rank_is_printer_only=True,
    )


# fairseq/trainer.py Trainer._check_grad_norms: when the all-reduced grad norms of the workers differ
# (NaN != NaN, so a NaN gradient on every worker fails the check too) it raises FloatingPointError(
# "Fatal error: gradients are inconsistent between workers. Try --ddp-backend=legacy_ddp (older:
# no_c10d). Or are you mixing up ..." + "-" * 80 + "grad_norm across the workers:\n" + one
# "rank {:3d} = {:.8f}" row per worker); older releases assert the same message with no table
# (AssertionError). The exception line alone says desync; the rows say whether the gradients were
# non-finite: `rank   3 = nan` is a NaN gradient norm, whatever the message claims. So the exception
# waits for its table: a non-finite row turns it into a stop on non-finite gradients (no rank claimed:
# after the gradient all-reduce a NaN from any worker is on every worker); otherwise (finite rows, no
# table, the end of the input) it is released as the exception it is.
_FAIRSEQ_TABLE_SPAN = 4100  # lines from the exception to its last row: one row per worker


def _release_pending(state: dict) -> list:
    held = state.pop("pending", None)
    return [held] if held is not None else []


@rule(
    "fairseq-inconsistent-grads",
    ("gradients are inconsistent between workers",),
    r"(?:^|\s)(?P<type>(?:\w+\.)*(?:FloatingPointError|AssertionError)): "
    r"(?P<msg>Fatal error: gradients are inconsistent between workers.*)$",
)
def _fairseq_inconsistent(m, rec, state):
    out = _release_pending(state)
    state["pending"] = ErrorEvent(
        loc=rec.loc, text=rec.text, framework="fairseq", error="exception", message=m.group("msg").rstrip(),
        exc_type=m.group("type"), fields={"grad_norm_check": True},
    )
    return out


@rule("fairseq-grad-norm-table", ("grad_norm across the workers:",), r"^grad_norm across the workers:\s*$", match_start=True)
def _fairseq_gn_table(m, rec, state):
    held = state.get("pending")
    if not isinstance(held, ErrorEvent) or not (held.fields or {}).get("grad_norm_check"):
        return None
    return []


@rule("fairseq-grad-norm-row", ("= nan", "= inf", "= -inf"), r"^rank\s+(?P<r>\d+) = (?P<v>[-+]?(?:nan|inf))\s*$", match_start=True)
def _fairseq_gn_row(m, rec, state):
    held = state.get("pending")
    if not isinstance(held, ErrorEvent) or not (held.fields or {}).get("grad_norm_check"):
        return None
    state.pop("pending")
    if not 0 < rec.loc.line - held.loc.line <= _FAIRSEQ_TABLE_SPAN:
        return [held]
    # the run stops here because the gradients are non-finite (as ESPnet2's "gradients at all steps are invalid")
    return WarningEvent(
        loc=rec.loc, text=rec.text, framework="fairseq", warning="nonfinite_stop", message=rec.text,
        fields={"grad_norm": to_float(m.group("v")), "raised": f"{held.exc_type}: {held.message}"},
    )


# --- Lightning / NeMo ----------------------------------------------------------------------------

_LIGHTNING_LOSS = ("reduced_train_loss", "train_loss_step", "train_loss", "train/loss", "loss_step", "loss")


# The bar of an epoch whose length is unknown (an IterableDataset, a dataloader without __len__) has
# no percentage. tqdm/std.py format_meter: with Lightning's BAR_FORMAT ("{l_bar}{bar}| {n_fmt}/
# {total_fmt} [...]", 1.6+) it is `Epoch 1: |      | 43/? [00:26<00:00, 1.63it/s, v_num=0]`; without
# a bar_format (older Lightning) tqdm prints f"{prefix}: {n_fmt}{unit} [{elapsed}, {rate}{postfix}]",
# and set_description has already appended ": " to "Epoch N": `Epoch 12: : 1200it [20:40,  1.03s/it, loss=nan, v_num=0]`.
@rule(
    "lightning-bar",
    ("it/s,", "s/it,"),
    r"^Epoch (?P<ep>\d+):\s*(?:(?:\d+%)?\|[^|]*\|\s*(?P<n>\d+)/(?P<tot>\d+|\?)\s*|(?::\s*)?(?P<n2>\d+)it\s*)"
    r"\[[^\]]*?(?:it/s|s/it)(?P<post>,[^\]]*)\]",
    match_start=True,
)
def _lightning(m, rec, state):
    pairs = {p.group("k"): p.group("v") for p in _EQ_PAIR.finditer(m.group("post"))}
    loss = _first(pairs, _LIGHTNING_LOSS)
    if loss is None:
        return None  # a bar without a loss: leave it to the other tqdm readers
    if state.get("lt_no_loss") and not math.isfinite(loss):
        return []  # training_step returned None: the bar's running mean of no losses is nan
    ep, n = int(m.group("ep")), int(m.group("n") or m.group("n2"))
    if state.get("lt_epoch") != ep:
        state["lt_base"] = state.get("lt_base", 0) + state.get("lt_last_n", 0) if "lt_epoch" in state else 0
        state["lt_epoch"] = ep
    state["lt_last_n"] = n
    gs = to_float(pairs.get("global_step"))
    step = int(gs) if gs is not None else state["lt_base"] + n
    ev = _step_event(rec, "lightning", step=step, loss=loss, epoch=float(ep), lr=to_float(pairs.get("lr")),
                     raw_fields=pairs)
    # tqdm redraws the same count (the postfix catches up a redraw later): keep the last drawing of a count.
    held = state.pop("pending", None)
    state["pending"] = ev
    if held is not None and held.step != step:
        return [held]
    if held is not None and "early_stopping" in (held.raw_fields or {}):
        ev.raw_fields = {**(ev.raw_fields or {}), "early_stopping": held.raw_fields["early_stopping"]}
    return []


# A bar wrapped at its bar by the terminal or the paste: `Epoch 0:  71%|████████▏` alone on a line, then
# `| 5880/8295 [04:01<01:39, 24.37it/s, v_num=0, ..., train_loss_step=nan.0` on the next (its `]` lost at the
# paste's edge, sb-ai-lab/RePlay#90). The head is kept for one line; the tail, joined to it, is read as the bar.
@rule("lightning-bar-head", ("Epoch ",), r"^Epoch \d+:\s*\d+%\|[^|\[\]]*$", match_start=True)
def _lightning_head(m, rec, state):
    state["lt_head"] = (rec.loc.line, rec.text.rstrip())
    return None  # nothing to read yet; the other readers may still take the line


@rule(
    "lightning-bar-tail",
    ("it/s,", "s/it,"),
    r"^\|\s*\d+/(?:\d+|\?)\s*\[[^\]]*?(?:it/s|s/it),[^\]]*(?:\][ \t]*)?$",
    match_start=True,
)
def _lightning_tail(m, rec, state):
    head = state.pop("lt_head", None)
    if head is None or head[0] != rec.loc.line - 1:
        return None
    text = head[1] + rec.text.strip()
    bar = _lightning.regex.match(text if text.endswith("]") else text + "]")
    return _lightning.build(bar, rec, state) if bar is not None else None


@rule("lightning-no-loss", ("`training_step` returned `None`",), r"`training_step` returned `None`\. If this was on purpose")
def _lightning_no_loss(m, rec, state):
    # lightning/pytorch/loops/optimization/automatic.py (pytorch_lightning/loops/optimization/
    # optimizer_loop.py in 1.x): warning_cache.warn("`training_step` returned `None`. If this was on
    # purpose, ignore this warning..."). No loss was returned, so the bar's `loss=nan` is the mean
    # of an empty running window, not a NaN loss.
    state["lt_no_loss"] = True
    return []


@rule(
    "lightning-early-stop-nonfinite",
    ("is not finite. Previous best value was",),
    r"\bMonitored metric (?P<m>\S+) = (?P<v>.+?) is not finite\. Previous best value was",
)
def _lightning_early_stop(m, rec, state):
    # lightning/pytorch/callbacks/early_stopping.py (pytorch_lightning/callbacks/early_stopping.py in
    # 1.x) _evaluate_stopping_criteria, check_finite (on by default): f"Monitored metric {self.monitor} =
    # {current} is not finite. Previous best value was {self.best_score:.3f}. Signaling Trainer to stop."
    # (`current` a float in old releases, a tensor: `tensor(nan, device='cuda:0')` in newer ones), logged
    # through rank_prefixed_message (`[rank: N] `) when several processes run. The run stops on a
    # non-finite validation metric: the model's outputs are NaN/inf at the step in progress.
    # A terminal capture glues the message to the bar redraw before it (tqdm ends a redraw with `\r`,
    # not a newline): then the bar says which step it was, and its event carries the stop.
    value = m.group("v").strip()
    inner = re.fullmatch(r"tensor\((?P<x>[^,)]+)(?:,[^)]*)?\)", value)
    v = to_float(inner.group("x") if inner else value)
    if v is None or math.isfinite(v):
        return None
    stop = {"early_stopping": m.group("m")}
    bar = _lightning.regex.match(rec.text)
    out = _lightning.build(bar, rec, state) if bar is not None else None
    if out is not None:
        held = state.get("pending")
        if held is not None and held.loc.line == rec.loc.line:
            held.raw_fields = {**(held.raw_fields or {}), **stop}
        return out
    return _step_event(rec, "lightning", step=None, loss=v, raw_fields={"monitor": m.group("m"), **stop})


@rule(
    "nemo2-progress",
    ("Training epoch",),
    r"Training epoch (?P<ep>\d+), iteration (?P<it>\d+)/(?P<tot>\d+)\s*\|(?P<rest>.*)",
)
def _nemo2(m, rec, state):
    pairs = {}
    for part in m.group("rest").split("|"):
        k, sep, v = part.partition(":")
        if sep:
            pairs[k.strip()] = v.strip()
    loss = _first(pairs, ("reduced_train_loss", "train_loss", "loss"))
    if loss is None:
        return None
    gs = to_float(pairs.get("global_step"))
    return _step_event(
        rec, "nemo", step=int(gs) if gs is not None else int(m.group("it")), loss=loss, lr=to_float(pairs.get("lr")),
        epoch=float(m.group("ep")), raw_fields=pairs,
    )


# --- mmcv / mmengine, DeiT MetricLogger, timm ------------------------------------------------------

@rule(
    "mmcv",
    ("Epoch [", "Epoch(train)", "Iter [", "Iter(train)"),
    r"\b(?P<kind>Epoch|Iter)(?:\((?P<mode>\w+)\))?\s*(?:\[(?P<ep>\d+)\]\s*)?\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\]\s*(?P<rest>.*)$",
)
def _mmcv(m, rec, state):
    if m.group("mode") not in (None, "train") or (m.group("kind") == "Epoch" and m.group("ep") is None):
        return None
    pairs: dict = {}
    for p in _COLON_PAIR.finditer(m.group("rest")):
        pairs.setdefault(p.group("k"), p.group("v"))
    if "loss" not in pairs:
        return None  # mmcv always prints the total `loss`; loss_cls & co are its parts
    i, n = int(m.group("i")), int(m.group("n"))
    step = (int(m.group("ep")) - 1) * n + i if m.group("kind") == "Epoch" else i
    return _step_event(
        rec, "mmengine" if m.group("mode") else "mmcv", step=step, loss=to_float(pairs["loss"]),
        grad_norm=to_float(pairs.get("grad_norm")), lr=to_float(pairs.get("lr")),
        epoch=float(m.group("ep")) if m.group("ep") else None, raw_fields=pairs,
    )


@rule("deit-metric-logger", ("Epoch: [",), r"^Epoch: \[(?P<ep>\d+)\]\s*\[\s*(?P<i>\d+)/(?P<n>\d+)\]\s*(?P<rest>.*)$", match_start=True)
def _deit(m, rec, state):
    pairs: dict = {}
    for p in _COLON_PAIR.finditer(m.group("rest")):
        pairs.setdefault(p.group("k"), p.group("v"))
    if "loss" not in pairs:
        return None
    ep, i, n = int(m.group("ep")), int(m.group("i")), int(m.group("n"))
    return _step_event(
        rec, "deit", step=ep * n + i, loss=to_float(pairs["loss"]), grad_norm=to_float(pairs.get("grad_norm")),
        lr=to_float(pairs.get("lr")), loss_scale=to_float(pairs.get("loss_scale")), epoch=float(ep), raw_fields=pairs,
    )


_BARE_METER = LazyPattern(r"(?<![\w@.\-])(?P<k>[A-Za-z][\w@.\-]*)[ \t]+(?P<v>" + _F + r")(?=[ \t]+[A-Za-z]|[ \t]*\.?$)")
_METER = LazyPattern(r"(?<![\w@.\-])(?P<k>[A-Za-z][\w@.\-]*)[ \t]+(?P<v>" + _F + r")[ \t]+\([ \t]*(?P<avg>" + _F + r")[ \t]*\)")


@rule(
    "progress-meter",
    ("Epoch: [",),
    r"(?:^|\s)Epoch:\s*\[(?P<ep>\d+)(?:/\d+)?\]\s*\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\](?P<rest>.*)$",
)
def _progress_meter(m, rec, state):
    meters = {p.group("k"): p.group("v") for p in _METER.finditer(m.group("rest"))}
    if not any(k.lower().endswith("loss") for k in meters):
        # copies that print the losses' current values alone beside timing meters (hszhao/semseg's tool/train.py
        # and its forks: `Data 0.000 (0.001) Batch 0.449 (0.448) Remain 69:01:09 MainLoss 0.0000 ... Loss nan
        # Accuracy 0.0000.`, liuzhengzhe/3D-to-2D-Distillation-for-Indoor-Scene-Parsing#4)
        meters.update((p.group("k"), p.group("v")) for p in _BARE_METER.finditer(m.group("rest"))
                      if p.group("k").lower().endswith("loss"))
    key = next((k for k in meters if k.lower() == "loss"), None) or next((k for k in meters if k.lower().endswith("loss")), None)
    if key is None:
        return None
    ep, i, n = int(m.group("ep")), int(m.group("i")), int(m.group("n"))
    return _step_event(rec, "pytorch", step=ep * n + i, loss=to_float(meters[key]), epoch=float(ep), raw_fields=meters)


@rule("loss-is-stopping", ("stopping training",), r"\bLoss is (?P<loss>[-+]?" + _F + r"), stopping training")
def _loss_stopping(m, rec, state):
    # The non-finite-loss check of the MetricLogger loops: pytorch/vision references/detection/
    # engine.py train_one_epoch `print(f"Loss is {loss_value}, stopping training")` (older:
    # `print("Loss is {}, stopping training".format(loss_value))`, as in facebookresearch/detr
    # engine.py and DeiT / BEiT / MAE engine*.py), then the loss dict and sys.exit(1). The check runs
    # on every iteration, the step line only every print_freq: this is the step in progress.
    # sys.exit(1) ends the process here: the launcher's record of that exit (torchrun's `failed (exitcode: 1)`)
    # is this stop, and the finding competes as the process's own first error (attribution._raised).
    loss = to_float(m.group("loss"))
    if loss is None or math.isfinite(loss):
        return None
    return _step_event(rec, "deit", step=None, loss=loss, raw_fields={"exits_process": True})


# Ultralytics YOLOv3 / early YOLOv5 train.py: `if not torch.isfinite(loss): print('WARNING: non-finite
# loss, ending training ', loss_items); return results` - loss_items the tensor of the box, objectness and
# class losses and their total, last (`tensor([nan, 0.22070, 0.00000, nan], device='cuda:0')`). Printed
# right after tqdm's last redraw of the epoch row, on the same line. The stop of the step in progress.
@rule("yolo-nonfinite-stop", ("non-finite loss, ending training",),
      r"non-finite loss, ending training\s+tensor\(\[(?P<vals>[^\]]{1,400})\]")
def _yolo_nonfinite(m, rec, state):
    vals = [v.strip() for v in m.group("vals").split(",")]
    loss = to_float(vals[-1]) if vals else None
    if loss is None or math.isfinite(loss):
        return None
    row = re.match(_YOLO_ROW, m.string[: m.start()])  # the epoch row tqdm drew last, when glued before it
    step = int(row.group("ep")) * int(row.group("nb")) + int(row.group("i")) if row else None
    return _step_event(rec, "ultralytics", step=step, loss=loss, raw_fields={"loss_items": m.group("vals")})


# A training loop's own check raising on a non-finite loss (the loop-author's message, no framework
# template): IKFlow's training_step `raise ValueError("loss is nan")` (jstmn/ikflow#23), denseReg's
# `assert not np.isnan(loss_value), 'Model diverged with loss = NaN'` (melonwan/denseReg#21),
# neuralhydrology's `RuntimeError(f"Loss was NaN for {n} times in a row. Stopped training.")`
# (neuralhydrology#101); and Lightning's own (lightning/pytorch/loops/utilities.py check_finite_loss,
# Trainer(detect_anomaly=True); terminate_on_nan in 1.x): raise ValueError(f"The loss returned in
# `training_step` is {loss}."), the loss a tensor: `is nan.` / `is tensor(nan, device='cuda:0', ...)`.
# The exception says the loss is non-finite: that is the stop, not a generic crash. The word `loss` on
# its own (not NllLossBackward, not loss_scale) next to nan/inf/non-finite.
_OWN_LOSS_CHECK = LazyPattern(
    r"(?<![\w.])[Ll]oss\b(?: value| returned in `\w+`)?(?:\s*(?:=|:|is|was|became|becomes|has become)\s*)(?:tensor\()?"
    r"(?P<v>nan|NaN|NAN|inf|Inf|-inf|infinite|non-finite|not finite)\b"
)


@rule("own-loss-check", ("Error: ", "Exception: "),
      r"^(?P<type>(?:\w+\.)*\w*(?:Error|Exception)): (?P<msg>.*\b[Ll]oss\b.*)$", match_start=True)
def _own_loss_check(m, rec, state):
    if not _OWN_LOSS_CHECK.search(m.group("msg")) or " : Tensor had " in m.group("msg"):
        return None  # (TensorFlow's check_numerics template around the caller's message is tf_checks.py's)
    return _step_event(rec, "pytorch", step=None, loss=float("nan"),
                       raw_fields={"raised": f"{m.group('type')}: {m.group('msg').strip()}"})


@rule("tf-nan-tensor-hook", ("Model diverged with loss = NaN", "NanLossDuringTrainingError: NaN loss during training"),
      r"Model diverged with loss = NaN\.|NanLossDuringTrainingError: NaN loss during training")
def _tf_nan_hook(m, rec, state):
    # tensorflow/python/training/basic_session_run_hooks.py NanTensorHook.after_run: on a NaN loss
    # `failure_message = "Model diverged with loss = NaN."`, logged as an error before it raises
    # NanLossDuringTrainingError (str: "NaN loss during training.") when fail_on_nan_loss (the
    # Estimator default), else as a warning on every NaN step while training goes on. The glog copy
    # (`E0410 ... basic_session_run_hooks.py:760] Model diverged ...`, the next line) and the exception
    # after the traceback repeat the same step: one NaN loss for the step in progress.
    last = state.get("tf_nan_line")
    if m.group(0).startswith("Model diverged"):
        state["tf_nan_line"] = rec.loc.line
        if last is not None and rec.loc.line - last <= 2:
            return []
    elif last is not None and rec.loc.line - last <= _TF_TRACEBACK:
        return []
    return _step_event(rec, "tensorflow", step=None, loss=float("nan"))


# the exception closes the traceback of the `Model diverged` error: within this many lines of it
_TF_TRACEBACK = 300


@rule(
    "detectron2-anomaly",
    ("Loss became infinite or NaN",),
    r"\bLoss became infinite or NaN at iteration=(?P<it>\d+)!",
)
def _detectron2_anomaly(m, rec, state):
    # facebookresearch/detectron2 detectron2/engine/train_loop.py, the non-finite-loss check of
    # SimpleTrainer: v0.1-0.2 `_detect_anomaly` raises FloatingPointError("Loss became infinite or NaN at
    # iteration={}!\nloss_dict = {}".format(self.iter, loss_dict)); v0.3+ `write_metrics` raises
    # f"Loss became infinite or NaN at iteration={storage.iter}!\n" f"loss_dict = {metrics_dict}" (AdelaiDet,
    # CenterMask2 and other detectron2 projects keep it). The iteration is the one whose loss it was; the
    # message does not say NaN or inf, nan stands for either.
    ev = _step_event(rec, "detectron2", step=int(m.group("it")), loss=float("nan"))
    spawned = state.get("spawn_index")
    if spawned is not None and rec.origin.rank is None and 0 < rec.loc.line - spawned[1] <= _SPAWN_SPAN:
        ev.rank = spawned[0]
    return ev


@rule(
    "detectron2-proposals-nonfinite",
    ("Predicted boxes or scores contain Inf/NaN",),
    r"Predicted boxes or scores contain Inf/NaN\. Training has diverged\.",
)
def _detectron2_proposals(m, rec, state):
    # facebookresearch/detectron2 detectron2/modeling/proposal_generator/proposal_utils.py
    # find_top_rpn_proposals: when a predicted proposal box or objectness score is not finite during
    # training, raise FloatingPointError("Predicted boxes or scores contain Inf/NaN. Training has
    # diverged.") (kept by the projects built on it: Meta-Faster-R-CNN, DCT-Mask, layout-model-training,
    # UnSniffer ...). The network's outputs are non-finite, so the run stops on a non-finite state: a
    # stop on non-finite values at the step in progress, not a generic exception. The exception line and
    # a pasted copy of the message (the raise's argument) next to it are one stop.
    last = state.get("d2_proposals_line")
    state["d2_proposals_line"] = rec.loc.line
    if last is not None and 0 < rec.loc.line - last <= 3:
        return []
    ev = WarningEvent(loc=rec.loc, text=rec.text, framework="detectron2", warning="nonfinite_stop", message=rec.text,
                      fields={"check": "find_top_rpn_proposals"})
    spawned = state.get("spawn_index")
    if spawned is not None and rec.origin.rank is None and 0 < rec.loc.line - spawned[1] <= _SPAWN_SPAN:
        ev.rank = spawned[0]
    return ev


# torch/multiprocessing/spawn.py ProcessContext.join re-raises a child's exception in the parent as
# ProcessRaisedException("\n\n-- Process %d terminated with the following error:\n" + original_trace):
# the number is the index i of fn(i, *args), which detectron2's launch() passes to _distributed_worker
# as the local rank (detectron2/engine/launch.py). With no node in the text that is the global rank,
# as for torchrun's local rank on one node (ingest/prefixes.py); the traceback that follows is that
# process's own, so the anomaly it ends in is on that rank.
_SPAWN_SPAN = 400


@rule("spawn-process", ("terminated with the following error",),
      r"^-- Process (?P<i>\d+) terminated with the following error:\s*$", match_start=True)
def _spawn_process(m, rec, state):
    state["spawn_index"] = (int(m.group("i")), rec.loc.line)
    return None  # noted, not claimed: the python parser reads the header too (python.py _spawn_raised)


@rule("deit-averaged", ("Averaged stats:",), r"^Averaged stats:", match_start=True)
def _deit_averaged(m, rec, state):
    return []  # epoch averages, not a step


@rule(
    "timm-train",
    ("Train: ",),
    r"^Train: (?P<ep>\d+) \[\s*(?P<i>\d+)/(?P<n>\d+) \(\s*\d+%\)\]\s+Loss:\s*(?P<loss>" + _F + r")",
    match_start=True,
)
def _timm(m, rec, state):
    lr = re.search(r"\bLR: (" + _F + r")", rec.text)
    ep, i, n = int(m.group("ep")), int(m.group("i")), int(m.group("n"))
    return _step_event(rec, "timm", step=ep * n + i, loss=to_float(m.group("loss")),
                       lr=to_float(lr.group(1)) if lr else None, epoch=float(ep))


# --- tacotron2 ------------------------------------------------------------------------------------

@rule(
    "tacotron2-train",
    ("Train loss ",),
    r"^Train loss (?P<it>\d+) (?P<loss>" + _F + r") Grad Norm (?P<gn>" + _F + r")(?: (?P<t>" + _F + r")s/it)?",
    match_start=True,
)
def _tacotron2(m, rec, state):
    return _step_event(rec, "tacotron2", step=int(m.group("it")), loss=to_float(m.group("loss")),
                       grad_norm=to_float(m.group("gn")))


# --- torchtune ------------------------------------------------------------------------------------

@rule(
    "torchtune-bar",
    ("|Loss: ",),
    r"(?:^|\s)(?:(?P<ep>\d+)\|(?P<gs>\d+))?\|Loss: (?P<loss>" + _F + r"):\s*\d+%\|[^|]*\|\s*(?P<n>\d+)/(?P<tot>\d+)",
)
def _torchtune(m, rec, state):
    step = int(m.group("gs")) if m.group("gs") else int(m.group("n"))
    if state.get("tt_last") == step:
        return []  # a redraw of the same step
    state["tt_last"] = step
    return _step_event(rec, "torchtune", step=step, loss=to_float(m.group("loss")),
                       epoch=float(m.group("ep")) if m.group("ep") else None)


# --- Ultralytics YOLO ------------------------------------------------------------------------------

# A paste from an editor or `cat -n` can carry a line-number gutter before the row (`516      91/300
# 17G  nan ...`, ultralytics/ultralytics#19357): one optional number before the epoch column, which
# the rest of the row (epoch/epochs, memory in G, a tqdm bar) keeps unambiguous.
_YOLO_ROW = (r"^\s*(?:\d+\s+)?(?P<ep>\d+)/(?P<eps>\d+)\s+(?P<mem>\d+(?:\.\d+)?G)\s+(?P<vals>(?:" + _F + r"\s+){1,8}?)"
             r"(?P<inst>\d+)\s+(?P<size>\d+):\s+\d+%\|[^|]*\|\s*(?P<i>\d+)/(?P<nb>\d+)")


@rule("yolo-epoch-row", ("%|",), _YOLO_ROW, match_start=True)
def _yolo(m, rec, state):
    parts = [to_float(v) for v in m.group("vals").split()]
    if not parts or any(v is None for v in parts):
        return None
    ep, i, nb = int(m.group("ep")), int(m.group("i")), int(m.group("nb"))
    # the epoch as printed (v8 counts from 1, v5 from 0) times the batches per epoch, plus the batch:
    # increasing either way; tqdm redraws one batch count several times, only a new count is a step
    step = ep * nb + i
    if state.get("yolo_last") == step:
        return []
    state["yolo_last"] = step
    loss = sum(parts) if all(math.isfinite(v) for v in parts) else next(v for v in parts if not math.isfinite(v))
    return _step_event(rec, "ultralytics", step=step, loss=loss, epoch=float(ep),
                       raw_fields={"losses": m.group("vals").split(), "epochs": m.group("eps")})


# --- MXNet Speedometer -----------------------------------------------------------------------------

_MX_PAIR = LazyPattern(r"(?:^|[\s,])(?P<k>[A-Za-z][\w\-]*)=(?P<v>" + _F + r")(?![\w.])")


def _mx_loss(pairs: dict) -> Optional[float]:
    for k, v in pairs.items():
        name = k.lower()
        for prefix in ("train-", "train_"):
            if name.startswith(prefix):
                name = name[len(prefix):]
        if name in ("loss", "cross-entropy", "ce") or name.endswith("loss"):
            return to_float(v)
    return None


@rule(
    "mxnet-speedometer",
    ("samples/sec",),
    r"\bEpoch\s?\[(?P<ep>\d+)\]\s*Batch\s*\[(?:\d+-)?(?P<b>\d+)\]:?\s*Speed:\s*" + _F + r" samples/sec(?P<rest>.*)$",
)
def _mxnet(m, rec, state):
    pairs = {p.group("k"): p.group("v") for p in _MX_PAIR.finditer(m.group("rest"))}
    loss = _mx_loss(pairs)
    if loss is None:
        return None
    ep, b = int(m.group("ep")), int(m.group("b"))
    if state.get("mx_epoch") != ep:  # the batch count restarts each epoch
        state["mx_base"] = state.get("mx_base", 0) + state.get("mx_last", 0) if "mx_epoch" in state else 0
        state["mx_epoch"] = ep
    state["mx_last"] = b
    return _step_event(rec, "mxnet", step=state["mx_base"] + b, loss=loss, epoch=float(ep), raw_fields=pairs)


@rule("nanogpt-eval", ("val loss",), r"^step \d+: train loss " + _F + r", val loss " + _F + r"\s*$", match_start=True)
def _nanogpt_eval(m, rec, state):
    return []  # estimate_loss() at an eval interval: repeats the step of the `iter N:` line


PARSER = Parser(
    name="trainers",
    framework="trainers",
    priority=25,  # before hf.py's tqdm rule (30), which would claim Lightning bars without an event
    description="torchtitan, OLMo, fairseq, Lightning/NeMo, mmcv/mmengine, DeiT, timm, detectron2, YOLO and MXNet step lines",
    rules=[_spawn_process, _torchtitan, _olmo_header, _olmo_grad, _olmo_loss, _fairseq_json, _fairseq_inner, _fairseq_summary, _fairseq_epoch_json,
           _fairseq_overflow, _fairseq_min, _fairseq_inconsistent, _fairseq_gn_table, _fairseq_gn_row, _tf_nan_hook, _lightning_no_loss, _lightning_early_stop, _lightning, _lightning_head, _lightning_tail, _nemo2, _mmcv, _deit, _progress_meter, _loss_stopping, _detectron2_anomaly, _detectron2_proposals, _own_loss_check, _deit_averaged, _timm, _tacotron2, _torchtune, _yolo_nonfinite, _yolo, _mxnet, _nanogpt_eval],
)
