"""Collective communication failures: c10d ProcessGroupNCCL, NCCL itself, and gloo.

Templates (every generation seen in released code; see /work/scratch/research/templates.md §1):
pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp
  [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE,
      NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.
      (torch <= 2.0: no Numel fields; the same text is repeated by "NCCL watchdog thread terminated with
      exception:", "Process group watchdog thread terminated with exception:", "what():" and
      "NCCL communicator was aborted on rank N. Original reason for failure was:")
  [Rank 1] Work WorkNCCL(SeqNum=2521, ...) timed out in blocking wait.
  [PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL
      work: 1582, last completed NCCL work: 1579.                                     (2.3 - 2.5)
  [PG ID 2 PG GUID 9 Rank 4] Timeout at NCCL work: 610, last enqueued NCCL work: 616, last completed NCCL work: 609.
  ... NCCL error is detected by watchdog at work: / Work timeout is detected by watchdog at work:   (2.6)
  [PG ID 0 PG GUID 0(default_pg) Rank 5]  failure detected by watchdog at work sequence id: 120049 PG status:
      last enqueued work: 120051, last completed work: 120048                          (2.7+)
  [PG ID 0 PG GUID 0(default_pg) Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making
      progress in monitoring enqueued collectives. ...   (HeartbeatMonitor, 2.3+; TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC;
      the same text for ProcessGroupHCCL / XCCL / CNCL / MCCL backends)
  [Rank 4] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, ...
  [Rank 4] To avoid data inconsistency, we are taking the entire process down.
  Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. ...
  [Rank 0] Collective WorkNCCL(...) raised the following async exception: NCCL error: <reason>
torch/csrc/distributed/c10d/NCCLUtils.hpp: NCCL error in: <file>:<line>, <ncclGetErrorString>, NCCL version X
  (a torch build with NCCL 2.26 prints `NCCL error in /root/.../c10d/NCCLUtils.cpp:77, unhandled system error ...`
  without the colon: VeOmni#131)
  followed by detail lines `ncclSystemError: System call ...`, `ncclRemoteError: A call failed ...`.
torch/csrc/distributed/c10d/TraceUtils.h (TORCH_NCCL_DESYNC_DEBUG=1):
  \t - [3] Timeout at collective: ALLREDUCE, #17
  \t - To our best knowledge, ranks [1, 2] are the lagging ranks that caused this timeout. They never joined any collectives
  \t   - [0] joined but didn't finish collective #17 (count from 1)
  \t     [1, 2] finished collective #17, but didn't join collective #18 (count from 1)
torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp (TORCH_DISTRIBUTED_DEBUG=DETAIL):
  Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(...),
      but Rank 0 is running collective: CollectiveFingerPrint(...).      (<= 1.12: "is running inconsistent collective")
NVIDIA/nccl src/transport/net_ib*.cc, every tag from 2.10 to 2.30:
  NET/IB : Got completion from peer 10.0.0.2<54862> with error 12, opcode 0, len 0, vendor err 129
  NET/IB : Got completion from peer ... with status=12 opcode=0 len=0 vendor err 129 (Recv) ...
  NET/IB: Got completion from peer ... with status=IBV_WC_RETRY_EXC_ERR(12) opcode=... vendor_err=129 ...
  (plugins: NET/IBP:, NET/IB/GIN:)
  NET/IB : Got async event : port error   (2.19+: NET/IB : mlx5_0:1 Got async event : port error)
aws/aws-ofi-nccl (EFA / libfabric net plugin), NCCL_OFI_WARN = "NET/OFI " + message:
  NCCL WARN NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument
  NCCL WARN NET/OFI Request 0x... completed with error. RC: 21. Error: 4 (...). Completed length: 0
NVIDIA/nccl src/misc/ibvwrap.cc (every wrap_ibv_* call, 2.4 - 2.27):
  misc/ibvwrap.cc:182 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Invalid argument
  ibvwrap.c:130 NCCL WARN Call to ibv_create_qp failed          (plugin builds)
  The wrapper returns ncclSystemError. For the calls that set up a connection or register memory
  (create_qp / modify_qp / create_cq / alloc_pd / reg_mr*) the error ends the communicator; a failed
  ibv_open_device / ibv_query_* while listing devices only skips that device (net_ib.cc `continue`s).
NVIDIA/nccl src/include/checks.h CUDACHECK (a CUDA call inside NCCL failed; returns ncclUnhandledCudaError):
  include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'            (<= 2.18: WARN("Cuda failure '%s'"))
  include/alloc.h:102 NCCL WARN Cuda failure 1 'invalid argument'       (2.19+: WARN("Cuda failure %d '%s'"))
NVIDIA/nccl src/misc/shmutils.cc (the SHM transport cannot map its segment; ncclSystemError):
  misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-KWfVyt (size 5967872)
  misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-fjwOOB to 5967876 bytes
NVIDIA/nccl src/init.cc: NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000 (ncclInvalidUsage)
NVIDIA/nccl src/include/checks.h / src/group.cc, the error-return trace (printed only when a call fails):
  NCCL INFO misc/socket.cc:564 -> 2 ... NCCL INFO group.cc:64 -> 2 [Async thread]
NVIDIA/nccl-tests src/common.h: <host>: Test NCCL failure common.cu:1204 'unhandled cuda error (...) / <last error>'
torch/csrc/distributed/c10d/socket.cpp: [E socket.cpp:610] [c10d] The client socket has failed to connect to any
  network address of (host, port).   (the store was never reached; the `[W ...]` lines before it are retries)
  The client socket has timed out after 1800s while trying to connect to (host, port).   (the connect deadline)
  The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).  (port_in_use; the libuv
  store: `... port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE`; torch <= 1.10: `RuntimeError: Address already
  in use`; Windows: `(system error: 10048 - <localized text>)`)
torch/csrc/distributed/c10d/Utils.hpp: RuntimeError / DistStoreError: Socket Timeout   (a store wait that ran out)
torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp broadcastUniqueNCCLID: [3] is setting up NCCL communicator and
  retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: <e.what()>
  . This may indicate a possible application crash on rank 0 or a network set up issue.   (the tail on a line
  of its own when e.what() carries the store error's C++ frames)
torch/csrc/distributed/c10d/ProcessGroupGloo.cpp: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms
  (the rank named is the one the others waited for)
NVIDIA/nccl socket layer, every release: Call to connect failed : E (<= 2.11 SYSCHECK; untagged `WARN` before 2.3),
  Net : Socket creation failed : E, socketStartConnect: Connect to A failed : E, Bootstrap : no socket interface
  found; src/proxy.cc: [Proxy Service 8] Failed to execute operation Connect from rank 8, retcode 2
NVIDIA/nccl src/misc/socket.cc: socketProgress: Connection closed by remote peer <host><port>   (2.19+)
  <= 2.18: `WARN("Net : Connection closed by remote peer %s", ...)` and
  `WARN("Net : Call to recv from %s failed : %s", ...)` (socketProgressOpt; 2.19+ `socketProgressOpt: Call to
  recv from %s failed : %s`), printed as `host:pid:tid [dev] misc/socket.cc:538 NCCL WARN Net : ...`.
NVIDIA/nccl src/proxy.cc (INFO): [Service thread] Connection closed by localRank 1
  NOTE: NCCL prints this INFO line on every ordinary teardown too (NCCL_DEBUG=INFO); the event is marked
  fields['nccl_info']=True so a signature never takes it alone as a crash.
facebookincubator/gloo gloo/transport/tcp/{unbound_buffer,pair}.cc, inside Python exception lines:
  RuntimeError: [.../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 15000ms for recv operation to complete
  RuntimeError: [.../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:41364. ...
  [.../pair.cc:534] Read error [10.0.0.2]:27170: Connection reset by peer
  what():  [enforce fail at .../gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 1384 vs 4.
      Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?
      (a collective mismatch; seen from torch 2.13.0+cpu in sample_logs/multinode/extra_collective.log)

Ranks: the `[Rank r]` / `[PG ... Rank r]` a c10d message prints is the rank *within that process group*.
It is used as the event's rank only when the line has no launcher rank prefix and the group is the
default one (or not named); it is always kept in fields['pg_rank'].

One failure is printed several times per rank (the exception, the watchdog-thread message, `what():`);
a repeat of the same collective / error on the same stream within a few hundred lines is recognised
but gives no second event. The PG-status line merges in the op and timeout of the timeout it follows.
"""

from __future__ import annotations

import re
from typing import Optional

from nanscope.model import Collective, ErrorEvent, WarningEvent
from nanscope.parsers._repeats import MAX_REMEMBERED, first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.numbers import to_int
from nanscope.parsers.python import EXC_LINE

FW = "nccl"

_GLOG = LazyPattern(r"^\[?[EWIF]\d{0,4}(?: \d\d:\d\d:\d\d\.\d+)?(?: +\d+)? +[\w/.\-]+:\d+\] ")
_PG_PREFIX = LazyPattern(
    r"\[PG (?:ID )?(?P<id>\d+)(?: PG GUID (?P<guid>[^\s(\]]+))?\s*(?:\((?P<desc>[^)]*)\))? Rank (?P<rank>\d+)\]"
)
_WORK_KV = LazyPattern(r"(?P<k>SeqNum|OpType|NumelIn|NumelOut|Timeout\(ms\))=(?P<v>[\w\-]+)")
_RAN_FOR = LazyPattern(r"ran for (\d+) milliseconds")


def _work_fields(text: str, start: int = 0) -> dict:
    """The key=value pairs of the first WorkNCCL(...) description at or after start."""
    t = text.find("Timeout(ms)=", start)
    stop = text.find(")", t + 12) if t >= 0 else -1
    out: dict = {}
    for k in _WORK_KV.finditer(text, start, stop + 1 if stop >= 0 else len(text)):
        out.setdefault(k.group("k"), k.group("v"))
    return out


def _exc_split(text: str) -> tuple[Optional[str], str]:
    """`RuntimeError: msg` -> ("RuntimeError", "msg"); a glog line -> (None, text without glog prefix)."""
    m = EXC_LINE.match(text)
    if m is not None and m.group("msg") is not None:
        return m.group("type"), m.group("msg").strip()
    return None, _GLOG.sub("", text, count=1).strip()


def _pg(text: str) -> tuple[Optional[str], Optional[int], bool]:
    """(pg label, pg rank, is the default group or unnamed) from a c10d logPrefix in the line."""
    m = _PG_PREFIX.search(text)
    if m is None:
        return None, None, True
    ident = m.group("guid") or m.group("id")
    desc = m.group("desc")
    label = f"{ident}({desc})" if desc else ident
    default = desc == "default_pg" or ident == "0"
    return label, int(m.group("rank")), default


def _rank(rec, pg_rank: Optional[int], default_pg: bool) -> Optional[int]:
    """The rank a message names, used only when the launcher prefix gives none (see module doc)."""
    if rec.origin.rank is not None or pg_rank is None or not default_pg:
        return None
    return pg_rank


def _error(rec, error: str, **kw) -> ErrorEvent:
    exc_type, message = _exc_split(rec.text)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error=error, message=message, exc_type=exc_type, **kw)


def _remember(state: dict, seq: int, **values) -> dict:
    colls = state.setdefault("collectives", {})
    if len(colls) > MAX_REMEMBERED:
        colls.clear()
    entry = colls.setdefault(seq, {})
    for k, v in values.items():
        if v is not None:
            entry[k] = v
    return entry


# --- collective timeouts ------------------------------------------------------------------

