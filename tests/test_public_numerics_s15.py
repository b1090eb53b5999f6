"""Numerics, session 15: the blind rounds 4100 and up.

NaN losses in users' own step lines (one value a line under an aligned label, a Keras epoch record),
JAX's debug_nans, an apex loss scale halving on every skipped step, Lightning's padded `nan.0` in a bar
wrapped at its bar, wandb's run summary; nanoGPT's noisy loss as a healthy trap.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim from
the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines, ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected", [
    # round 1 (4100-4105), scored blind
    ("4100.log", "nan-persistent"),  # `step 1655 - loss        nan - moving ave loss        nan`
    ("4101.log", "nan-persistent"),  # Keras: `9595/9595 [====] - 1s - loss: nan - acc: 0.4117 - val_loss: nan`
    ("4102.log", "nan-persistent"),  # `Epoch    :  8` then `LOSS     :  nan`: a label padded before its colon
    ("4103.log", "nan-op-origin"),  # `FloatingPointError: invalid value (nan) encountered in jit(f)`
    ("4104.log", "nan-op-origin"),  # the de-optimized re-run: `... encountered in div`, then `in mul` under vjp
    ("4105.log", "loss-scale-collapse"),  # apex BERT: `Rank 0 :: Gradient overflow.  Skipping step, ... 9.09e-13`
    # round 2 (4110-4112), scored blind after the round-1 fix
    ("4110.log", "nan-persistent"),  # Lightning's bar wrapped at its bar, `train_loss_step=nan.0` on the tail
    ("4112.log", "nan-persistent"),  # wandb's run summary: `wandb:     loss nan`
])
def test_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)]))[0] == expected


def test_a_nan_loss_sentence_between_tensorboard_warnings_is_the_failure() -> None:
    # 4111 (NVlabs/wetectron#83): tensorboardX's warnings come first; the script's per-epoch record
    # `Epoch : 0 finished. Training Loss: nan. Validation Loss: nan` is the NaN loss, epoch by epoch
    report = api.diagnose([str(PUBLIC / "4111.log")])
    assert ids(report)[0] == "nan-persistent"
    assert report.findings[0].first_step == 0


def test_an_epoch_record_with_a_finite_loss_is_a_healthy_step(tmp_path) -> None:
    r = diagnose_lines(tmp_path, [
        f"Epoch : {e} finished. Training Loss: {2.5 - e / 10:.3f}. Validation Loss: {2.7 - e / 10:.3f}" for e in range(8)
    ])
    assert ids(r) == []


def test_prose_that_mentions_an_epoch_later_is_no_step_line(tmp_path) -> None:
    # the epoch counter must open the record; a sentence about a loss is not one
    r = diagnose_lines(tmp_path, [
        "We saw the loss: nan once in epoch 3 of an earlier run, unrelated.",
        "Training finished.",
    ])
    assert ids(r) == []


@pytest.mark.parametrize("name", ["4113.log"])
def test_healthy_runs_of_the_rounds_stay_clean(name: str) -> None:
    # nanoGPT's per-iteration loss moving between 3.68 and 4.09 at a steady 562 ms
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_lightning_pads_a_nan_to_five_characters(tmp_path) -> None:
    # Lightning's Tqdm.format_num: 'nan' -> 'nan.0' (its _PAD_SIZE is 5); one bar line, not wrapped
    r = diagnose_lines(tmp_path, [
        "Epoch 0:  71%|███████▏  | 5880/8295 [04:01<01:39, 24.37it/s, v_num=0, train_loss_step=nan.0]",
    ])
    assert ids(r) == ["nan-persistent"]


def test_a_finite_padded_value_is_no_nan(tmp_path) -> None:
    r = diagnose_lines(tmp_path, [
        "Epoch 0:  71%|███████▏  | 5880/8295 [04:01<01:39, 24.37it/s, v_num=0, train_loss_step=0.500]",
    ])
    assert ids(r) == []


def test_a_bar_tail_without_its_head_is_not_read(tmp_path) -> None:
    r = diagnose_lines(tmp_path, [
        "some other line",
        "| 5880/8295 [04:01<01:39, 24.37it/s, v_num=0, learning_rate_step=0.0005, train_loss_step=nan.0",
    ])
    assert ids(r) == []


def test_a_loss_label_without_padding_or_stamp_is_no_step(tmp_path) -> None:
    # prose and config dumps put no blanks before the colon
    r = diagnose_lines(tmp_path, ["loss: nan", "the loss     : nan came back"])
    assert ids(r) == []


def test_wandb_history_sparklines_are_no_values(tmp_path) -> None:
    r = diagnose_lines(tmp_path, ["wandb: Run history:", "wandb:     loss ▁               ",
                                  "wandb: Run summary:", "wandb:     loss 0.53"])
    assert ids(r) == []


def test_the_padded_and_stopped_values_read_as_nonfinite() -> None:
    from nanscope.parsers.numbers import to_float
    import math
    assert math.isnan(to_float("nan.0")) and to_float("inf.0") == math.inf and to_float("-inf.") == -math.inf
    assert math.isnan(to_float("NaN.")) and to_float("x.0") is None
