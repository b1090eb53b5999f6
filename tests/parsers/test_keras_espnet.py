"""Keras progress bars / TerminateOnNaN, ESPnet's skipped-update warnings, torchvision's
`Loss is nan, stopping training` and Lightning's `training_step returned None`: real lines from the
public threads named in sample_logs/public/MANIFEST.toml (205, 215, 500-502, 508, 522, 216), and the
templates cited in the parsers' docstrings."""

from __future__ import annotations

import math

from nanscope import api
from nanscope.model import StepEvent, WarningEvent


def events_of(tmp_path, text: str) -> list:
    p = tmp_path / "train.log"
    p.write_text(text + "\n", encoding="utf-8")
    return list(api.events([str(p)]))


def diagnose(tmp_path, text: str):
    p = tmp_path / "train.log"
    p.write_text(text + "\n", encoding="utf-8")
    return api.diagnose([str(p)])


def test_keras2_bars_and_terminate_on_nan_glued_to_the_bar(tmp_path):
    # manishsoni1908/Mobilenet-ssd-keras#21: the callback's message follows the bar without a newline
    evs = events_of(tmp_path, "Epoch 1/10\n"
                    "  3/234 [..............................] - ETA: 33:37:24 - loss: 44.4110Batch 3: Invalid loss, terminating training\n"
                    "  4/234 [..............................] - ETA: 25:09:00 - loss: inf ")
    steps = [e for e in evs if isinstance(e, StepEvent)]
    assert [(s.framework, s.step) for s in steps] == [("keras", 3), ("keras", 4)]
    assert steps[0].loss == 44.411 and steps[1].loss == math.inf
    stop = [e for e in evs if isinstance(e, WarningEvent)]
    assert [(w.warning, w.step) for w in stop] == [("nonfinite_stop", 4)]  # batch 3 is 0-based: count 4


def test_keras_epoch_end_line_and_val_loss_is_not_the_loss(tmp_path):
    # divamgupta/image-segmentation-keras#50
    evs = events_of(tmp_path, "Epoch 1/1\n512/512 [==============================] - 127s 247ms/step - loss: nan - acc: nan - val_loss: nan - val_acc: nan")
    (s,) = [e for e in evs if isinstance(e, StepEvent)]
    assert s.step == 512 and math.isnan(s.loss)
    evs = events_of(tmp_path, "10/10 [==============================] - 3s 300ms/step - loss: 0.5210 - val_loss: nan")
    (s,) = [e for e in evs if isinstance(e, StepEvent)]
    assert s.loss == 0.521


def test_keras3_bar_and_epochs_continue_the_step(tmp_path):
    # keras/src/utils/progbar.py: a bar of U+2501; the count restarts each epoch
    evs = events_of(tmp_path, "  10/10 ━━━━━━━━━━━━━━━━━━━━ 2s 150ms/step - accuracy: 0.8125 - loss: 0.4012\n"
                    "   5/10 ━━━━━━━━━━━━━━━━━━━━ 0s 140ms/step - accuracy: 0.8200 - loss: nan")
    steps = [e for e in evs if isinstance(e, StepEvent)]
    assert [s.step for s in steps] == [10, 15]
    assert math.isnan(steps[1].loss)


def test_keras_bar_without_a_loss_is_not_a_step(tmp_path):
    assert not [e for e in events_of(tmp_path, "  3/234 [....] - ETA: 33:37:24 - acc: 0.5000") if isinstance(e, StepEvent)]


def test_espnet_warnings(tmp_path):
    evs = events_of(tmp_path, "[user] 2021-04-23 19:22:52,420 (trainer:581) WARNING: The grad norm is nan. Skipping updating the model.\n"
                    "(trainer:582) WARNING: The grad norm is tensor(inf, device='cuda:0'). Skipping updating the model.\n"
                    "2018-05-23 13:05:13,682 (asr_chainer:132) WARNING: grad norm is nan. Do not update model.\n"
                    "(trainer:404) WARNING: The gradients at all steps are invalid in this epoch. Something seems wrong. This training was stopped at 2epoch")
    ws = [e for e in evs if isinstance(e, WarningEvent)]
    assert [w.warning for w in ws] == ["grad_norm_nonfinite"] * 3 + ["nonfinite_stop"]
    assert math.isnan(ws[0].fields["grad_norm"]) and ws[1].fields["grad_norm"] == math.inf
    assert ws[3].fields["epoch"] == 2


def test_espnet2_step_line(tmp_path):
    (s,) = [e for e in events_of(tmp_path, "[user] 2021-04-23 19:22:56,245 (trainer:636) INFO: 2epoch:train:12009-12640batch: iter_time=3.163e-04, "
                                 "forward_time=0.110, loss=65.129, loss_att=124.079, loss_ctc=144.685, acc=0.065, backward_time=0.086, "
                                 "optim0_lr0=1.485e-05, train_time=0.624") if isinstance(e, StepEvent)]
    assert (s.framework, s.step, s.loss, s.lr, s.epoch) == ("espnet", 12640, 65.129, 1.485e-05, 2.0)