# A terminal that wraps long lines splits the message anywhere (huggingface/open-r1#620, at 140 columns:
# "... [Rank 3] Watchdog caught colle" / "ctive operation timeout: WorkNCCL(SeqNum=4, ...) ran for 1800011 millisecond"
# / "s before timing out."); the work description with "ran for N milli" is the watchdog's timeout text alone,
# so a line that carries it counts by itself (its rank, on the line before, is not claimed).
@rule(
    "watchdog-timeout",
    ("Watchdog caught collective operation timeout", "timed out in blocking wait", ") ran for "),
    r"(?:\[Rank (?P<rank>\d+)\] )?(?:Watchdog caught collective operation timeout: |Work )WorkNCCL\((?P<work>)"
    r"|WorkNCCL\((?=[^()]*Timeout\(ms\)=\d+\) ran for \d+ milli)",
)
def _watchdog_timeout(m, rec, state):
    work = _work_fields(rec.text, m.end())
    ran = _RAN_FOR.search(rec.text, m.end())
    seq, op = to_int(work.get("SeqNum")), work.get("OpType")
    timeout_ms = to_int(work.get("Timeout(ms)"))
    pg, pg_rank, default = _pg(rec.text[: m.start()])
    msg_rank = to_int(m.group("rank"))
    if pg_rank is None:
        pg_rank = msg_rank
    state["timeout_line"] = rec.loc.line
    held = state.get("pending")
    if held is not None and (held.fields or {}).get("from_frames") and rec.loc.line - held.loc.line <= _TIMEOUT_FRAME_NEXT:
        state.pop("pending")  # the stack just above was this timeout's (an excerpt that starts in the frames)
    if not first_time(state, ("timeout", seq, op, pg_rank), rec.loc.line):
        return []
    known = _remember(state, seq, op=op, timeout_ms=timeout_ms, pg=pg) if seq is not None else {}
    blocking = "timed out in blocking wait" in rec.text
    return _error(
        rec, "collective_timeout", rank=_rank(rec, pg_rank, default),
        collective=Collective(pg=pg, seq=seq, op=op, enqueued=known.get("enqueued"), completed=known.get("completed"),
                              timeout_ms=timeout_ms),
        fields={"backend": "nccl", "pg_rank": pg_rank, "ran_for_ms": int(ran.group(1)) if ran else None,
                "numel_in": to_int(work.get("NumelIn")), "numel_out": to_int(work.get("NumelOut")),
                "blocking_wait": blocking},
    )


@rule(
    "watchdog-pg-status",
    ("detected by watchdog", "Timeout at NCCL work"),
    r"(?P<what>Exception \(either an error or timeout\) detected by watchdog at work|NCCL error is detected by watchdog at work"
    r"|Work timeout is detected by watchdog at work|failure detected by watchdog at work sequence id|Timeout at NCCL work)"
    r":\s*(?P<seq>\d+),?\s*(?:PG status: )?last enqueued (?:NCCL )?work: (?P<enq>-?\d+), last completed (?:NCCL )?work: (?P<comp>-?\d+)",
)
def _pg_status(m, rec, state):
    seq, enq, comp = int(m.group("seq")), int(m.group("enq")), int(m.group("comp"))
    pg, pg_rank, default = _pg(rec.text)
    what = m.group("what")
    kind = "nccl_error" if what.startswith("NCCL error") else "collective_timeout"
    if not first_time(state, ("status", pg, seq, enq, comp, pg_rank), rec.loc.line):
        return []
    known = _remember(state, seq, enqueued=enq, completed=comp, pg=pg)
    return _error(
        rec, kind, rank=_rank(rec, pg_rank, default),
        collective=Collective(pg=pg or known.get("pg"), seq=seq, op=known.get("op"), enqueued=enq, completed=comp,
                              timeout_ms=known.get("timeout_ms")),
        fields={"backend": "nccl", "pg_rank": pg_rank, "status_line": True},
    )


# c10's stack of the watchdog's timeout exception (c10::Error's "Exception raised from checkTimeout at
# .../ProcessGroupNCCL.cpp:N (most recent call first):" then the frames, torch 1.13 - 2.x):
#   frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x... in .../libc10.so)
#   frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, ...) + 0x1d2 (...)
#   frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (...)        (workCleanupLoop() before 2.2)
# Frame #1 is the function that threw: WorkNCCL::checkTimeout throws only for a collective that ran past its
# timeout. The message line above it says the same (read by watchdog-timeout); where an excerpt starts at
# the frames, the frame alone is that timeout.
_TIMEOUT_FRAME_SPAN = 60
_TIMEOUT_FRAME_NEXT = 15  # `terminate called ... what(): [Rank N] ... Watchdog caught ...` right after the frames


@rule(
    "watchdog-timeout-frame",
    ("WorkNCCL::checkTimeout(",),
    r"^\s*frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout\(",
    match_start=True,
)
def _timeout_frame(m, rec, state):
    seen = state.get("timeout_line")
    state["timeout_line"] = rec.loc.line
    if seen is not None and 0 <= rec.loc.line - seen <= _TIMEOUT_FRAME_SPAN:
        return []  # the stack of a timeout whose message was read
    # held: the watchdog's what() with the message often follows the stack (the excerpt began in it); then that
    # line is the timeout, and this event is dropped (_watchdog_timeout)
    held = state.pop("pending", None)
    state["pending"] = _error(rec, "collective_timeout", fields={"backend": "nccl", "pg_rank": None, "from_frames": True})
    return [held] if held is not None else []


# The flight recorder's dump signal (ProcessGroupNCCL.cpp, torch 2.3+, TORCH_NCCL_DUMP_ON_TIMEOUT): the rank
# whose watchdog timed out writes its global rank into the store; every rank's watchdog then logs where the
# signal came from, with its own PG status:
#   [PG ID 0 PG GUID 0(default_pg) Rank 1] Received a dump signal due to a collective timeout from this local rank
#       and we will try our best to dump the debug info. Last enqueued NCCL work: 233659, last completed NCCL work: ...
#   [PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from  rank 1 and ...
#   (`" rank " + std::to_string(timeoutRank)` after "from ": two blanks), and before it, on the receiving ranks,
#   `Observed flight recorder dump signal from another rank via TCPStore.`
#   (a terminal may wrap the line after `from this local `, `rank and we will ...` on the next line)
# The first is this rank's own time-out; the second says rank N timed out (the printing rank only got the
# signal: its status numbers are its own, not N's). Either way the rank named waited; it is not the culprit.
_DUMP_STATUS = LazyPattern(r"Last enqueued (?:NCCL )?work: (?P<enq>-?\d+), last completed (?:NCCL )?work: (?P<comp>-?\d+)")


@rule(
    "nccl-dump-signal",
    ("Received a dump signal due to a collective timeout from",),
    r"Received a dump signal due to a collective timeout from\s+(?:(?P<local>this local(?: rank|\s*$))|rank (?P<rank>\d+)\b)",
)
def _dump_signal(m, rec, state):
    pg, pg_rank, default = _pg(rec.text)
    status = _DUMP_STATUS.search(rec.text, m.end())
    enq, comp = (int(status.group("enq")), int(status.group("comp"))) if status else (None, None)
    if m.group("local"):
        if not first_time(state, ("dump_signal", "self", pg, pg_rank), rec.loc.line):
            return []
        return _error(rec, "collective_timeout", rank=_rank(rec, pg_rank, default),
                      collective=Collective(pg=pg, enqueued=enq, completed=comp),
                      fields={"backend": "nccl", "pg_rank": pg_rank, "dump_signal": "own timeout"})
    timed_out = int(m.group("rank"))
    if not first_time(state, ("dump_signal", timed_out), rec.loc.line):
        return []
    return _error(rec, "collective_timeout", rank=timed_out,
                  fields={"backend": "nccl", "dump_signal": "from another rank", "reported_by": rec.origin.rank
                          if rec.origin.rank is not None else pg_rank, "reporter_enqueued": enq,
                          "reporter_completed": comp})


@rule(
    "heartbeat-stuck",
    ("watchdog got stuck for",),
    r"ProcessGroup(?P<backend>\w+)'s watchdog got stuck for (?P<s>\d+) seconds without making progress",
)
def _heartbeat_stuck(m, rec, state):
    # The heartbeat monitor found the watchdog itself blocked (a hung CUDA/NCCL call, often a collective
    # that never completes): the job hangs; the monitor then dumps debug info and aborts the process.
    pg, pg_rank, default = _pg(rec.text)
    if not first_time(state, ("heartbeat", pg, pg_rank), rec.loc.line):
        return []
    return _error(
        rec, "collective_timeout", rank=_rank(rec, pg_rank, default),
        collective=Collective(pg=pg, timeout_ms=int(m.group("s")) * 1000),
        fields={"backend": m.group("backend").lower(), "pg_rank": pg_rank, "heartbeat_timeout_s": int(m.group("s")),
                "watchdog_stuck": True},
    )


@rule(
    "gloo-timeout",
    ("Timed out waiting",),
    r"Timed out waiting (?P<ms>\d+)ms for (?P<op>recv|send) operation to complete",
)
def _gloo_timeout(m, rec, state):
    return _error(
        rec, "collective_timeout", collective=Collective(timeout_ms=int(m.group("ms"))),
        fields={"backend": "gloo", "transport_op": m.group("op")},
    )


# Huawei HCCL (Ascend NPUs, under torch_npu's ProcessGroupHCCL): a collective whose peer never sent its data.
# CANN's error code EI0006 (`Communication_Error_Get_Socket(EI0006)` in its fingerprint form), printed under
# the failed op's `OPS function error: HcclAllreduce, error code is 6` with the process's PID and a time:
#   EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not
#   send the data in time. Please check the reason for the rank being stuck
# The rank printing it waited on another one (the one stuck or dead): a timeout, collateral.
@rule(
    "hccl-socket-timeout",
    ("EI0006",),
    r"(?:EI0006: (?:\[PID: \d+\] )?(?:\S+ )?(?P<what>Getting socket times out|Socket build timeout)"
    r"|Communication_Error_Get_Socket\(EI0006\))",
)
def _hccl_socket_timeout(m, rec, state):
    remote = "Remote Rank did not send the data in time" in rec.text
    held, op_line = state.get("pending"), state.get("hccl_op_line")
    if (held is not None and op_line is not None and 0 < rec.loc.line - op_line <= _HCCL_DETAIL_SPAN
            and (held.fields or {}).get("backend") == "hccl"):
        # the failed op's exception line above it: one failure, a timeout waiting for a peer
        state.pop("pending", None)
        state.pop("hccl_op_line", None)
        held.error = "collective_timeout"
        held.message = f"{held.message} ({rec.text[m.start():].strip()})"
        held.fields = dict(held.fields, hccl_code="EI0006", remote_rank_late=remote)
        return [held]
    if not first_time(state, ("hccl_socket_timeout",), rec.loc.line):
        return []
    return _error(rec, "collective_timeout",
                  fields={"backend": "hccl", "hccl_code": "EI0006", "remote_rank_late": remote})


# torch_npu's op wrapper (torch_npu/csrc/framework/OpParamMaker.cpp, `OPS function error: %s, error code is %d`)
# when an HCCL collective returns an error: `RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281
# OPS function error: HcclAllreduce, error code is 6`. CANN prints the reason a few lines under it (an EI code);
# the line is held until then: with EI0006 under it the op timed out waiting for a peer, else an HCCL error.
_HCCL_DETAIL_SPAN = 6


@rule("hccl-op-failed", ("OPS function error: Hccl",), r"OPS function error: (?P<op>Hccl\w+), error code is (?P<code>\d+)")
def _hccl_op_failed(m, rec, state):
    ev = _error(rec, "nccl_error", fields={"backend": "hccl", "op": m.group("op"), "hccl_error_code": int(m.group("code"))})
    held = state.pop("pending", None)
    state["pending"] = ev
    state["hccl_op_line"] = rec.loc.line
    return [held] if held is not None else []


