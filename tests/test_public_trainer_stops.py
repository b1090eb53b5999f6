"""Message families of trainers first seen in the blind public rounds 1950-1976 (session 9): a trainer's
own stop on a non-finite value, in the shapes users pasted.

Every input is lines copied verbatim from the public thread named in the comment (the excerpts are in
sample_logs/public with their provenance), cut at line boundaries to what the family needs.
"""

from __future__ import annotations

import math
from pathlib import Path

from nanscope import api
from nanscope.model import StepEvent, WarningEvent

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def _write(tmp_path, lines) -> str:
    p = tmp_path / "job.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(p)


def diagnose(tmp_path, *lines: str):
    return api.diagnose([_write(tmp_path, lines)])


def events(tmp_path, *lines: str) -> list:
    return list(api.events([_write(tmp_path, lines)]))


# facebookresearch/fairseq#1372 (user name in the paths replaced by USER)
FAIRSEQ_RAISE = [
    "-- Process 3 terminated with the following error:",
    "Traceback (most recent call last):",
    '  File "/home/USER/fairseq/fairseq/fairseq/trainer.py", line 643, in train_step',
    "    self._check_grad_norms(grad_norm)",
    '  File "/home/USER/fairseq/fairseq/fairseq/trainer.py", line 1120, in _check_grad_norms',
    '    + "-" * 80',
    "FloatingPointError: Fatal error: gradients are inconsistent between workers. Try --ddp-backend=no_c10d. "
    "Or are you mixing up different generation of GPUs in training?",
]
FAIRSEQ_TABLE = [
    "--------------------------------------------------------------------------------",
    "grad_norm across the workers:",
    "rank   0 = nan",
    "rank   1 = nan",
    "rank   2 = nan",
    "rank   3 = nan",
    "",
    "--------------------------------------------------------------------------------",
]


def test_fairseq_inconsistent_gradients_with_nan_on_every_worker_is_a_nan_stop(tmp_path):
    # the message says desync; the table says every worker's grad norm is NaN: the gradients are non-finite
    report = diagnose(tmp_path, *FAIRSEQ_RAISE, *FAIRSEQ_TABLE)
    assert [f.id for f in report.findings] == ["nan-persistent"]
    assert report.findings[0].initiating_rank is None  # after the all-reduce the NaN is on every worker
    stop = [e for e in events(tmp_path, *FAIRSEQ_RAISE, *FAIRSEQ_TABLE) if isinstance(e, WarningEvent)]
    assert [(e.warning, e.loc.line) for e in stop] == [("nonfinite_stop", 10)]  # the first row, once per table


def test_fairseq_inconsistent_gradients_without_its_table_stays_the_exception(tmp_path):
    # the same paste cut before the table: nothing says the gradients were non-finite
    report = diagnose(tmp_path, *FAIRSEQ_RAISE)
    assert [f.id for f in report.findings] == ["uncaught-exception"]
    assert "gradients are inconsistent between workers" in report.findings[0].summary


def test_a_nan_row_without_the_fairseq_exception_is_no_table(tmp_path):
    # the rows mean something only under the exception that printed them
    report = diagnose(tmp_path, *FAIRSEQ_TABLE)
    assert report.findings == []


# MeteoSwiss/ldcast#7: Lightning's bar for an epoch of unknown length (no percentage, `Nit`), the
# EarlyStopping message glued to a redraw
LDCAST_GOOD = ("Epoch 11: : 1200it [21:02,  1.05s/it, loss=0.0638, v_num=0, val_loss=0.054, val_rec_loss=0.0454, "
               "val_kl_loss=0.819]                               Metric val_rec_loss improved by 0.010 >= min_delta = 0.0. "
               "New best score: 0.045                                                                     ")
LDCAST_BAD = [
    "Epoch 12: : 600it [11:53,  1.19s/it, loss=nan, v_num=0, val_loss=0.054, val_rec_loss=0.0454, val_kl_loss=0.819]"
    "NaN or Inf found in input tensor.",
    "Epoch 12: : 1200it [20:40,  1.03s/it, loss=nan, v_num=0, val_loss=nan.0, val_rec_loss=nan.0, val_kl_loss=nan.0]"
    "                                   Monitored metric val_rec_loss = nan is not finite. Previous best value was "
    "0.045. Signaling Trainer to stop.                                        ",
    "Epoch 12: : 1200it [20:40,  1.03s/it, loss=nan, v_num=0, val_loss=nan.0, val_rec_loss=nan.0, val_kl_loss=nan.0]",
]


