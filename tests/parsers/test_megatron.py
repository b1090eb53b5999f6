"""megatron parser: real Megatron-LM / Megatron-DeepSpeed / gpt-neox lines -> events.

Lines are verbatim from the public source cited next to each (research §5), or the template of
megatron/training/training.py / rerun_state_machine.py (HEAD d98e8a64) rendered where marked [SRC].
"""

from __future__ import annotations

import math

import pytest

from nanscope.ingest.reader import Source
from nanscope.model import InputInfo
from nanscope.parsers.registry import all_parsers
from nanscope.pipeline import ScanResult, scan_source

NAN = "nan"


def _mine(text: str, name: str = "train.log") -> list:
    src = Source(name, None, text.encode("utf-8"))
    return [e for e in scan_source(src, all_parsers(), InputInfo(name, None), ScanResult()) if e.framework == "megatron"]


def _eq(a, b) -> bool:
    if b == NAN:
        return isinstance(a, float) and math.isnan(a)
    return a == b


STEPS = [
    # github.com/epfLLM/Megatron-LLM/issues/11 (no timestamp, learning rate .3E, leading space)
    (" iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | number of nan iterations:   0 |",
     None, {"step": 122, "loss": 2.50422, "grad_norm": 0.231, "lr": 9.15e-06, "loss_scale": 1.0, "skipped": False, "skipped_iters": 0, "nan_iters": 0}),
    # github.com/NVIDIA-NeMo/Megatron-Bridge/issues/4024 (timestamp, MoE/MTP losses)
    ("[2026-05-28 22:26:20] iteration       29/    6069 | consumed samples:        14848 | elapsed time per iteration (ms): 26813.0 | learning rate: 5.800000E-05 | global batch size:   512 | lm loss: 8.716962E-01 | seq_load_balancing_loss: 1.253194E+00 | mtp_1 loss: 1.115410E+00 | mtp_2 loss: 1.180141E+00 | loss scale: 1.0 | grad norm: 0.852 | number of skipped iterations:   0 | number of nan iterations:   0 |",
     None, {"step": 29, "loss": 0.8716962, "grad_norm": 0.852, "lr": 5.8e-05}),
    # github.com/bigscience-workshop/Megatron-DeepSpeed/issues/396: lm loss dropped (NaN avg fails `avg >= 0.0`),
    # grad norm nan, no skipped iteration -> the loss was NaN
    (" iteration     5426/  250000 | consumed samples:        43408 | consumed tokens:     88899584 | elapsed time per iteration (ms): 4247.9 | learning rate: 2.999E-04 | global batch size:     8 | loss scale: 1.0 | grad norm: nan | actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 1.883 | TFLOPs: 78.36 |",
     None, {"step": 5426, "loss": NAN, "grad_norm": NAN, "skipped": False}),
    # [SRC] training.py HEAD rendered: fp16 first interval all skipped with NaN loss -> key absent, nan iterations 1
    (" [2024-05-01 12:00:00.123456] iteration       10/     100 | consumed samples:          640 | elapsed time per iteration (ms): 812.4 | learning rate: 1.000000E-04 | global batch size:    64 | loss scale: 32768.0 | number of skipped iterations:  10 | number of nan iterations:   1 |",
     None, {"step": 10, "loss": NAN, "skipped": True, "skipped_iters": 10, "nan_iters": 1, "loss_scale": 32768.0}),
    # [SRC] same, later interval all skipped (overflows, loss finite): the printed 0.0 is a placeholder
    (" [2024-05-01 12:00:00.123456] iteration       20/     100 | consumed samples:         1280 | elapsed time per iteration (ms): 812.4 | learning rate: 1.000000E-04 | global batch size:    64 | lm loss: 0.000000E+00 | loss scale: 1024.0 | number of skipped iterations:  10 | number of nan iterations:   0 |",
     None, {"step": 20, "loss": None, "skipped_iters": 10}),
    # [SRC] gpt-neox megatron/logging.py rendered (lm_loss, NaN printed as NAN, samples/sec first)
    (" samples/sec: 12.345 | iteration       10/  320000 | elapsed time per iteration (ms): 5184.2 | learning rate: 1.000E-05 | approx flops per GPU: 120.4TFLOPS | lm_loss: NAN | loss scale: 65536.0 | number of skipped iterations:   0 | number of nan iterations:   0 |",
     None, {"step": 10, "loss": NAN, "loss_scale": 65536.0}),
]


@pytest.mark.parametrize("line,rank,expect", STEPS, ids=[f"step-{i}" for i in range(len(STEPS))])
def test_iteration_lines(line, rank, expect):
    evs = _mine(line + "\n")
    assert len(evs) == 1 and evs[0].kind == "step", evs
    ev = evs[0]
    assert ev.rank == rank
    for k, v in expect.items():
        assert _eq(getattr(ev, k), v), (k, getattr(ev, k))


