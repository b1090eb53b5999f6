"""Step lines of other trainers (real; URLs in sample_logs/trainers/README.md and below) -> StepEvents.

Each case is a line the generic pytorch.py parser gets wrong; the assertions name what it got wrong.
"""

from __future__ import annotations

import math

import pytest

from nanscope import api
from nanscope.model import ScaleEvent, StepEvent


def events_of(tmp_path, text: str, parsers=None) -> list:
    p = tmp_path / "train.log"
    p.write_text(text + "\n", encoding="utf-8")
    return list(api.events([str(p)], api.Options(parsers=parsers) if parsers else None))


def steps(tmp_path, text: str) -> list[StepEvent]:
    return [e for e in events_of(tmp_path, text) if isinstance(e, StepEvent)]


def same(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and (a == b or (math.isnan(a) and math.isnan(b))))


STEP_LINES = [
    # torchtitan: the generic parser reads `tps: 7,282` as 7 (pytorch/torchtitan#3393)
    ("[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  grad_norm:  0.8319  "
     "memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%",
     "torchtitan", dict(step=14, loss=3.24405, grad_norm=0.8319, tokens_per_s=7282.0)),
    # torchtitan without grad_norm (pytorch/torchtitan#950)
    ("[rank0]:[titan] 2025-03-12 11:10:21,511 - root - INFO - step: 22  loss:  6.2250  memory:  1.41GiB(1.79%)  "
     "tps: 193,831  tflops: 18.36  mfu: 1.86%",
     "torchtitan", dict(step=22, loss=6.225, grad_norm=None, tokens_per_s=193831.0)),
    # fairseq train_inner: the step is num_updates, not a counter (public fairseq log, logging format of 0.10+)
    ("2023-06-13 17:35:41 | INFO | train_inner | epoch 145:     21 / 282 loss=3.12, nll_loss=1.209, glat_accu=0.488, "
     "glat_context_p=0.473, word_ins=3.004, length=3.055, ppl=8.69, wps=89594.4, ups=1.49, wpb=60261, bsz=2165, "
     "num_updates=40600, lr=0.000156941, gnorm=0.48, clip=0, loss_scale=32768, train_wall=46, wall=0",
     "fairseq", dict(step=40600, loss=3.12, grad_norm=0.48, lr=0.000156941, loss_scale=32768.0, epoch=145.0)),
    # fairseq <= 0.6 (facebookresearch/fairseq#515)
    ("| epoch 001:    200 / 1374 loss=14.351, ppl=20899.56, wps=49604, ups=0, wpb=277035.016, bsz=8563.074, "
     "num_updates=190, lr=4.84525e-06, gnorm=3.901, clip=0.000, oom=0.000, loss_scale=0.062, wall=1061, train_wall=945",
     "fairseq", dict(step=190, loss=14.351, grad_norm=3.901, loss_scale=0.062)),
    # fairseq --log-format json: the generic parser cannot read `"key": "value"` at all (public fairseq log)
    ('2024-02-29 08:01:49 | INFO | train_inner | {"epoch": 1, "update": 0.001, "loss": "16.3", "inner_loss": "20.917", '
     '"ppl": "1.98043e+06", "wps": "11941.9", "ups": "0.12", "wpb": "98304", "bsz": "96", "num_updates": "10", '
     '"lr": "7.33333e-06", "gnorm": "27.354", "loss_scale": "16", "train_wall": "257", "wall": "259"}',
     "fairseq", dict(step=10, loss=16.3, grad_norm=27.354, loss_scale=16.0, lr=7.33333e-06)),
    # NeMo 2 MegatronProgressBar: loss is reduced_train_loss (NVIDIA-BioNeMo/bionemo-recipes#740)
    ("Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | global_step: 120 "
     "| reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | val_loss: 4.106",
     "nemo", dict(step=120, loss=1.233, lr=3e-05)),
    # mmcv: the iteration is inside brackets; loss is the total, not loss_rpn_cls (open-mmlab/mmdetection#3446)
    ("2020-08-01 01:10:31,475 - mmdet - INFO - Epoch [3][50/1749]\tlr: 2.000e-02, eta: 0:52:33, time: 1.899, "
     "data_time: 0.046, memory: 5280, loss_rpn_cls: 0.2532, loss_rpn_bbox: 0.0409, s0.loss_cls: 0.2136, s0.acc: 94.4818, "
     "s0.loss_bbox: 0.0862, s1.loss_cls: 0.0732, s1.acc: 96.6602, s1.loss_bbox: 0.0330, s2.loss_cls: 0.0273, "
     "s2.acc: 97.7070, s2.loss_bbox: 0.0065, loss: 0.7339, grad_norm: 0.0668",
     "mmcv", dict(step=2 * 1749 + 50, loss=0.7339, grad_norm=0.0668, lr=0.02, epoch=3.0)),
    # mmcv with slash keys before the total (ZYang2077/DAOcc#25)
    ("2025-08-12 11:56:37,566 - mmdet3d - INFO - Epoch [1][27/30895]\tlr: 7.360e-05, eta: 4 days, 13:16:00, "
     "time: 1.940, data_time: 0.090, memory: 12811, loss/object/heatmap/task0: 1.6504, loss/object/bbox/task0: 0.0120, "
     "loss/occ/loss_occ: 2.5735, loss: 119.6038, grad_norm: 775.8964",
     "mmcv", dict(step=27, loss=119.6038, grad_norm=775.8964)),
    # mmengine (open-mmlab/mmdetection#11893)
    ("08/03 22:09:24 - mmengine - INFO - Epoch(train)  [1][ 500/2931]  lr: 2.0000e-02  eta: 0:39:15  time: 0.0578  "
     "data_time: 0.0017  memory: 2389  loss: nan  loss_rpn_cls: nan  loss_rpn_bbox: nan  loss_cls: nan  acc: 0.0000  "
     "loss_bbox: nan",
     "mmengine", dict(step=500, loss=float("nan"), lr=0.02)),
    # DeiT/BEiT MetricLogger: value then (running average) (microsoft/unilm#598; ** is the Markdown bold)
    ("Epoch: [115]  [1298/1299]  eta: 0:00:00  lr: 0.001435  min_lr: 0.001435  mlm_acc: 0.0333 (0.0344)  "
     "loss: 6.5993 (6.5971)  loss_scale: 8192.0000 (8646.0600)  weight_decay: 0.0500 (0.0500)  **grad_norm: 0.3922 (nan)**  "
     "time: 0.4944  data: 0.0001  max mem: 19152",
     "deit", dict(step=115 * 1299 + 1298, loss=6.5993, grad_norm=0.3922, loss_scale=8192.0)),
    # timm train.py (yitu-opensource/T2T-ViT#19)
    ("Train: 0 [   0/2502 (  0%)]  Loss:  7.023479 (7.0235)  Time: 3.680s,  139.14/s  (3.680s,  139.14/s)  "
     "LR: 1.000e-06  Data: 1.776 (1.776)",
     "timm", dict(step=0, loss=7.023479, lr=1e-06)),
]


