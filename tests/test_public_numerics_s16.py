"""Numerics, session 16: the blind round 4600 and up, and the step-line forms it showed.

A semseg train.py logger (`Epoch: [1/50][1500/11134] ... Loss nan Accuracy 0.0000.`, losses without
their running averages), maskrcnn_benchmark's MetricLogger `loss: nan (nan)`, Mask R-CNN's Keras epochs;
a script's per-epoch record (`Epoch : 0 finished. Training Loss: nan. Validation Loss: nan`).

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines, ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected", [
    ("4600.log", "nan-persistent"),
    ("4601.log", "nan-persistent"),
    ("4602.log", "nan-persistent"),
    ("4603.log", "nan-persistent"),
    ("4605.log", "cudnn-init-failed"),  # JAX: XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed
])
def test_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)]))[0] == expected


def test_a_steady_pretraining_log_stays_clean() -> None:
    # 4604: LLaMA-Factory's Trainer dicts, loss 1.71-1.82 (hiyouga/LlamaFactory#3529)
    assert ids(api.diagnose([str(PUBLIC / "4604.log")])) == []


def test_semseg_losses_without_averages_are_numbered_by_the_progress_counter() -> None:
    # `Epoch: [1/50][1500/11134]`: epoch 1 of 11,134 iterations, iteration 1500 -> step 1 * 11134 + 1500
    report = api.diagnose([str(PUBLIC / "4600.log")])
    assert report.findings[0].first_step == 12634


def test_a_finite_semseg_run_is_healthy(tmp_path) -> None:
    # liuzhengzhe/3D-to-2D-Distillation-for-Indoor-Scene-Parsing#4, the reporter's lines before the NaN
    r = diagnose_lines(tmp_path, [
        "[2021-08-16 13:51:04,434 INFO train.py line 404 34387] Epoch: [1/50][1250/11134] Data 0.000 (0.001) Batch 0.450 (0.447) Remain 68:59:42 MainLoss 0.0000 AuxLoss 0.0000 RegLoss 1.0987 FinalLoss 3.0169 Loss 4.1155 Accuracy 0.0000.",
        "[2021-08-16 13:51:08,929 INFO train.py line 404 34387] Epoch: [1/50][1260/11134] Data 0.000 (0.001) Batch 0.447 (0.447) Remain 68:59:48 MainLoss 0.0000 AuxLoss 0.0000 RegLoss 3.1764 FinalLoss 3.2835 Loss 6.4600 Accuracy 0.0000.",
        "[2021-08-16 13:51:13,456 INFO train.py line 404 34387] Epoch: [1/50][1270/11134] Data 0.001 (0.001) Batch 0.458 (0.447) Remain 69:00:08 MainLoss 0.0000 AuxLoss 0.0000 RegLoss 1.6864 FinalLoss 2.3854 Loss 4.0718 Accuracy 0.1933.",
    ])
    assert ids(r) == []


def test_a_progress_line_without_a_loss_is_no_step(tmp_path) -> None:
    # timing meters only: nothing to read as a loss, so a nan elsewhere on it is no NaN loss
    r = diagnose_lines(tmp_path, [
        f"Epoch: [1/50][{i}/11134] Data 0.000 (0.001) Batch nan (0.448) Remain 69:01:09 Accuracy 0.0000." for i in range(10, 60, 10)
    ])
    assert ids(r) == []


def test_a_running_average_turned_nan_dates_the_first_bad_step() -> None:
    # 507 (FCOS under maskrcnn_benchmark): `iter: 40  loss: 23.3687 (nan)`, the median finite, the global
    # average already nan: a NaN loss entered by iteration 40; every loss is nan (nan) from 60
    report = api.diagnose([str(PUBLIC / "507.log")])
    assert ids(report)[0] == "nan-persistent"
    assert report.findings[0].first_step == 40


def test_an_average_that_stays_nan_after_one_bad_step_is_no_persistent_nan(tmp_path) -> None:
    # the global average keeps a skipped step's NaN for the rest of the run; the medians are finite again
    lines = [f"2020-12-28 12:36:34,561 fcos_core.trainer INFO: eta: 7 days, 9:22:30  iter: {i}  loss: {2.5 - i / 1000:.4f} ({2.6 - i / 1000:.4f})  "
             f"loss_cls: 1.2059 (1.2410)  time: 3.4431 (3.5479)  data: 0.0109 (0.0280)  lr: 0.003333  max mem: 9314" for i in range(20, 220, 20)]
    lines += [f"2020-12-28 12:36:34,561 fcos_core.trainer INFO: eta: 7 days, 9:22:30  iter: {i}  loss: {2.3 - i / 1000:.4f} (nan)  "
              f"loss_cls: 1.2059 (nan)  time: 3.4431 (3.5479)  data: 0.0109 (0.0280)  lr: 0.003333  max mem: 9314" for i in range(220, 620, 20)]
    found = ids(diagnose_lines(tmp_path, lines))
    assert "nan-persistent" not in found
