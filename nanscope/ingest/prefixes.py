"""Peel launcher prefixes off a line and learn which process printed it.

Recognised (they can stack, e.g. `[default0]:[rank0]:[W1129 ...]`):
  [rank3]:                  torch's global-rank prefix (exception hook, c10 logging); also where a
                            c10 record (`[rank3]:[E1206 21:12:01.858423203 File.cpp:N] ...`) was
                            glued after another write that ended without a newline (a tqdm bar:
                            `... 6/15000 [10:46:01<23855:30:25, 5727.61s/it][rank0]:[E1202 ...`)
  [default3]: [trainer3]:   torchrun --tee / log_line_prefix_template: a *local* rank
  [3]:                      torchrun with log_line_prefix_template="[${rank}]:"
  [trainer0|0]:             a log_line_prefix_template of two of ${role_name}, ${rank}, ${local_rank}
                            (NVIDIA/nccl#1837); which number is which the line does not say: peeled,
                            no rank
  [rank3] (no colon)        a user's own tag (`[rank0] layer_partition: ...`, mlc-ai/pith-train#47)
  <info>    [2021-12-07 10:43:05] 087c0ee7 [rank=1] || INFO: ...
                            Determined's trial logs (`det trial logs`: the level in angle brackets,
                            padded, then the master's '[time] ' + container_id[:8] + ' [rank=N]' (when
                            the worker is known) + ' || ' (master/static/srv/get_trial_logs.sql and the
                            CLI's copy of that format); the rank, when present, is the worker's
  [rank=3]                  Determined's wrap_rank.py (harness/determined/launch/wrap_rank.py
                            forward_stream: f"[rank={rank}] {line}" on every line of a worker), and
                            the same tag in users' own prints
  rank 3: / process 3:      a user's print that starts with its rank; only where a prefix can be
                            (the line's start, after launcher prefixes), never inside prose
  10.0.0.2: / worker-1:     pdsh's `host: ` (DeepSpeed's default multi-node launcher, PDSHRunner in
                            deepspeed/launcher/multinode_runner.py): a node, never a rank; a name
                            only before a prefix or DeepSpeed's `[YYYY-MM-DD hh:` stamp (else
                            `RuntimeError: ...` would read as a host), or a name the input's first
                            MiB showed so (ingest/topology.py pdsh_hosts) on any line; the node's
                            first rank from the launcher's global_rank_mapping
  3: / 3:                   Slurm srun --label (a rank; before [defaultM]: the node of one torchrun agent)
  [1,3]<stdout>:            Open MPI --tag-output (job, rank); SageMaker's mpirun prints
  [1,mpirank:3,algo-2]<stdout>:  the rank and the host (huggingface/accelerate threads); the tag is
                            written per chunk, so it can recur inside a line (removed there too)
  [3]<stdout>:              horovodrun's own launcher (gloo; horovod/runner/common/util/safe_shell_exec.py
                            prefix_connection: '{time}[{rank}]<{prefix}>:', the time asctime's with
                            --prefix-timestamp, `Fri Sep 25 16:52:53 2020[0]<stderr>:`; the index is the
                            slot's rank, gloo_run.py)
  llama32_1b/0              NeMo-Run's task prefix (nemo_run/run/logs.py print_log_lines:
                            f"{role_name[-10:]}/{replica_id} "): replica N is a node, not a rank
  (VllmWorker rank=3 pid=P) (EngineCore_0 pid=P) (RayWorkerWrapper pid=P, ip=...)
  (worker1, rank=1, pid=P, ip=...)  SkyPilot's Ray task names (sky/backends/task_codegen.py RayCodeGen:
                            name_str = f'{node_name}, rank={rank},' with node_name 'head' or
                            f'worker{idx}', rank SKYPILOT_NODE_RANK; Ray adds ` pid=P, ip=...`): the
                            rank is the node's, never a process rank; one node: `(task, pid=P)` or
                            `(<task name>, pid=P)`, peeled, no rank
  svc-1  | / [pod/name/ctr]  docker compose and kubectl logs --prefix wrappers (a pod is a node:
                            its replica index, ingest/topology.py pod_index, names ranks only
                            with the processes per pod known)
  bench.node [stderr]      milabench's terminal (milabench/log.py TerminalFormatter: the run's tag, then
                            `[stdout]` / `[stderr]`, then the benchmark's line): peeled, no rank
  [training STDERR]         a GUI relaying its trainer's pipes (`[<name> STDERR] `, kohya-ss/musubi-tuner#817):
                            peeled, no rank
        | / * 3 x           milabench's error report (milabench/validation/error.py, Summary.show's two spaces
                            a section): a traceback's lines under `      | `, and `* N x <exception>` /
                            `*NN x <bench>` counts: peeled, no rank (a launcher prefix inside the copied line,
                            `| [rank7]: ...`, is peeled after it)
  {"event": "line", "data": "...\n", "pipe": "stderr"}
                            milabench's run data (milabench/log.py DataReporter: json.dumps of voir's
                            LogEntry, one object a line, in runs/<run>/<bench>.<tag>.data): a "line"
                            event's data is the benchmark's own line, whose prefixes (`[rank1]: `) are
                            read as any line's; the other events (config, meta, start, data, end) stay
  stderr: / stdout:         accelerate's and transformers' test subprocess tee (test_utils/testing.py
                            _stream_subprocess: print(label, line) with label `stderr:` / `stdout:`, the
                            `accelerate test` output): peeled, no rank
  2024-05-01T12:00:00.123Z  kubectl logs --timestamps (the time is kept as the line's timestamp)
  rank:  3 | 2022-04-03 ... ParlAI's distributed prefix: ParlaiLogger.add_format_prefix puts
                            f'{prefix} ' before LOGFILE_FORMAT '%(asctime)s %(levelname)-8s | %(message)s'
                            (CONSOLE_FORMAT '%(asctime)s %(levelname).4s | ...' when interactive),
                            the prefix being `rank: {rank:2d} |` (parlai/utils/logging.py)
  Dec 01 14:00:00 h p[1]:   a collector's stamp in front of every line (journald, syslog, ts(1), a
                            shipper's date and time), learned per input (ingest/wrapper.py)
  2026-09-17 13:40:05   ... a log collector's stamp on every line, peeled only where an indented
                            continuation follows it (`  rank      : 1 (local_rank: 1)`, `  File ...`):
                            a logger's own format stamps a record's first line, never its
                            continuation, so the stamp there is outside the program's output
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Optional

from nanscope.ingest.timestamps import parse_ts
from nanscope.ingest.topology import Topology
from nanscope.model import Origin, _reduce

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")

_PREFIX = re.compile(
    r"""
    [ \t]*(?:
        \[(?P<role>[A-Za-z_]+)(?P<n>\d+)\]:[ \t]?
      | \[[A-Za-z_]+\d+\|\d+\]:[ \t]?
      | \[(?P<bare>\d+)\]:(?=[ \t]*\S)[ \t]?
      | (?:<[a-z]{0,10}>[ \t]+)?\[(?P<dtts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\dZ?)\][ ](?:[0-9a-f]{8}|\[UNKNOWN[ ]CONTAINER\])
        (?:[ ]\[rank=(?P<dtrank>\d+)\])?[ ]\|\|(?:[ ]|$)
      | \[rank=?(?P<tag>\d+)\][ \t]+(?=\S)
      | (?:rank|process)[ ](?P<said>\d+):[ \t]+(?=\S)
      | (?P<srun>\d{1,5}):[ \t]+(?=\S)
      | (?P<host>\d{1,3}(?:\.\d{1,3}){3}):[ ](?=\S)
      | (?P<hostname>[A-Za-z][\w\-]{0,62}(?:\.[\w\-]{1,63}){0,8}):[ ](?=\[(?:rank|default)\d+\]:|\[\d{4}-\d\d-\d\d[ ]\d\d:)
      | [A-Za-z][\w.\-]{0,9}/(?P<replica>\d{1,5})[ ](?=\S)
      | (?P<mpitag>\[(?P<mpijob>\d+),(?:mpirank:)?(?P<mpirank>\d+)(?:,[\w.\-]{1,64})?\]<std(?:out|err)>:)[ \t]?
      | (?:[A-Z][a-z]{2}[ ][A-Z][a-z]{2}[ ][ \d]\d[ ]\d\d:\d\d:\d\d[ ]\d{4})?\[(?P<hvd>\d+)\]<std(?:out|err)>:[ \t]?
      | (?:(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY)[ \t])?
        (?P<rfc>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d))[ \t]
      | \[\d{0,9}\][ \t]+(?=\[(?:rank|default)\d+\]:|\[rank=\d+\][ \t])
      | rank:[ ]{1,3}(?P<parlai>\d{1,5})[ ]\|[ ](?=(?:\d{4}-\d\d-\d\d[ ])?\d\d:\d\d:\d\d)
      | (?P<cts>\d{4}-\d\d-\d\d[ ]\d\d:\d\d:\d\d)[ ](?=[ \t]+\S)
      | (?P<tsr>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)[ \t]+(?=\[rank\d+\]:)
      | \[(?P<sgts>\d{4}-\d\d-\d\d[ ]\d\d:\d\d:\d\d)(?P<sgtags>(?:[ ](?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)+)\][ \t]
      | \[(?P<sgtp>TP\d+(?:[ ]EP\d+)?)\][ \t]
      | \((?:head|worker\d{1,5}),[ ]rank=(?P<skynode>\d{1,5}),[ ]pid=\d+(?:,[ ]ip=[0-9a-fA-F.:]+)?\)[ \t]
      | \([\w.\-]{1,64},[ ]pid=\d+(?:,[ ]ip=[0-9a-fA-F.:]+)?\)[ \t]
      | \((?P<proc>[A-Za-z][\w\-]*?)(?:(?:_?TP|-)(?P<ptag>\d+))?(?:[ \t]+(?:rank=(?P<prank>\d+)|TP(?P<ptp>\d+)))?[ \t]+pid=\d+(?:,[ \t]*ip=[0-9a-fA-F.:]+)?\)[ \t]
      | \(pid=\d+(?:,[ \t]*ip=[0-9a-fA-F.:]+)?\)[ \t]
      | \[(?:pod/)?(?P<pod>[\w.\-]+)/[\w.\-]*\][ \t]
      | (?P<svc>[A-Za-z][\w.\-]*)[ \t]+\|[ \t]
      | [A-Za-z][\w.\-]{0,127}[ ]\[(?:stdout|stderr)\][ ]
      | \[[A-Za-z][\w.\-]{0,63}[ ](?:STDOUT|STDERR)\][ ]
      | (?<=[ ]{6})\|[ ]
      | \*[ ]?\d{1,6}[ ]x[ ](?=\S)
      | std(?:out|err):[ ]
      | (?P<anyhost>[A-Za-z][\w\-]{0,62}(?:\.[\w\-]{1,63}){0,8}):[ ](?=\S)
    )
    """,
    re.X,
)

# torch's rank prefix, then the header c10's logger (c10/util/Logging.cpp, glog's format: level letter,
# month (unpadded: `E318`, `E1206`) and day, hh:mm:ss.micro, file:line) opens every record with: nothing but a record's start looks so, so
# found after other text on the line it is where a process's record starts (the text before it, a
# bar or a partial print that ended without a newline, is another write)
_GLUED_C10 = re.compile(r"\[rank(?P<n>\d+)\]:(?=\[[EWIF]\d{3,4} \d\d:\d\d:\d\d)")

_SGLANG_TAG = re.compile(r"([A-Z_]+?)(\d+)")
_STAGED_WORKER = re.compile(r"_(?:DP|PP)\d")
_ATTEMPT_RANK = re.compile(r"attempt_\d+/(\d+)/(?:stdout|stderr|error)\.(?:log|json)$")
# A per-rank layout names a file or folder for its rank and nothing else: rank_3.log, rank3.out,
# worker-3.log, node1/rank_3/stdout.log. A rank inside a descriptive name (`ddp_nan_rank2.log`,
# `run_rank9/`) is a person's label, not a layout, and is never read.
_LAYOUT_RANK = re.compile(r"(?:rank|worker|proc|process|local_rank)[_\-.]?(\d+)(?:\.(?:stdout|stderr|out|err))?", re.I)
_LAYOUT_NODE = re.compile(r"node[_\-]?(\d+)", re.I)
# Sibling files that differ only in a trailing number (Slurm `--output=job-%j-%t.out`,
# `train_%t.log`): that number is the rank when two or more such siblings share the stem.
_SIBLING = re.compile(r"(?P<stem>.*?[A-Za-z][^/]*?[_\-.])(?P<n>\d+)(?P<ext>(?:\.[A-Za-z]+)*)$")


_NODE_NUMBER = re.compile(r"node(\d+)")


@dataclass(frozen=True, slots=True)
class Base(Origin):
    """The origin an input's name implies, with what its text says about its nodes (Topology):
    what peel starts from for each of its lines."""

    topo: Optional[Topology] = None

    __reduce__ = _reduce


def with_topology(base: Origin, topo: Topology) -> Origin:
    """base with topo for peel, or base itself when the text said nothing about its nodes."""
    if not topo:
        return base
    return Base(base.rank, base.local_rank, base.node, base.ts, base.proc, topo)


_SRUN_ALONE = re.compile(r"[ \t]*(\d{1,5}):[ \t]+(?!\[[A-Za-z_]*\d+\]:)")


class SrunAgents:
    """Per input: srun --label in front of torchrun --tee (`1: [default3]:`) makes srun's task a
    node's torchrun agent. Once a line has shown that, a line with the label alone (`1: [W... TCPStore]`,
    `1: torch.distributed.DistNetworkError: ...`) is node 1's agent talking, not rank 1."""

    __slots__ = ("nodes",)

    def __init__(self) -> None:
        self.nodes = False

    def see(self, origin: Optional[Origin], base: Origin) -> None:
        """Learn from a line's origin (also the rows the native lane reads, so both lanes agree):
        peel sets a node only from the srun label in front of [defaultM]: (or from the path)."""
        if not self.nodes and origin is not None:
            self.nodes = origin.local_rank is not None and origin.node is not None and base.node is None

    def fix(self, text: str, origin: Origin, base: Origin) -> Origin:
        if not self.nodes:
            self.see(origin, base)
            return origin
        if origin.rank is not None and origin.local_rank is None and origin.node is None:
            m = _SRUN_ALONE.match(text)
            if m is not None and int(m.group(1)) == origin.rank:
                return Origin(node=f"node{origin.rank}", ts=origin.ts, proc=origin.proc)
        return origin


