"""Numerics families first seen in the blind public round 1700-1723 (sample_logs/public/17NN.log):
what a user who pastes such a log gets as the first finding, at which step.

Every input is lines copied from the public thread named in the comment (the same excerpts, with
their provenance, are in sample_logs/public), cut to what the family needs.
"""

from __future__ import annotations

import math

from conftest import ids
from nanscope import api
from nanscope.model import ScaleEvent, StepEvent

ZERO2 = ("[2022-09-14 22:57:53,096] [INFO] [stage2.py:1387:step] [deepspeed] fp16 dynamic loss scale overflow! Rank {r} "
         "Skipping step. Attempted loss scale: 4294967296, reducing to 4294967296")
MEGATRON_602 = [  # NVIDIA/Megatron-LM#602: every iteration skipped, the loss scale never moves
    " iteration        1/ 2753818 | consumed samples:            8 | elapsed time per iteration (ms): 5801.1 | learning rate: 1.000E-07 | global batch size:     8 | loss scale: 16384.0 | number of skipped iterations:   1 | number of nan iterations:   0 |",
    " iteration        2/ 2753818 | consumed samples:           16 | elapsed time per iteration (ms): 1152.3 | learning rate: 1.000E-07 | global batch size:     8 | loss scale: 16384.0 | number of skipped iterations:   1 | number of nan iterations:   0 |",
    " iteration        3/ 2753818 | consumed samples:           24 | elapsed time per iteration (ms): 1118.1 | learning rate: 1.000E-07 | global batch size:     8 | loss scale: 16384.0 | number of skipped iterations:   1 | number of nan iterations:   0 |",
    " iteration        4/ 2753818 | consumed samples:           32 | elapsed time per iteration (ms): 1119.8 | learning rate: 1.000E-07 | global batch size:     8 | loss scale: 16384.0 | number of skipped iterations:   1 | number of nan iterations:   0 |",
]


def _write(tmp_path, text: str):
    p = tmp_path / "job.log"
    p.write_text(text + "\n", encoding="utf-8")
    return str(p)


def diagnose(tmp_path, text: str):
    return api.diagnose([_write(tmp_path, text)])


def events(tmp_path, text: str) -> list:
    return list(api.events([_write(tmp_path, text)]))


def steps(tmp_path, text: str) -> list[StepEvent]:
    return [e for e in events(tmp_path, text) if isinstance(e, StepEvent)]


def test_zero2_overflow_printed_by_every_rank_is_one_warmup_overflow(tmp_path):
    # THUDM/GLM#32: DeepSpeed 0.3-0.5 ZeRO-2 wording; all ranks print the one overflow of the step
    text = "\n".join(ZERO2.format(r=r) for r in (4, 6, 7, 2, 5, 1, 0))
    scales = [e for e in events(tmp_path, text) if isinstance(e, ScaleEvent)]
    assert [(e.action, e.old_scale, e.new_scale) for e in scales] == [("overflow", 4294967296.0, 4294967296.0)]
    report = diagnose(tmp_path, text)
    assert ids(report) == ["loss-scale-warmup"] and report.verdict == "benign"
    assert "1 overflow(s)" in report.findings[0].summary


def test_zero2_overflow_repeating_a_rank_is_the_next_overflow(tmp_path):
    # the group of one step ends at a rank that printed already: rank 4 again is the next step's overflow
    text = "\n".join(ZERO2.format(r=r) for r in (4, 6, 4, 6))
    scales = [e for e in events(tmp_path, text) if isinstance(e, ScaleEvent)]
    assert len(scales) == 2


def test_every_iteration_skipped_at_one_scale_is_updates_skipped_not_warmup(tmp_path):
    report = diagnose(tmp_path, "\n".join(MEGATRON_602))
    assert ids(report) == ["updates-skipped"] and report.verdict == "actionable"
    assert report.findings[0].first_step == 1


def test_two_skipped_iterations_are_still_too_few_for_updates_skipped(tmp_path):
    assert "updates-skipped" not in ids(diagnose(tmp_path, "\n".join(MEGATRON_602[:2])))


def test_yolov8_epoch_rows_with_nan_losses(tmp_path):
    # ultralytics/ultralytics#16857 (progress bars cut at the terminal width, as pasted)
    text = "\n".join([
        "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size",
        "     1/1000      17.2G        nan        nan        nan         55        640: 100%|██████████| 4/4 [01:28<00:00, 22.19",
        "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|██████████| 1/1 [00:09<0",
        "                   all        200        449          0          0          0          0",
        "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size",
        "     2/1000      17.2G        nan        nan        nan         65        640: 100%|██████████| 4/4 [01:22<00:00, 20.68",
    ])
    got = steps(tmp_path, text)
    assert [e.framework for e in got] == ["ultralytics", "ultralytics"] and all(math.isnan(e.loss) for e in got)
    assert ids(diagnose(tmp_path, text))[0] == "nan-persistent"