def test_rank_prefix_is_the_step_lines_rank():
    # github.com/epfLLM/Megatron-LLM/issues/11 line under torchrun --tee (print_rank_last: the last rank prints)
    line = "[default7]: iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    assert [(e.step, e.rank) for e in _mine(line)] == [(122, 7)]


def test_missing_loss_without_a_nan_tell_is_none_and_flagged():
    # [SRC] training.py: bf16, one interval, lm loss dropped, grad norm finite (a negative avg, or NaN
    # the line cannot prove): loss stays None, the flag says it was missing
    line = " [2024-05-01 12:00:00] iteration       30/     100 | consumed samples:         1920 | elapsed time per iteration (ms): 800.0 | learning rate: 1.000000E-04 | global batch size:    64 | loss scale: 1.0 | grad norm: 0.912 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    ev = _mine(line)[0]
    assert ev.loss is None and ev.raw_fields["lm_loss_missing"] is True


def test_skipped_interval_with_nonfinite_grad_norm_is_not_a_nan_loss():
    # Megatron-DeepSpeed fp16 warm-up: every iteration of the interval skipped (research §5.6)
    line = " iteration        1/  250000 | consumed samples:            8 | elapsed time per iteration (ms): 4247.9 | learning rate: 2.999E-04 | global batch size:     8 | loss scale: 65536.0 | grad norm: nan | number of skipped iterations:   1 | number of nan iterations:   0 |\n"
    ev = _mine(line)[0]
    assert ev.loss is None and ev.skipped is True and math.isnan(ev.grad_norm)


CHECKS = [
    # github.com/NVIDIA/Megatron-LM/issues/5026 (rerun state machine enabled)
    ("ERROR:megatron.core.rerun_state_machine:Unexpected result nan on rank 3 at iteration #3 invocation #2 (message='found NaN in local grad norm for bucket #0 in backward pass before data-parallel communication collective')",
     "error", "nan_check", 3, 3, {"where": "grad_norm", "bucket": 0, "invocation": 2, "result": "nan"}),
    # github.com/alibaba/Pai-Megatron-Patch/issues/366 (core <= 0.8 assert; the node is part of the template)
    ("AssertionError: Rank 11: found NaN in local grad norm in backward pass before data-parallel communication collective. Device: 3, node: worker-3",
     "error", "nan_check", 11, None, {"where": "grad_norm", "device": 3, "node": "worker-3"}),
    # [SRC] pretrain_gpt.py core_v0.7.0 assert, under torchrun --tee (the message rank wins over the local prefix)
    ("[default1]:AssertionError: Rank 9: found NaN in local forward loss calculation. Device: 1, node: node-2",
     "error", "nan_check", 9, None, {"where": "forward_loss"}),
    # [SRC] rerun_state_machine.py mode=disabled RuntimeError (titles of alibaba/ROLL#193, THUDM/slime#795)
    ("RuntimeError: Rank 0, node gpu-a-17, device 0, iteration 1204: Unexpected result nan (message='found NaN in local forward loss calculation')",
     "error", "nan_check", 0, 1204, {"where": "forward_loss", "node": "gpu-a-17", "device": 0}),
    # [SRC] rerun_state_machine.py: spiky loss and large grads are warnings
    ("ERROR:megatron.core.rerun_state_machine:Unexpected result 9.812345 on rank 5 at iteration #812 invocation #1 (message='Spiky loss')",
     "warning", "loss_spike", 5, 812, {"where": "loss"}),
    ("WARNING:megatron.core.rerun_state_machine:Rank 2, node gpu-b-3, device 2, iteration 77: Unexpected result 1.2e+04 (message='found unexpected large grads in bucket #1 in backward pass before data-parallel communication collective')",
     "warning", "large_grads", 2, 77, {"bucket": 1}),
    # [SRC] log_failure verdicts ("{message}!" appended to messages that end in "!")
    ("ERROR:megatron.core.rerun_state_machine:Rank 3, node core-ci-test-1779833921-task-1-0, device 3, iteration #3: Possible transient error!!",
     "error", "sdc_verdict", 3, 3, {"verdict": "transient", "device": 3, "node": "core-ci-test-1779833921-task-1-0"}),
    ("ERROR:megatron.core.rerun_state_machine:Rank 6, node gpu-c-1, device 6, iteration #90: Possible persistent error!!",
     "error", "sdc_verdict", 6, 90, {"verdict": "persistent"}),
    ("ERROR:megatron.core.rerun_state_machine:Rank 6, node gpu-c-2, device 1, iteration #90: Correct result (but possible Application error) (found NaN in local forward loss calculation)!",
     "error", "sdc_verdict", 6, 90, {"verdict": "correct"}),
]


@pytest.mark.parametrize("line,kind,what,rank,step,fields", CHECKS, ids=[f"check-{i}" for i in range(len(CHECKS))])
def test_checks_and_verdicts(line, kind, what, rank, step, fields):
    evs = _mine(line + "\n")
    assert len(evs) == 1, evs
    ev = evs[0]
    assert ev.kind == kind
    assert (ev.error if kind == "error" else ev.warning) == what
    assert ev.rank == rank
    assert ev.step == step
    for k, v in fields.items():
        assert ev.fields[k] == v, k


