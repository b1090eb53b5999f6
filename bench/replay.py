"""A benchmark corpus replayed from the real logs in sample_logs/, to any size.

bench/gen.py writes its lines from templates; this corpus is made of the lines of real runs
(sample_logs/, see each folder's MANIFEST.toml and README.md for where they came from), so the
benchmark covers the shapes users have. One multi-node job, one group of streams per source log:

  group      source (sample_logs/)                          launcher prefix (console)         ranks
  torch      torch/ddp_nan_rank2.log (torchrun, 4 ranks)    `[defaultN]:` torchrun --tee       0-3
  deepspeed  deepspeed/fp16_healthy.log                     `8: ` Slurm srun --label            8
  megatron   megatron/healthy_iterations_leonardo_excerpt   `[1,12]<stdout>:` Open MPI --tag-output  12
  hf         hf/trainer_nan_filter_off.log (tqdm + dicts)   `trainer-1  | ` docker compose     -
  vllm       vllm/healthy_shutdown_race.log                 `[pod/vllm-0/vllm] 2026-11-29T21:59:07.001Z `
                                                            kubectl logs --prefix --timestamps   -
  oom        cuda/oom_rank11_multinode_excerpt.log          `11: ` Slurm srun --label           11

Each source is cut into units at its step lines (a line whose step is above every step before
it; for vLLM, each stats line). The units before the fault (or, in a healthy source, all but
the last) are the body: it is played as many times as the size asks, with the step numbers
(`step=`, `global_step=`, Megatron's `iteration N/ T`, tqdm's `n/total`) moved on by one body's
length each time, so steps keep rising; then the rest of the source (the fault, the shutdown,
the tracebacks) once, at the end. Nothing else in a line changes: the prefixes, the `\\r` tqdm
redraws, the tracebacks and the interleaving of the ranks within a source are the source's.
Groups are interleaved with one another unit by unit (seeded), in proportion to their length,
so every group runs from the start of the file to its end.

Injected faults, with their initiating ranks (`truth()`, checked on every bench run):
  nan-rank-local   rank 2 (torch group: loss=nan on rank 2, grad_norm=nan on all four)
  nan-persistent   the HF group (loss and grad_norm nan to the end; no rank)
  cuda-oom         rank 11 (the OOM traceback at the end of the log)
The manifests also expect nan-skip-recover (torch) and cuda-alloc-fragmentation (the OOM);
anything else in a report is a false alarm (`allowed()`): the deepspeed, megatron and vllm groups
are healthy, vllm with its shutdown-race EngineDeadError trap.

    python bench/replay.py /tmp/r.log --size 200M            # one console log
    python bench/replay.py /tmp/r_ranks --size 200M --per-rank   # one file per stream, prefixes peeled
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(os.path.dirname(HERE), "sample_logs")

Line = tuple[object, str]  # (stream key, text without the launcher prefix)


@dataclass
class Group:
    """One source log replayed as one group of streams."""

    name: str
    path: str
    weight: float  # share of the target size
    peel: Optional[re.Pattern]  # the source's own launcher prefix; group(1) is its rank
    render: Callable[[object, int], str]  # (stream key, unit index) -> the console prefix
    unit: re.Pattern  # a line that can start a unit; group(1), if any, is its step
    tail: Optional[re.Pattern]  # the first line of the fault / shutdown (the rest plays once)
    shifts: list[re.Pattern] = field(default_factory=list)  # step numbers moved on per copy
    totals: list[re.Pattern] = field(default_factory=list)  # totals set to the replayed length
    rank_of: Callable[[object], Optional[int]] = lambda key: None  # per-rank layout file name
    body_from: int = 0  # units before this step play once, in the header (a curve's steep start)


def _torch_prefix(key: object, i: int) -> str:
    return "" if key is None else f"[default{key}]:"


def _kubectl_prefix(key: object, i: int) -> str:
    """`kubectl logs --prefix --timestamps`: the pod/container, then an RFC 3339 time."""
    s = 21 * 3600 + 59 * 60 + i // 50
    return f"[pod/vllm-0/vllm] 2026-11-29T{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{i % 1000:03d}Z "


GROUPS = [
    Group("torch", "torch/ddp_nan_rank2.log", 0.45, re.compile(r"\[default(\d+)\]:"), _torch_prefix,
          re.compile(r"^step=(\d+), loss="), re.compile(r"loss=nan"),
          shifts=[re.compile(r"(?<=^step=)\d+")], rank_of=lambda k: k, body_from=20),
    Group("deepspeed", "deepspeed/fp16_healthy.log", 0.15, None, lambda k, i: "8: ",
          re.compile(r"\[Rank 0\] step=(\d+), skipped="), None,
          shifts=[re.compile(r"(?<=\] step=)\d+"), re.compile(r"(?<=micro_step=)\d+"), re.compile(r"(?<=global_step=)\d+"),
                  re.compile(r"(?<=^iter )\d+")], rank_of=lambda k: 8, body_from=40),
    Group("megatron", "megatron/healthy_iterations_leonardo_excerpt.log", 0.1, re.compile(r"\[lrdn\d+:\d+\]: "),
          lambda k, i: "[1,12]<stdout>:", re.compile(r"iteration\s+(\d+)/"), None,
          shifts=[re.compile(r"(?<=iteration)\s+\d+(?=/)")], totals=[re.compile(r"(?<=/)\s+\d+(?= \|)")],
          rank_of=lambda k: 12, body_from=250),
    Group("hf", "hf/trainer_nan_filter_off.log", 0.15, None, lambda k, i: "trainer-1  | ",
          re.compile(r"\| (\d+)/\d+ \[[^\r]*\r[^\r]*\r\{'loss'"), re.compile(r"'loss': 'nan'"), body_from=10,
          shifts=[re.compile(r"(?<=\| )\d+(?=/\d+ \[)")], totals=[re.compile(r"(?<=/)\d+(?= \[)")]),
    Group("vllm", "vllm/healthy_shutdown_race.log", 0.15, None, _kubectl_prefix,
          re.compile(r"\[loggers\.py:\d+\] Engine 000: "), re.compile(r"\[shutdown\]")),
    Group("oom", "cuda/oom_rank11_multinode_excerpt.log", 0.0, None, lambda k, i: "11: ",
          re.compile(r"^$"), re.compile(r""), rank_of=lambda k: 11),
]


def _tail_shift(name: str, size: int) -> int:
    """How far the group's steps moved on by the time its tail plays."""
    g = next(g for g in GROUPS if g.name == name)
    _, units, _, period = _units(g, _read(g))
    return (_copies(g, units, size) - 1) * period


