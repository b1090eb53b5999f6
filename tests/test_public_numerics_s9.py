"""Numerics families from the blind public round 2000-2018 (sample_logs/public/20NN.log): what a
user who pastes such a log gets as the first finding.

Every log line is copied from the public thread named in the comment (the same excerpts, with
their provenance, are in sample_logs/public), cut to what the family needs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import ids
from nanscope import api
from nanscope.model import ErrorEvent
from nanscope.signatures.predicates import compile_vector

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def _write(tmp_path, text: str) -> str:
    p = tmp_path / "job.log"
    p.write_text(text + "\n", encoding="utf-8")
    return str(p)


def diagnose(tmp_path, text: str):
    return api.diagnose([_write(tmp_path, text)])


# jax-ml/jax#9092: jax_debug_nans in an IPython traceback (the exception is raised twice)
JAX_9092 = (PUBLIC / "2002.log").read_text(encoding="utf-8")


def test_jax_debug_nans_names_the_jitted_call_not_an_uncaught_exception(tmp_path):
    report = diagnose(tmp_path, JAX_9092)
    assert ids(report) == ["nan-op-origin"]
    assert report.findings[0].summary.startswith("xla_call returned non-finite values")


def test_jax_debug_nans_event_says_which_value_and_op(tmp_path):
    evs = [e for e in api.events([_write(tmp_path, "FloatingPointError: invalid value (nan) encountered in xla_call")])
           if isinstance(e, ErrorEvent)]
    assert [(e.error, e.framework, e.fields["op"], e.fields["value"]) for e in evs] == [("nan_op", "jax", "xla_call", "nan")]


def test_jax_debug_infs_newer_message_and_vscode_form(tmp_path):
    # jax-ml/jax#22291 (the issue title, as VS Code's debugger shows the exception): the newer message
    # names jit(...) and goes on with "Because jax_config.debug_nans.value ..."
    line = ("Exception has occurred: FloatingPointError invalid value (nan) encountered in jit(convert_element_type). "
            "Because jax_config.debug_nans.value and/or config.jax_debug_infs is set, the de-optimized funct")
    report = diagnose(tmp_path, line)
    assert ids(report) == ["nan-op-origin"]
    assert report.findings[0].summary.startswith("jit(convert_element_type) returned non-finite values")
    assert "Because" not in report.findings[0].summary


def test_numpy_invalid_value_warning_is_not_a_nan_checker(tmp_path):
    # ARCC-RACE/deepracer-for-dummies#48: numpy's RuntimeWarning has no "(nan)" and names a ufunc reduce
    text = "\n".join((PUBLIC / "2013.log").read_text(encoding="utf-8").splitlines()[:4])
    assert "nan-op-origin" not in ids(diagnose(tmp_path, text))


# hiyouga/LlamaFactory#2078: DPO of Baichuan2-13B in bf16, the first logged dict
DPO_NAN = (PUBLIC / "2010.log").read_text(encoding="utf-8").strip()
# huggingface/autotrain-advanced#818: a healthy DPO run whose logits means are nan (empty means)
DPO_LOGITS_NAN = (PUBLIC / "1427.log").read_text(encoding="utf-8").splitlines()[0]


def test_trl_dict_with_nan_logps_is_a_nan_forward_pass_even_with_loss_0(tmp_path):
    report = diagnose(tmp_path, DPO_NAN)
    assert ids(report) == ["nan-persistent"]
    assert report.verdict == "actionable"


def test_trl_dict_with_only_nan_logits_means_stays_clean(tmp_path):
    report = diagnose(tmp_path, DPO_LOGITS_NAN)
    assert ids(report) == [] and report.verdict == "clean"


class _Batch:
    """A stand-in for a StepBatch of another framework: only what the constant parts read."""

    framework = "megatron"
    rank = None
    origin = None
    unset = frozenset()

    def __len__(self) -> int:
        return 4


def test_a_condition_ruled_out_by_its_constant_part_is_answered_for_the_whole_batch():
    # nan-persistent's TRL clause ends in a text regex: on a batch of another framework it must not send
    # every row down the per-event path (the mask is all False, not "cannot say")
    cond = ["event == 'step'", "framework == 'hf'", 'text ~ "logps/chosen\\W?: nan"']
    mask = compile_vector(cond)(_Batch())
    assert mask is not None and mask.dtype == np.bool_ and not mask.any() and len(mask) == 4
    b = _Batch()
    b.framework = "hf"
    assert compile_vector(cond)(b) is None  # an hf batch: only its rows can say


# ARCC-RACE/deepracer-for-dummies#48: numpy warns of invalid values, then the simapp worker stops
DEEPRACER = (PUBLIC / "2013.log").read_text(encoding="utf-8")


def test_deepracer_simapp_nan_stop_is_a_run_stopped_on_nan(tmp_path):
    report = diagnose(tmp_path, DEEPRACER)
    assert ids(report) == ["nan-persistent"] and report.verdict == "actionable"
    ev = report.findings[0].evidence[0]
    assert "NaN detected in loss function, aborting training" in ev.text


def _summary(tmp_path, n: int) -> str:
    report = diagnose(tmp_path, (PUBLIC / f"{n}.log").read_text(encoding="utf-8"))
    assert ids(report)[0] == "loss-scale-collapse"
    return report.findings[0].summary


def test_collapse_summary_names_each_scalers_own_floor(tmp_path):
    # whai362/PVT#94 (apex: no floor), bert-nmt/bert-nmt#47 (fairseq: 1e-4, said by the message),
    # yangjianxin1/Firefly#68 (DeepSpeed: the exception prints no scale)
    apex = _summary(tmp_path, 2008)
    assert "fell from 0.0625 to 0.03125" in apex and "no floor" in apex and "above the floor of 1" not in apex
    assert "the loss scale is at 0.0001, the floor" in _summary(tmp_path, 2005)
    assert "the loss scale is at its floor" in _summary(tmp_path, 2007)


def test_jax_message_on_its_own_line_as_jupyter_and_vscode_show_it(tmp_path):
    # jax-ml/jax#19595 (a Jupyter error record: "name" and "message" on separate lines) and
    # jax-ml/jax#22291 (VS Code: the exception type on the line before the message)
    for n, op in ((2020, "jit(compiled_train_step)"), (2021, "jit(convert_element_type)")):
        report = diagnose(tmp_path, (PUBLIC / f"{n}.log").read_text(encoding="utf-8"))
        assert ids(report) == ["nan-op-origin"], n
        assert report.findings[0].summary.startswith(f"{op} returned non-finite values")


def test_jax_source_line_in_a_traceback_is_not_an_event(tmp_path):
    # jax-ml/jax#6181: the frame shows the raise statement itself; only the exception line names the op
    evs = [e for e in api.events([_write(tmp_path, (PUBLIC / "2019.log").read_text(encoding="utf-8"))])
           if isinstance(e, ErrorEvent)]
    assert [(e.loc.line, e.fields["op"]) for e in evs] == [(8, "while")]


def test_dpo_reference_stats_lines_are_steps(tmp_path):
    # eric-mitchell/direct-preference-optimization#89: the step is counters/updates; the first line's
    # counter key is garbled in the paste, so it gives none
    from nanscope.model import StepEvent

    steps = [e for e in api.events([_write(tmp_path, (PUBLIC / "2022.log").read_text(encoding="utf-8"))])
             if isinstance(e, StepEvent)]
    assert [e.framework for e in steps] == ["dpo-reference", "dpo-reference"]
    assert steps[1].step == 5025 and steps[1].loss != steps[1].loss and steps[1].grad_norm != steps[1].grad_norm
    report = diagnose(tmp_path, (PUBLIC / "2022.log").read_text(encoding="utf-8"))
    assert ids(report) == ["nan-persistent"]


def test_deepspeeds_minimum_scale_message_in_lower_case_is_the_collapse(tmp_path):
    # 2006.log (TinyLLaVA#107): DeepSpeed's 'Current loss scale already at minimum' as the reporter
    # pasted it, lower-cased
    line = (PUBLIC / "2006.log").read_text(encoding="utf-8").splitlines()[0]
    assert [f.id for f in diagnose(tmp_path, line).findings][:1] == ["loss-scale-collapse"]