def test_lightning_bar_of_unknown_length_is_read_and_its_nan_is_persistent(tmp_path):
    report = diagnose(tmp_path, LDCAST_GOOD, *LDCAST_BAD)
    assert [f.id for f in report.findings] == ["nan-persistent"]
    steps = [e for e in events(tmp_path, LDCAST_GOOD, *LDCAST_BAD) if isinstance(e, StepEvent)]
    # the count restarts each epoch: epoch 12's 600 follows epoch 11's 1200; the two drawings of 1200 are one step
    assert [e.step for e in steps] == [1200, 1800, 2400]
    assert steps[0].loss == 0.0638 and all(math.isnan(e.loss) for e in steps[1:])
    assert report.findings[0].first_step == 1800
    # the EarlyStopping stop rides on the step whose redraw it was glued to
    assert steps[-1].raw_fields["early_stopping"] == "val_rec_loss"


def test_lightning_bar_of_unknown_length_with_a_finite_loss_is_clean(tmp_path):
    report = diagnose(tmp_path, LDCAST_GOOD)
    assert report.findings == []
    assert [e.loss for e in events(tmp_path, LDCAST_GOOD) if isinstance(e, StepEvent)] == [0.0638]


# ultralytics/ultralytics#19357: the epoch table pasted with an editor's line numbers
YOLO_GUTTER = [
    "510       Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size",
    " 511      90/300        17G      1.757      1.015       0.96          1        640: 100%|\u2588\u2588\u2588\u2588"
    "\u2588\u2588\u2588\u2588\u2588\u2588| 278/278 [02:11<00:00,  2.11it/s]",
    " 516      91/300        17G        nan        nan        nan          2        640: 100%|\u2588\u2588\u2588\u2588"
    "\u2588\u2588\u2588\u2588\u2588\u2588| 278/278 [02:11<00:00,  2.11it/s]",
    " 521      92/300        17G        nan        nan        nan          3        640: 100%|\u2588\u2588\u2588\u2588"
    "\u2588\u2588\u2588\u2588\u2588\u2588| 278/278 [02:11<00:00,  2.12it/s]",
]


def test_yolo_rows_behind_a_line_number_gutter_are_read(tmp_path):
    report = diagnose(tmp_path, *YOLO_GUTTER)
    assert [f.id for f in report.findings] == ["nan-persistent"]
    steps = [e for e in events(tmp_path, *YOLO_GUTTER) if isinstance(e, StepEvent)]
    # the epoch column, not the gutter, makes the step: epoch 90 of 278 batches, batch 278
    assert [e.epoch for e in steps] == [90.0, 91.0, 92.0]
    assert steps[0].loss == 1.757 + 1.015 + 0.96


def test_a_finite_yolo_row_behind_a_gutter_is_clean(tmp_path):
    report = diagnose(tmp_path, *YOLO_GUTTER[:2])
    assert report.findings == []


def test_fairseq_inconsistent_gradients_with_finite_norms_stays_the_exception(tmp_path):
    # microsoft/Tutel#293: MoE experts make the workers' gradients differ by design; the rows are finite
    # (the stray quote as pasted), so the exception is what it says, released when nothing else comes
    report = diagnose(
        tmp_path,
        "FloatingPointError: Fatal error: gradients are inconsistent between workers. Try --ddp-backend=legacy_ddp. "
        "Or are you mixing up different generation of GPUs in training?",
        "grad_norm across the workers:",
        "rank   0 = 120.00565186",
        "rank   1 = 115.86860352'",
    )
    assert [f.id for f in report.findings] == ["uncaught-exception"]
    assert report.findings[0].first_loc[1] == 1  # held back for its table, reported at its own line


# detectron2's RPN check (proposal_utils.find_top_rpn_proposals), in the projects built on it
D2_PROPOSALS = "FloatingPointError: Predicted boxes or scores contain Inf/NaN. Training has diverged."
META_FRCNN = [  # GuangxingHan/Meta-Faster-R-CNN#15 (user name in paths replaced by USER)
    '  File "/home/USER/anaconda3/envs/chpy/lib/python3.8/site-packages/detectron2/modeling/proposal_generator/'
    'proposal_utils.py", line 103, in find_top_rpn_proposals',
    "    raise FloatingPointError(",
    D2_PROPOSALS,
]


def test_detectron2_proposals_check_is_a_stop_on_non_finite_outputs_not_a_generic_exception(tmp_path):
    # facebookresearch/detectron2#1128 (the maintainer: a smaller learning rate), alone and under its traceback
    for lines in ([D2_PROPOSALS], META_FRCNN):
        report = diagnose(tmp_path, *lines)
        assert [f.id for f in report.findings] == ["nan-persistent"], lines
        assert report.findings[0].occurrences == 1