# torch/csrc/distributed/c10d/ProcessGroupGloo.cpp monitoredBarrier (torch 1.10+, dist.monitored_barrier, and
# ProcessGroupWrapper's check before every collective under TORCH_DISTRIBUTED_DEBUG=DETAIL): rank 0 waits for an ack
# from every other rank and names the first that did not answer in time, then the transport error it got:
#   RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms          (docs/source/distributed.rst)
#    Original exception:
#   [gloo/transport/tcp/pair.cc:598] Connection closed by peer [2401:db00:...]:8594
# later releases prefix it with "[Rank 0]: "; with wait_all_ranks=True every rank that failed:
#   [Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 2000 ms
# and when rank 0's own time ran out first: "Rank 0 timed out in monitoredBarrier after 2000 ms."
# The rank named is the one the others waited for (the hung or dead one): the message says so itself.
# A rank other than 0 that reached the barrier but lost its send / recv with rank 0, the coordinator (the same
# function, torch 1.10+; ProcessGroupWrapper and the later TORCH_CHECK form add "the "):
#   Rank 3 successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0.
#   Please check rank 0 logs for faulty rank.
# Rank 0 is the one it waited for: gone, or the rank whose own log names the straggler.
@rule(
    "monitored-barrier-failed",
    ("failed to pass monitoredBarrier", "timed out in monitoredBarrier", "successfully reached monitoredBarrier"),
    r"(?:\[Rank (?P<me>\d+)\]: )?(?:Ranks? (?P<ranks>\d+(?:, \d+)*) failed to pass monitoredBarrier in (?P<ms>\d+) ms"
    r"|Rank (?P<own>\d+) timed out in monitoredBarrier after (?P<oms>\d+) ms"
    r"|Rank (?P<reached>\d+) successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0)",
)
def _monitored_barrier(m, rec, state):
    if not first_time(state, ("monitored_barrier",), rec.loc.line):
        return []
    if m.group("reached") is not None:
        me = int(m.group("reached"))
        return _error(rec, "collective_timeout", rank=_rank(rec, me, True), collective=Collective(op="BARRIER"),
                      fields={"backend": "gloo", "monitored_barrier": True, "pg_rank": me, "waited_for": 0,
                              "waited_why": f"rank {me} reached the monitored barrier but lost its send / recv with rank 0, "
                                            "the barrier's coordinator: rank 0 failed or hung first (its own log names "
                                            "any straggler it waited for)"})
    if m.group("own") is not None:
        me = int(m.group("own"))
        return _error(rec, "collective_timeout", rank=_rank(rec, me, True),
                      collective=Collective(op="BARRIER", timeout_ms=int(m.group("oms"))),
                      fields={"backend": "gloo", "monitored_barrier": True, "pg_rank": me})
    failed = _ranks(m.group("ranks"))
    me = to_int(m.group("me"))
    fields = {"backend": "gloo", "monitored_barrier": True, "failed_ranks": failed}
    if me is not None:
        fields["pg_rank"] = me
    if len(failed) == 1:
        fields["waited_for"] = failed[0]
        fields["waited_why"] = (f"the monitored barrier names rank {failed[0]} as the rank that did not reach it "
                                f"within {m.group('ms')} ms (hung, slower, or gone)")
    return _error(rec, "collective_timeout", rank=_rank(rec, me, True) if me is not None else None,
                  collective=Collective(op="BARRIER", timeout_ms=int(m.group("ms"))), fields=fields)


# --- waits on the c10d store ------------------------------------------------------------------

# torch/csrc/distributed/c10d/socket.cpp SocketImpl::waitForInput (torch 2.2+), a TCPStore client waiting
# for the reply to a get/wait: C10D_WARNING("waitForInput: poll for socket {} returned 0, likely a timeout")
# then C10D_WARNING("waitForInput: socket {} timed out after {}ms", ...), printed as
#   [rank1]:[W516 14:34:56.854597329 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=79, ...) timed out after 1800000ms
# The process waited the whole store timeout for a key another process never set (the main process still
# tokenizing a dataset or loading weights behind a barrier): the wait of a collective, in the store.
# Only a worker's line (a rank or local-rank prefix) counts: torchrun's agent prints the same warning when
# its exit barrier waits for an agent that already failed (`Error waiting on exit barrier` follows), which
# is its teardown, not a training process's wait.
@rule(
    "store-wait-timeout",
    ("waitForInput: socket", "waitForInput: poll for socket"),
    r"waitForInput: (?:socket .*? timed out after (?P<ms>\d+)ms|poll for socket .*? returned 0, likely a timeout)",
)
def _store_wait_timeout(m, rec, state):
    if rec.origin.rank is None and rec.origin.local_rank is None:
        return None  # not a worker's wait
    if m.group("ms") is None:
        return []  # the poll's warning: the timeout's own line follows
    if not first_time(state, ("store_wait",), rec.loc.line):
        return []
    return _error(rec, "collective_timeout", collective=Collective(timeout_ms=int(m.group("ms"))),
                  fields={"backend": "store", "store_wait": True})


# torch/distributed/distributed_c10d.py _store_based_barrier (torch 1.8+, after every new process group):
# each rank adds itself to a store counter and waits until world_size ranks have; then
#   RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for key:
#       store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)        (1.8 - 1.13)
#   DistStoreError: Timed out initializing process group in store based barrier on rank 3, for key:
#       store_based_barrier_key:1 (world_size=4, num_workers_joined=2, timeout=0:30:00 error=...)   (2.0+)
# The ranks that never joined are not named (only how many did). The `Waiting in store based barrier`
# lines before it are the wait itself, logged while it lasts, not a failure.
@rule(
    "store-based-barrier-timeout",
    ("in store based barrier on rank",),
    r"Timed out initializing process group in store based barrier on rank:? (?P<rank>\d+), for key: (?P<key>[^\s(]+) "
    r"\(world_size=(?P<world>\d+), (?:worker_count|num_workers_joined)=(?P<joined>\d+), timeout=(?P<timeout>[^)\s]+)",
)
def _store_barrier_timeout(m, rec, state):
    me = int(m.group("rank"))
    if not first_time(state, ("store_barrier", me, m.group("key")), rec.loc.line):
        return []
    return _error(rec, "collective_timeout", rank=_rank(rec, me, True),
                  fields={"backend": "store", "pg_rank": me, "store_key": m.group("key"),
                          "world_size": int(m.group("world")), "joined": int(m.group("joined")),
                          "phase": "process group creation"})


# The same barrier's progress line, logged every 10 s while a rank waits (torch 1.8 - 1.13 logging.info with
# worker_count=; 2.0+ logger.info with num_workers_joined=, some releases adding "error: ..." after it):
#   Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1
#       (world_size=4, worker_count=8, timeout=0:30:00)
# One such line is a normal start-up (the last ranks are still loading). It says the group will not form when
# more processes joined than the world has (two jobs on one MASTER_PORT, a stale run, a launcher process that
# joined too: the count can only grow) or when the same rank has waited three rounds (30 s and more) for the
# same key. Only the line that decides it makes an event; the ranks that never came are not named.
_BARRIER_WAIT_ROUNDS = 3


@rule(
    "store-based-barrier-wait",
    ("Waiting in store based barrier",),
    r"Waiting in store based barrier to initialize process ?group for rank: (?P<rank>\d+), key: (?P<key>[^\s(]+) "
    r"\(world_size=(?P<world>\d+), (?:worker_count|num_workers_joined)=(?P<joined>\d+), timeout=(?P<timeout>[^)\s]+)",
)
def _store_barrier_wait(m, rec, state):
    me, key = int(m.group("rank")), m.group("key")
    world, joined = int(m.group("world")), int(m.group("joined"))
    waits = state.setdefault("store_barrier_waits", {})
    if len(waits) > MAX_REMEMBERED:
        waits.clear()
    n = waits[(me, key)] = waits.get((me, key), 0) + 1
    over = joined > world
    if not (over or n >= _BARRIER_WAIT_ROUNDS) or not first_time(state, ("store_barrier_wait", key), rec.loc.line):
        return []
    return _error(rec, "collective_timeout", rank=_rank(rec, me, True),
                  fields={"backend": "store", "pg_rank": me, "store_key": key, "world_size": world, "joined": joined,
                          "phase": "process group creation", "stalled": True, "rounds": n,
                          "reason": (f"{joined} processes joined a group of {world}" if over
                                     else f"{joined} of {world} ranks joined after {n} rounds of waiting")})


# ProcessGroupNCCL.cpp broadcastUniqueNCCLID (torch 2.0+; "retreiving" sic in 2.0/2.1, "NcclUniqueId" in
# vendor forks): every rank but the group's rank 0 reads rank 0's ncclUniqueId from the store:
#   c10::str("[", rank_, "] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d
#   key-value store by key '", storeKey, "', but store->get('", storeKey, "') got error: ") + e.what()
#   [+ ". This may indicate a possible application crash on rank 0 or a network set up issue."]
# e.what() says why: `Socket Timeout`, `wait timeout after 1800000ms, keys: /default_pg/0//cuda//0` (rank 0
# never got to create its communicator: busy, hung or crashed) or `Connection reset by peer` / `Failed to
# recv, got 0 bytes. Connection was likely closed.` (the store's host went away). A terminal may wrap the
# message, so the error may come on the next line of the same stream.
_NCCL_ID_ERR = LazyPattern(r"got error: (?P<err>.*)")
_STORE_LOST = LazyPattern(r"Connection reset|Connection was likely closed|Connection closed|Broken pipe|Failed to recv")


def _nccl_id_fill(ev: ErrorEvent, err: Optional[str]) -> ErrorEvent:
    err = err.strip() if err else None
    lost = bool(err and _STORE_LOST.search(err))
    ev.error = "peer_connection_lost" if lost else "collective_timeout"
    default = err is None or "keys:" not in err or "default_pg" in err
    fields = dict(ev.fields or {}, store_error=err)
    if lost and ev.rank != 0:
        # the store is one TCPStore for every group (a PrefixStore per group over it), served by the job's rank 0
        # (init_method env:// or tcp://) or by the torchrun agent on rank 0's node: its connection reset / closed
        # under a waiting rank is that process going away first (torch's own words: "a possible application
        # crash on rank 0")
        fields["dead_peer_rank"] = 0
        why = err.split(". This may indicate")[0].rstrip(".")
        fields["dead_peer_why"] = (f"rank {ev.rank if ev.rank is not None else fields.get('pg_rank')}'s read of rank "
                                   f"0's ncclUniqueId from the c10d store failed ('{why}'): the store is served by rank "
                                   f"0's process (or the launcher on its node), which went away first")
    if err is not None and "default_pg" in err and not lost:
        # only a key of the default group says the root is the job's rank 0 (another group's [0] is
        # that group's first member; the older wording's key '0' does not say which group)
        fields["waited_for"] = fields.get("root")
    ev.fields = fields
    if not default:
        ev.rank = None
    return ev


@rule(
    "nccl-id-store",
    ("UniqueId from [",),
    r"\[(?P<me>\d+)\] is setting up NCCL communicator and retr(?:ie|ei)ving (?:nccl|Nccl)UniqueId from \[(?P<root>\d+)\]",
)
def _nccl_id_store(m, rec, state):
    me, root = int(m.group("me")), int(m.group("root"))
    if not first_time(state, ("nccl_id", me), rec.loc.line):
        return []
    ev = _error(rec, "collective_timeout", rank=_rank(rec, me, True),
                fields={"backend": "nccl", "pg_rank": me, "root": root, "phase": "communicator set-up"})
    err = _NCCL_ID_ERR.search(rec.text, m.end())
    if err is not None:
        return _nccl_id_fill(ev, err.group("err"))
    held = state.pop("pending", None)
    state["pending"] = _nccl_id_fill(ev, None)
    state["nccl_id_line"] = rec.loc.line
    return [held] if held is not None else []


@rule("nccl-id-store-error", ("got error: ",), r"store->get\('[^']*'\) got error: (?P<err>.*)")
def _nccl_id_store_error(m, rec, state):
    held = state.get("pending")
    line = state.get("nccl_id_line")
    if held is None or line is None or rec.loc.line - line > 2:
        return None
    state.pop("pending")
    state.pop("nccl_id_line")
    cont = rec.text.strip()
    glue = "" if held.message[-1:].isalnum() and cont[:1].isalnum() else " "  # a terminal's wrap splits words
    held.message = f"{held.message}{glue}{cont}"
    return [_nccl_id_fill(held, m.group("err"))]