def test_yolov5_single_nan_row_is_not_clean(tmp_path):
    # ultralytics/yolov5#4963: one epoch row, every loss nan, on a GTX 16xx
    text = ("     Epoch   gpu_mem       box       obj       cls    labels  img_size\n"
            "      1/99     2.64G         nan       nan       nan         4       416: 100%|██████████| 7/7 [00:15<00:00,  2.27s/it]")
    assert ids(diagnose(tmp_path, text))[0] == "nan-persistent"


def test_yolo_finite_rows_sum_the_loss_components(tmp_path):
    # ultralytics/ultralytics#21765 (a negative box loss, as printed) and #1854
    text = ("      21/55      9.95G    -0.2338       5.07      2.977         12        640: 100%|██████████| 787/787 [09:07<00:00,  1.44it/s]\n"
            "    261/300      2.95G     0.3137     0.3809     0.7961          3        640: 100%|██████████| 246/246 [02:17<00:00,  1.79it/s]")
    got = steps(tmp_path, text)
    assert [round(e.loss, 4) for e in got] == [round(-0.2338 + 5.07 + 2.977, 4), round(0.3137 + 0.3809 + 0.7961, 4)]
    assert got[0].step < got[1].step


def test_mxnet_speedometer_metric_named_loss(tmp_path):
    # bytedance/byteps#411: the user's metric is IDLoss; nan from batch 7
    text = "\n".join([
        "2021-08-12 05:44:06,251 Epoch[1] Batch[6] Speed: 136.34 samples/sec,  IDLoss=70.405,",
        "2021-08-12 05:44:07,141 Epoch[1] Batch[7] Speed: 143.86 samples/sec,  IDLoss=nan,",
        "2021-08-12 05:44:07,971 Epoch[1] Batch[8] Speed: 156.27 samples/sec,  IDLoss=nan,",
    ])
    got = steps(tmp_path, text)
    assert [(e.framework, e.step) for e in got] == [("mxnet", 6), ("mxnet", 7), ("mxnet", 8)]
    f = diagnose(tmp_path, text).findings[0]
    assert (f.id, f.first_step) == ("nan-persistent", 7)


def test_kohya_avr_loss_postfix(tmp_path):
    # kohya-ss/sd-scripts#2137
    text = ("steps:   1%|▋                                                        | 41/3280 [00:50<1:06:54,  1.24s/it, avr_loss=nan]\n"
            "steps:   2%|█▍                                                       | 82/3280 [01:40<1:05:00,  1.22s/it, avr_loss=nan]")
    f = diagnose(tmp_path, text).findings[0]
    assert (f.id, f.first_step) == ("nan-persistent", 41)


def test_llama2c_leading_iteration_is_the_step(tmp_path):
    # datawhalechina/tiny-universe#31 (llama2.c's `{iter_num} | loss ... | lr ...` line)
    got = steps(tmp_path, "100000 | loss nan | lr 0.000000e+00 | 2006.12ms | mfu 1.68%")
    assert [(e.step, math.isnan(e.loss)) for e in got] == [(100000, True)]


def test_bare_epoch_and_batch_counts_before_pairs(tmp_path):
    # cchen156/Learning-to-See-in-the-Dark#117: `print("%d %d Loss=%.3f Time=%.3f" % (epoch, cnt, ...))`
    text = "333 160 Loss=nan Time=0.036\n333 161 Loss=nan Time=0.042\n334 1 Loss=nan Time=0.044"
    got = steps(tmp_path, text)
    assert [e.epoch for e in got] == [333.0, 333.0, 334.0] and got[0].step < got[1].step < got[2].step
    assert ids(diagnose(tmp_path, text))[0] == "nan-persistent"


def test_keras_final_bars_are_numbered_by_the_epoch_headers(tmp_path):
    # keras-team/keras#21: only each epoch's final bar is printed, all with the same count
    text = "\n".join([
        "Epoch 7", "61878/61878 [==============================] - 5s - loss: 0.7909     ",
        "Epoch 8", "61878/61878 [==============================] - 4s - loss: 0.7627     ",
        "Epoch 9", "61878/61878 [==============================] - 5s - loss: 0.7407     ",
        "Epoch 10", "61878/61878 [==============================] - 6s - loss: 13.3614     ",
        "Epoch 11", "61878/61878 [==============================] - 5s - loss: 26.6396     ",
    ])
    got = steps(tmp_path, text)
    assert [e.step for e in got] == [61878 * k for k in range(1, 6)]


