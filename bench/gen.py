"""Seeded generator of a large multi-rank training console log with known faults (the benchmark input).

The line SHAPES are copied from real logs: sample_logs/torch (torchrun --tee `[defaultN]:` step
prints, the torchrun OMP banner, c10d reducer warnings), sample_logs/hf (Trainer dicts glued to
`\\r` tqdm redraws), sample_logs/deepspeed (log_dist lines, loss-scaler OVERFLOW, timer.py), and
the verified templates of Megatron-LM's training_log line (megatron/training/training.py, printed
by the last rank, here under Open MPI's `--tag-output` prefix), NCCL INFO init chatter
(src/debug.cc: `host:pid:tid [dev] NCCL INFO ...`) and vLLM's V1 stats line
(vllm/v1/metrics/loggers.py). Numbers are made up; the shapes are not.

Streams and injected faults (the ground truth the benchmark checks, see `truth()`):
  ranks 0..R-1   `[defaultR]:` plain PyTorch `step=N, loss=.., grad_norm=.., lr=..` prints (DDP):
                 rank F (5 by default) has loss=nan at step K while the others are finite and
                 only see grad_norm=nan; the step is skipped, training recovers
                 -> nan-rank-local (initiating rank F, step K) + nan-skip-recover.
                 Rank 0 also carries DeepSpeed log_dist lines; the fp16 loss scaler overflows on
                 the first steps -> loss-scale-warmup (benign).
  rank 15        `[1,15]<stdout>:` (mpirun --tag-output) Megatron-LM iteration lines (print_rank_last), healthy.
  unprefixed     HF Trainer log dicts + tqdm bars; from step P on the loss and grad norm stay nan
                 -> nan-persistent (step P); vLLM V1 stats lines (healthy) in between.
Most lines are noise the parsers must skip (NCCL INFO, timer lines, warnings, user prints), as
in real multi-GB console logs; `--dense` drops most of the noise (a worst case: mostly events).

Modes: one interleaved console log (default), `--per-rank DIR` (the same data split into one
file per stream, prefixes removed, as torchrun --log-dir writes it), `--files N DIR` (a folder of
N small per-rank files of an N-rank job; rank N//2+17 goes NaN first).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from typing import Callable, Iterator

TORCHRUN_BANNER = [
    "W1129 21:15:15.891000 5293 torch/distributed/run.py:874] ",
    "W1129 21:15:15.891000 5293 torch/distributed/run.py:874] *****************************************",
    "W1129 21:15:15.891000 5293 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ",
    "W1129 21:15:15.891000 5293 torch/distributed/run.py:874] *****************************************",
]
REDUCER_WARN = ("[rank{r}]:[W1129 21:24:13.79590{r}716 reducer.cpp:1529] Warning: find_unused_parameters=True was "
                "specified in DDP constructor, but did not find any unused parameters in the forward pass. This flag "
                "results in an extra traversal of the autograd graph every iteration,  which can adversely affect "
                "performance. (function operator())")
NCCL_INFO = [
    "gpu-node-0:{pid}:{pid} [{r}] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "gpu-node-0:{pid}:{pid} [{r}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
    "gpu-node-0:{pid}:{tid} [{r}] NCCL INFO Channel {c:02d}/32 : {r}[{r}] -> {n}[{n}] via P2P/IPC/read",
    "gpu-node-0:{pid}:{tid} [{r}] NCCL INFO Connected all rings",
    "gpu-node-0:{pid}:{tid} [{r}] NCCL INFO comm 0x55d{pid:x} rank {r} nranks 8 cudaDev {r} nvmlDev {r} busId {c}000 commId 0x4f3a - Init COMPLETE",
]
DS_TIMER = ("[{ts}] [INFO] [timer.py:260:stop] epoch=0/micro_step={ms}/global_step={s}, RunningAvgSamplesPerSec={a:.14f}, "
            "CurrSamplesPerSec={c:.14f}, MemAllocated=1.47GB, MaxMemAllocated=15.06GB")
DS_TIME_MS = "[Rank 0] time (ms) | fwd: {f:.2f} | bwd: {b:.2f} | bwd_inner: {bi:.2f} | bwd_allreduce: {ba:.2f} | step: {st:.2f}"
DS_PROGRESS = "[{ts}] [INFO] [logging.py:128:log_dist] [Rank 0] step={s}, skipped={k}, lr=[{lr}], mom=[(0.9, 0.999)]"
DS_OVERFLOW = ("[{ts}] [INFO] [loss_scaler.py:266:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
               "Attempted loss scale: {a}, reducing to {b}")
USER_PRINT = "rank {r}/8: data shard {d}, samples seen {n}, tokens {t}"
MEGATRON = (" [2026-05-28 22:{mm:02d}:{ss:02d}] iteration {it:8d}/{tot:8d} | consumed samples: {cs:12d} | elapsed time per "
            "iteration (ms): {el:.1f} | learning rate: {lr:.6E} | global batch size:   512 | lm loss: {loss:.6E} | "
            "loss scale: 1.0 | grad norm: {gn:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")
VLLM = ("(APIServer pid=3646) INFO 05-19 10:{mm:02d}:{ss:02d} [loggers.py:271] Engine 000: Avg prompt throughput: {p:.1f} "
        "tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {run} reqs, Waiting: 0 reqs, GPU KV cache "
        "usage: {kv:.1f}%, Prefix cache hit rate: {hit:.1f}%")
HF_DICT = "{{'loss': '{loss}', 'grad_norm': '{gn}', 'learning_rate': '{lr}', 'epoch': '{ep}'}}"
TQDM = "{pct:3d}%|{bar}| {n}/{tot} [00:{a:02d}<00:{b:02d}, {rate:.2f}it/s]"

MEGATRON_RANK = 15


def _ts(step: int) -> str:
    s = 13 * 3600 + step
    return f"2026-11-29 {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d},{step * 7 % 1000:03d}"


class Job:
    """One job's output as (stream, line) pairs; stream: an int rank or 'hf' (unprefixed)."""

    def __init__(self, steps: int, ranks: int = 8, fault_rank: int = 5, seed: int = 1, dense: bool = False):
        self.steps = steps
        self.ranks = ranks
        self.fault_rank = fault_rank
        self.rng = random.Random(seed)
        self.dense = dense
        self.nan_step = steps // 3  # K: rank-local NaN
        self.persist_step = max(10, steps * 4 // 5)  # P: HF stream NaN from here on
        self.warmup = 4  # DeepSpeed overflows on steps 0..3

    def truth(self) -> list[dict]:
        return [
            {"id": "nan-rank-local", "initiating_rank": self.fault_rank, "first_step": self.nan_step},
            {"id": "nan-persistent", "first_step": self.persist_step + 1},
            {"id": "loss-scale-warmup"},
        ]

    def lines(self) -> Iterator[tuple[object, str]]:
        rng = self.rng
        rnd = rng.random
        R = self.ranks
        for b in TORCHRUN_BANNER:
            yield "hf", b
        for r in range(R):
            pid = 4000 + r
            for i, t in enumerate(NCCL_INFO):
                yield r, t.format(pid=pid, tid=pid + 7, r=r, n=(r + 1) % R, c=i)
            yield r, REDUCER_WARN.format(r=r)
        scale = 2 ** 16
        loss = [2.35 + 0.02 * r for r in range(R)]
        hf_loss = 6.8
        tot = self.steps
        for s in range(self.steps):
            nan_here = s == self.nan_step
            for r in range(R):
                loss[r] = max(0.3, loss[r] - 0.0002 + (rnd() - 0.5) * 0.01)
                lv = "nan" if nan_here and r == self.fault_rank else f"{loss[r]:.4f}"
                gv = "nan" if nan_here else f"{0.3 + rnd() * 0.1:.4f}"
                if not self.dense:
                    pid = 4000 + r
                    for c in range(3):
                        yield r, NCCL_INFO[2].format(pid=pid, tid=pid + 7, r=r, n=(r + 1) % R, c=(s + c) % 32)
                    yield r, USER_PRINT.format(r=r, d=s % 64, n=s * 64, t=s * 65536)
                    if s % 4 == r % 4:
                        yield r, REDUCER_WARN.format(r=r)
                yield r, f"step={s}, loss={lv}, grad_norm={gv}, lr=0.001"
            # DeepSpeed on rank 0: fp16 scaler warm-up on the first steps, one overflow at K
            if s < self.warmup or nan_here:
                yield 0, DS_OVERFLOW.format(ts=_ts(s), a=scale, b=scale // 2)
                scale //= 2
            if not self.dense:
                yield 0, DS_TIMER.format(ts=_ts(s), ms=2 * s, s=s, a=50 + rnd(), c=50 + rnd() * 8)
                yield 0, DS_TIME_MS.format(f=120 + rnd() * 9, b=230 + rnd() * 9, bi=200 + rnd(), ba=30 + rnd(), st=12 + rnd())
            if s % 10 == 0:
                k = self.warmup + (1 if s > self.nan_step else 0)
                yield 0, DS_PROGRESS.format(ts=_ts(s), s=s, k=min(k, s), lr="0.001")
            # Megatron iteration line, last rank only
            if s % 2 == 0:
                yield MEGATRON_RANK, MEGATRON.format(
                    mm=s // 60 % 60, ss=s % 60, it=s + 1, tot=tot, cs=(s + 1) * 512, el=850 + rnd() * 20,
                    lr=3e-4, loss=max(0.5, 8.0 - s * 0.001), gn=0.8 + rnd() * 0.1)
            # HF Trainer: a dict glued to the tqdm redraw that follows it
            hf_loss = max(0.5, hf_loss - 0.0005)
            bad = s >= self.persist_step
            d = HF_DICT.format(loss="nan" if bad else f"{hf_loss:.4g}", gn="nan" if bad else f"{1 + rnd() * 0.4:.4g}",
                               lr="0.0004", ep=f"{s / tot:.4g}")
            # the bar before the dict shows the previous count; the dict takes the count of the redraw
            # after it (HF loop iteration s logs step s + 1), as in sample_logs/hf/*.log
            pct = s * 100 // tot
            bar = TQDM.format(pct=pct, bar=("#" * (pct // 10)).ljust(10), n=s, tot=tot, a=s % 60, b=(tot - s) % 60,
                              rate=20 + rnd() * 8)
            yield "hf", "\r" + bar + "\r" + " " * 46 + "\r" + d
            if not self.dense and s % 3 == 0:
                yield "hf", VLLM.format(mm=s // 60 % 60, ss=s % 60, p=100 + rnd() * 50, g=1000 + rnd() * 100,
                                        run=16 + s % 4, kv=40 + rnd() * 5, hit=rnd() * 10)

    @staticmethod
    def bytes_per_step(dense: bool) -> int:
        return 1200 if dense else 4300


def _prefixed(stream: object, line: str) -> str:
    if stream == "hf":
        return line
    if stream == MEGATRON_RANK:
        return f"[1,{stream}]<stdout>:{line}"  # Open MPI --tag-output (mpirun-launched Megatron)
    return f"[default{stream}]:{line}"  # torchrun --tee 3


def write_console(path: str, job: Job) -> int:
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 22) as f:
        buf = []
        for stream, line in job.lines():
            buf.append(_prefixed(stream, line))
            if len(buf) >= 8192:
                n += len(buf)
                f.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            n += len(buf)
            f.write("\n".join(buf) + "\n")
    return n


def write_per_rank(folder: str, job: Job) -> int:
    """The same data, one file per stream without prefixes: rank_R.log, and trainer.log for the rest."""
    os.makedirs(folder, exist_ok=True)
    files: dict = {}

    def out(stream: object):
        f = files.get(stream)
        if f is None:
            name = "trainer.log" if stream == "hf" else f"rank_{stream}.log"
            f = files[stream] = open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n", buffering=1 << 20)
        return f

    n = 0
    for stream, line in job.lines():
        out(stream).write(line + "\n")
        n += 1
    for f in files.values():
        f.close()
    return n


def write_many(folder: str, nfiles: int, steps: int, seed: int) -> tuple[int, dict]:
    """A folder of nfiles small per-rank files of one nfiles-rank DDP job; one rank NaN first."""
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)
    bad_rank = nfiles // 2 + 17 if nfiles > 40 else nfiles - 1
    k = steps // 2
    width = len(str(nfiles - 1))
    for r in range(nfiles):
        lines = [f"rank {r}/{nfiles}: torch 2.13.0+cpu, params 2762, amp=off, steps {steps}, batch 64"]
        loss = 2.35
        for s in range(steps):
            loss = max(0.3, loss - 0.0005 + (rng.random() - 0.5) * 0.01)
            lv = "nan" if (s == k and r == bad_rank) else f"{loss:.4f}"
            gv = "nan" if s == k else f"{0.3 + rng.random() * 0.1:.4f}"
            lines.append(f"data shard {s % 64}, samples seen {s * 64}, tokens {s * 65536}")
            lines.append(f"step={s}, loss={lv}, grad_norm={gv}, lr=0.001")
        with open(os.path.join(folder, f"rank_{r:0{width}d}.log"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    truth = [{"id": "nan-rank-local", "initiating_rank": bad_rank, "first_step": k}]
    return nfiles, {"truth": truth}


def parse_size(s: str) -> int:
    s = s.strip().upper().rstrip("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(float(s.rstrip("KMG")) * mult)


def job_for_size(size: int, ranks: int, seed: int, dense: bool) -> Job:
    steps = max(40, size // Job.bytes_per_step(dense) * 8 // max(ranks, 1))
    return Job(steps=steps, ranks=ranks, seed=seed, dense=dense)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="output file (console mode) or folder (--per-rank / --files)")
    ap.add_argument("--size", default="100M", help="approximate size: 10M, 1G, 4G ...")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dense", action="store_true", help="almost no noise lines: mostly event lines")
    ap.add_argument("--per-rank", action="store_true", help="write one file per stream into the folder OUT")
    ap.add_argument("--files", type=int, default=0, help="write N small per-rank files into the folder OUT")
    ap.add_argument("--steps", type=int, default=200, help="steps per file with --files")
    a = ap.parse_args(argv)
    if a.files:
        n, info = write_many(a.out, a.files, a.steps, a.seed)
        print(f"wrote {n} files to {a.out}; truth {info['truth']}", file=sys.stderr)
        return 0
    job = job_for_size(parse_size(a.size), a.ranks, a.seed, a.dense)
    write: Callable[[str, Job], int] = write_per_rank if a.per_rank else write_console
    n = write(a.out, job)
    print(f"wrote {n} lines ({job.steps} steps) to {a.out}; truth {job.truth()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