# The same message's tail on a line of its own: e.what() of a store error can carry the C++ stack
# (`Exception raised from recvBytes at ...`, `frame #0: ...`, one line each), so broadcastUniqueNCCLID's
# suffix `. This may indicate a possible application crash on rank 0 or a network set up issue.` comes after
# the frames, alone. With the head in view (the rule above) it is that error's end; without it (an excerpt,
# or a log cut, that starts inside the stack) it is the only line that says this rank's read of the group's
# ncclUniqueId from the store failed. Why it failed (a time-out, the store's host gone) was in the head.
_NCCL_ID_TAIL_WINDOW = 300  # lines: the stack between the head and the tail is some 60 frames


@rule("nccl-id-store-tail", ("application crash on rank",),
      r"\. This may indicate a possible application crash on rank (?P<root>\d+) or a network set up issue\.?\s*$",
      match_start=True)
def _nccl_id_store_tail(m, rec, state):
    seen = state.get("seen") or {}
    line = rec.loc.line
    if any(k[:1] == ("nccl_id",) and 0 <= line - v <= _NCCL_ID_TAIL_WINDOW for k, v in seen.items()):
        return []  # the head's event already reports it
    if not first_time(state, ("nccl_id_tail",), line):
        return []
    return _error(rec, "collective_timeout", rank=None,
                  fields={"backend": "nccl", "root": int(m.group("root")), "phase": "communicator set-up",
                          "store_error": None})


# --- desync ----------------------------------------------------------------------------------

def _ranks(s: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", s)]


@rule("desync-timeout-at", ("Timeout at collective:",), r"- \[(?P<rank>\d+)\] Timeout at collective: (?P<op>[^,]+), #(?P<seq>\d+)")
def _desync_at(m, rec, state):
    r = int(m.group("rank"))
    return _error(
        rec, "collective_desync", rank=_rank(rec, r, True),
        collective=Collective(op=m.group("op").strip(), seq=int(m.group("seq"))),
        fields={"pg_rank": r, "state": "timed_out"},
    )


@rule(
    "desync-missing",
    ("are the lagging ranks",),
    r"ranks \[(?P<ranks>[\d, ]*)\] are the lagging ranks that caused this timeout",
)
def _desync_missing(m, rec, state):
    return _error(rec, "collective_desync", fields={"lagging_ranks": _ranks(m.group("ranks")), "state": "never_joined"})


@rule(
    "desync-lagging",
    ("joined but didn't finish", "but didn't join collective", "joined but do not finish", "but didnt join collective"),
    r"\[(?P<ranks>[\d, ]*)\] (?:(?P<started>joined but (?:didn't|do not) finish collective (?:#|seq: ))(?P<seq>\d+)"
    r"|finished collective (?:#|seq: )\d+, but didn'?t join collective (?:#|seq: )(?P<next>\d+))",
)
def _desync_lagging(m, rec, state):
    started = m.group("started") is not None
    return _error(
        rec, "collective_desync",
        collective=Collective(seq=int(m.group("seq") if started else m.group("next"))),
        fields={"lagging_ranks": _ranks(m.group("ranks")),
                "state": "joined_not_finished" if started else "not_joined_next"},
    )


@rule(
    "collective-mismatch",
    ("Detected mismatch between collectives", "is running inconsistent collective"),
    r"(?:Detected mismatch between collectives on ranks\. )?Rank (?P<me>\d+) is running (?:inconsistent )?collective: "
    r"(?P<mine>CollectiveFingerPrint\(.*?)(?:, but Rank (?P<other>\d+) is running collective: (?P<theirs>CollectiveFingerPrint\(.*))?$",
)
def _mismatch(m, rec, state):
    me = int(m.group("me"))
    other = to_int(m.group("other"))
    mine = re.search(r"OpType=(\w+)", m.group("mine"))
    seq = re.search(r"SequenceNumber=(\d+)", m.group("mine"))
    theirs = re.search(r"OpType=(\w+)", m.group("theirs") or "")
    return _error(
        rec, "collective_desync", rank=_rank(rec, me, True),
        collective=Collective(op=mine.group(1) if mine else None, seq=int(seq.group(1)) if seq else None),
        fields={"pg_rank": me, "mismatch_ranks": [me] + ([other] if other is not None else []),
                "other_op": theirs.group(1) if theirs else None, "state": "mismatch"},
    )


# gloo/transport/tcp/pair.cc GLOO_ENFORCE_LE(op.preamble.length, op.nbytes), printed by gloo's enforce as
# `[enforce fail at <file>:<line>] op.preamble.length <= op.nbytes. <got> vs <want>`; gloo since pytorch/gloo#456
# (2025) appends ". Received data size doesn't match expected size. Is there a distributed collective mismatch
# in your code?", the releases before print the bare check (PrimeIntellect-ai/prime-diloco#68).
@rule(
    "gloo-size-mismatch",
    ("op.preamble.length <= op.nbytes",),
    r"op\.preamble\.length <= op\.nbytes\. (?P<got>\d+) vs (?P<want>\d+)(?:\.|\s*$)",
)
def _gloo_size_mismatch(m, rec, state):
    """gloo's receive-side check (gloo/transport/tcp/pair.cc GLOO_ENFORCE_LE): a peer sent more bytes than
    this rank's collective expects, so the two ran different collectives or shapes. The rank that
    prints it is one side of the mismatch, not necessarily the one whose code path differs."""
    return _error(
        rec, "collective_desync",
        fields={"backend": "gloo", "state": "size_mismatch",
                "received_bytes": int(m.group("got")), "expected_bytes": int(m.group("want"))},
    )


# --- NCCL errors -----------------------------------------------------------------------------

_REASON_CODE = [
    ("unhandled cuda error", "ncclUnhandledCudaError"),
    ("unhandled system error", "ncclSystemError"),
    ("internal error", "ncclInternalError"),
    ("invalid argument", "ncclInvalidArgument"),
    ("invalid usage", "ncclInvalidUsage"),
    ("remote process exited", "ncclRemoteError"),
]
_KNOWN_REASON = "|".join(re.escape(r) for r, _ in _REASON_CODE)


@rule(
    "nccl-error",
    ("NCCL error",),
    r"NCCL error(?: in:? (?P<where>[^,\s]+:\d+),\s*|:\s*(?=" + _KNOWN_REASON + r"))(?P<reason>[^,\s](?:[^,]*?[^,\s])?)"
    r"(?:,\s*NCCL version (?P<ver>[\w.\-+]+))?\s*$",
)
def _nccl_error(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    reason = m.group("reason").strip()
    code = next((c for r, c in _REASON_CODE if reason.startswith(r)), None)
    state["last_nccl_error"] = rec.loc.line
    work = re.search(r"WorkNCCL\((?P<w>.*?)\) raised the following async exception", rec.text)
    coll = None
    if work:
        kv = _work_fields(work.group("w"))
        coll = Collective(seq=to_int(kv.get("SeqNum")), op=kv.get("OpType"), timeout_ms=to_int(kv.get("Timeout(ms)")))
    pg, pg_rank, default = _pg(rec.text)
    if not first_time(state, ("nccl_error", pg, reason, coll.seq if coll else None), rec.loc.line):
        return []
    return _error(
        rec, "nccl_error", collective=coll,
        fields={"reason": reason, "code": code, "where": m.group("where"), "nccl_version": m.group("ver")},
    )


# NVIDIA/nccl-tests src/common.h NCCLCHECK, the tests' own report of a failed NCCL call (printed by every
# process that saw it, then ` .. <host> pid N: Test failure common.cu:L` per frame on the way up):
#   printf("%s: Test NCCL failure %s:%d '%s / %s'\n", hostname, __FILE__, __LINE__,
#          ncclGetErrorString(res), ncclGetLastError(NULL))            (NCCL >= 2.13; last error may be empty)
#   printf("%s: Test NCCL failure %s:%d '%s'\n", ...)                  (older NCCL, tests since 2019)
#   printf("NCCL failure %s:%d '%s'\n", ...)                           (tests before 2019, no host name)
@rule(
    "nccl-tests-failure",
    ("Test NCCL failure", "NCCL failure "),
    r"^(?:(?P<host>\S+): Test )?NCCL failure (?P<where>[\w./-]+:\d+) '(?P<body>[^']*)'",
    match_start=True,
)
def _nccl_tests_failure(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    reason, _, last = m.group("body").partition(" / ")
    reason = reason.strip()
    code = next((c for r, c in _REASON_CODE if reason.startswith(r)), None)
    if not first_time(state, ("nccl_tests", reason), rec.loc.line):
        return []
    return _error(
        rec, "nccl_error",
        fields={"reason": reason, "code": code, "where": m.group("where"), "host": m.group("host"),
                "last_error": last.strip() or None, "source": "nccl-tests"},
    )


# A program's own check of an NCCL call, which throws (or prints) `"NCCL failure: " << ncclGetErrorString(res)`
# with its own tail; a C++ exception reaches the log as std::terminate's `what():  ...` line (then the
# process aborts: Open MPI's `Signal: Aborted (6)` report under mpirun):
#   baidu-research/DeepBench nccl_mpi_all_reduce.cu: NCCL failure: unhandled cuda error in nccl_mpi_all_reduce.cu at line: 86 rank: 0
#   dmlc/xgboost src/common/device_helpers.cuh ThrowOnNcclError: NCCL failure: unhandled cuda error. /xgboost/src/...cu(123)
#     (XGBoost 0.9-1.7: `ss << "NCCL failure :" << ncclGetErrorString(code) << " " << file << "(" << line << ")"`:
#     NCCL failure :remote process exited or there was a network error ../src/collective/nccl_device_communicator.cuh(54),
#     raised as XGBoostError, under Dask inside the worker's `Exception: "XGBoostError('...` relay)
#   bytedance/flux NCCL_CHECK: NCCL failure: unhandled system error / <last error> at : ncclCommInitRank(...)
#   NCCL failure: invalid usage                                        (std::runtime_error(std::string("NCCL failure: ") + ...))
# Only ncclGetErrorString's own wordings are read, so a sentence that merely says "NCCL failure:" is left alone.
@rule(
    "nccl-failure-check",
    ("NCCL failure: ", "NCCL Failure: ", "NCCL failure :"),
    r"NCCL [Ff]ailure ?: ?(?P<reason>(?:" + _KNOWN_REASON + r")[^./\n]*?)(?=\s*(?:[./]|\bin \S+ at line|\bat :|\(run with|$))",
)
def _nccl_failure_check(m, rec, state):
    state["nccl_warned"] = rec.loc.line
    reason = m.group("reason").strip()
    code = next((c for r, c in _REASON_CODE if reason.startswith(r)), None)
    if not first_time(state, ("nccl_failure_check", reason), rec.loc.line):
        return []
    where = re.search(r"\bin (?P<f>\S+) at line: (?P<l>\d+)", rec.text)
    return _error(
        rec, "nccl_error",
        fields={"reason": reason, "code": code, "where": f"{where.group('f')}:{where.group('l')}" if where else None,
                "source": "program-check"},
    )


# TensorFlow's own check of an NCCL call (tensorflow/core/nccl/nccl_manager.cc NCCL_RETURN_IF_ERROR, TF 1.x - 2.x: the
# NcclAllReduce / NcclBroadcast kernels of MirroredStrategy and CollectiveAllReduce): `errors::Internal("NCCL: ",
# ncclGetErrorString(nccl_status), ". Set NCCL_DEBUG=WARN for detail.")`, printed `INTERNAL:  NCCL: unhandled system
# error. Set NCCL_DEBUG=WARN for detail.` (TF 2.x numbers each replica's copy `(5) INTERNAL: ...`); NCCL >= 2.12 puts
# ` (run with NCCL_DEBUG=INFO for details)` inside the string. One failure per reason, however many replicas repeat it.
@rule(
    "tf-nccl-status",
    ("Set NCCL_DEBUG=WARN for detail",),
    r"\bNCCL: (?P<reason>(?:" + _KNOWN_REASON + r")[^.()\n]{0,80}?)(?: \(run with NCCL_DEBUG=INFO for details\))?"
    r"\. Set NCCL_DEBUG=WARN for detail",
)
def _tf_nccl_status(m, rec, state):
    state["nccl_warned"] = rec.loc.line
    reason = m.group("reason").strip()
    code = next((c for r, c in _REASON_CODE if reason.startswith(r)), None)
    if not first_time(state, ("tf_nccl_status", reason), rec.loc.line):
        return []
    return _error(rec, "nccl_error", fields={"reason": reason, "code": code, "source": "tensorflow"})

# XLA's own check of an NCCL call (JAX / TensorFlow-XLA on GPUs: pmap / pjit collectives, the all-reduce thunks),
# openxla/xla xla/service/gpu/nccl_utils.cc ToStatus (tensorflow/compiler/xla/... before the move):
#   2021-2023: absl::StrFormat("%s:%d: NCCL operation %s failed: %s", file, line, expr, ncclGetErrorString(s))
#   2023+:     "%s:%d: NCCL operation %s failed: %s. Last NCCL warning(error) log entry (may be unrelated) '%s'."
#   (newer: "NCCL operation %s failed: %s. Last NCCL warning(error) log entry ..." without the file)
# raised as `INTERNAL: ...` (`Internal: ...` in 2021), under JAX's `Intercepted XLA runtime error:` / `Execution of
# replica N failed: ...` records and its XlaRuntimeError, one line per replica; ROCm builds say `RCCL operation`.
# When XLA cannot load libnccl at all, its stub answers `Unable to load NCCL library. Multi-GPU collectives will not
# work.` in place of the reason: no NCCL in this installation (a missing nvidia-nccl wheel / library path), which
# is dist-backend-unavailable, not a failure of NCCL itself. A replica is a device of this process, not a rank.
@rule(
    "xla-nccl-status",
    ("NCCL operation ", "RCCL operation "),
    r"\b[NR]CCL operation (?P<op>nccl\w{1,40})(?:\([^()\n]{0,300}\))? failed: (?P<reason>(?:" + _KNOWN_REASON
    + r")[^.;:'\n]{0,80}?|(?P<noload>Unable to load NCCL library))(?=[.;:]|\s|$)",
)
def _xla_nccl_status(m, rec, state):
    state["nccl_warned"] = rec.loc.line
    reason = m.group("reason").strip()
    if not first_time(state, ("xla_nccl_status", m.group("op"), reason), rec.loc.line):
        return []
    msg = rec.text[m.start():m.end()].strip()
    if m.group("noload"):
        return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="dist_backend_unavailable", message=msg, fields={
            "backend": "NCCL", "build": "XLA (jaxlib / TensorFlow)", "op": m.group("op"),
            "detail": "XLA could not load libnccl (not installed, or not on the library path), so collectives cannot run"})
    code = next((c for r, c in _REASON_CODE if reason.startswith(r)), None)
    last = re.search(r"Last NCCL warning\(error\) log entry \(may be unrelated\) '(?P<w>[^'\n]{1,300})'", rec.text)
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="nccl_error", message=msg,
                      fields={"reason": f"{m.group('op')} failed: {reason}", "code": code, "source": "xla",
                              "last_error": last.group("w") if last else None})

@rule(
    "nccl-error-detail",
    ("ncclRemoteError", "ncclSystemError", "ncclInternalError", "ncclUnhandledCudaError", "ncclInvalidUsage", "ncclInvalidArgument"),
    r"^(?P<code>nccl(?:RemoteError|SystemError|InternalError|UnhandledCudaError|InvalidUsage|InvalidArgument)): (?P<detail>.+)",
    match_start=True,
)
def _nccl_error_detail(m, rec, state):
    last = state.get("last_nccl_error")
    if last is not None and 0 <= rec.loc.line - last <= 5:
        return []  # the detail line of the `NCCL error in:` just reported
    if not first_time(state, ("nccl_error_detail", m.group("code")), rec.loc.line):
        return []
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework=FW, error="nccl_error", message=rec.text.strip(),
        fields={"code": m.group("code"), "reason": m.group("detail").strip()},
    )


