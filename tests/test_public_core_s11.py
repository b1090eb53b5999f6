"""PyTorch core and numerics, session 11: the families behind the blind round 2300-2322, as users pasted them.

Inductor's ERROR record when Triton cannot compile a generated kernel, dynamo's recompile limit raised inside a
fullgraph frame (and shown only by a notebook's traceback header), and a loss logged as the whole message of a
logging record. Every input is lines copied from the public thread named in the comment (the excerpts are in
sample_logs/public/23NN.log with their provenance), cut to what the family needs.
"""

from __future__ import annotations

from nanscope import api


def diagnose(tmp_path, lines: list[str]):
    p = tmp_path / "job.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return api.diagnose([str(p)])


def ids(report) -> list[str]:
    return [f.id for f in report.findings]


# woct0rdho/triton-windows#114
TRITON_FAILED = [
    "E0429 11:10:24.821000 558924 site-packages\\torch\\_inductor\\runtime\\triton_heuristics.py:539] [0/0] Triton "
    "compilation failed: triton_red_fused__to_copy_add_index_linalg_vector_norm_mean_mse_loss_mul_pow_sub_43",
    "E0429 11:10:24.821000 558924 site-packages\\torch\\_inductor\\runtime\\triton_heuristics.py:539] [0/0]     xnumel = 1",
    "E0429 11:10:24.821000 558924 site-packages\\torch\\_inductor\\runtime\\triton_heuristics.py:539] [0/0]     "
    "r0_numel = 5690",
]


def test_inductor_logging_a_triton_kernel_it_cannot_compile_is_a_compile_failure_naming_the_kernel(tmp_path):
    r = diagnose(tmp_path, TRITON_FAILED)
    assert ids(r) == ["torch-compile-failed"]
    assert "triton_red_fused__to_copy_add_index_linalg_vector_norm_mean_mse_loss_mul_pow_sub_43" in r.findings[0].summary


def test_the_kernel_source_lines_alone_are_not_a_compile_failure(tmp_path):
    assert ids(diagnose(tmp_path, TRITON_FAILED[1:])) == []


# HomebrewML/HeavyBall#16: the recompile-limit warning, then the notebook's traceback header of the exception
HEAVYBALL = [
    "W1126 16:03:16.529497 1228885 torch/_dynamo/convert_frame.py:844] [1/8] torch._dynamo hit config.cache_size_limit (8)",
    "W1126 16:03:16.529497 1228885 torch/_dynamo/convert_frame.py:844] [1/8]    last reason: 1/0: tensor 'L['p'][0]' "
    "size mismatch at index 0. expected 16, actual 64",
    "1batch [00:14, 14.43s/batch]",
    "",
    "---------------------------------------------------------------------------",
    "CacheLimitExceeded                        Traceback (most recent call last)",
    "Cell In[21], line 5",
    "      3 results = []",
    "      4 for i in range(runs):",
    "----> 5     result, stats = train_run(1e-3)",
]


def test_the_recompile_limit_raised_in_a_notebook_is_a_compile_failure_even_cut_before_the_exception_line(tmp_path):
    r = diagnose(tmp_path, HEAVYBALL)
    assert ids(r) == ["torch-compile-failed"]
    assert "recompile limit" in r.findings[0].summary


def test_the_warning_alone_is_not_a_failure_dynamo_runs_the_frame_eagerly(tmp_path):
    assert ids(diagnose(tmp_path, HEAVYBALL[:3])) == []


def test_header_and_exception_line_of_one_notebook_exception_are_one_failure(tmp_path):
    r = diagnose(tmp_path, HEAVYBALL + [
        "",
        "CacheLimitExceeded: cache_size_limit reached",
    ])
    assert ids(r) == ["torch-compile-failed"]
    assert len(r.findings[0].evidence) == 1


def test_a_notebook_header_of_another_exception_is_no_compile_failure(tmp_path):
    # gseg-ethz/CoFF#2
    r = diagnose(tmp_path, [
        "UnpicklingError                           Traceback (most recent call last)",
        "Cell In[6], line 1",
    ])
    assert "torch-compile-failed" not in ids(r)


# guillaumegenthial/sequence_tagging#47: logger.info("train loss:{}") under a logging stamp, lr too high
SEQ_TAGGING = [
    "2018-03-23 15:29:33,355:INFO: train loss:1.10886",
    "2018-03-23 15:31:41,870:INFO: train loss:1.53702",
    "2018-03-23 15:33:53,753:INFO: train loss:0.866067",
    "2018-03-23 15:36:03,349:INFO: train loss:1.32708",
    "2018-03-23 15:38:15,538:INFO: train loss:1.20029",
    "2018-03-23 15:40:22,720:INFO: train loss:nan",
    "2018-03-23 15:42:27,061:INFO: train loss:nan",
    "2018-03-23 15:44:38,513:INFO: train loss:nan",
    "2018-03-23 15:46:45,673:INFO: train loss:nan",
    "2018-03-23 15:48:54,684:INFO: train loss:nan",
]


def test_a_loss_that_is_a_whole_logging_record_is_read_and_its_nan_run_found(tmp_path):
    r = diagnose(tmp_path, SEQ_TAGGING)
    assert ids(r) == ["nan-persistent"]
    assert r.findings[0].evidence[0].line == 6


def test_the_same_records_with_finite_losses_are_clean(tmp_path):
    assert ids(diagnose(tmp_path, SEQ_TAGGING[:5])) == []

