"""amp parser (apex amp / fp16_utils, newer fairseq wordings) and the DeepSpeed overflow lines
around it: real lines from the public threads cited next to each, or the template rendered [SRC]."""

from __future__ import annotations

from nanscope.ingest.reader import Source
from nanscope.model import InputInfo, ScaleEvent
from nanscope.parsers.registry import all_parsers
from nanscope.pipeline import ScanResult, scan_source


def _scales(text: str) -> list:
    src = Source("train.log", None, text.encode("utf-8"))
    return [e for e in scan_source(src, all_parsers(), InputInfo("train.log", None), ScanResult()) if isinstance(e, ScaleEvent)]


def test_apex_amp_overflow_two_spaces_one_space_and_tiny_scales():
    evs = _scales(
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n"  # NVIDIA/apex#834
        "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 256.0.\n"  # MathLee/LASNet#3
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 2.0237e-320\n"  # Junjue-Wang/FactSeg#6
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 1.52587890625e-05\n"  # YOLACT paste
    )
    assert [(e.framework, e.action, e.new_scale) for e in evs] == [
        ("apex", "overflow", 32768.0), ("apex", "overflow", 256.0), ("apex", "overflow", 2.0237e-320),
        ("apex", "overflow", 1.52587890625e-05)]


def test_apex_contrib_and_closure_wordings():
    evs = _scales(
        "Gradient overflow.  Skipping step, reducing loss scale to 16384.0\n"  # [SRC] apex contrib fp16_optimizer
        "OVERFLOW within closure! Skipping step, reducing loss scale to 32768.0\n"  # [SRC] apex/fp16_utils/fp16_optimizer.py
    )
    assert [(e.action, e.new_scale) for e in evs] == [("overflow", 16384.0), ("overflow", 32768.0)]


def test_fairseq_newer_wordings_are_printer_only():
    evs = _scales(
        "2024-02-29 07:58:54 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: 64.0\n"
        "2022-05-01 10:00:00 | INFO | fairseq.optim.amp_optimizer | AMP: overflow detected, setting scale to to 32.0\n"  # [SRC] amp_optimizer.py
    )
    assert [(e.framework, e.new_scale, e.rank_is_printer_only) for e in evs] == [("fairseq", 64.0, True), ("fairseq", 32.0, True)]


def test_deepspeed_overflow_glued_to_a_tqdm_bar_takes_the_step_in_progress():
    # ymcui/Chinese-LLaMA-Alpaca#534: the bar says 378 steps are done
    evs = _scales(" 14%|█▍        | 378/2724 [13:58:09<86:18:35, 132.44s/it][2023-06-07 22:16:00,018] [INFO] "
                  "[loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 64, reducing to 32\n")
    assert [(e.step, e.old_scale, e.new_scale) for e in evs] == [(379, 64.0, 32.0)]
    # without a bar (huggingface/transformers#9996, ZeRO-3 <= 0.5) the step stays unknown
    evs = _scales("[2021-11-13 19:22:08,401] [INFO] [stage3.py:2731:_overflow_clean_up] [deepscale] OVERFLOW! Rank 0 "
                  "Skipping step. Attempted loss scale: 16.0, reducing to 8.0\n")
    assert [(e.step, e.old_scale, e.new_scale) for e in evs] == [(None, 16.0, 8.0)]