def test_imagenet_progress_meter_lines_are_steps(tmp_path):
    # maudzung/RTM3D#4 (a copy of pytorch/examples' ProgressMeter; the logger's header line between)
    text = ("2020-08-17 21:48:47,912: logger.py - info(), at Line 49:INFO:\n"
            "Train - Epoch: [127/300][ 35/464]\tTime  0.738 ( 0.738)\tData  0.000 ( 0.014)\tLoss 2.1274e+00 (1.5406e+00)\n"
            "2020-08-17 21:49:24,172: logger.py - info(), at Line 49:INFO:\n"
            "Train - Epoch: [127/300][ 85/464]\tTime  0.730 ( 0.730)\tData  0.000 ( 0.006)\tLoss 1.2996e+00 (1.5485e+00)")
    assert [(e.step, e.loss) for e in steps(tmp_path, text)] == [(127 * 464 + 35, 2.1274), (127 * 464 + 85, 1.2996)]


def test_healthy_progress_meter_log_is_clean(tmp_path):
    # cybertronai/imagenet18_old#19: the maintainer's healthy run, pasted to show the NaN is gone
    text = "\n".join([
        "Epoch: [23][280/715]    Time 0.290 (0.318)      Loss 1.1693 (1.1644)    Acc@1 72.656 (72.098)   Acc@5 88.895 (89.210)   Data 0.003 (0.038)      BW 0.000 0.000",
        "Epoch: [23][285/715]    Time 0.283 (0.317)      Loss 1.1770 (1.1636)    Acc@1 71.987 (72.104)   Acc@5 88.839 (89.222)   Data 0.004 (0.038)      BW 0.000 0.000",
        "Epoch: [23][290/715]    Time 0.305 (0.317)      Loss 1.1653 (1.1635)    Acc@1 70.815 (72.096)   Acc@5 88.895 (89.223)   Data 0.003 (0.038)      BW 0.000 0.000",
    ])
    assert len(steps(tmp_path, text)) == 3
    report = diagnose(tmp_path, text)
    assert report.findings == [] and report.verdict == "clean"


HALLO_152 = [  # fudan-generative-vision/hallo#152: a resumed run; the bar's step_loss is nan while the scale halves
    "[2024-07-10 15:50:45,798] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 262144, reducing to 131072",
    "Steps:   0%|                                                                                                                                         | 1/2000 [00:14<8:16:07, 14.89s/it, lr=1e-5, step_loss=nan, td=2.85s][2024-07-10 15:50:50,576] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 131072, reducing to 65536",
    "Steps:   0%|▏                                                                                                                                        | 2/2000 [00:19<4:57:47,  8.94s/it, lr=1e-5, step_loss=nan, td=0.11s][2024-07-10 15:50:55,602] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
]


def test_a_bar_glued_before_an_overflow_keeps_its_step_loss(tmp_path):
    got = steps(tmp_path, "\n".join(HALLO_152))
    assert [(e.step, math.isnan(e.loss)) for e in got] == [(1, True), (2, True)]
    scales = [e for e in events(tmp_path, "\n".join(HALLO_152)) if isinstance(e, ScaleEvent)]
    assert [e.step for e in scales][1:] == [2, 3]


def test_nan_loss_during_halvings_is_no_warmup(tmp_path):
    report = diagnose(tmp_path, "\n".join(HALLO_152))
    assert ids(report) == ["nan-persistent"] and report.verdict == "actionable"
    assert "do not explain a non-finite loss" in report.findings[0].summary


def test_torchtune_bar_description_loss(tmp_path):
    # meta-pytorch/torchtune#2776 (the paste lost the `epoch|step` part: the bar's count is the step)
    got = steps(tmp_path, "|Loss: nan:   0%|                         | 3/3073 [00:15<4:04:50,  4.79s/it]")
    assert [(e.framework, e.step, math.isnan(e.loss)) for e in got] == [("torchtune", 3, True)]


