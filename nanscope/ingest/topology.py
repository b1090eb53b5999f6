"""How many processes each node runs, learned from the launcher's own lines, so that a local rank on
a known node can be named by its global rank.

A composed prefix (`1: [default3]:`: srun --label over torchrun --tee), a per-node file
(`node1/console.log`, or a DeepSpeed launcher that printed `node_rank=1`) or a kubectl pod ordinal
tells the node; `[defaultM]:` and torchrun's `local_rank: M` tell the local rank. The global rank
is node_rank x nproc_per_node + local_rank only when the text says how many processes a node
runs. What is read, strongest first (the evidence is named in the report):

- torchrun's rendezvous result block (torch/distributed/elastic/agent/server/api.py
  `_rendezvous`): `group_rank=G`, `local_ranks=[...]`, `global_ranks=[...]`: the node's ranks
  outright, right even under a c10d rendezvous (which numbers nodes in its own order);
- a line that shows both, `1: [default2]:[rank10]:`: node 1 starts at rank 8;
- the launchers' own counts: torchrun's `Starting elastic_operator with launch configs` block
  (`nproc_per_node : 8`, torch/distributed/launcher/api.py), DeepSpeed's launcher
  (deepspeed/launcher/launch.py: `nnodes=2, num_local_procs=8, node_rank=1`,
  `global_rank_mapping=defaultdict(<class 'list'>, {'h1': [0, 1], 'h2': [2, 3]})`,
  `WORLD INFO DICT: {'h1': [0, 1], ...}`), `LOCAL_WORLD_SIZE=8` / `local_world_size=8`;
- a world size over a known node count (`WORLD_SIZE=16` with `nnodes=2`);
- the distinct local ranks each node printed, when the whole input was read ahead and every node
  shows the same complete set 0..n-1.

A launcher's node index (srun's task id, a `nodeN` file) is the node rank only under a static
rendezvous: when the text shows another backend (`rdzv_backend : c10d`, torchrun's `node_rank is
only used for static rdzv_backend`), only the rendezvous block or a line that shows both ranks
maps that node. Without any of this the pair stays `node N local rank M` and no rank is claimed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Optional

from nanscope.ingest.wrapper import Wrapper, learn_wrapper

HEAD_BYTES = 1 << 20  # the part of an input read ahead for its topology

_SRUN = rb"(?m)^[ \t]*(?:(?P<label>\d{1,5}):[ \t]+)?"
_COMPOSED = re.compile(rb"(?m)^(?:[ \t]*(\d{1,5}):[ \t]+|(?:\x1b\[[0-9;]*m)?[A-Za-z][\w.\-]{0,9}/(\d{1,5})(?:\x1b\[[0-9;]*m)? )"
                       rb"\[(?!rank)[A-Za-z_]+?(\d+)\]:(?:\[rank(\d+)\]:)?")
_BOTH = re.compile(rb"(?m)^[ \t]*\[(?!rank)[A-Za-z_]+?(\d+)\]:\[rank(\d+)\]:")
_PLAIN_LOCAL = re.compile(rb"(?m)^[ \t]*\[(?!rank)[A-Za-z_]+?(\d+)\]:")
_RDZV_FIELD = re.compile(_SRUN + rb"[ \t]*(?P<key>group_rank|local_ranks|global_ranks)=(?P<val>\[[\d, ]*\]|\d+)[ \t]*$")
_NPROC = re.compile(rb"(?m)(?:^(?:[ \t]*\d{1,5}:)?[ \t]*nproc_per_node[ \t]*:[ \t]*(\d+)[ \t]*$|run\.py:\d+\] Using nproc_per_node=(\d+)\.)")
_NODES = re.compile(rb"(?m)^(?:[ \t]*\d{1,5}:)?[ \t]*(min_nodes|max_nodes)[ \t]*:[ \t]*(\d+)[ \t]*$")
_RDZV_BACKEND = re.compile(rb"(?m)^(?:[ \t]*\d{1,5}:)?[ \t]*rdzv_backend[ \t]*:[ \t]*(\w+)")
_NOT_STATIC = b"node_rank is only used for static rdzv_backend"
_DS_TOPO = re.compile(rb"nnodes=(\d+), num_local_procs=(\d+), node_rank=(\d+)")
_DS_MAPPING = re.compile(rb"global_rank_mapping=defaultdict\(<class 'list'>, (\{[^}\n]*\})\)")
_DS_WORLD = re.compile(rb"WORLD INFO DICT: (\{[^}\n]*\})")
# pdsh's `name: ` where nothing else can be meant: before torchrun's / torch's prefix or DeepSpeed's stamp
_PDSH_NAME = re.compile(rb"(?m)^([A-Za-z][\w\-]{0,62}(?:\.[\w\-]{1,63}){0,8}): (?:\[(?:rank|default)\d+\]:|\[\d{4}-\d\d-\d\d \d\d:)")
_LOCAL_WORLD = re.compile(rb"\b(?:LOCAL_WORLD_SIZE|local_world_size)[ \t]*[=:][ \t]*(\d+)\b")
_WORLD = re.compile(rb"\bWORLD_SIZE[ \t]*[=:][ \t]*(\d+)\b")
_POD = re.compile(rb"(?m)^\[pod/([\w.\-]+)/[\w.\-]*\] ")  # kubectl logs --prefix
_POD_LOCAL = re.compile(rb"(?m)^\[pod/([\w.\-]+)/[\w.\-]*\] (?:\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d) )?\[(?!rank)[A-Za-z_]+?(\d+)\]:")
_KUBEFLOW_POD = re.compile(r"(?P<job>[\w.\-]+)-(?P<role>master|worker)-(?P<n>\d+)")
_ORDINAL_POD = re.compile(r"[a-z0-9](?:[a-z0-9\-]*[a-z])?-(\d{1,5})")  # StatefulSet `name-N` (no random suffix)


@dataclass(eq=False)
class Topology:
    """What an input's text says about its nodes (see the module docstring); hashed by identity
    (it rides in the frozen Base origin, and one input has one)."""

    per_node: Optional[int] = None  # processes per node
    per_node_from: str = ""  # which evidence gave per_node, for the report
    offsets: dict = field(default_factory=dict)  # node index -> its first global rank (shown outright)
    offsets_from: str = ""
    file_offset: Optional[int] = None  # the first rank of this input's own node ([default1]:[rank3]: with no srun label)
    node_index: Optional[int] = None  # this input's own node, when its launcher printed one (DeepSpeed node_rank)
    srun_nodes: bool = False  # srun's labels stand for torchrun agents (nodes), not ranks
    static: bool = True  # False: the rendezvous numbers nodes itself (c10d), a launcher's index is not the node rank
    used: list = field(default_factory=list)  # the evidence that named a rank (filled while peeling)
    kubeflow_masters: frozenset = frozenset()  # PyTorchJob names whose `-master-0` pod printed in this input
    hosts: dict = field(default_factory=dict)  # DeepSpeed's global_rank_mapping: host -> its first global rank
    pdsh_hosts: frozenset = frozenset()  # names pdsh printed as `name: ` before a prefix or DeepSpeed's stamp
    wrapper: Optional[Wrapper] = None  # a collector's stamp in front of every line (ingest/wrapper.py)

    def pod_index(self, pod: str) -> Optional[int]:
        """The replica index of a pod from its name, when its controller documents one: a Kubeflow
        PyTorchJob's `{job}-master-0` is replica 0 and `{job}-worker-N` replica N+1 when the job
        has a master (training-operator pkg/controller.v1/pytorch/envvar.go: RANK = index + 1
        for workers); a StatefulSet's `{name}-N` is replica N. None otherwise (a worker whose
        job's master is not in the input, a Deployment's random suffix)."""
        m = _KUBEFLOW_POD.fullmatch(pod)
        if m is not None:
            if m.group("role") == "master":
                return int(m.group("n"))
            return int(m.group("n")) + 1 if m.group("job") in self.kubeflow_masters else None
        m = _ORDINAL_POD.fullmatch(pod)
        return int(m.group(1)) if m is not None else None

    def host_rank(self, host: str, local: int) -> Optional[int]:
        """The global rank of local rank `local` on pdsh's `host`, from DeepSpeed's
        global_rank_mapping (`{'user@10.0.0.2': [8, ..., 15]}`: pdsh prints the host without
        the user); None when the mapping does not name the host."""
        first = self.hosts.get(host)
        if first is None:
            return None
        self._use("each host's first rank from DeepSpeed's global_rank_mapping")
        return first + local

    def global_rank(self, node: Optional[int], local: int, launcher_index: bool = True) -> Optional[int]:
        """The global rank of local rank `local` on node `node`; None when the text cannot tell.
        launcher_index: `node` is srun's task id or a file's node number (not a rendezvous' group rank)."""
        if node is None:
            if self.file_offset is None:
                return None
            self._use(f"the first rank of this input's node from {self.offsets_from}")
            return self.file_offset + local
        if node in self.offsets:
            self._use(f"each node's first rank from {self.offsets_from}")
            return self.offsets[node] + local
        if self.per_node is None or local >= self.per_node or (launcher_index and not self.static):
            return None
        self._use(f"global rank = node x {self.per_node} + local rank, {self.per_node} processes per node from "
                  f"{self.per_node_from}")
        return node * self.per_node + local

    def _use(self, why: str) -> None:
        if why not in self.used:
            self.used.append(why)

    def evidence(self) -> Optional[str]:
        """What the report says about the ranks it derived, or None when none was."""
        if not self.used:
            return None
        return "; ".join(self.used)

    def __bool__(self) -> bool:
        return bool(self.per_node or self.offsets or self.srun_nodes or self.node_index is not None or self.kubeflow_masters
                    or self.file_offset is not None or self.hosts or self.pdsh_hosts or self.wrapper is not None)


def _ints(val: bytes) -> list[int]:
    return [int(x) for x in re.findall(rb"\d+", val)]


def _mapping(text: bytes) -> Optional[dict]:
    """A printed {'host': [ranks], ...} dict; None when it does not read."""
    try:
        d = ast.literal_eval(text.decode("ascii", "replace"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(d, dict) or not all(isinstance(k, str) and isinstance(v, list) and all(isinstance(x, int) for x in v)
                                          for k, v in d.items()):
        return None
    return d


def _lists(text: bytes) -> Optional[list[list[int]]]:
    """The values of a printed {'host': [ranks], ...} dict, in order; None when it does not read."""
    d = _mapping(text)
    return None if d is None else list(d.values())


def _one(values: set) -> Optional[int]:
    return next(iter(values)) if len(values) == 1 else None


def local_ranks(head: bytes) -> set:
    """The local ranks `[defaultM]:` lines at a line start show (without srun's label)."""
    return {int(x) for x in _PLAIN_LOCAL.findall(head)} if b"]:" in head else set()


def learn(head: bytes, whole: bool) -> Topology:
    """The topology an input's first bytes show (whole: they are the entire input)."""
    t = Topology()
    t.wrapper = learn_wrapper(head)
    if _NOT_STATIC in head:
        t.static = False
    for m in (_RDZV_BACKEND.finditer(head) if b"rdzv_backend" in head else ()):
        if m.group(1) != b"static":
            t.static = False
    composed = [(a or b, lo, r) for a, b, lo, r in _COMPOSED.findall(head)] if b"]:" in head else []
    if composed:
        t.srun_nodes = True

    # torchrun's rendezvous result, field by field (each agent prints one block; under srun each
    # line carries its node's label).
    blocks: dict = {}
    if b"local_ranks=" in head:
        for m in _RDZV_FIELD.finditer(head):
            blocks.setdefault(m.group("label"), {}).setdefault(m.group("key").decode(), set()).add(tuple(_ints(m.group("val"))))
    offsets: dict = {}
    sizes: set = set()
    for label, b in blocks.items():
        if any(len(v) > 1 for v in b.values()):
            continue  # two agents' blocks under one label (consoles appended to one file): not one node
        b = {k: list(next(iter(v))) for k, v in b.items()}
        if "local_ranks" in b:
            sizes.add(len(b["local_ranks"]))
        g, ranks = b.get("group_rank"), b.get("global_ranks")
        if g and ranks and b.get("local_ranks") == list(range(len(ranks))) and ranks == list(range(ranks[0], ranks[0] + len(ranks))):
            # the block names its node's ranks: srun's label is where that node's lines are; with
            # no label, the node is this input's own
            if label is None:
                t.node_index, t.file_offset = g[0], ranks[0]
            else:
                offsets[int(label)] = ranks[0]
            t.offsets_from = "torchrun's rendezvous result (group_rank, global_ranks)"
    t.offsets = offsets
    seen: dict = {}
    for node, local, rank in composed:
        if rank:
            seen.setdefault(int(node), set()).add(int(rank) - int(local))
    shown = {n: _one(v) for n, v in seen.items() if _one(v) is not None}
    for n, off in shown.items():
        if n not in t.offsets:
            t.offsets[n] = off
            t.offsets_from = t.offsets_from or "lines that show both the local and the global rank ([defaultM]:[rankN]:)"

    if not composed and b"]:[rank" in head and t.file_offset is None:
        off = _one({int(r) - int(lo) for lo, r in _BOTH.findall(head)})
        if off is not None:
            t.file_offset = off
            t.offsets_from = "lines that show both the local and the global rank ([defaultM]:[rankN]:)"

    counts: list = []  # (per node, evidence)
    nproc = {int(a or b) for a, b in _NPROC.findall(head)} if b"nproc_per_node" in head else set()
    if _one(nproc):
        counts.append((_one(nproc), "torchrun's launch configs (nproc_per_node)"))
    if _one(sizes):
        counts.append((_one(sizes), "torchrun's rendezvous result (local_ranks)"))
    ds = {(int(a), int(b), int(c)) for a, b, c in _DS_TOPO.findall(head)} if b"num_local_procs=" in head else set()
    nnodes = {a for a, _, _ in ds}
    if ds:
        if _one({b for _, b, _ in ds}):
            counts.append((_one({b for _, b, _ in ds}), "DeepSpeed's launcher (num_local_procs)"))
        t.node_index = _one({c for _, _, c in ds})
    t.pdsh_hosts = frozenset(n.decode("ascii") for n in _PDSH_NAME.findall(head)) if b": [" in head else frozenset()
    for m in (_DS_MAPPING.finditer(head) if b"global_rank_mapping" in head else ()):
        # the global ranks of each host (WORLD INFO DICT's lists are local ranks): pdsh's `host: `
        for name, ranks in (_mapping(m.group(1)) or {}).items():
            if ranks and ranks == list(range(ranks[0], ranks[0] + len(ranks))):
                t.hosts.setdefault(name.rpartition("@")[2], ranks[0])
    for rx, what in ((_DS_MAPPING, "global_rank_mapping"), (_DS_WORLD, "WORLD INFO DICT")):
        for m in (rx.finditer(head) if what.encode() in head else ()):
            lists = _lists(m.group(1))
            if lists and _one({len(v) for v in lists}):
                counts.append((len(lists[0]), f"DeepSpeed's launcher ({what})"))
                nnodes.add(len(lists))
    local_world = ({int(x) for x in _LOCAL_WORLD.findall(head)}
                   if b"local_world_size" in head or b"LOCAL_WORLD_SIZE" in head else set())
    if _one(local_world):
        counts.append((_one(local_world), "local_world_size"))
    nodes = {}
    for k, v in (_NODES.findall(head) if b"_nodes" in head else ()):
        nodes[k] = int(v)
    if nodes.get(b"min_nodes") is not None and nodes.get(b"min_nodes") == nodes.get(b"max_nodes"):
        nnodes.add(nodes[b"min_nodes"])
    world = {int(x) for x in _WORLD.findall(head)} if b"WORLD_SIZE" in head else set()
    pods = {p.decode("ascii", "replace") for p in _POD.findall(head)} if head.startswith(b"[pod/") or b"\n[pod/" in head else set()
    if pods:
        t.kubeflow_masters = frozenset(m.group("job") for m in map(_KUBEFLOW_POD.fullmatch, pods)
                                       if m is not None and m.group("role") == "master")
        if _one(world) is not None and _one(world) == len(pods) and all(t.pod_index(p) is not None for p in pods):
            # every process is in a pod, each pod is a replica: one process per pod
            counts.append((1, "WORLD_SIZE equal to the number of pods"))
    if _one(world) and _one(nnodes) and _one(world) % _one(nnodes) == 0:
        counts.append((_one(world) // _one(nnodes), "WORLD_SIZE over the node count"))
    if whole and not counts:
        per: dict = {}
        for node, local, _ in composed:
            per.setdefault(int(node), set()).add(int(local))
        if pods:
            for name, lo in _POD_LOCAL.findall(head):
                per.setdefault(name, set()).add(int(lo))
            if len(per) != len(pods):
                per = {}  # a pod that printed no local rank: nothing to count
        elif not composed:
            locals_ = {int(x) for x in _PLAIN_LOCAL.findall(head)} if b"]:" in head else set()
            if locals_:
                per[None] = locals_
        shapes = {len(v) for v in per.values() if v == set(range(len(v)))}
        # srun's labels must be the nodes 0..N-1 themselves: with node 0 absent, what the absent
        # nodes run is not in the text
        nodes_whole = pods or set(per) == {None} or set(per) == set(range(len(per)))
        if per and nodes_whole and len(shapes) == 1 and all(v == set(range(len(v))) for v in per.values()):
            counts.append((shapes.pop(), "the distinct local ranks each " + ("pod" if pods else "node") + " printed"))
    values = {c for c, _ in counts}
    if len(values) == 1:
        t.per_node = values.pop()
        t.per_node_from = counts[0][1]
    return t