def test_first_rerun_progress_line_is_not_a_verdict():
    # github.com/NVIDIA/Megatron-LM/issues/5026 (second line, as quoted up to "verify cor...")
    line = "ERROR:megatron.core.rerun_state_machine:Rank 3, node core-ci-test-1779833921-task-1-0, device 3, iteration #3: First rerun: unexpected result is reproducible within the tolerance (nan = nan). Need to rerun on a different GPU to verify correctness.!\n"
    assert _mine(line) == []


def test_straggler_report():
    # NVIDIA/Megatron-LM megatron/core/README_STRAGGLER.md (sample output, under srun --label)
    line = " 0: INFO:megatron.core.utils:[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | MnPwr/Rnk: 601796W/8 | MxPwr/Rnk: 683801W/18 | MnTmp/Rnk: 52C/0 | MxTmp/Rnk: 65C/21 | MnUtl/Rnk: 97%/8 | MxUtl/Rnk: 100%/6 | MnClk/Rnk: 1950MHz/28 | MxClk/Rnk: 1980MHz/0 | MnDRtt/Rnk: 14.27ms/23 | MxDRtt/Rnk: 34.65ms/3 | MnEtpt/Rnk: 296.02TF/0 | MxEtpt/Rnk: 297.32TF/8\n"
    evs = _mine(line)
    assert [(e.kind, e.warning) for e in evs] == [("warning", "straggler")]
    f = evs[0].fields
    assert (f["mxrtt"], f["slowest_rank"], f["mnetpt"], f["mnetpt_rank"]) == (3468.2, 0, 296.02, 0)
    assert f["rtt_ratio"] == round(3468.20 / 3453.08, 4)


LOOKALIKES = [
    # research §5.6
    "------------------------ arguments ------------------------",
    "  check_for_nan_in_loss_and_grad .................. True",
    "  rerun_mode ...................................... disabled",
    "  log_straggler ................................... False",
    "WARNING:megatron.core.rerun_state_machine:RerunStateMachine initialized in mode RerunMode.DISABLED",
    "WARNING:megatron.core.rerun_state_machine:Result validation enabled",
    " validation loss at iteration 1000 | lm loss value: 2.312345E+00 | lm loss PPL: 1.009786E+01 | ",
    "[after training is done] datetime: 2024-05-01 12:00:00 ",
    " 0: INFO:megatron.core.utils:^^^^ Bottom 4 Ranks with lowest  Etpt(TF): 296.02/0, 296.17/2, 296.23/1, 296.23/4,",
    "training ... iteration 5 of the data loader warm-up",
]


@pytest.mark.parametrize("line", LOOKALIKES)
def test_lookalikes_give_no_event(line):
    assert _mine(line + "\n") == []


def test_rerun_check_with_iteration_minus_one_has_no_step():
    # NeMo-Run DAPT (NeMo 2 never advances the rerun state machine's iteration)
    evs = _mine("i.pretrain/0 [default2]:[rank2]: RuntimeError: Rank 2, node dcfai-xe9680-01, device 2, iteration -1: "
                "Unexpected result nan (message='found NaN in local grad norm for bucket #0 in backward pass before "
                "data-parallel communication collective')\n")
    assert [(e.error, e.rank, e.step, e.fields["where"], e.fields["iteration"]) for e in evs] == [
        ("nan_check", 2, None, "grad_norm", None)]


def test_rerun_check_without_its_rank_head():
    # NVIDIA-NeMo continued pretraining paste: the message without `Rank r, node n, device d, iteration i: `
    evs = _mine("Unexpected result inf (message='found Inf in local grad norm for bucket #6 in backward pass before "
                "data-parallel communication collective')\n")
    assert [(e.error, e.rank, e.fields["nonfinite"], e.fields["bucket"]) for e in evs] == [("nan_check", None, "Inf", 6)]


def test_megatron_v1_fields_without_colons():
    # old Megatron-LM pretrain_gpt2.py / GLM training_log: `' {} {:.6E} |'.format(key, avg)`
    evs = _mine(" iteration      700/    3000 | elapsed time per iteration (ms): 12932.3 | learning rate 9.773E-06 | "
                "lm loss NAN | loss scale 4.0 |\n")
    (ev,) = evs
    assert ev.step == 700 and math.isnan(ev.loss) and ev.loss_scale == 4.0 and ev.lr == 9.773e-06


def test_gpt_neox_overflow_monitor_is_the_scaler_giving_up():
    # EleutherAI/gpt-neox#482 (megatron/utils.py OverflowMonitor.check)
    evs = _mine("Exception: Skipped 50 iterations in a row due to Overflow - Exiting training.\n")
    assert [(e.kind, e.action) for e in evs] == [("scale", "minimum")]