def truth(size: int) -> list[dict]:
    """The injected faults: finding id, initiating rank, first step (the step the source's
    MANIFEST.toml gives, moved on by the replay)."""
    return [
        # sample_logs/torch/MANIFEST.toml: ddp_nan_rank2.log, initiating_rank 2, first_bad_step 40
        {"id": "nan-rank-local", "initiating_rank": 2, "first_step": 40 + _tail_shift("torch", size)},
        # sample_logs/hf/MANIFEST.toml: trainer_nan_filter_off.log, first_bad_step 20
        {"id": "nan-persistent", "first_step": 20 + _tail_shift("hf", size)},
        # sample_logs/cuda/MANIFEST.toml: oom_rank11_multinode_excerpt.log, initiating_rank 11
        {"id": "cuda-oom", "initiating_rank": 11},
    ]


def allowed() -> list[str]:
    """Findings the sources' manifests also expect (anything else in a report is a false alarm:
    the deepspeed, megatron and vllm groups are healthy)."""
    return ["nan-skip-recover", "cuda-alloc-fragmentation"]


def _read(g: Group) -> list[Line]:
    with open(os.path.join(SAMPLES, g.path), encoding="utf-8", newline="\n") as f:
        raw = f.read().split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    out: list[Line] = []
    for text in raw:
        key: object = None
        if g.peel is not None:
            m = g.peel.match(text)
            if m is not None:
                key = int(m.group(1)) if m.groups() else 0
                text = text[m.end():]
        out.append((key, text))
    return out


def _units(g: Group, lines: list[Line]) -> tuple[list[Line], list[list[Line]], list[Line], int]:
    """(header, body units, tail, steps per body copy)."""
    if g.weight == 0:
        return [], [], list(lines), 0
    header: list[Line] = []
    units: list[list[Line]] = []
    steps: list[int] = []
    tail: list[Line] = []
    for i, (key, text) in enumerate(lines):
        if g.tail is not None and units and g.tail.search(text):
            # the fault's unit starts at the last step line before it
            tail = units.pop() + list(lines[i:])
            tail_step = steps.pop()
            break
        m = g.unit.search(text)
        if m is not None:
            step = int(m.group(1)) if m.groups() else (steps[-1] + 1 if steps else 0)
            if not steps or step > steps[-1]:
                steps.append(step)
                units.append([])
        (units[-1] if units else header).append((key, text))
    else:  # healthy: the last unit and what follows it play once, at the end
        tail = units.pop() if len(units) > 1 else []
        tail_step = steps.pop() if tail else 0
    while len(units) > 1 and steps[0] < g.body_from:
        header += units.pop(0)
        steps.pop(0)
    period = tail_step - steps[0] if steps and g.shifts else 0
    return header, units, tail, period


