"""PyTorch core and numerics, session 13: the blind round 2700-2724 and the known gaps it was fixed with.

CUDA misaligned addresses and out-of-memory wordings printed without their exception type (ComfyUI, a GUI's
`SUBPROCESS: ` prefix, a Jupyter paste), NaN losses in formats of their own (torch-ngp's tqdm description,
baby-llama2's `Epoch:[e/E](i/N)` records, TensorFlow's NanTensorHook, Caffe's solver), anomaly mode's NaN backward,
apex's loss scale at 1e-307, tensorboardX's `NaN or Inf found in input tensor.`, and the healthy traps around them.
Every input is read from the excerpt in sample_logs/public/<N>.log (verbatim from the public thread its
MANIFEST.toml entry names), cut to what the case needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines as diagnose, ids

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def excerpt(n: int, lines: slice = slice(None)) -> list[str]:
    return (PUBLIC / f"{n}.log").read_text(encoding="utf-8").splitlines()[lines]


@pytest.mark.parametrize("n, first", [
    (2700, "cuda-illegal-memory-access"), (2701, "cuda-illegal-memory-access"),   # torch 2.x; ComfyUI's bare message
    (2702, "cuda-illegal-memory-access"), (2703, "cuda-illegal-memory-access"),   # an extension; THC's error=74
    (2704, "cuda-oom"), (2705, "cuda-oom"), (2706, "cuda-oom"), (2707, "cuda-oom"),  # MPS / HIP without the type
    (2708, "cuda-oom"), (2709, "cuda-oom"), (2710, "cuda-oom"), (2711, "cuda-oom"),  # Jupyter, '...', SUBPROCESS:
    (2713, "nan-persistent"), (2720, "nan-persistent"), (2724, "nan-persistent"),  # TensorFlow, tensorboardX, Caffe
    (2714, "nan-op-origin"), (2715, "nan-op-origin"), (2716, "loss-scale-collapse"),
])
def test_the_blind_rounds_failures_are_named_first(tmp_path, n, first):
    assert ids(diagnose(tmp_path, excerpt(n)))[0] == first


def test_a_nan_loss_in_the_torch_ngp_bar_description_is_nan_persistent(tmp_path):
    # The loss is the bar's description (`loss=nan (nan): :   0% 0/100 [...]`), tensorboardX's warning glued on.
    r = diagnose(tmp_path, excerpt(2721))
    assert ids(r)[0] == "nan-persistent"
    assert r.findings[0].first_step == 0  # the bar's count: the first redraw


def test_a_warning_glued_to_the_ngp_bar_stays_with_its_own_parser(tmp_path):
    # nerf2mesh: anomaly mode's `UserWarning: Error detected in MmBackward0` printed right after a bar redraw.
    r = diagnose(tmp_path, excerpt(2715))
    assert ids(r) == ["nan-op-origin"]
    assert "MmBackward0" in r.findings[0].summary


def test_baby_llama2_records_give_the_scripts_own_global_step(tmp_path):
    r = diagnose(tmp_path, excerpt(2712))
    assert ids(r) == ["nan-persistent"]
    assert r.findings[0].first_step == 7000  # epoch * iter_per_epoch + step, as the script numbers it


def test_tensorboardx_nan_warnings_between_finite_losses_are_benign(tmp_path):
    for n in (2722, 2723):  # FastChat's Trainer dicts; DOPE's epochs ('You can ignore it.')
        r = diagnose(tmp_path, excerpt(n))
        assert ids(r) == ["tensorboard-nonfinite-value"]
        assert r.verdict == "benign"
        assert len(r.findings[0].evidence) == 1  # four warnings a few lines apart: one event


def test_tensorboardx_nan_warning_next_to_a_nan_loss_is_the_loss_that_is_named(tmp_path):
    # ThunderNet's `loss: nan` record, then the writer's warnings: the NaN loss is the finding, the warning says no more
    assert ids(diagnose(tmp_path, excerpt(2720))) == ["nan-persistent"]
    assert ids(diagnose(tmp_path, excerpt(2721))) == ["nan-persistent"]


@pytest.mark.parametrize("n", [2717, 2718, 2719])
def test_healthy_traps_stay_quiet(tmp_path, n):
    assert diagnose(tmp_path, excerpt(n)).verdict in ("clean", "benign")


# --- the known gaps fixed with the round ---

def test_atens_dtype_check_printed_by_a_node_without_the_exception_is_dtype_mismatch(tmp_path):
    # ComfyUI-HiDream-Sampler prints `!!! ERROR during execution: expected mat1 and mat2 to have the same dtype ...`
    r = diagnose(tmp_path, excerpt(2348))
    assert ids(r) == ["dtype-mismatch"]
    assert "c10::Half != struct c10::BFloat16" in r.findings[0].summary


def test_fairseqs_min_scale_message_broken_by_the_paste_is_loss_scale_collapse_not_the_generic_exception(tmp_path):
    r = diagnose(tmp_path, excerpt(2004))
    assert ids(r) == ["loss-scale-collapse"]  # the FloatingPointError it ends in is its stop, not a second finding
    assert "0.0001" in r.findings[0].summary


def test_a_jupyter_paste_with_the_class_name_alone_is_cuda_oom(tmp_path):
    # 2708: `OutOfMemoryError: CUDA out of memory. Tried to allocate 1.71 GiB ...`, no `torch.cuda.`; the short
    # message the class alone names is the cuda-oom signature's example (torch.OutOfMemoryError: CUDA out of memory.)
    r = diagnose(tmp_path, excerpt(2708))
    assert ids(r) == ["cuda-oom"]
    assert "1.71" in r.findings[0].summary


# --- round 2 (2725-2737), scored blind after round 1's fixes, then these fixes ---

@pytest.mark.parametrize("n", [2729, 2730, 2731, 2732])  # torch.utils.tensorboard and tensorboardX, Linux and Windows
def test_a_histogram_of_nan_values_that_stops_the_run_is_nan_persistent_not_the_generic_exception(tmp_path, n):
    r = diagnose(tmp_path, excerpt(n))
    assert ids(r) == ["nan-persistent"]  # the ValueError is the stop on non-finite values, not a second finding
    assert r.verdict == "actionable"


def test_dreamers_records_read_the_world_models_loss_and_grad_norm(tmp_path):
    r = diagnose(tmp_path, excerpt(2728))
    assert ids(r)[0] == "nan-persistent"
    assert r.findings[0].first_step == 7000  # model_loss inf, model_grad_norm nan


@pytest.mark.parametrize("n", [2725, 2726])
def test_nan_losses_in_bars_round_2(tmp_path, n):
    # stable-dreamfusion's newer epoch header (`==> [date] Start Training <ws> Epoch 82/300`) and its evaluation bar;
    # diffusers' dreambooth bar postfix
    assert ids(diagnose(tmp_path, excerpt(n)))[0] == "nan-persistent"


@pytest.mark.parametrize("n", [2733, 2734, 2735, 2736])
def test_atens_shape_check_behind_markers_and_debugger_panes_is_tensor_shape_mismatch(tmp_path, n):
    # ComfyUI's marker with a timestamp and without its space, a node's fallback print, VS Code's exception pane
    assert ids(diagnose(tmp_path, excerpt(n))) == ["tensor-shape-mismatch"]


def test_wenets_tensorboard_warning_wording_stays_quiet(tmp_path):
    assert diagnose(tmp_path, excerpt(2737)).verdict in ("clean", "benign")


# --- round 3 (2738-2741), scored blind after round 2's fixes, then the rlpyt fix ---

@pytest.mark.parametrize("n", [2738, 2739])
def test_numpys_histogram_range_error_on_nan_under_wandb_is_nan_persistent(tmp_path, n):
    assert ids(diagnose(tmp_path, excerpt(n))) == ["nan-persistent"]


def test_rlpyts_placeholder_nan_before_any_update_stays_quiet_and_a_nan_after_a_finite_loss_is_read(tmp_path):
    # rlpyt writes nan in every statistic row when it has no values yet (astooke/rlpyt#78's DQN, healthy)
    assert diagnose(tmp_path, excerpt(1721)).verdict == "clean"
    # dreamer-pytorch#82 starts mid-table, no CumUpdates row and no finite loss in view: its nan rows read the same
    # as the placeholder, so they are not claimed as a NaN loss (the excerpt stays a known miss)
    assert ids(diagnose(tmp_path, excerpt(2741))) == []


def test_stable_dreamfusions_epoch_headers_keep_the_evaluation_bar_out_of_the_training_steps(tmp_path):
    # `==> [date] Start Training <ws> Epoch 82/300, lr=...` and `++> Evaluate <ws> at epoch 81 ...`: the validation
    # bar's `loss=0.0000` is no training step; epoch 82's bar counts on from epoch 81's 100 samples
    r = diagnose(tmp_path, excerpt(2725))
    assert ids(r) == ["nan-persistent"]
    assert r.findings[0].first_step == 151


def test_a_capitalised_loss_in_a_tqdm_postfix_is_the_steps_loss(tmp_path):
    # LucidDreamer's `Training progress: ... 490/5000 [03:31<30:44,  2.45it/s, Loss=nan]` with its own print
    # glued after the bar: the postfix key as the script spelled it
    r = diagnose(tmp_path, excerpt(2727))
    assert ids(r) == ["nan-persistent"]
    assert r.findings[0].first_step == 490 and "through step 990" in r.findings[0].summary