def test_detectron2_proposals_message_pasted_twice_is_one_stop(tmp_path):
    # aliyun/DCT-Mask#3: the raise's argument, then the exception line
    lines = ['Predicted boxes or scores contain Inf/NaN. Training has diverged."', D2_PROPOSALS]
    stops = [e for e in events(tmp_path, *lines) if isinstance(e, WarningEvent) and e.warning == "nonfinite_stop"]
    assert [e.loc.line for e in stops] == [1]


def test_detectron2_proposals_frames_without_the_message_say_nothing(tmp_path):
    assert diagnose(tmp_path, *META_FRCNN[:2]).findings == []


def test_a_training_steps_own_nan_loss_raise_is_the_nan_not_a_generic_exception(tmp_path):
    # jstmn/ikflow#23 (user name in paths replaced by USER): the script's own check in training_step
    report = diagnose(
        tmp_path,
        '  File "/home/USER//Desktop/microneedle/ikflow/ikflow/training/lt_model.py", line 203, in training_step',
        '    raise ValueError("loss is nan")',
        "ValueError: loss is nan",
    )
    assert [f.id for f in report.findings] == ["nan-persistent"]
    # melonwan/denseReg#21: an assert with the TF hook's words, without its closing period
    report = diagnose(
        tmp_path,
        '  File "/home/denseReg/model/train_single_gpu.py", line 149, in train',
        "    assert not np.isnan(loss_value), 'Model diverged with loss = NaN'",
        "AssertionError: Model diverged with loss = NaN",
    )
    assert [f.id for f in report.findings] == ["nan-persistent"]


def test_exceptions_that_mention_the_loss_keep_their_own_findings(tmp_path):
    # the word loss without a claim that the loss is non-finite: the corpus's own excerpts, first lines
    for n, want in (("1404", "ddp-unused-parameters"), ("916", "nan-check-origin")):
        report = api.diagnose([str(SAMPLES / f"{n}.log")])
        assert report.findings and report.findings[0].id == want, n


# facebookresearch/fairseq#1529: the epoch-average record, JSON wrapped by the terminal
FAIRSEQ_EPOCH = [
    "2020-10-01 10:25:50 | INFO | fairseq_cli.train | end of epoch 73 (average epoch stats below)",
    "2020-10-01 10:25:50 | WARNING | root | NaN or Inf found in input tensor.",
    '2020-10-01 10:25:50 | INFO | train | {"epoch": 73, "train_loss": "nan", "train_ntokens": "15558.8", '
    '"train_nsentences": "427.098", "t',
    'rain_nll_loss": "nan", "train_wps": "2443", "train_ups": "0.16", "train_wpb": "15558.8", "train_bsz": "427.1", '
    '"train_num_updates": "',
    '9291", "train_lr": "1e-08", "train_gnorm": "nan", "train_loss_scale": null, "train_train_wall": "867", '
    '"train_wall": "0"}',
]


def test_fairseq_epoch_average_with_a_nan_training_loss_is_not_clean(tmp_path):
    report = diagnose(tmp_path, *FAIRSEQ_EPOCH)
    assert [f.id for f in report.findings] == ["nan-persistent"]
    steps = [e for e in events(tmp_path, *FAIRSEQ_EPOCH) if isinstance(e, StepEvent)]
    assert len(steps) == 1 and math.isnan(steps[0].loss) and steps[0].raw_fields["epoch_average"]


def test_fairseq_epoch_line_with_its_loss_scale_at_the_floor_is_a_collapse(tmp_path):
    # facebookresearch/fairseq#1529 (2003.log): the legacy epoch line prints loss_scale 0.000
    line = (SAMPLES / "2003.log").read_text(encoding="utf-8").splitlines()[0]
    assert [f.id for f in diagnose(tmp_path, line).findings] == ["loss-scale-collapse"]
    # the epoch line of 120.log at 0.500: a scale well above the floor is no collapse
    healthy = next(ln for ln in (SAMPLES / "120.log").read_text(encoding="utf-8").splitlines() if "loss_scale 0.500" in ln)
    assert diagnose(tmp_path, healthy).findings == []


def test_a_nan_stop_without_a_logged_step_says_no_step(tmp_path):
    # 1951.log (a trainer's own stop, no step in view): the summary reads whole, never
    # "from step ? through step ?"
    r = api.diagnose([str(SAMPLES / "1951.log")])
    f = next(f for f in r.findings if f.id == "nan-persistent")
    assert f.first_step is None
    assert "?" not in f.summary and f.summary.startswith("Non-finite loss or gradient norm: "), f.summary