def _shift(g: Group, text: str, by: int, total_by: int) -> str:
    if by:
        for p in g.shifts:
            text = p.sub(lambda m: str(int(m.group()) + by).rjust(len(m.group())), text)
    if total_by:
        for p in g.totals:
            text = p.sub(lambda m: str(int(m.group()) + total_by).rjust(len(m.group())), text)
    return text


def _size(lines) -> int:
    return sum(len(t.encode()) + 24 for _, t in lines)


def _copies(g: Group, units: list[list[Line]], size: int) -> int:
    body_bytes = sum(_size(u) for u in units) or 1
    return max(1, round(size * g.weight / body_bytes)) if units else 0


def _play(g: Group, size: int, seed: int) -> tuple[Iterator[tuple[float, list[Line]]], int]:
    """The group's units with their interleaving keys (0..1), and how many there are."""
    header, units, tail, period = _units(g, _read(g))
    copies = _copies(g, units, size)
    n = 2 + copies * len(units)
    rng = random.Random(f"{seed}-{g.name}")

    def gen() -> Iterator[tuple[float, list[Line]]]:
        total_by = (copies - 1) * period
        k = 0
        yield 0.0, [(key, _shift(g, t, 0, total_by)) for key, t in header]
        for c in range(copies):
            for u in units:
                k += 1
                yield (k + rng.random()) / n, [(key, _shift(g, t, c * period, total_by)) for key, t in u]
        if tail:
            # a healthy tail ends its group; the fault tails land near the end of the file
            yield (0.97 + 0.02 * rng.random()) if g.name == "oom" else 1.0 - 1e-9, \
                [(key, _shift(g, t, max(copies - 1, 0) * period, total_by)) for key, t in tail]

    return gen(), n


def units(size: int, seed: int = 1) -> Iterator[tuple[Group, list[Line]]]:
    """Every group's units, interleaved."""
    def tagged(gi: int, g: Group) -> Iterator[tuple[float, int, Group, list[Line]]]:
        for key, lines in _play(g, size, seed)[0]:
            yield key, gi, g, lines

    streams = [tagged(gi, g) for gi, g in enumerate(GROUPS)]
    for _, _, g, lines in heapq.merge(*streams, key=lambda x: (x[0], x[1])):
        yield g, lines


def write_console(path: str, size: int, seed: int = 1) -> int:
    n = 0
    i = 0
    with open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 22) as f:
        buf: list[str] = []
        for g, lines in units(size, seed):
            i += 1
            for key, text in lines:
                buf.append(g.render(key, i) + text if (key is not None or g.peel is None) else text)
            if len(buf) >= 8192:
                n += len(buf)
                f.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            n += len(buf)
            f.write("\n".join(buf) + "\n")
    return n


def write_per_rank(folder: str, size: int, seed: int = 1) -> int:
    """The same streams, one file per stream without the launcher prefixes (torchrun --log-dir
    style): rank_N.log for a ranked stream, GROUP.log for the rest."""
    os.makedirs(folder, exist_ok=True)
    files: dict = {}
    n = 0
    for g, lines in units(size, seed):
        for key, text in lines:
            rank = g.rank_of(key)
            name = f"rank_{rank}.log" if rank is not None else f"{g.name}.log"
            f = files.get(name)
            if f is None:
                f = files[name] = open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n", buffering=1 << 20)
            f.write(text + "\n")
            n += 1
    for f in files.values():
        f.close()
    return n


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, HERE)
    import gen  # noqa: E402  (parse_size)

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="output file, or folder with --per-rank")
    ap.add_argument("--size", default="50M")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-rank", action="store_true")
    a = ap.parse_args(argv)
    size = gen.parse_size(a.size)
    n = (write_per_rank if a.per_rank else write_console)(a.out, size, a.seed)
    print(f"wrote {n} lines to {a.out}; truth {truth(size)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