_TRACEBACK_START = "Traceback (most recent call last):"
TRACEBACK_HEAD = _TRACEBACK_START.encode()  # (the reader finds the headers that open a record by it)
_TRACEBACK_BODY = re.compile(
    r"[ \t]+\S"  # `  File "...", line N, in f` and the code under it
    r"|Traceback \(most recent call last\):$"  # a chained exception's next traceback
    r"|During handling of the above exception|The above exception was the direct cause"
    r"|[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning)(?::|$)")  # the exception line
RECORD_SPAN = _RECORD_SPAN = 200  # lines: a logged traceback is never longer than this in the logs we know


class RecordContinuation:
    """Per input: Python's logging puts the formatter's prefix on a record's FIRST line only, so a
    traceback logged with exc_info (`rank:  3 | 2022-04-03 ... CRITICAL | Traceback (most recent
    call last):`, ParlAI; any logger whose format carries the rank) goes on in lines with no prefix:
    `  File ...`, the code, `RuntimeError: CUDA out of memory ...`, `During handling of the above
    exception ...`. Those unprefixed traceback lines belong to the process of the line that opened
    it. Anything else (a prefixed line, prose, a line read by the native lane) ends the record."""

    __slots__ = ("slot",)

    def __init__(self, slot: Optional[dict] = None) -> None:
        # the open record's origin and first line live in `slot`, a dict the caller keeps with the
        # parsers' states (a piece of a file hands it on as part of its state: nanscope/pieces.py)
        self.slot: dict = {} if slot is None else slot

    def fix(self, msg: str, text: str, origin: Origin, base: Origin, lineno: int) -> Origin:
        slot = self.slot
        if msg is not text:  # the line has its own prefix: it opens a record or ends one
            has_rank = origin.rank is not None or origin.local_rank is not None
            if has_rank and msg.rstrip().endswith(_TRACEBACK_START):
                slot["origin"], slot["line"] = origin, lineno
            elif slot:
                slot.clear()
            return origin
        opened = slot.get("origin")
        if opened is None:
            return origin
        if lineno - slot["line"] > _RECORD_SPAN or origin is not base or not _TRACEBACK_BODY.match(text):
            slot.clear()
            return origin
        return opened

    def end(self) -> None:
        if self.slot:
            self.slot.clear()


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def _stem(name: str) -> str:
    return os.path.splitext(name)[0]


