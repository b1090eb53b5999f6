"""Numerics, session 18 (helper numerics3): the blind rounds 4757 and up, and the forms they showed.

Round 1: a Megatron-DeepSpeed iteration line whose NaN loss training_log dropped (`if avg > 0.0`) with both
counters at 0 and no grad norm; Megatron-LLM's skipped bad grad norm as a trap (its line without a loss is a
rank without losses: that fork prints on every rank); an MAE-style loop's `Loss is nan, stopping training` and
sys.exit(1) before torchrun's record of the exit; PPO log dicts print()ed onto the tqdm bar's line; DeepSpeed's
minimum-scale exception before the launcher's `Killing subprocess` lines. Round 2 (4766-, after round 1's fix):
accelerate's `Warning: loss is NaN, skipping this step` around `loss=nan` bars, a diffusion script's nan step lines;
a Megatron reference run with an extra `dummy loss` and metaseq's train_inner JSON record as traps.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import diagnose_lines, ids
from nanscope import api
from nanscope.model import StepEvent

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def steps_of(tmp_path: Path, lines: list[str]) -> list[StepEvent]:
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [e for e in api.events([str(p)]) if isinstance(e, StepEvent)]


@pytest.mark.parametrize("name, expected", [
    ("4757.log", "nan-persistent"),  # the dropped loss is the only sign
    ("4759.log", "nan-persistent"),  # before torchrun's `failed (exitcode: 1)`, the NaN stop's echo
    ("4760.log", "nan-persistent"),
    ("4764.log", "loss-scale-collapse"),  # before the launcher's Killing subprocess lines
])
def test_round_1_failure_is_named_first(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)]))[0] == expected


@pytest.mark.parametrize("name, expected, step", [
    ("4767.log", "nan-persistent", 1299),
    ("4768.log", "nan-persistent", 5),
])
def test_round_2_failure_is_named_first(name: str, expected: str, step: int) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].first_step == step


@pytest.mark.parametrize("name", ["4758.log", "4763.log", "4766.log", "4770.log"])
def test_round_1_and_2_traps_stay_quiet(name: str) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert report.verdict in ("clean", "benign"), ids(report)


# deepspeedai/Megatron-DeepSpeed#434 (megatron/training.py training_log: `if avg > 0.0:` prints the loss;
# `if grad_norm is not None:` the grad norm; print_rank_last)
DS_NAN = (" iteration        9/      10 | consumed samples:          108 | consumed tokens:       442368 | elapsed time "
          "per iteration (ms): 1979.2 | learning rate: 4.219E-07 | global batch size:    12 | loss scale: 1.0 | actual "
          "seqlen:  4096 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 6.063 | "
          "tokens per gpu per second (tgs): 2069.506 | TFLOPs: 127.00 |")
# epfLLM/Megatron-LLM#34 (print_all_nodes: a first pipeline stage's line has no losses, and a finite grad norm)
STAGE_LINE = (" iteration     3633/    8000 | consumed samples:       232512 | elapsed time per iteration (ms): 6956.6 | "
              "learning rate: 6.245E-06 | global batch size:    64 | loss scale: 1.0 | grad norm: 0.794 | number of "
              "skipped iterations:   0 | number of nan iterations:   0 |")


def test_megatron_line_without_loss_or_grad_norm_and_nothing_skipped_is_a_dropped_nan(tmp_path: Path) -> None:
    (ev,) = steps_of(tmp_path, [DS_NAN])
    assert ev.step == 9 and ev.loss is not None and math.isnan(ev.loss)


def test_megatron_line_without_loss_but_with_a_finite_grad_norm_is_no_nan(tmp_path: Path) -> None:
    (ev,) = steps_of(tmp_path, [STAGE_LINE])
    assert ev.loss is None and ev.raw_fields.get("lm_loss_missing") is True


def test_megatron_first_interval_of_skipped_fp16_steps_is_no_nan(tmp_path: Path) -> None:
    # NVIDIA/nccl#743: the loss-scale warm-up skipped every iteration of the interval, before the loss key existed
    line = (" iteration       10/ 1000000 | consumed samples:           40 | elapsed time per iteration (ms): 356.2 | "
            "learning rate: 0.000E+00 | global batch size:     4 | loss scale: 8388608.0 | number of skipped iterations:  "
            "10 | number of nan iterations:   0 |")
    (ev,) = steps_of(tmp_path, [line])
    assert ev.loss is None


# hiyouga/LlamaFactory#357 (src/glmtuner/tuner/ppo/trainer.py: `for step in tqdm(range(max_steps))`, then
# `if (step+1) % logging_steps == 0: print(logs)`): the dict lands on the bar's line; the bar counts the
# iterations before this one
GLUED = [
    "  1%|█▍                                                                                                                                         | 9/860 [00:43<1:05:18,  4.60s/it]{'loss': nan, 'reward': 0.2684, 'learning_rate': 9.958763523679515e-06, 'epoch': 0.21}",
    "  2%|███                                                                                                                                       | 19/860 [01:30<1:07:22,  4.81s/it]{'loss': nan, 'reward': -0.3129, 'learning_rate': 9.817090706862895e-06, 'epoch': 0.44}",
]


def test_log_dict_printed_onto_the_tqdm_bar_is_the_next_step(tmp_path: Path) -> None:
    evs = steps_of(tmp_path, GLUED)
    assert [e.step for e in evs] == [10, 20]
    assert all(math.isnan(e.loss) for e in evs)
    assert evs[0].raw_fields["reward"] == "0.2684" and evs[0].epoch == 0.21


def test_dict_line_before_a_bar_with_a_glued_dict_keeps_its_own_count(tmp_path: Path) -> None:
    # hiyouga/ChatGLM-Efficient-Tuning#49: the first dict on its own line, the next one glued to bar 1/13000
    lines = ["{'loss': 0.3290, 'reward': -2.0304, 'learning_rate': 5e-05}",
             "  0%|          | 1/13000 [00:10<36:34:36, 10.13s/it]{'loss': nan, 'reward': 5.7646, 'learning_rate': 5e-05}"]
    evs = steps_of(tmp_path, lines)
    assert [e.step for e in evs] == [1, 2]
    assert evs[0].loss == 0.329 and math.isnan(evs[1].loss)


def test_bar_without_a_dict_after_it_is_still_no_step(tmp_path: Path) -> None:
    assert steps_of(tmp_path, ["  3%|████▎        | 27/860 [02:08<1:05:33,  4.72s/it]"]) == []


def test_loss_is_nan_stopping_training_leads_the_launchers_exit_record(tmp_path: Path) -> None:
    # LTH14/mar#69 (MAE's engine_pretrain.py: print("Loss is {}, stopping training".format(loss_value)); sys.exit(1))
    report = diagnose_lines(tmp_path, [
        "[11:41:33.534863] Epoch: [8]  [ 200/2293]  eta: 1:52:52  lr: 0.000004  loss: 0.2606 (0.2654)  time: 3.0808  data: 0.0002  max mem: 32637",
        "[11:41:59.064379] Loss is nan, stopping training",
        "E1030 11:42:16.325000 140014536193856 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) local_rank: 0 (pid: 155690) of binary: /data/USER/anaconda3/envs/vae/bin/python3.10",
    ])
    assert ids(report)[0] == "nan-persistent"


def test_launcher_kill_lines_after_the_minimum_scale_are_the_collapse(tmp_path: Path) -> None:
    # hiyouga/LlamaFactory#251: the return-code line after `Killing subprocess` is not in the paste
    report = diagnose_lines(tmp_path, [
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
        "[2023-07-26 15:19:24,960] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 45098",
        "[2023-07-26 15:19:27,802] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 45099",
    ])
    assert ids(report) == ["loss-scale-collapse"]
    assert "process-killed" in report.findings[0].also_matched


def test_launcher_kill_lines_alone_are_still_a_kill(tmp_path: Path) -> None:
    report = diagnose_lines(tmp_path, [
        "[2023-07-26 15:19:24,960] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 45098",
        "[2023-07-26 15:19:27,802] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 45099",
    ])
    assert ids(report) == ["process-killed"]
