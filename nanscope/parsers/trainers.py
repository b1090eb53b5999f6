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
      generic: no step (num_updates is the step), the epoch summaries taken for steps, json missed
  Lightning / NeMo 1 tqdm bar  (lightning/pytorch/callbacks/progress/tqdm_progress.py; postfix = progress-bar metrics)
      Epoch 0:  22%|██▏       | 4/18 [00:17<01:02,  4.47s/it, loss=10.072, v_num=193315]
      Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1, v_num=, reduced_train_loss=3.090, global_step=794.0, consumed_samples=1.63e+6]
      generic: never sees them (hf.py's tqdm rule claims bars); tqdm redraws one count several times
  NeMo 2  (MegatronProgressBar)
      Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | global_step: 120 | reduced_train_loss: 1.233 | ...
  mmcv / mmengine  (mmcv/runner/hooks/logger/text.py, mmengine/runner/log_processor.py)
      ... - mmdet - INFO - Epoch [3][50/1749]	lr: 2.000e-02, eta: 0:52:33, ..., loss_rpn_cls: 0.2532, ..., loss: 0.7339, grad_norm: 0.0668
      08/03 22:09:24 - mmengine - INFO - Epoch(train)  [1][ 500/2931]  lr: 2.0000e-02  eta: 0:39:15  ...  loss: nan  loss_rpn_cls: nan ...
      generic: no step (the iteration is inside brackets)
  DeiT / BEiT / MAE MetricLogger, timm train.py  (value then running average in parentheses)
      Epoch: [115]  [1298/1299]  eta: 0:00:00  lr: 0.001435  ...  loss: 6.5993 (6.5971)  loss_scale: 8192.0000 (8646.0600)  ...  grad_norm: 0.3922 (nan)  ...
      Train: 0 [   0/2502 (  0%)]  Loss:  7.023479 (7.0235)  Time: 3.680s,  139.14/s  (3.680s,  139.14/s)  LR: 1.000e-06  Data: 1.776 (1.776)
      generic: no step; epoch averages (`Averaged stats:`) taken for steps
      Loss is nan, stopping training        (the loop's own check on every iteration, then sys.exit(1))
  torchtune  `1|3|Loss: nan:   0%|          | 3/3073 [00:15<4:04:50,  4.79s/it]` (the bar's description)
      generic: nothing (hf.py's tqdm rule claims the bar)
  nanoGPT  `iter 100: loss 4.2345, time 12.34ms, mfu 1.20%` is read right by the generic parser; only its
      eval line `step 2000: train loss 1.7533, val loss 1.8947` is claimed here (it repeats a step number).
"""

from __future__ import annotations

import json
import math
import re
from typing import Optional

from nanscope.model import ScaleEvent, StepEvent
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.numbers import to_float, to_int

_F = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|nan|inf)"
_EQ_PAIR = re.compile(r"(?:^|[\s,\[|(])(?P<k>[A-Za-z_][\w/.\-]*)=(?P<v>[^,\s\]]*)")
_COLON_PAIR = re.compile(r"(?<![\w/.\-])(?P<k>[A-Za-z_][\w/.\-]*):\s*(?P<v>" + _F + r")(?![\w.])")


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


@rule("fairseq-epoch-summary", ("| num_updates ",), r"\bepoch \d+ \|.*\| num_updates \d+")
def _fairseq_summary(m, rec, state):
    return []  # end-of-epoch averages and validation: not a step (train_inner lines carry the steps)


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


# --- Lightning / NeMo ----------------------------------------------------------------------------

_LIGHTNING_LOSS = ("reduced_train_loss", "train_loss_step", "train_loss", "train/loss", "loss_step", "loss")


@rule(
    "lightning-bar",
    ("it/s,", "s/it,"),
    r"^Epoch (?P<ep>\d+):\s*\d+%\|[^|]*\|\s*(?P<n>\d+)/(?P<tot>\d+|\?)\s*\[[^\]]*?(?:it/s|s/it)(?P<post>,[^\]]*)\]",
    match_start=True,
)
def _lightning(m, rec, state):
    pairs = {p.group("k"): p.group("v") for p in _EQ_PAIR.finditer(m.group("post"))}
    loss = _first(pairs, _LIGHTNING_LOSS)
    if loss is None:
        return None  # a bar without a loss: leave it to the other tqdm readers
    if state.get("lt_no_loss") and not math.isfinite(loss):
        return []  # training_step returned None: the bar's running mean of no losses is nan
    ep, n = int(m.group("ep")), int(m.group("n"))
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
    return []


@rule("lightning-no-loss", ("`training_step` returned `None`",), r"`training_step` returned `None`\. If this was on purpose")
def _lightning_no_loss(m, rec, state):
    # lightning/pytorch/loops/optimization/automatic.py (pytorch_lightning/loops/optimization/
    # optimizer_loop.py in 1.x): warning_cache.warn("`training_step` returned `None`. If this was on
    # purpose, ignore this warning..."). No loss was returned, so the bar's `loss=nan` is the mean
    # of an empty running window, not a NaN loss.
    state["lt_no_loss"] = True
    return []


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


@rule("loss-is-stopping", ("stopping training",), r"\bLoss is (?P<loss>[-+]?" + _F + r"), stopping training")
def _loss_stopping(m, rec, state):
    # The non-finite-loss check of the MetricLogger loops: pytorch/vision references/detection/
    # engine.py train_one_epoch `print(f"Loss is {loss_value}, stopping training")` (older:
    # `print("Loss is {}, stopping training".format(loss_value))`, as in facebookresearch/detr
    # engine.py and DeiT / BEiT / MAE engine*.py), then the loss dict and sys.exit(1). The check runs
    # on every iteration, the step line only every print_freq: this is the step in progress.
    loss = to_float(m.group("loss"))
    if loss is None or math.isfinite(loss):
        return None
    return _step_event(rec, "deit", step=None, loss=loss)


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
    return []


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


# torchtune recipes (recipes/*_finetune_*.py, every release): the loss lives only in the bar's description,
#   pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss: {loss_to_log}")
# printed by tqdm as `1|3|Loss: nan:   0%|          | 3/3073 [00:15<4:04:50,  4.79s/it]`. The global step
# is the step; a paste that lost the `epoch|step` part keeps the bar's count.
@rule(
    "torchtune-bar",
    ("|Loss: ",),
    r"(?:(?<![\w.])(?P<ep>\d{1,6})\|(?P<gs>\d{1,12}))?\|Loss: (?P<loss>" + _F + r"):[ ]*\d{1,3}%\|[^|]*\|\s*(?P<n>\d+)/(?P<tot>\d+)",
)
def _torchtune(m, rec, state):
    step = int(m.group("gs")) if m.group("gs") else int(m.group("n"))
    if state.get("tt_last") == step:
        return []  # a redraw of the same step
    state["tt_last"] = step
    return _step_event(rec, "torchtune", step=step, loss=to_float(m.group("loss")),
                       epoch=float(m.group("ep")) if m.group("ep") else None)


@rule("nanogpt-eval", ("val loss",), r"^step \d+: train loss " + _F + r", val loss " + _F + r"\s*$", match_start=True)
def _nanogpt_eval(m, rec, state):
    return []  # estimate_loss() at an eval interval: repeats the step of the `iter N:` line


PARSER = Parser(
    name="trainers",
    framework="trainers",
    priority=25,  # before hf.py's tqdm rule (30), which would claim Lightning bars without an event
    description="torchtitan, OLMo, fairseq, Lightning/NeMo, mmcv/mmengine, DeiT, timm and detectron2 step lines",
    rules=[_spawn_process, _torchtitan, _olmo_header, _olmo_grad, _olmo_loss, _fairseq_json, _fairseq_inner, _fairseq_summary,
           _fairseq_overflow, _fairseq_min, _lightning_no_loss, _lightning, _nemo2, _mmcv, _deit, _loss_stopping, _detectron2_anomaly, _deit_averaged, _timm, _torchtune, _nanogpt_eval],
)