@rule(
    "nccl-net-ib",
    ("Got completion from peer",),
    r"NET/IB\w*(?:/GIN)?\s*:\s*Got completion from peer (?P<peer>\S+) with "
    r"(?:error (?P<err>\d+)|status=(?:(?P<sym>[A-Z_]+)\()?(?P<st>\d+)\)?)",
)
def _net_ib(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    peer = m.group("peer")
    host, port = peer, None
    pm = re.match(r"^(?P<h>.+)<(?P<p>\d+)>$", peer)
    if pm:
        host, port = pm.group("h"), int(pm.group("p"))
    code = int(m.group("err") or m.group("st"))
    if not first_time(state, ("net_ib", peer, code), rec.loc.line):
        return []
    return _error(
        rec, "nccl_network",
        fields={"peer": peer, "peer_host": host, "peer_port": port, "code": code, "status_name": m.group("sym")},
    )


# The IB transport's async-event thread (src/transport/net_ib.cc ncclIbAsyncThreadMain): every event but
# "communication established" is logged, `NET/IB : Got async event : %s` (2.19+: `NET/IB : %s:%d Got async
# event : %s`, the device and port first), the text being rdma-core's ibv_event_type_str. Only the
# events that mean a broken port, device or queue are failures; port active, LID / GID table / SM
# change and client reregistration are the fabric reconfiguring itself.
_IB_ASYNC_FATAL = ("port error", "local catastrophic error", "CQ error", "local work queue catastrophic error",
                   "invalid request local work queue error", "local access violation work queue error",
                   "path migration error", "SRQ catastrophic error", "WQ fatal error")


@rule(
    "nccl-ib-async",
    ("Got async event",),
    r"NET/IB\w*\s*:\s*(?:(?P<dev>[\w.\-]+):(?P<port>\d+) )?Got async event : (?P<ev>[A-Za-z][A-Za-z ]{0,80})",
)
def _ib_async(m, rec, state):
    event = m.group("ev").strip()
    if event not in _IB_ASYNC_FATAL:
        return []
    if not first_time(state, ("ib_async", m.group("dev"), event), rec.loc.line):
        return []
    dev = f"{m.group('dev')}:{m.group('port')}" if m.group("dev") else None
    return _error(rec, "nccl_network", fields={"async_event": event, "device": dev, "code": None, "peer": None})


# UCX (the transport under Open MPI / Horovod / UCC and NCCL's UCX plugin) reports the same IB work-request
# failure in its own words (src/uct/ib/mlx5/ib_mlx5_log.c, src/uct/ib/rc/verbs/rc_verbs_iface.c, dc_verbs.c):
#   ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)
#   rc_verbs_iface.c:63   FATAL: send completion with error: transport retry counter exceeded
#   dc_verbs.c:633  UCX  ERROR Send completion with error on qp 0x10e55: transport retry counter exceeded syndrome 0x81
# The IB transport's sanity check of an RDMA write against the receiver's posted buffer (src/transport/net_ib.cc
# ncclIbIsend, 2.3 - 2.19; the comment above it: "Sanity checks to catch user collective call count/size
# mismatches plus any potential programming errors"); the send fails with ncclInvalidUsage:
#   NET/IB : collective mismatch error local size %d remote %d addr %lx rkey %x seq %x/%x            (2.3 - 2.9)
#   NET/IB : peer %s collective mismatch error local size %d remote %d addr %lx rkey %x seq %x/%x   (2.10 - 2.11)
#   NET/IB : req %d/%d tag %x peer %s collective mismatch error, local size %d remote size %d        (2.12 - 2.19)
# In the threads it comes from the path between two nodes far more often than from the program (NICs forced to
# relaxed PCI write ordering, fixed by NCCL_IB_DISABLE=1 or the NIC setting: NVIDIA/nccl#531, #615, #969), so
# it is read as an IB transport failure with the peer named; the signature says to check the sizes too.
@rule(
    "nccl-net-ib-size-check",
    ("collective mismatch error",),
    r"NET/IB\w*\s*:\s*(?:req (?P<req>\d+)/\d+ tag \w+ )?(?:peer (?P<peer>\S+) )?collective mismatch error,? "
    r"local size (?P<local>\d+) remote(?: size)? (?P<remote>\d+)",
)
def _net_ib_size_check(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    peer = m.group("peer")
    if not first_time(state, ("net_ib_size", peer), rec.loc.line):
        return []
    host = re.sub(r"<\d+>$", "", peer) if peer else None
    return _error(rec, "nccl_network", fields={
        "peer": peer, "peer_host": host, "code": None, "reason": "collective mismatch error",
        "local_size": int(m.group("local")), "remote_size": int(m.group("remote")), "size_check": True})


# The socket transport's receive-side check (src/transport/net_socket.cc, every 2.x): the peer sends more than this
# rank posted, and the receive fails (ncclInternalError; ncclInvalidUsage since 2.12, NVIDIA/nccl#605):
#   NET/Socket : message truncated : receiving %d bytes instead of %d                      (2.4 - 2.9)
#   NET/Socket : peer %s message truncated : receiving %d bytes instead of %d              (2.10 - 2.11)
#   ... instead of %d. If you believe your socket network is in a healthy state, there may be a mismatch in
#   collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between ranks      (2.12+)
# NCCL's own reading (and the maintainers', NVIDIA/nccl#626): the ranks' collectives or protocol settings differ.
# A paste may wrap the WARN after `message truncated :`; its head alone is the check's.
@rule(
    "nccl-socket-truncated",
    ("message truncated",),
    r"NET/Socket : (?:peer (?P<peer>\S+) )?message truncated\b(?: : receiving (?P<got>\d+) bytes instead of (?P<want>\d+))?",
)
def _socket_truncated(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    if not first_time(state, ("socket_truncated", m.group("peer")), rec.loc.line):
        return []
    return _error(rec, "collective_desync", fields={
        "backend": "nccl", "state": "size_mismatch", "transport": "socket", "peer": m.group("peer"),
        "received_bytes": to_int(m.group("got")), "expected_bytes": to_int(m.group("want"))})


# NCCL 2.4.2 - 2.7.6 src/init.cc ncclCommGetAsyncError, from the kernels' own check that all ranks run the same
# collective (comm->fatalDevError):
#   WARN("Mismatched collective detected, please check your collective calls at and around rank %d. You can use
#         NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs", comm->rank)   -> ncclInvalidUsage
#   WARN("Your program may be hanging, this may be caused by a collective mismatch around rank %d. Please check your
#         collective calls at and around this rank. ...", comm->rank)                          (suspected: no error)
# comm->rank is the printing process's own rank in that communicator: where the mismatch was seen, not the rank
# whose code path differs, so it is kept as fields['pg_rank'] and never claimed as the initiating rank.
@rule(
    "nccl-mismatched-collective",
    ("Mismatched collective detected", "may be caused by a collective mismatch around rank"),
    r"WARN (?:(?P<asserted>Mismatched collective detected, please check your collective calls at and around rank)"
    r"|Your program may be hanging, this may be caused by a collective mismatch around rank) (?P<rank>\d+)",
)
def _nccl_mismatched(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    if not first_time(state, ("nccl_mismatch",), rec.loc.line):
        return []
    return _error(rec, "collective_desync", fields={
        "pg_rank": int(m.group("rank")), "state": "nccl_device_check", "backend": "nccl",
        "suspected": m.group("asserted") is None})


@rule(
    "ucx-retry-exceeded",
    ("Transport retry count exceeded", "transport retry counter exceeded"),
    r"Transport retry count exceeded on (?P<dev>\S+)|completion with error(?: on qp \S+)?: transport retry counter exceeded",
)
def _ucx_retry(m, rec, state):
    if not first_time(state, ("ucx_retry", m.group("dev")), rec.loc.line):
        return []
    return _error(rec, "nccl_network", fields={"device": m.group("dev"), "code": 12, "status_name": "IBV_WC_RETRY_EXC_ERR",
                                               "peer": None, "transport": "ucx"})


# aws-ofi-nccl cannot start at all: libfabric offers no usable provider (no EFA device in the container or
# pod, a libfabric older than the plugin was built for), so NCCL has no EFA network and falls back to
# NET/IB or TCP sockets, or the job fails. The plugin's templates across releases (src/nccl_ofi_net.c[pp],
# src/nccl_ofi_sendrecv.cpp, src/nccl_ofi_rdma.cpp):
#   Could not find any optimal provider                    (1.0; "... supporting GPUDirect RDMA" 1.1+)
#   Couldn't find any optimal provider                     (1.1 - 1.7, find_ofi_provider)
#   OFI fi_getinfo() call failed: No data available        (1.8+, sendrecv / rdma protocol init)
#   Failed to initialize sendrecv protocol / rdma protocol (1.7+; 1.9+ "Failed to initialize %s protocol")
#   Unable to find a protocol that worked.  Failing initialization.
#   aws-ofi-nccl initialization failed                     (1.4+, PACKAGE_NAME " initialization failed")
# and libfabric's own core warning when the EFA provider lists nothing (FI_LOG_LEVEL=warn):
#   libfabric:85:1747438790::core:core:fi_getinfo_():1392<warn> fi_getinfo: provider efa output empty list
@rule(
    "nccl-ofi-init",
    ("NET/OFI", "output empty list"),
    r"(?:(?:NCCL WARN|WARN: Function: \w+ Line: \d+:) NET/OFI (?P<msg>Could(?: not|n't) find any optimal provider.{0,80}"
    r"|OFI fi_getinfo\(\) call failed: .{0,120}|Failed to initialize \w+ protocol.{0,120}|Unable to find a protocol that worked"
    r"|aws-ofi-nccl initialization failed)|fi_getinfo: provider (?P<prov>efa) output empty list)",
)
def _ofi_init(m, rec, state):
    msg = (m.group("msg") or f"libfabric: provider {m.group('prov')} output empty list").strip()
    if not first_time(state, ("ofi_init",), rec.loc.line):
        return []
    return _error(rec, "nccl_net_plugin", fields={"reason": f"NET/OFI {msg}" if m.group("msg") else msg,
                                                  "plugin": "aws-ofi-nccl", "transport": "ofi"})


# aws-ofi-nccl, the libfabric (EFA) net plugin: NCCL_OFI_WARN (include/nccl_ofi_log.h) prefixes "NET/OFI "
# to its message; plugin 1.0 printed `WARN: Function: <fn> Line: <n>: NET/OFI ...` itself. The failures
# carry libfabric's return code: `Couldn't open AV. RC: -22, ERROR: Invalid argument`, `Couldn't create
# domain. RC: ...`, `Error posting RDMA write request. RC: ...`, and a failed transfer `Request 0x...
# completed with error. RC: 21. Error: 4 (...)` (older `Request completed with error. RC: 21. Error:
# unknown error`), `Remote write completed with error. RC: ...`.
@rule(
    "nccl-ofi",
    ("NET/OFI",),
    r"(?:NCCL WARN|WARN: Function: \w+ Line: \d+:) NET/OFI (?P<msg>.{0,400}?(?:completed with error|RC: -?\d+|Couldn't|Fatal:).{0,400})",
)
def _ofi(m, rec, state):
    msg = m.group("msg").strip()
    rc = re.search(r"RC: (-?\d+)", msg)
    transfer = "completed with error" in msg
    if not first_time(state, ("ofi", transfer, msg if not transfer else None), rec.loc.line):
        return []
    return _error(rec, "nccl_error", fields={"code": "ncclSystemError" if not transfer else "ncclRemoteError",
                                             "reason": f"NET/OFI {msg}", "transport": "ofi",
                                             "ofi_rc": int(rc.group(1)) if rc else None, "transfer_failed": transfer})


# NCCL's socket layer (src/include/socket.h <= 2.11, src/misc/socket.cc 2.12+; src/include/core.h / checks.h
# SYSCHECK for any syscall) gives up on a call and returns ncclSystemError after one of these WARNs:
#   Call to connect failed : Connection timed out         SYSCHECK(..., "connect") (<= 2.11; the binary 2.2
#                                                          prints `include/socket.h:360 WARN` without the tag)
#   Net : Socket creation failed : Address family ...     (2.3 - 2.17; <= 2.2 without "Net : ")
#   ncclSocketInit: Socket creation failed : ...          (2.18+)
#   Connect to 10.0.0.2<4711> failed : No route to host   (2.7 - 2.11; 2.12 "Net : Connect to", 2.18+
#                                                          "socketStartConnect: Connect to"; refused / timed-out
#                                                          connects are retried before, so this one is final)
#   Net : connecting to address X with family N is neither AF_INET(2) nor AF_INET6(10)   (2.12; 2.18+
#                                                          "ncclSocketInit: connecting to address ...": no usable
#                                                          interface, e.g. NCCL_SOCKET_IFNAME naming none)
#   Bootstrap : no socket interface found                 (src/bootstrap.cc, 2.4 - 2.30: ncclInternalError,
#                                                          ncclInvalidUsage on the newest releases)
#   NET/Socket : No usable listening interface found      (bootstrap.cc with NCCL_COMM_ID: ncclSystemError)
#   NET/Socket : no interface found                       (transport/net_socket.cc, the last network to try)
#   (NET/IB : No IP interface found. is not one of them: NCCL goes on to the socket transport)
# Only a line with NCCL's WARN header counts (`NCCL WARN`, or `<file>.h|cc|cu:<line> WARN` of the old releases).
# The last three say that NCCL found no interface it may use at all (ncclFindInterfaces matched none: the
# NCCL_SOCKET_IFNAME given names no interface of this host, or the host has only lo / docker*): a set-up error
# of this process, `nccl_no_interface`, not a failed call. Torch (NCCL >= 2.13) prints the same WARN text again,
# without the header, as the `Last error:` of its DistBackendError (`ncclInternalError: Internal check
# failed.` / `Last error:` / `Bootstrap : no socket interface found`); that bare line counts as well.
_SOCK_WARN = LazyPattern(
    r"(?:NCCL WARN |\.(?:h|cc|cu):\d+ WARN )(?:(?:Net|ncclSocketInit|socketStartConnect) ?: )?"
    r"(?:Call to (?P<call>[a-z_]+) failed ?: (?P<cerr>.*)"
    r"|Socket creation failed : (?P<serr>.*)"
    r"|Connect to (?P<peer>\S+) failed : (?P<perr>.*)"
    r"|connecting to address (?P<addr>\S*) ?with family (?P<fam>\d+) is neither AF_INET"
    r"|(?P<noif>Bootstrap : no socket interface found|NET/Socket : No usable listening interface found"
    r"|NET/Socket : no interface found))")


@rule("nccl-socket-failed",
      ("WARN Call to ", "Socket creation failed", "failed : ", "is neither AF_INET", "no socket interface found",
       "No usable listening interface found", "NET/Socket : no interface found"),
      _SOCK_WARN.pattern)
def _nccl_socket_failed(m, rec, state):
    if m.group("call") is not None and m.group("call").startswith("ibv_"):
        return None  # nccl-ibv-failed's
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    call = m.group("call")
    if call in ("posix_fallocate", "fallocate", "ftruncate") and "No space left on device" in m.group("cerr"):
        # include/shm.h (2.4 - 2.11) sizing the SHM transport's segment: /dev/shm is full
        if not first_time(state, ("nccl_shm",), rec.loc.line):
            return []
        return _shm_full(rec, None)
    if call in ("shm_open", "open"):
        state["nccl_shm_open_failed"] = rec.loc.line
    if m.group("call") is not None:
        reason = f"call to {m.group('call')} failed: {m.group('cerr').strip()}"
    elif m.group("serr") is not None:
        reason = f"socket creation failed: {m.group('serr').strip()}"
    elif m.group("perr") is not None:
        reason = f"connect to {m.group('peer')} failed: {m.group('perr').strip()}"
    elif m.group("noif") is not None:
        reason = f"no usable network interface ({m.group('noif')})"
    else:
        reason = f"no usable network interface (address family {m.group('fam')})"
    if m.group("noif") is not None:
        return _no_interface(rec, state, m.group("noif"))
    if not first_time(state, ("nccl_socket", reason), rec.loc.line):
        return []
    internal = m.group("fam") is not None
    fields = {"code": "ncclInternalError" if internal else "ncclSystemError", "reason": reason, "transport": "socket"}
    if m.group("peer") is not None:
        fields["peer"] = m.group("peer")
    return _error(rec, "nccl_error", fields=fields)


_NO_INTERFACE = ("Bootstrap : no socket interface found", "NET/Socket : No usable listening interface found",
                 "NET/Socket : no interface found")


def _no_interface(rec, state, text: str):
    """One event per process for NCCL's "no interface" WARN and torch's `Last error:` echo of it."""
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    if not first_time(state, ("nccl_no_interface",), rec.loc.line):
        return []
    listening = text.startswith("NET/Socket : No usable listening")
    return _error(rec, "nccl_no_interface", fields={
        "code": "ncclSystemError" if listening else "ncclInternalError", "reason": text, "transport": "socket",
        "phase": "bootstrap" if not text.endswith("no interface found") else "net_socket",
        "comm_id": listening})


@rule("nccl-no-interface-last-error", _NO_INTERFACE,
      r"^(?P<noif>" + "|".join(re.escape(t) for t in _NO_INTERFACE) + r")\.?\s*$", match_start=True)
def _no_interface_last_error(m, rec, state):
    # torch's DistBackendError repeats ncclGetLastError() on a line of its own after `Last error:`
    return _no_interface(rec, state, m.group("noif"))


# NVIDIA/nccl src/proxy.cc proxyServiceInitOp / proxyProgressAsync (2.12+): the proxy thread of a rank could not
# set up or progress a connection for a peer and tells the caller, which fails the communicator:
#   WARN("[Proxy Service %d] Failed to execute operation %s from rank %d, retcode %d", ...)
@rule("nccl-proxy-failed", ("Failed to execute operation",),
      r"\[Proxy Service (?P<svc>\d+)\] Failed to execute operation (?P<op>\w+) from rank (?P<from>\d+), retcode (?P<code>\d+)")
def _nccl_proxy_failed(m, rec, state):
    state["nccl_warned"] = rec.loc.line
    code = int(m.group("code"))
    name, reason = _RESULT.get(code, (None, f"NCCL error {code}"))
    if not first_time(state, ("nccl_proxy", m.group("op"), code), rec.loc.line):
        return []
    return _error(rec, "nccl_error", fields={"code": name, "reason": f"proxy {m.group('op')} failed: {reason}",
                                            "result": code, "proxy_op": m.group("op")})


_IBV_FATAL = ("ibv_reg_mr", "ibv_reg_mr_iova2", "ibv_reg_dmabuf_mr", "ibv_create_qp", "ibv_modify_qp", "ibv_create_cq",
              "ibv_alloc_pd", "ibv_create_comp_channel")


@rule("nccl-ibv-failed", ("NCCL WARN Call to ibv_",),
      r"NCCL WARN Call to (?P<call>ibv_\w+) failed(?: with error (?P<err>.*?))?\s*$")
def _ibv_failed(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    call = m.group("call")
    if call not in _IBV_FATAL:
        return None
    if not first_time(state, ("ibv", call), rec.loc.line):
        return []
    err = (m.group("err") or "").strip()
    return _error(rec, "nccl_error", fields={"code": "ncclSystemError", "reason": f"{call} failed" + (f": {err}" if err else ""),
                                            "ibv_call": call, "transport": "ib"})


@rule("nccl-cuda-failure", ("NCCL WARN Cuda failure",), r"NCCL WARN Cuda failure (?:(?P<num>\d+) )?'(?P<msg>[^']*)'")
def _nccl_cuda_failure(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    msg = m.group("msg")
    if "nvls.cc:" in rec.text[: m.start()]:
        # CUCHECK inside src/transport/nvls.cc: a cuMulticast* call of the NVLS set-up failed (see below)
        return _nvls_failed(rec, state, msg, int(m.group("num")) if m.group("num") else None)
    if not first_time(state, ("nccl_cuda", msg), rec.loc.line):
        return []
    oom = msg == "out of memory"
    # a device allocation of NCCL's own (its buffers, the proxy's FIFOs) that the full GPU refused: the OOM itself
    return _error(rec, "cuda_oom" if oom else "nccl_error", fields={
        "code": "ncclUnhandledCudaError", "reason": f"Cuda failure '{msg}'", "cuda_error": msg, "out_of_memory": oom,
        **({"source": "nccl"} if oom else {})})


# NVIDIA/nccl src/transport/nvls.cc, NVLink SHARP (NVLS, 2.17+ on NVSwitch systems: H100 / H200 / B200 SXM): the
# communicator's set-up creates multicast objects and binds memory to them (cuMulticastCreate / AddDevice / BindMem).
# When the NVSwitch fabric cannot (Fabric Manager down or restarted without a GPU reset, no IMEX channel device in
# the container, multicast slots used up) the CUDA call fails and init ends with ncclUnhandledCudaError:
#   transport/nvls.cc:254 NCCL WARN Cuda failure 401 'the operation cannot be performed in the present state'
#   transport/nvls.cc:245 NCCL WARN Cuda failure 'initialization error'           (CUCHECK, <= 2.18 without the number)
#   transport/nvls.cc:287 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error
#       401 '...'. / This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches. /
#       Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future.   (2.27+; 2.29: `... at MC
#       group %llx offset %zu : CUDA error ...`; torch repeats it after `Last error:`)
# "NVLS multicast support is not available on dev N" is INFO: NCCL then simply does not use NVLS.
def _nvls_failed(rec, state, msg: Optional[str], code: Optional[int]) -> list:
    state["nccl_warned"] = rec.loc.line
    if not first_time(state, ("nccl_nvls",), rec.loc.line):
        return []
    what = (f"CUDA error {code} '{msg}'" if code is not None and msg else f"CUDA error '{msg}'" if msg
            else "its CUDA multicast call failed")
    return [_error(rec, "nccl_nvls_failed", fields={
        "code": "ncclUnhandledCudaError", "reason": what,
        "cuda_error": msg, "cuda_code": code})]


@rule("nccl-nvls-bind", ("NVLink SHARP (NVLS) Multicast memory",),
      r"Failed to \w+ NVLink SHARP \(NVLS\) Multicast memory(?:.*?: CUDA error (?P<code>\d+)(?: '(?P<msg>[^']*)')?)?")
def _nccl_nvls_bind(m, rec, state):
    return _nvls_failed(rec, state, m.group("msg"), int(m.group("code")) if m.group("code") else None)


# NVIDIA/nccl src/init.cc initTransportsRank (every release 2.x), after the first allgather of peer info:
#   WARN("Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx", rank, i, busId)
#   (2.x: `init.cc:904 NCCL WARN Duplicate GPU ...`; the old releases' `init.cc:497 WARN Duplicate GPU ...`)
# and ncclCommInitRank returns ncclInvalidUsage: two processes of one communicator share a GPU. Torch (NCCL >=
# 2.13) repeats the text without the header as the `Last error:` of its DistBackendError (`invalid usage`,
# `ncclInvalidUsage: This usually reflects invalid usage of NCCL library.`, `Last error:`, `Duplicate GPU
# detected : rank 1 and rank 0 both on CUDA device 10`); that bare line counts as well. One event per process.
@rule("nccl-duplicate-gpu", ("Duplicate GPU detected : rank",),
      r"Duplicate GPU detected : rank (?P<a>\d+) and rank (?P<b>\d+) both on CUDA device (?P<dev>\w+)")
def _nccl_duplicate_gpu(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    if not first_time(state, ("nccl_duplicate_gpu",), rec.loc.line):
        return []
    a, b = int(m.group("a")), int(m.group("b"))
    return _error(rec, "nccl_duplicate_gpu", fields={
        "code": "ncclInvalidUsage", "reason": f"Duplicate GPU detected: ranks {a} and {b} on CUDA device {m.group('dev')}",
        "duplicate_ranks": sorted((a, b)), "cuda_device": m.group("dev")})


# torch/csrc/distributed/c10d/socket.cpp SocketConnectOp, the client side of the c10d store (torch 1.11+):
# run(), once every address of the store failed (then it throws SocketError / DistNetworkError, the same text
# followed by the recorded errors); torch 1.13-2.x:
#   [E socket.cpp:610] [c10d] The client socket has failed to connect to any network address of (05, 40323).
# throwTimeoutError(), when the connect deadline passed while the server was not listening yet (C10D_ERROR, then
# TimeoutError / DistNetworkError with the same text; the timeout as fmt prints a chrono duration):
#   [E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to connect to (127.0.0.1, 48391).
#   TimeoutError: The client socket has timed out after 600000ms while trying to connect to (10.0.0.1, 29500).
#   [E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to 192.0.0.1:1234
#                                                           (torch 2.0, pytorch/pytorch#107021: host:port, no parentheses)
# The `[W socket.cpp:N] ... failed to connect to [host]:port (errno: 110 ...)` lines before it are the retries.
@rule("c10d-connect-failed", ("failed to connect to any network address of", "while trying to connect to "),
      r"The client socket has (?:failed to connect to any network address of|timed out after (?P<after>\d+(?:ms|s|min)) "
      r"while trying to connect to) (?:\((?P<host>[^,()]*), (?P<port>\d+)\)|(?P<hp>\[?[\w.:\-]+?\]?):(?P<hport>\d+)\b)")
def _c10d_connect_failed(m, rec, state):
    host, port = (m.group("host"), m.group("port")) if m.group("port") else (m.group("hp"), m.group("hport"))
    peer = f"{host.strip()}:{port}"
    if not first_time(state, ("c10d_connect", peer), rec.loc.line):
        return []
    fields = {"backend": "c10d-store", "peer": peer,
              "reason": "connect_timeout" if m.group("after") else "connect_failed"}
    if m.group("after"):
        fields["connect_timeout"] = m.group("after")
    return _error(rec, "peer_connection_lost", fields=fields)


# torch/csrc/distributed/c10d/Utils.hpp SYSCHECK (every release to date): a store socket read that hit its receive
# timeout (SO_RCVTIMEO, the store's timeout) raises TORCH_CHECK(false, "Socket Timeout"), printed as
#   RuntimeError: Socket Timeout                       (torch <= 1.13)
#   torch.distributed.DistStoreError: Socket Timeout   (torch 2.x)
# followed by `Exception raised from recvBytes at ../torch/csrc/distributed/c10d/Utils.hpp:604`. The store held the
# get / wait because the key was never set: the process waited the whole timeout for another process (rank 0's
# NCCL id or barrier key, another node's agent in torchelastic's role-info exchange) that never got there. The
# message inside "store->get('0') got error: Socket Timeout" is nccl-id-store's.
@rule("store-socket-timeout", ("Socket Timeout",), r"^(?:[\w]+\.)*(?:RuntimeError|DistStoreError|DistError): Socket Timeout\s*$")
def _store_socket_timeout(m, rec, state):
    if not first_time(state, ("store_socket_timeout",), rec.loc.line):
        return []
    return _error(rec, "collective_timeout", fields={"backend": "store", "store_wait": True, "store_error": "Socket Timeout"})


# torch/csrc/distributed/c10d/socket.cpp SocketListenOp, the server side of the c10d store (rank 0's
# TCPStore, torchrun's rendezvous store; torch 1.11+): every address tried records its failure with C10D_WARNING
#   [W socket.cpp:401] [c10d] The server socket has failed to listen on [::]:47531 (errno: 98 - Address already in use).
#   [W socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:25641 (errno: 98 - Address already in use).
# then C10D_ERROR "The server socket has failed to listen on any local network address." and SocketError /
# DistNetworkError (RuntimeError before torch 2.0) with the recorded errors joined after it:
#   RuntimeError: The server socket has failed to listen on any local network address. The server socket has
#   failed to bind to [::]:44796 (errno: 98 - Address already in use). The server socket has failed to bind to ...
# torch/csrc/distributed/c10d/TCPStoreLibUvBackend.cpp (the libuv store, torch 2.2+, default since 2.4):
#   The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -98,
#   name: EADDRINUSE, message: address already in use          (2.2/2.3 without "port: N, "; macOS code -48)
# torch <= 1.10 (lib/c10d/Utils.cpp tcputil::listen, the bind's errno as a system_error): the bare
#   RuntimeError: Address already in use                      (pytorch/pytorch#72816)
# Windows' WSAEADDRINUSE reads "(errno: 10048 - Only one usage of each socket address ... is normally permitted.)".
# Another process (a second job, a stale one, or the script's own store beside torchrun's) holds the port.
# The error's number says it whatever the locale translates the text to (torch 2.1+ on Windows prints
# "(system error: 10048 - <the system's message>)", e.g. in Chinese: YYuX-1145/Bert-VITS2-Integration-package#54):
# EADDRINUSE is 98 on Linux, 48 on macOS / BSD, WSAEADDRINUSE 10048 on Windows.
_IN_USE = (r"\((?:errno|system error): (?:(?P<errno>98|48|10048) - [^)]*"
           r"|(?P<errno2>\d+) - (?:Address already in use|Only one usage of each socket address))")


@rule(
    "c10d-port-in-use",
    ("Address already in use", "EADDRINUSE", "Only one usage of each socket address", "error: 10048 - ", "errno: 48 - ",
     "errno: 98 - "),
    r"The server socket has failed to (?:bind to|listen on) (?P<addr>\S+) " + _IN_USE +
    r"|The server socket has failed to listen on any local network address\. (?:port: (?P<port>\d+), )?"
    r"useIpv6: \w+, code: (?P<code>-?\d+), name: EADDRINUSE"
    r"|^(?:\w+\.)*(?P<old>RuntimeError): Address already in use\s*$",
)
def _c10d_port_in_use(m, rec, state):
    port = m.group("port")
    if port is None:
        # every "failed to bind to <addr>" of the line: [::]:29500, 0.0.0.0:29500, ?UNKNOWN? (no port printed)
        ports = re.findall(r"failed to (?:bind to|listen on) \S*?:(\d+) \((?:errno|system error)", rec.text)
        port = ports[0] if ports else None
    key = ("c10d_port_in_use", port)
    if not first_time(state, key, rec.loc.line):
        return []
    errno = m.group("errno") or m.group("errno2") or (m.group("code") or "").lstrip("-") or None
    return _error(rec, "port_in_use", fields={"backend": "c10d-store", "port": port or "its port",
                                              "errno": to_int(errno) if errno else None})


# The same exception wrapped at a terminal's width (a narrow console, a rich traceback; deepspeedai/DeepSpeed#3916):
#   RuntimeError: The server socket has failed to listen on any local network
#   address. The server socket has failed to bind to [::]:29600 (errno: 98 - Address
#   already in use). The server socket has failed to bind to 0.0.0.0:29600 (errno:
#   98 - Address already in use).
# A line of the server socket's failure that says no reason is remembered (with the port it names); the words
# "already in use)" opening one of the next lines finish it. The exception line stays the python parser's: the
# finding supersedes it.
_WRAP_SPAN = 3
_IN_USE_CONT = LazyPattern(r"^\s*(?:\d+ - )?(?:Address\s+)?already in use\)")


@rule("c10d-port-in-use-wrapped", ("The server socket has failed to", "already in use)"),
      r"The server socket has failed to (?:listen|bind)|already in use\)")
def _c10d_port_in_use_wrapped(m, rec, state):
    text = rec.text
    held = state.get("c10d_listen_held")
    recent = held is not None and 0 < rec.loc.line - held[0] <= _WRAP_SPAN
    if _IN_USE_CONT.match(text):
        if not recent:
            return None
        port = held[1]
        if not first_time(state, ("c10d_port_in_use", port), rec.loc.line):
            return []
        return _error(rec, "port_in_use", fields={"backend": "c10d-store", "port": port or "its port", "errno": 98,
                                                  "wrapped": True})
    if "The server socket has failed to" in text:
        found = re.findall(r"failed to (?:bind to|listen on) \S*?:(\d+) \(errno", text)
        port = found[0] if found else (held[1] if recent else None)
        state["c10d_listen_held"] = (rec.loc.line, port)
    return None


@rule("nccl-shm-failed", ("Error while creating shared memory segment", "NCCL WARN Error: failed to extend"),
      r"NCCL WARN (?:Error while creating shared memory segment (?P<seg>\S+)|Error: failed to extend (?P<ext>\S+) to \d+ bytes)")
def _nccl_shm(m, rec, state):
    state["nccl_warned"] = rec.loc.line  # what the error-return trace after it echoes
    if not first_time(state, ("nccl_shm",), rec.loc.line):
        return []
    seg = m.group("seg") or m.group("ext")
    opened = state.get("nccl_shm_open_failed")
    if m.group("ext") is None and opened is not None and rec.loc.line - opened < 8:
        # the segment could not even be opened (`Call to shm_open failed : Permission denied`): not a full /dev/shm
        return _error(rec, "nccl_error", fields={"code": "ncclSystemError", "reason": "cannot create a /dev/shm segment",
                                                "shm_segment": seg, "transport": "shm"})
    return _shm_full(rec, seg)


def _shm_full(rec, seg: Optional[str]) -> ErrorEvent:
    """NCCL's SHM transport could not size its /dev/shm segment: the shared memory is full (a container's 64 MB)."""
    return _error(rec, "shm_exhausted", fields={"code": "ncclSystemError", "source": "nccl", "transport": "shm",
                                               "reason": "NCCL's SHM transport cannot size its /dev/shm segment",
                                               "segment": seg})


@rule(
    "watchdog-abort",
    ("Some NCCL operations have failed or timed out", "we are taking the entire process down"),
    r"Some NCCL operations have failed or timed out|To avoid data inconsistency, we are taking the entire process down",
)
def _abort(m, rec, state):
    pg, pg_rank, default = _pg(rec.text)
    r = re.search(r"\[Rank (\d+)\]", rec.text)
    if pg_rank is None and r:
        pg_rank = int(r.group(1))
    if not first_time(state, ("watchdog_abort", pg_rank), rec.loc.line):
        return []
    return _error(rec, "watchdog_abort", rank=_rank(rec, pg_rank, default), fields={"pg_rank": pg_rank})


# torch/csrc/distributed/c10d/NCCLUtils (NCCLComm::getNcclComm, torch 1.x NCCLUtils.hpp to 2.x NCCLUtils.cpp):
#   "NCCL communicator was aborted on rank " rank_ ". " + (" Original reason for failure was: " reason, when the
#   abort recorded one)
# raised (RuntimeError, DistBackendError from 2.2) when the process uses a communicator its own watchdog has
# already aborted after a timeout or an NCCL error. The rank is the communicator's (the printing process's
# rank in that group): the rank that was taken down, never evidence of where the failure began. With a
# reason, the reason's own text (a watchdog timeout) is read by its rule; the bare form is the abort alone.
@rule(
    "comm-aborted",
    ("NCCL communicator was aborted on rank",),
    r"NCCL communicator was aborted on rank (?P<rank>\d+)\.\s*$",
)
def _comm_aborted(m, rec, state):
    pg_rank = int(m.group("rank"))
    if not first_time(state, ("watchdog_abort", pg_rank), rec.loc.line):
        return []
    return _error(rec, "watchdog_abort", rank=_rank(rec, pg_rank, True), fields={"pg_rank": pg_rank, "comm_aborted": True})


# ProcessGroupNCCL::HeartbeatMonitor (torch 2.2+): when the watchdog thread itself stops making progress
# (blocked in a hung NCCL/CUDA call), the monitor logs
#   logPrefix() + "Heartbeat monitor timed out! Process will be terminated after dumping debug info." +
#   " workMetaList_.size()=" N
# and exits with "ProcessGroupNCCL's watchdog got stuck for " heartbeatTimeoutInSec_ " seconds without making
# progress in monitoring enqueued collectives. ..." (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, default 480 s in 2.2,
# 600 s later). The same abort as the watchdog's, after a hang no collective timeout could report.
@rule(
    "heartbeat-abort",
    ("Heartbeat monitor timed out",),
    r"Heartbeat monitor timed out! Process will be terminated",
)
def _heartbeat_abort(m, rec, state):
    pg, pg_rank, default = _pg(rec.text)
    if not first_time(state, ("watchdog_abort", pg_rank), rec.loc.line):
        return []
    # its "watchdog got stuck for N seconds" line is heartbeat-stuck's (a collective timeout)
    return _error(rec, "watchdog_abort", rank=_rank(rec, pg_rank, default), fields={"pg_rank": pg_rank, "heartbeat": True})


@rule(
    "flight-recorder-disabled",
    ("FlightRecorder is disabled",),
    r"Stack trace of the failed collective not found, potentially because FlightRecorder is disabled",
)
def _flight_recorder(m, rec, state):
    return WarningEvent(loc=rec.loc, text=rec.text, framework=FW, warning="flight_recorder_disabled",
                        message=_exc_split(rec.text)[1])


# --- lost peers --------------------------------------------------------------------------------

@rule(
    "gloo-peer-lost",
    ("Connection closed by peer", "Connection reset by peer"),
    r"(?:\[[^\][]*gloo[^\]]*\] )?(?:Connection closed by peer (?P<peer>\[[^\]]+\]:\d+)"
    r"|Read error (?P<rpeer>\[[^\]]+\]:\d+): Connection reset by peer)",
)
def _gloo_peer(m, rec, state):
    return _error(
        rec, "peer_connection_lost",
        fields={"backend": "gloo", "peer": m.group("peer") or m.group("rpeer"),
                "reason": "closed" if m.group("peer") else "reset"},
    )


@rule(
    "gloo-connect-failed",
    ("connectFullMesh failed",),
    r"Gloo connectFullMesh failed with (?:\[[^\]]*\] )?(?P<why>[^,]*?(?:timed out connecting|Connection refused|"
    r"Connection reset|No route to host)[^,]*)(?:, remote=(?P<peer>\[[^\]]+\]:\d+))?",
)
def _gloo_connect(m, rec, state):
    """torch's ProcessGroupGloo (`Gloo connectFullMesh failed with ` + gloo's error, pair.cc's
    `timed out connecting: SO_ERROR: Connection refused, remote=[...]`): the group could not reach
    a peer at start-up, typically one that is gone or not started (torch 2.13.0+cpu, seen in
    sample_logs/multinode/restart_attempts.log, both as the c10d E-line and the RuntimeError)."""
    return _error(rec, "peer_connection_lost",
                  fields={"backend": "gloo", "peer": m.group("peer"), "reason": "connect"})


# NCCL's own line header (src/debug.cc): `host:pid:tid [cudaDev]` before "NCCL INFO" / "NCCL WARN".
_NCCL_HEAD = LazyPattern(r"(?:^|\s)(?P<host>[\w.\-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:\S+ )?NCCL ")


# The peer's socket closed, in every release's words (src/include/socket.h, src/misc/socket.cc):
#   2.3 - 2.11  WARN("Net : Connection closed by remote peer")            no peer named
#   2.12        WARN("Net : Connection closed by remote peer %s", addr)
#   2.19+       WARN("socketProgress: Connection closed by remote peer %s", addr)
#   <= 2.2      `include/socket.h:371 WARN Connection closed by remote peer` (the binary releases, no "NCCL" tag)
@rule(
    "nccl-peer-lost",
    ("Connection closed by localRank", "Connection closed by remote peer", "Call to recv from"),
    r"\[Service thread\] Connection closed by localRank (?P<lr>\d+)"
    r"|(?:(?:socketProgress|Net) ?: |\.(?:h|cc|cu):\d+ WARN )Connection closed by remote peer(?: (?P<peer>\S+))?\s*$"
    r"|(?:socketProgressOpt|Net) ?: Call to recv from (?P<rpeer>\S+) failed ?: (?P<why>.*?\S)\s*$",
)
def _nccl_peer(m, rec, state):
    if m.group("lr") is not None:
        head = _NCCL_HEAD.search(rec.text)
        fields = {"backend": "nccl", "peer_local_rank": int(m.group("lr")), "nccl_info": True}
        if head:
            fields.update(host=head.group("host"), pid=int(head.group("pid")), cuda_dev=int(head.group("dev")))
        return _error(rec, "peer_connection_lost", fields=fields)
    peer = m.group("peer") or m.group("rpeer")
    state["nccl_warned"] = rec.loc.line
    if not first_time(state, ("nccl_peer", peer), rec.loc.line):
        return []
    fields = {"backend": "nccl", "peer": peer, "nccl_info": False}
    if m.group("why") is not None:
        fields["reason"] = m.group("why")
    return _error(rec, "peer_connection_lost", fields=fields)


# NCCL's error-return trace (src/include/checks.h NCCLCHECK: INFO(NCCL_ALL, "%s:%d -> %d", __FILE__, __LINE__, res)
# for every frame a failing ncclResult_t passes; src/group.cc ncclAsyncJobMain: "%s:%d -> %d [Async thread]" when an
# init / connect job failed). NCCL prints it only on an error return, so a trace that reaches the top of the call
# (group.cc, init.cc, the async job) is a failed NCCL call even when no WARN says why (NVIDIA/nccl#1099):
#   nd20-01:191191:219889 [0] NCCL INFO group.cc:64 -> 2 [Async thread]
# With a WARN (or torch's `NCCL error in:`) just before, the trace is its echo and gives no second event.
_RESULT = {1: ("ncclUnhandledCudaError", "unhandled cuda error"), 2: ("ncclSystemError", "unhandled system error"),
           3: ("ncclInternalError", "internal error"), 4: ("ncclInvalidArgument", "invalid argument"),
           5: ("ncclInvalidUsage", "invalid usage"), 6: ("ncclRemoteError", "remote process exited or there was a network error")}
_TRACE_ECHO_SPAN = 60


@rule(
    "nccl-error-trace",
    ("group.cc:", "init.cc:", "[Async thread]"),
    r"NCCL INFO (?P<where>(?:[\w.-]+/)*(?P<file>[\w.-]+\.(?:cc|cu|h)):\d+) -> (?P<code>[1-9]\d*)(?P<async> \[Async thread\])?\s*$",
)
def _nccl_error_trace(m, rec, state):
    if m.group("file") not in ("group.cc", "init.cc") and not m.group("async"):
        return None
    warned = state.get("nccl_warned")
    if warned is not None and 0 <= rec.loc.line - warned <= _TRACE_ECHO_SPAN:
        return []
    code = int(m.group("code"))
    name, reason = _RESULT.get(code, (None, f"NCCL error {code}"))
    if not first_time(state, ("nccl_trace", code), rec.loc.line):
        return []
    return _error(rec, "nccl_error", fields={"code": name, "reason": reason, "where": m.group("where"), "result": code,
                                            "from_trace": True})


PARSER = Parser(
    name="nccl",
    framework=FW,
    priority=35,
    description="c10d ProcessGroupNCCL watchdog, desync and mismatch reports, NCCL errors and WARN lines, gloo transport errors",
    rules=[_nccl_nvls_bind, _watchdog_timeout, _timeout_frame, _hccl_socket_timeout, _hccl_op_failed, _dump_signal, _pg_status, _store_barrier_timeout, _store_barrier_wait, _heartbeat_stuck, _monitored_barrier, _store_wait_timeout, _nccl_id_store, _nccl_id_store_error, _nccl_id_store_tail,
           _ibv_failed, _nccl_cuda_failure, _nccl_duplicate_gpu, _c10d_connect_failed, _store_socket_timeout, _c10d_port_in_use, _c10d_port_in_use_wrapped, _nccl_shm, _gloo_timeout, _desync_at,
           _desync_missing, _desync_lagging, _mismatch, _gloo_size_mismatch, _nccl_error, _nccl_tests_failure, _nccl_failure_check, _tf_nccl_status, _xla_nccl_status,
           _nccl_error_detail, _nccl_socket_failed, _no_interface_last_error, _nccl_proxy_failed, _net_ib, _ib_async, _net_ib_size_check, _socket_truncated, _nccl_mismatched, _ucx_retry, _ofi_init, _ofi, _abort, _comm_aborted, _heartbeat_abort, _flight_recorder, _gloo_peer,
           _gloo_connect, _nccl_peer, _nccl_error_trace],
)