def test_an_inf_loss_in_the_first_window_that_recovers(tmp_path):
    # open-mmlab/mmdetection#4594: the scale never touches the forward pass, so this is no warm-up
    text = ("2021-02-09 17:29:51,273 - mmdet - INFO - Epoch [1][50/152]\tlr: 9.890e-04, eta: 1:59:58, time: 2.408, data_time: 0.165, memory: 10807, loss_cls: 0.9762, loss_bbox: inf, loss: inf, grad_norm: 2.7955\n"
            "2021-02-09 17:31:46,863 - mmdet - INFO - Epoch [1][100/152]\tlr: 1.988e-03, eta: 1:55:37, time: 2.312, data_time: 0.086, memory: 10807, loss_cls: 0.6676, loss_bbox: 0.5111, loss: 1.1786, grad_norm: 2.3799")
    f = diagnose(tmp_path, text).findings[0]
    assert (f.id, f.first_step) == ("nan-skip-recover", 50)


def test_opennmt_xent_is_the_loss(tmp_path):
    # OpenNMT/OpenNMT-py#1072: onmt's Statistics.output line; the loss is xent
    text = ("[2018-11-26 15:02:57,162 INFO] Step 5600/50000; acc:  47.14; ppl:  9.83; xent: 2.29; lr: 0.00069; 1065/1591 tok/s;  20926 sec\n"
            "[2018-11-26 15:06:01,481 INFO] Step 5650/50000; acc:   0.19; ppl:   nan; xent:  nan; lr: 0.00070; 1928/2310 tok/s;  21110 sec\n"
            "[2018-11-26 15:09:00,598 INFO] Step 5700/50000; acc:   0.17; ppl:   nan; xent:  nan; lr: 0.00070; 1827/2180 tok/s;  21289 sec")
    assert [e.step for e in steps(tmp_path, text)] == [5600, 5650, 5700]
    f = diagnose(tmp_path, text).findings[0]
    assert (f.id, f.first_step) == ("nan-persistent", 5650)


def test_tf_nan_tensor_hook_is_one_nan_loss_not_just_an_exception(tmp_path):
    # JiDong-CS/icme2019-bytedance-grand-challenge#14: the error, its glog copy, then the exception
    text = "\n".join([
        "INFO:tensorflow:Saving checkpoints for 0 into finish/model.ckpt.",
        "ERROR:tensorflow:Model diverged with loss = NaN.",
        "E0410 22:34:13.729731 4483055104 basic_session_run_hooks.py:760] Model diverged with loss = NaN.",
        "tensorflow.python.training.basic_session_run_hooks.NanLossDuringTrainingError: NaN loss during training. ",
    ])
    assert len(steps(tmp_path, text)) == 1
    assert ids(diagnose(tmp_path, text)) == ["nan-persistent"]


def test_the_nan_loss_exception_alone(tmp_path):
    # alibaba/EasyRec#24: only the end of the traceback was pasted
    text = ('File "/worker/venv/lib/python2.7/site-packages/tensorflow/python/training/basic_session_run_hooks.py", line 792, in after_run\n'
            "    raise NanLossDuringTrainingError\n"
            "tensorflow.python.training.basic_session_run_hooks.NanLossDuringTrainingError: NaN loss during training.")
    assert ids(diagnose(tmp_path, text))[0] == "nan-persistent"


def test_tacotron2_iteration_is_not_the_loss(tmp_path):
    # NVIDIA/tacotron2#368: a healthy run; the generic reader took `loss 1` (the iteration) for the loss
    text = "\n".join([
        "Epoch: 0",
        "Train loss 0 48.220909 Grad Norm 13.484264 5.71s/it",
        "Validation loss 0: 37.061010  ",
        "Train loss 1 35.229748 Grad Norm 25.020286 3.79s/it",
        "Train loss 2 16.508032 Grad Norm 17.146819 3.99s/it",
        "Train loss 3 9.564240 Grad Norm 13.827114 3.99s/it",
    ])
    assert [(e.step, e.loss, e.grad_norm) for e in steps(tmp_path, text)] == [
        (0, 48.220909, 13.484264), (1, 35.229748, 25.020286), (2, 16.508032, 17.146819), (3, 9.56424, 13.827114)]
    assert diagnose(tmp_path, text).verdict == "clean"


def test_cifar_tutorial_lines_count_on_across_epochs(tmp_path):
    # maxvanspengler/hyperbolic_learning_library#2: the tutorial's own output, healthy
    text = "\n".join(["[1, 10000] loss: 1.579", "[1, 12000] loss: 1.476", "[2,  2000] loss: 1.462", "[2,  4000] loss: 1.425"])
    assert [(e.step, e.loss) for e in steps(tmp_path, text)] == [(10000, 1.579), (12000, 1.476), (14000, 1.462), (16000, 1.425)]
    assert diagnose(tmp_path, text).verdict == "clean"
