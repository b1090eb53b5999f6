"""`nanscope eval DIR`: scoring a diagnosis against labelled logs, as a platform team would use it
on its own incidents, and the score floors on the bundled corpora (raise them as the score rises)."""

from __future__ import annotations

import json
import shutil
import textwrap
import tomllib

import pytest

from conftest import SAMPLES, run_cli
from reliability.test_user_signatures import _sig

NAN_RANK2 = SAMPLES / "torch" / "ddp_nan_rank2.log"
HEALTHY = SAMPLES / "torch" / "ddp_healthy.log"

# Floors under the score of `nanscope eval sample_logs/public`: real excerpts that users posted.
# Raise them as the score rises; never lower them to make a change pass.
PUBLIC_FLOORS = {"detected_pct": 99.0, "first_pct": 99.0, "rank_pct": 98.0, "max_false_alarms": 0}


def _folder(tmp_path, manifest: str, logs: dict):
    for name, src in logs.items():
        shutil.copy(src, tmp_path / name)
    (tmp_path / "MANIFEST.toml").write_text(textwrap.dedent(manifest), encoding="utf-8")
    return tmp_path


def _eval_json(*args: str) -> dict:
    p = run_cli("eval", *args, "--format", "json")
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def test_right_labels_score_full_marks_and_wrong_ones_are_listed_with_what_was_said(tmp_path):
    _folder(tmp_path, """
        [[log]]
        path = "1.log"
        framework = "pytorch"
        expect = ["nan-rank-local"]
        initiating_rank = 2
        first_bad_step = 40

        [[log]]
        path = "2.log"
        framework = "pytorch"
        expect = ["cuda-oom"]
        initiating_rank = 1

        [[log]]
        path = "3.log"
        framework = "deepspeed"
        healthy = true
    """, {"1.log": NAN_RANK2, "2.log": NAN_RANK2, "3.log": HEALTHY})
    r = _eval_json(str(tmp_path))
    assert r["total"]["failures"] == 2 and r["total"]["healthy"] == 1
    assert r["total"]["detected"] == 1 and r["total"]["first"] == 1
    assert r["total"]["rank_right"] == 1 and r["total"]["ranked"] == 2
    assert r["total"]["false_alarms"] == 0
    assert r["by_framework"]["deepspeed"]["healthy"] == 1
    cases = {c["path"]: c for c in r["cases"]}
    assert cases["1.log"]["detected"] and cases["1.log"]["rank"] == 2 and cases["1.log"]["step_right"]
    assert not cases["2.log"]["detected"] and cases["2.log"]["findings"][0] == "nan-rank-local"

    text = run_cli("eval", str(tmp_path)).stdout.decode()
    assert "misses (1):" in text
    assert "2.log [pytorch] expected cuda-oom; said nan-rank-local" in text
    assert "initiating rank 1 expected, said none" in text
    assert text.rstrip().splitlines()[-4:] == [
        "detected         1/2  50%", "first finding    1/2  50%", "initiating rank  1/2  50%", "false alarms     0/1 healthy"]


def test_an_alternative_id_counts_and_a_healthy_trap_that_warns_is_a_false_alarm(tmp_path):
    _folder(tmp_path, """
        [[log]]
        path = "a.log"
        framework = "pytorch"
        expect = ["nan-persistent"]
        accept = ["nan-rank-local"]

        [[log]]
        path = "b.log"
        framework = "pytorch"
        healthy = true
    """, {"a.log": NAN_RANK2, "b.log": NAN_RANK2})
    r = _eval_json(str(tmp_path))
    assert r["total"]["detected"] == 1 and r["total"]["first"] == 1
    assert r["total"]["false_alarms"] == 1
    p = run_cli("eval", str(tmp_path), "--max-false-alarms", "0")
    assert p.returncode == 1 and b"below the floor: false alarms" in p.stderr


def test_floors_set_the_exit_status(tmp_path):
    _folder(tmp_path, """
        [[log]]
        path = "1.log"
        expect = ["cuda-oom"]
    """, {"1.log": NAN_RANK2})
    assert run_cli("eval", str(tmp_path), "--min-detected", "50").returncode == 1
    assert run_cli("eval", str(tmp_path), "--min-first", "0").returncode == 0


def test_a_user_pack_is_scored_with_the_bundled_signatures(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "x.log").write_text("RuntimeError: boom\n")
    (logs / "MANIFEST.toml").write_text('[[log]]\npath = "x.log"\nframework = "ours"\nexpect = ["team-boom"]\n')
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "boom.toml").write_text(_sig("team-boom", "\"message ~ 'boom'\""))
    without = run_cli("eval", str(logs)).stdout.decode()
    assert "team-boom: 1 case(s)" in without  # an id no loaded signature has is named
    r = _eval_json(str(logs), "--signatures", str(pack))
    assert r["total"]["detected"] == 1 and r["unknown_ids"] == {}


