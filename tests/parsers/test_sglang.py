"""SGLang scheduler lines (real, from public issues) -> events; and the diagnosis they give."""

from __future__ import annotations

from nanscope import api


def _events(tmp_path, text: str) -> list:
    p = tmp_path / "server.log"
    p.write_text(text + "\n", encoding="utf-8")
    return [e for e in api.events([str(p)]) if e.kind == "error"]


def _diag(tmp_path, text: str):
    p = tmp_path / "server.log"
    p.write_text(text + "\n", encoding="utf-8")
    return api.diagnose([str(p)])


def test_scheduler_exception_names_its_tp_rank(tmp_path):
    # sgl-project/sglang#36081
    rep = _diag(tmp_path, "ValueError: pool memory leak detected! [full] total=9116160, available=768\n"
                          "[2026-08-23 09:11:04 TP6 EP6] Scheduler hit an exception: Traceback (most recent call last):")
    top = rep.findings[0]
    assert top.id == "sglang-scheduler-crash" and top.initiating_rank == 6


def test_watchdog_timeout_wordings(tmp_path):
    # 0.5.x (sgl-project/sglang#30532) and 0.4 (`Watchdog timeout ({self.watchdog_timeout=})`)
    new, = _events(tmp_path, "  [TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)")
    assert new.error == "sglang_watchdog_timeout" and new.fields == {"timeout_s": 300.0, "soft": False}
    old, = _events(tmp_path, "[2024-11-02 10:01:02 TP1] Watchdog timeout (self.watchdog_timeout=300)")
    assert old.error == "sglang_watchdog_timeout" and old.rank == 1


def test_a_hang_names_no_initiating_rank_and_a_soft_watchdog_is_quiet(tmp_path):
    rep = _diag(tmp_path, "  [TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)")
    assert [f.id for f in rep.findings] == ["sglang-watchdog-timeout"]
    assert rep.findings[0].initiating_rank is None
    assert _diag(tmp_path, "[TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=True)").findings == []