@pytest.mark.parametrize("line,framework,want", STEP_LINES)
def test_step_lines(tmp_path, line, framework, want):
    got = steps(tmp_path, line)
    assert len(got) == 1, got
    ev = got[0]
    assert ev.framework == framework
    for k, v in want.items():
        assert same(getattr(ev, k), v), (k, getattr(ev, k), v)


def test_generic_parser_really_gets_these_wrong(tmp_path):
    """Guard: if pytorch.py learns a format, the specific rule here can go."""
    titan = STEP_LINES[0][0]
    generic = [e for e in events_of(tmp_path, titan, parsers=["pytorch"]) if isinstance(e, StepEvent)]
    assert generic[0].tokens_per_s == 7.0
    fairseq = STEP_LINES[2][0]
    generic = [e for e in events_of(tmp_path, fairseq, parsers=["pytorch"]) if isinstance(e, StepEvent)]
    assert generic[0].step != 40600  # num_updates is not a step key to it


def test_nanogpt_is_left_to_the_generic_parser(tmp_path):
    ev = steps(tmp_path, "iter 36298: loss 5.8465, time 148.74ms, mfu 0.01%")[0]  # karpathy/nanoGPT#167
    assert (ev.framework, ev.step, ev.loss) == ("pytorch", 36298, 5.8465)


def test_olmo_block(tmp_path):
    """OLMo prints a header and one metric per line (allenai/OLMo#692)."""
    text = ("2024-08-06 10:00:05.520 intern-studio-160750:0  olmo.train:908  INFO    [step=2/739328,epoch=0]\n"
            "    optim/total_grad_norm=0.0002\n"
            "    train/CrossEntropyLoss=1.7872662283480167e-06\n"
            "    train/Perplexity=1.000\n"
            "    throughput/device/tokens_per_second=26,668")
    got = steps(tmp_path, text)
    assert [(e.framework, e.step, e.loss, e.grad_norm) for e in got] == [("olmo", 2, 1.7872662283480167e-06, 0.0002)]


def test_fairseq_overflow_and_minimum(tmp_path):
    evs = events_of(tmp_path, "2023-06-13 17:37:40 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 16384.0\n"
                              "| WARNING: overflow detected, setting loss scale to: 0.0001220703125\n"  # fairseq#512
                              "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. "
                              "Try lowering the learning rate, using gradient clipping or increasing the batch size.")  # fairseq#1529
    scales = [e for e in evs if isinstance(e, ScaleEvent)]
    assert [(e.action, e.new_scale) for e in scales] == [("overflow", 16384.0), ("overflow", 0.0001220703125), ("minimum", 0.0001)]
    assert all(e.rank_is_printer_only for e in scales)