def layout_ranks(paths: list[str]) -> dict[str, int]:
    """Ranks of files that form a per-rank family with their siblings: two or more files in one
    folder whose names are the same but for a trailing number, one of them 0 (a rank set starts at
    0; a Slurm job id or a date is not a rank)."""
    groups: dict[tuple[str, str, str], dict[str, int]] = {}
    for p in paths:
        folder, _, name = p.replace(os.sep, "/").rpartition("/")
        m = _SIBLING.fullmatch(name)
        if m is None or len(m.group("n")) > 5:
            continue
        groups.setdefault((folder, m.group("stem"), m.group("ext")), {})[p] = int(m.group("n"))
    out: dict[str, int] = {}
    for members in groups.values():
        ranks = set(members.values())
        if len(members) >= 2 and len(ranks) == len(members) and 0 in ranks:
            out.update(members)
    return out


def origin_from_path(path: Optional[str], layout_rank: Optional[int] = None) -> Origin:
    """Rank / node hints from a documented per-rank layout: rank_3.log, node1/rank_3.out,
    torchrun's --log-dir attempt_0/3/stdout.log (a local rank when a node folder is above it), a family of siblings (`layout_rank`, from
    layout_ranks). The file name is looked at first, then the folders from the nearest up.
    Prefixes inside the file win over these hints (see peel)."""
    if not path:
        return Origin()
    norm = path.replace(os.sep, "/")
    rank = node = attempt_local = None
    m = _ATTEMPT_RANK.search(norm)
    if m:
        # torchelastic names these folders by LOCAL rank (multiprocessing/api.py reify: one subdir per
        # local rank, 0..nproc_per_node-1); it is the global rank only on one node.
        rank = attempt_local = int(m.group(1))
    parts = [p for p in norm.split("/") if p and p not in (".", "..")]
    parts[-1:] = [_stem(parts[-1])] if parts else []
    for i, part in enumerate(reversed(parts)):
        if rank is None:
            m = _LAYOUT_RANK.fullmatch(part)
            if m:
                rank = int(m.group(1))
            elif i == 0:
                rank = layout_rank
        if node is None:
            m = _LAYOUT_NODE.fullmatch(part)
            if m:
                node = f"node{int(m.group(1))}"
    if attempt_local is not None and node is not None:
        return Origin(local_rank=attempt_local, node=node)  # node1/.../attempt_0/1/: local rank 1 of node 1
    return Origin(rank=rank, node=node)