def test_loss_is_nan_stopping_training_is_the_next_step(tmp_path):
    evs = events_of(tmp_path, "Epoch: [0]  [ 0/65]  eta: 0:01:55  lr: 0.000125  loss: 2.9749 (2.9749)  time: 1.7780  data: 0.4853  max mem: 5038\n"
                    "Loss is nan, stopping training\nLoss is inf, stopping training")
    steps = [e for e in evs if isinstance(e, StepEvent)]
    assert [s.step for s in steps] == [0, 1, 2]
    assert math.isnan(steps[1].loss) and steps[2].loss == math.inf


def test_lightning_nan_bar_after_training_step_returned_none_is_no_nan(tmp_path):
    # wogur110/PNI_anomaly_detection#7: nothing to average, the bar shows loss=nan
    text = ("UserWarning: `training_step` returned `None`. If this was on purpose, ignore this warning...\n"
            "Epoch 0: 100%|██████████| 320/320 [00:21<00:00, 14.77it/s, loss=nan, v_num=0]")
    assert diagnose(tmp_path, text).verdict == "clean"
    # without the warning the same bar is a NaN loss
    assert diagnose(tmp_path, text.split("\n", 1)[1]).verdict == "actionable"


def test_pytorch_examples_train_epoch_line(tmp_path):
    # pytorch/examples mnist/main.py: samples seen, not the batch index; the step counts samples
    evs = events_of(tmp_path, "Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.300024\nTrain Epoch: 2 [640/60000 (1%)]\tLoss: nan")
    steps = [e for e in evs if isinstance(e, StepEvent)]
    assert [(s.step, s.epoch) for s in steps] == [(0, 1.0), (60640, 2.0)]
    assert steps[0].loss == 2.300024 and math.isnan(steps[1].loss)


def test_tqdm_postfix_loss_is_a_step_once_per_count(tmp_path):
    # tqdm set_postfix(loss=...) in accelerate/diffusers-style scripts; a count redrawn is one step
    bars = ("  2%|▏         | 1/50 [00:01<00:50,  1.02s/it, loss=2.31]\r"
            "  4%|▍         | 2/50 [00:02<00:49,  1.01s/it, loss=nan]\r"
            "  4%|▍         | 2/50 [00:02<00:49,  1.01s/it, loss=nan]\r"
            "  6%|▌         | 3/50 [00:03<00:48,  1.00s/it, lr=0.001, loss=nan]")
    steps = [e for e in events_of(tmp_path, bars) if isinstance(e, StepEvent)]
    assert [s.step for s in steps] == [1, 2, 3]
    assert steps[0].loss == 2.31 and math.isnan(steps[2].loss) and steps[2].lr == 0.001
    # a counter named like a loss is not the loss
    assert not [e for e in events_of(tmp_path, " 4%|▍ | 2/50 [00:02<00:49,  1.01s/it, nan_count=0]") if isinstance(e, StepEvent)]


# TensorFlow's allocator out of memory under Keras (sample_logs/public 1977-1980)
TF2_OOM = (  # keras-team/keras#13376: the kernel's warning and the collective executor's abort, one failure
    "2019-09-30 08:59:59.988498: W tensorflow/core/framework/op_kernel.cc:1431] OP_REQUIRES failed at "
    "fused_batch_norm_op.cc:573 : Resource exhausted: OOM when allocating tensor with shape[295,64,256,256] and type "
    "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
    "2019-09-30 08:59:59.988585: W tensorflow/core/common_runtime/base_collective_executor.cc:214] "
    "BaseCollectiveExecutor::StartAbort Resource exhausted: OOM when allocating tensor with shape[295,64,256,256] and "
    "type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)


def test_tensorflow_oom_is_a_gpu_oom_once(tmp_path):
    report = diagnose(tmp_path, TF2_OOM)
    assert [f.id for f in report.findings] == ["cuda-oom"]
    assert report.findings[0].occurrences == 1
    assert "shape [295,64,256,256] on GPU 0 (GPU_0_bfc allocator)" in report.findings[0].summary


def test_keras_resource_exhausted_exception_is_the_oom_not_an_uncaught_exception(tmp_path):
    # keras-team/keras#9643: the Python exception Keras re-raises, on the second GPU
    report = diagnose(tmp_path, "ResourceExhaustedError: OOM when allocating tensor with shape[128,128,109,109] and "
                                "type float on /job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc")
    assert [f.id for f in report.findings] == ["cuda-oom"]
    assert report.findings[0].initiating_rank is None  # GPU 1 is a device of this process, not a rank
    # tensorflow/tensor2tensor#782: TF 1.x wrote the shape only
    report = diagnose(tmp_path, "2018-05-10 09:14:16.535628: W tensorflow/core/framework/op_kernel.cc:1192] Resource "
                                "exhausted: OOM when allocating tensor with shape[123008,500]")
    assert [f.id for f in report.findings] == ["cuda-oom"]


def test_bfc_allocator_retry_that_is_not_a_failure_is_clean(tmp_path):
    # tensorflow/tensor2tensor#782: the allocator's own words say it is not a failure
    report = diagnose(tmp_path, "2018-05-10 09:14:16.536752: W tensorflow/core/common_runtime/bfc_allocator.cc:217] "
                                "Allocator (GPU_0_bfc) ran out of memory trying to allocate 84.60MiB. The caller "
                                "indicates that this is not a failure, but may mean that there could be performance "
                                "gains if more memory is available.")
    assert report.findings == []