def test_fairseq_epoch_summaries_are_not_steps(tmp_path):
    text = ("2023-06-13 17:35:26 | INFO | train | epoch 144 | loss 3.122 | nll_loss 1.211 | glat_accu 0.485 | "
            "glat_context_p 0.473 | word_ins 3.006 | length 3.063 | ppl 8.71 | wps 111849 | ups 1.85 | wpb 60413.8 | "
            "bsz 2157.2 | num_updates 40579 | lr 0.000156982 | gnorm 0.472 | clip 0 | loss_scale 32768 | train_wall 130 | wall 0\n"
            "| epoch 028 | loss 3.976 | nll_loss 2.204 | ppl 4.61 | wps 279460 | ups 3 | wpb 110529.673 | bsz 3780.211 | "
            "num_updates 9165 | lr 0.000330319 | gnorm 0.635 | clip 0.000 | oom 0.000 | loss_scale 0.000 | wall 4043 | train_wall 3606")
    evs = events_of(tmp_path, text)
    assert [e for e in evs if e.kind == "step"] == []
    # the legacy line's loss_scale 0.000 is the scaler at its floor (fairseq#1529): that, and only that
    assert [(e.kind, e.action, e.loc.line) for e in evs] == [("scale", "minimum", 2)]


def test_lightning_bar_keeps_the_last_drawing_of_each_count(tmp_path):
    """tqdm draws each count twice; the second drawing has the updated loss (Lightning-AI/pytorch-lightning#4225)."""
    text = ("Epoch 0:  17%|█▋        | 3/18 [00:14<01:13,  4.87s/it, loss=10.224, v_num=193315]\n"
            "Epoch 0:  17%|█▋        | 3/18 [00:14<01:13,  4.87s/it, loss=10.047, v_num=193315]\n"
            "Epoch 0:  22%|██▏       | 4/18 [00:17<01:02,  4.47s/it, loss=10.047, v_num=193315]\n"
            "Epoch 0:  22%|██▏       | 4/18 [00:17<01:02,  4.47s/it, loss=9.926, v_num=193315] ")
    assert [(e.step, e.loss) for e in steps(tmp_path, text)] == [(3, 10.047), (4, 9.926)]


def test_nemo1_bar_uses_global_step_and_reduced_loss(tmp_path):
    line = ("Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1, v_num=, reduced_train_loss=3.090, "
            "global_step=794.0, consumed_samples=1.63e+6]")  # NVIDIA/NeMo-Framework-Launcher#55
    assert [(e.step, e.loss) for e in steps(tmp_path, line)] == [(794, 3.09)]


LOOKALIKES = [
    # HF Trainer bars carry no loss: left to hf.py
    " 12%|█▏        | 320/2724 [11:49:53<88:41:03, 132.80s/it]",
    # mmengine validation lines
    "2024/11/09 16:46:55 - mmengine - INFO - Epoch(val)  [2][ 3100/21046]    eta: 0:19:06  time: 0.0638  data_time: 0.0020  memory: 797  ",
    # fairseq validation summary (old form)
    "| epoch 027 | valid on 'valid' subset | valid_loss 8.30118 | valid_nll_loss 7.15366 | valid_ppl 142.39 | num_updates 10198 | best 4.46376",
    # DeiT epoch averages
    "Averaged stats: lr: 0.001435  min_lr: 0.001435  mlm_acc: 0.0333 (0.0345)  loss: 6.5993 (6.5925)  loss_scale: 8192.0000 (8646.0600)  weight_decay: 0.0500 (0.0500)  **grad_norm: 0.3922 (nan)**",
]


@pytest.mark.parametrize("line", LOOKALIKES)
def test_lookalikes_make_no_step(tmp_path, line):
    assert steps(tmp_path, line) == []


# Ultralytics YOLOv3 / early YOLOv5's stop on a non-finite loss, glued after tqdm's epoch row
# (sample_logs/public/2141.log, ultralytics/yolov5) and on its own (2143.log)
_YOLO_STOP = "    16/999     7.38G   0.03433   0.01034   0.01147   0.05613       130       800:  85%|████████▌ | 23/27 [00:15<00:02,  1.66it/s]WARNING: non-finite loss, ending training  tensor([nan, nan, nan, nan], device='cuda:0')"


def test_yolo_nonfinite_stop_is_a_nonfinite_step_at_the_row_drawn_last(tmp_path):
    got = [e for e in steps(tmp_path, _YOLO_STOP) if e.loss is not None and not math.isfinite(e.loss)]
    assert [(e.framework, e.step) for e in got] == [("ultralytics", 16 * 27 + 23)]
    alone = steps(tmp_path, "WARNING: non-finite loss, ending training  tensor([nan, nan, 0., nan], device='cuda:0')")
    assert [math.isnan(e.loss) for e in alone] == [True]  # (its step: the one streams give a step-less row)


def test_yolo_stop_line_with_a_finite_total_is_no_stop(tmp_path):
    got = steps(tmp_path, "WARNING: non-finite loss, ending training  tensor([inf, 0.1, 0.2, 0.3], device='cuda:0')")
    assert all(e.loss is None or math.isfinite(e.loss) for e in got)