_MILABENCH_LINE = '{"event": "line", "data": "'


def _milabench_data(text: str) -> Optional[str]:
    """The benchmark's line inside one of milabench's "line" events; None for anything else."""
    try:
        entry = json.loads(text)
    except ValueError:
        return None
    data = entry.get("data") if isinstance(entry, dict) and entry.get("event") == "line" else None
    if not isinstance(data, str):
        return None
    data = data.rstrip("\r\n")
    return None if "\n" in data else data


def peel(text: str, base: Origin) -> tuple[str, Origin]:
    """Remove launcher prefixes; return the message and the origin they imply. A prefix in the
    line is stronger evidence than the file name, so it replaces the file's rank hint."""
    if text.startswith(_MILABENCH_LINE):
        data = _milabench_data(text)
        if data is not None:
            # the message is the decoded string, not a tail of the line: the native lane's prefix
            # check (ingest/native.py: msg == text[n:]) leaves such lines to the per-line path
            return peel(data, base)
    rank = local = proc = ts = srun = pod = replica = host = mpitag = None
    pos = 0
    match = _PREFIX.match
    found = False
    topo = base.topo if base.__class__ is Base else None
    if topo is not None and topo.wrapper is not None:
        m = topo.wrapper.match(text)  # a collector's stamp, outside everything else (ingest/wrapper.py)
        if m is not None:
            pos, found, ts = m.end(), True, topo.wrapper.seconds(m)
    while True:
        m = match(text, pos)
        if m is None or m.end() == pos:
            break
        if m.group("anyhost") is not None:
            if topo is None or m.group("anyhost") not in topo.pdsh_hosts:
                break
        found = True
        pos = m.end()
        if m.group("role") is not None:
            if m.group("role") == "rank":
                rank = int(m.group("n"))
            else:
                local = int(m.group("n"))
        elif m.group("bare") is not None:
            rank = int(m.group("bare"))
        elif m.group("tag") is not None:
            rank = int(m.group("tag"))
        elif m.group("dtrank") is not None:
            rank = int(m.group("dtrank"))
        elif m.group("said") is not None:
            rank = int(m.group("said"))
        elif m.group("srun") is not None:
            srun = int(m.group("srun"))
        elif m.group("replica") is not None:
            replica = int(m.group("replica"))
        elif m.group("skynode") is not None:
            replica = int(m.group("skynode"))  # SkyPilot's node rank: a node, as NeMo-Run's replica
        elif m.group("mpirank") is not None:
            rank = int(m.group("mpirank"))
            mpitag = m.group("mpitag")
        elif m.group("hvd") is not None:
            rank = int(m.group("hvd"))
        elif m.group("pod") is not None:
            pod = m.group("pod")
        elif m.group("host") is not None or m.group("hostname") is not None or m.group("anyhost") is not None:
            host = m.group("host") or m.group("hostname") or m.group("anyhost")
        elif m.group("parlai") is not None:
            rank = int(m.group("parlai"))
        if m.group("rfc") is not None:
            ts = parse_ts(m.group("rfc"))
        elif m.group("cts") is not None:
            ts = parse_ts(m.group("cts"))
        elif m.group("tsr") is not None:
            ts = parse_ts(m.group("tsr"))
        elif m.group("dtts") is not None:
            ts = parse_ts(m.group("dtts"))
        elif m.group("sgtags") is not None or m.group("sgtp") is not None:
            if m.group("sgts") is not None:
                ts = parse_ts(m.group("sgts"))
            tags = dict(_SGLANG_TAG.findall(m.group("sgtags") or m.group("sgtp")))
            proc = "sglang-scheduler"
            if "TP" in tags and "DP" not in tags and "PP" not in tags:
                rank = int(tags["TP"])
        if m.group("proc") is not None:
            proc = m.group("proc")
            # (VllmWorker rank=2 pid=P), (VllmWorker TP2 pid=P), (Worker_TP2 pid=P), (VllmWorker-2 pid=P);
            # an EngineCore_0 / EngineCore_DP0 index is an engine, not a rank.
            staged = _STAGED_WORKER.search(proc) is not None  # Worker_PP1_TP0: TP0 of stage 1 is not rank 0
            r = m.group("prank") or m.group("ptp") or (m.group("ptag") if "Worker" in proc and not staged else None)
            if r is None and proc.startswith("Worker_"):
                # vLLM V1 names a worker by its parallel indices (multiproc_executor.py: DP/PP/TP/EP suffixes,
                # `Worker_TP1_EP1`); as for SGLang's tags, the TP index is the rank only without DP and PP
                tags = dict(_SGLANG_TAG.findall(proc[len("Worker_"):].replace("_", "")))
                if "TP" in tags and "DP" not in tags and "PP" not in tags:
                    r = tags["TP"]
            if r is not None:
                rank = int(r)
    if not found:
        glued = _GLUED_C10.search(text, 1) if "]:[" in text else None
        if glued is None:
            return text, base
        # a c10 record glued after another write: the record is the process's (see _GLUED_C10)
        rank, pos = int(glued.group("n")), glued.end()
    node = base.node
    if local is None:
        local = base.local_rank  # a torchelastic attempt_K/<local rank>/ file under a node folder
    if replica is not None and srun is None:
        # NeMo-Run's `role/N ` (torchx's replica N: one node's torchrun agent), like srun's label
        # over torchrun, but never a rank by itself
        if node is None:
            node = f"node{replica}"
        if rank is None and local is not None and topo is not None:
            rank = topo.global_rank(replica, local)
    elif srun is not None:
        if local is not None and node is None:
            node = f"node{srun}"  # `1: [default3]:`: srun's task is one torchrun agent per node
            if rank is None and topo is not None:
                rank = topo.global_rank(srun, local)
        elif rank is None and local is None:
            if topo is not None and topo.srun_nodes:
                node = node or f"node{srun}"  # the agent's own line, or a worker's without torchrun's prefix
            else:
                rank = srun  # srun --label over the ranks themselves
    elif host is not None:
        # pdsh's host: a node; a local rank on it is named only by the launcher's mapping
        node = host
        if rank is None and local is not None and topo is not None:
            rank = topo.host_rank(host, local)
    elif pod is not None:
        # kubectl logs --prefix: one pod is one replica (node); its index is a rank only with
        # the processes per pod known (ingest/topology.py pod_index)
        node = pod
        index = topo.pod_index(pod) if topo is not None else None
        if rank is None and index is not None:
            rank = topo.global_rank(index, 0 if local is None and topo.per_node == 1 else local) \
                if (local is not None or topo.per_node == 1) else None
    elif rank is None and local is not None and topo is not None:
        rank = node_rank(node, local, topo)
    if rank is None and local is not None and node is None and (topo is None or topo.node_index is None):
        rank = local  # one node: torchrun's local rank is the global rank
    msg = text[pos:]
    if mpitag is not None and mpitag in msg:
        # Open MPI tags every chunk it forwards, not every line (orte/mca/iof/base/iof_base_output.c
        # orte_iof_base_write_output: the start tag, then the data with the tag again after each
        # newline): a line the process wrote in two writes carries the tag again where the second
        # began (`[1,19]<stderr>:RuntimeError[1,19]<stderr>:: NCCL communicator was aborted ...`)
        msg = msg.replace(mpitag, "")
    return msg, Origin(rank=rank, local_rank=local, node=node, proc=proc, ts=ts)


def node_rank(node: Optional[str], local: int, topo: Topology) -> Optional[int]:
    """The global rank of a local rank printed in this input, whose node is the input's own (a
    per-node file `node1/...`, or the node_rank its launcher printed); None when unknown."""
    if topo.file_offset is not None:
        if topo.file_offset == 0 and node is None:
            return local  # one node, as without a topology (nothing to report)
        return topo.global_rank(None, local)
    if topo.node_index is not None:
        return topo.global_rank(topo.node_index, local, launcher_index=False)
    m = _NODE_NUMBER.fullmatch(node or "")
    return topo.global_rank(int(m.group(1)), local) if m else None
