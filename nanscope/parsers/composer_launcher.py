"""MosaicML Composer's launcher (`composer train.py ...`): the record of a rank that exited non-zero.

mosaicml/composer, composer/cli/launcher.py (0.x; the logger is `composer.cli.launcher`, logging.basicConfig's
format `ERROR:composer.cli.launcher:` unless a formatter is set):
  _monitor_processes:            log.error(f'Rank {global_rank} crashed with exit code {process.returncode}.')
  _print_process_exit_status:    'Global rank {global_rank} (PID {process.pid}) exited with code {process.returncode}'
                                 (printed, then the rank's captured STDOUT / STDERR between
                                 '----------Begin global rank N STDERR----------' lines)
  _aggregate_process_returncode: log.error('Global rank %s (PID %s) exited with code %s', ...)
The return code is subprocess.Popen's: negative for a rank a signal ended (-7 SIGBUS, -11 SIGSEGV, -9 SIGKILL).
The launcher kills the other ranks with SIGTERM and does not print those, so the rank it names is the first
to fail; the rank is a global rank.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers.base import Parser, rule, signal_of
from nanscope.parsers._repeats import first_time


def _event(m, rec, state):
    rank, code = int(m.group("rank")), int(m.group("code"))
    if code == 0 or not first_time(state, ("composer_exit", rank, code), rec.loc.line):
        return []
    fields = {"launcher": "composer"}
    if m.groupdict().get("pid"):
        fields["pid"] = int(m.group("pid"))
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="composer", error="worker_failed",
                      message=m.group(0).strip(), exitcode=code, signal=signal_of(code), rank=rank, fields=fields)


@rule("composer-rank-crashed", ("crashed with exit code",), r"\bRank (?P<rank>\d+) crashed with exit code (?P<code>-?\d+)\.")
def _crashed(m, rec, state):
    return _event(m, rec, state)


@rule("composer-rank-exited", ("exited with code",),
      r"\bGlobal rank (?P<rank>\d+) \(PID (?P<pid>\d+)\) exited with code (?P<code>-?\d+)\s*$")
def _exited(m, rec, state):
    return _event(m, rec, state)


PARSER = Parser(
    name="composer_launcher",
    framework="composer",
    priority=60,
    description="MosaicML Composer's launcher: a rank that crashed / exited with a non-zero code",
    rules=[_crashed, _exited],
)