@pytest.mark.parametrize("manifest, message", [
    ('[[log]]\npath = "1.log"\nexpect = ["cuda-oom"]\nrank = 3\n', "unknown key(s) rank"),
    ('[[log]]\npath = "nope.log"\nexpect = ["cuda-oom"]\n', "nope.log does not exist"),
    ('[[log]]\npath = "1.log"\n', "a failure needs expect"),
    ('[[log]]\npath = "1.log"\nexpect = ["cuda-oom"]\ninitiating_rank = "3"\n', "initiating_rank must be an integer"),
    ('[[log]\npath = "1.log"\n', "not a valid TOML manifest"),
])
def test_a_bad_manifest_is_a_clear_error_naming_the_file(tmp_path, manifest, message):
    shutil.copy(NAN_RANK2, tmp_path / "1.log")
    (tmp_path / "MANIFEST.toml").write_text(manifest)
    p = run_cli("eval", str(tmp_path))
    assert p.returncode == 2
    err = p.stderr.decode()
    assert message in err and "MANIFEST.toml" in err and "Traceback" not in err


def test_a_folder_without_manifest_is_an_error(tmp_path):
    p = run_cli("eval", str(tmp_path))
    assert p.returncode == 2 and b"no MANIFEST.toml" in p.stderr


def _known_gaps() -> dict[str, set[str]]:
    """known_gaps of every case outside public/, by the path eval prints (folder/file)."""
    out: dict[str, set[str]] = {}
    for m in sorted(SAMPLES.glob("*/MANIFEST.toml")):
        data = tomllib.loads(m.read_text(encoding="utf-8"))
        for entry in data.get("log", []) + data.get("log_dir", []):
            if entry.get("known_gaps"):
                out[f"{m.parent.name}/{entry['path']}"] = set(entry["known_gaps"])
    return out


def test_the_framework_run_samples_stay_at_full_marks():
    """sample_logs/ outside public/: logs produced here by running the frameworks, with exact truth.
    A case's documented known_gaps (its folder's README says why) are left to
    test_multinode_cases_score_right below and to tests/test_samples.py."""
    r = _eval_json(str(SAMPLES))
    gaps = _known_gaps()
    own = [c for c in r["cases"] if not c["path"].startswith("public/")]

    def found(c: dict) -> bool:  # a documented gap in the findings themselves
        return "expect" in gaps.get(c["path"], ())

    assert own and all(c["detected"] is not False and c["first"] is not False for c in own if not found(c)), \
        [c["path"] for c in own if not found(c) and (c["detected"] is False or c["first"] is False)]
    assert not [c["path"] for c in own if c["false_alarm"] and "healthy" not in gaps.get(c["path"], ())]
    assert not [c["path"] for c in own if c["rank_right"] is False and not found(c)
                and "initiating_rank" not in gaps.get(c["path"], ())]


# sample_logs/multinode: two-node torchrun jobs run here (srun --label consoles, FSDP2, a stalled rank,
# an extra collective, a restart, a handled exception). The cases nanscope gets wrong, and why; each
# is an xfail(strict): when the fix lands, the case passes and the mark must go.
_MULTINODE_WRONG = {
    "srun_nan_one_rank.log": "`1: [default1]:` is node 1 / local rank 1; under c10d rendezvous srun's task is not "
                             "the node rank and the console shows no nproc_per_node, so no global rank is composed "
                             "(the report says so); nan-rank-local names the process by node and local rank only",
    "fsdp2_nan_one_rank.log": "same: `0: [default1]:` is never composed into global rank 1 without the topology",
}


# Cases whose text cannot tell an initiating rank (every rank at once): a rank there is a false claim.
_MULTINODE_NO_RANK = {"srun_nan_all_ranks.log", "debug_detail_segv.log"}


def _multinode_params() -> list:
    data = tomllib.loads((SAMPLES / "multinode" / "MANIFEST.toml").read_text(encoding="utf-8"))
    out = []
    for entry in data.get("log", []) + data.get("log_dir", []):
        reason = _MULTINODE_WRONG.get(entry["path"])
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        out.append(pytest.param(entry["path"], id=entry["path"], marks=marks))
    return out


@pytest.fixture(scope="module")
def multinode_eval() -> dict:
    return {c["path"]: c for c in _eval_json(str(SAMPLES / "multinode"))["cases"]}


@pytest.mark.parametrize("path", _multinode_params())
def test_multinode_cases_score_right(path, multinode_eval):
    """Every labelled case of sample_logs/multinode: the failure named first, the initiating rank and
    the first bad step right where the truth has them, and the healthy traps clean."""
    case = multinode_eval[path]
    assert case["error"] is None, case["error"]
    if case["healthy"]:
        assert not case["false_alarm"], case["findings"]
        return
    assert case["detected"] and case["first"], case["findings"]
    assert case["rank_right"] is not False, (case["rank"], case["initiating_rank"])
    if path in _MULTINODE_NO_RANK:
        assert case["rank"] is None, f"claims rank {case['rank']}, which the log cannot show"
    gaps = _known_gaps().get(f"multinode/{path}", set())
    if "first_bad_step" not in gaps:
        assert case["step_right"] is not False, (case["step"], case["first_bad_step"])
