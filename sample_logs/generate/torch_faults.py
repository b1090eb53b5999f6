#!/usr/bin/env python3
"""Small PyTorch programs that fail in known, real ways (CPU only).

Used by make_fault_logs.sh to produce the REAL sample logs in
sample_logs/faults/.  Every message in those logs is printed by PyTorch (or
safetensors / torchrun) itself; this script only sets up the situation and
prints plain training-script step lines.  Steps are 0-based.

Scenarios (first positional argument):

  anomaly-nan     set_detect_anomaly(True); an RMS-norm layer with the eps
                  added OUTSIDE the sqrt.  At --fault-step the batch holds
                  one all-zero (padding) row: forward stays finite, but
                  SqrtBackward0 computes 0 / (2 * 0) = nan in backward.
  dataloader-kill DataLoader(num_workers=2); the worker that fetches the first
                  sample of batch --fault-step SIGKILLs itself.
  ckpt-truncated  torch.save a checkpoint (model + AdamW state), cut the file
                  to --cut bytes (default: half), torch.load it.
  safetensors-truncated  safetensors save_file, cut the file the same way,
                  load_file it.  Needs the safetensors package.
  lr-spike        LR multiplied by --lr-mult for --spike-len steps from
                  --fault-step, then restored.
  lr-diverge      plain SGD (no clipping) with an LR that is too high.
  loss-zero       token-level loss masked to the "response" part of each
                  sequence; from --fault-step on the batches come from a
                  source whose prompts fill the whole (truncated) sequence,
                  so the mask is all zeros and the masked-mean loss is
                  exactly 0.0.
  ddp             DDP over gloo under torchrun, with --fault one of
                  none | crash | sigkill | input-nan | straggler |
                  thread-exception (a background thread raises, the loop
                  then waits for it forever) | handled-exception (caught,
                  traceback printed, training goes on), injected on global
                  rank --fault-rank at --fault-step.
"""
import argparse
import datetime
import os
import queue
import signal
import sys
import threading
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=[
        "anomaly-nan", "dataloader-kill", "ckpt-truncated", "safetensors-truncated",
        "lr-spike", "lr-diverge", "loss-zero", "ddp"])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--fault", default="none",
                   choices=["none", "crash", "sigkill", "input-nan", "straggler", "thread-exception",
                            "handled-exception"])
    p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=-1)
    p.add_argument("--lr-mult", type=float, default=50.0)
    p.add_argument("--spike-len", type=int, default=3)
    p.add_argument("--sleep", type=float, default=0.2, help="straggler: seconds per step")
    p.add_argument("--cut", type=int, default=-1,
                   help="checkpoints: keep this many bytes (default: half the file)")
    p.add_argument("--hidden", type=int, default=64, help="checkpoints: MLP hidden size")
    p.add_argument("--out", default="ckpt", help="checkpoint file stem (in cwd)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--pg-timeout", type=float, default=120.0, help="ddp: process group timeout, seconds")
    return p.parse_args()


class MLP(nn.Module):
    def __init__(self, d_in: int = 32, d_hidden: int = 64, n_classes: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


def make_data(n: int, rank: int = 0, seed: int = 1234, d_in: int = 32, n_classes: int = 10):
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(d_in, n_classes, generator=g)
    g = torch.Generator().manual_seed(seed + 1000 + rank)
    x = torch.randn(n, d_in, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return x, y


def pipe(step: int, loss: float, grad_norm: float, lr: float) -> str:
    return f"step {step} | loss {loss:.4f} | grad_norm {grad_norm:.4f} | lr {lr:.1e}"


# --------------------------------------------------------------------------
# anomaly-nan

class RMSNormEpsOutside(nn.Module):
    """x / (sqrt(mean(x^2)) + eps): the eps belongs inside the sqrt."""

    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True))
        return self.weight * x / (rms + self.eps)


class NormedMLP(nn.Module):
    def __init__(self, d_in: int = 32, d_hidden: int = 64, n_classes: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden, bias=False)
        self.norm = RMSNormEpsOutside(d_hidden)
        self.fc2 = nn.Linear(d_hidden, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


def anomaly_nan(args: argparse.Namespace) -> None:
    torch.autograd.set_detect_anomaly(True)
    torch.manual_seed(args.seed)
    model = NormedMLP()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    x_all, y_all = make_data(args.batch_size * args.steps, seed=args.seed)
    print(f"torch {torch.__version__}, anomaly detection on, steps {args.steps}, "
          f"batch {args.batch_size}", flush=True)
    for step in range(args.steps):
        lo = step * args.batch_size
        x, y = x_all[lo:lo + args.batch_size].clone(), y_all[lo:lo + args.batch_size]
        if step == args.fault_step:
            x[-1] = 0.0  # a padding row in the last, short batch of an epoch
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(pipe(step, loss.item(), grad_norm.item(), opt.param_groups[0]["lr"]), flush=True)


# --------------------------------------------------------------------------
# dataloader-kill

class KillingDataset(torch.utils.data.Dataset):
    def __init__(self, x: torch.Tensor, y: torch.Tensor, kill_index: int):
        self.x, self.y, self.kill_index = x, y, kill_index

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        if i == self.kill_index:
            # Stands in for the kernel OOM killer picking this worker.
            os.kill(os.getpid(), signal.SIGKILL)
        return self.x[i], self.y[i]


def dataloader_kill(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    model = MLP()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    x_all, y_all = make_data(args.batch_size * args.steps, seed=args.seed)
    ds = KillingDataset(x_all, y_all, args.fault_step * args.batch_size)
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=False,
                                     num_workers=2)
    print(f"torch {torch.__version__}, DataLoader num_workers=2, steps {args.steps}, "
          f"batch {args.batch_size}", flush=True)
    for step, (x, y) in enumerate(dl):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(pipe(step, loss.item(), grad_norm.item(), opt.param_groups[0]["lr"]), flush=True)


# --------------------------------------------------------------------------
# checkpoints

def truncate(path: str, keep: int) -> None:
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(keep)
    print(f"truncated {path}: {size} -> {keep} bytes", flush=True)


def ckpt_truncated(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    model = MLP(d_hidden=args.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    path = f"{args.out}.pt"
    torch.save({"step": 100, "model": model.state_dict(), "optimizer": opt.state_dict()}, path)
    print(f"torch {torch.__version__}: saved checkpoint {path} "
          f"({os.path.getsize(path)} bytes) at step 100", flush=True)
    # e.g. the job was killed (or the disk filled up) while writing
    truncate(path, args.cut if args.cut >= 0 else os.path.getsize(path) // 2)
    print(f"resuming from {path}", flush=True)
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])


def safetensors_truncated(args: argparse.Namespace) -> None:
    import safetensors
    from safetensors.torch import load_file, save_file
    torch.manual_seed(args.seed)
    model = MLP(d_hidden=args.hidden)
    path = f"{args.out}.safetensors"
    save_file(model.state_dict(), path)
    print(f"torch {torch.__version__}, safetensors {safetensors.__version__}: saved {path} "
          f"({os.path.getsize(path)} bytes)", flush=True)
    truncate(path, args.cut if args.cut >= 0 else os.path.getsize(path) // 2)
    print(f"loading {path}", flush=True)
    model.load_state_dict(load_file(path))


# --------------------------------------------------------------------------
# loss curves

def lr_spike(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    model = MLP()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    x_all, y_all = make_data(args.batch_size * args.steps, seed=args.seed)
    print(f"torch {torch.__version__}, AdamW lr {args.lr}, steps {args.steps}, "
          f"batch {args.batch_size}", flush=True)
    for step in range(args.steps):
        # Bug in a hand-written schedule: a restart multiplies the LR for a few steps.
        hit = args.fault_step <= step < args.fault_step + args.spike_len
        for g in opt.param_groups:
            g["lr"] = args.lr * (args.lr_mult if hit else 1.0)
        lo = step * args.batch_size
        x, y = x_all[lo:lo + args.batch_size], y_all[lo:lo + args.batch_size]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(pipe(step, loss.item(), grad_norm.item(), opt.param_groups[0]["lr"]), flush=True)


def lr_diverge(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    x_all, y_all = make_data(args.batch_size * args.steps, seed=args.seed)
    print(f"torch {torch.__version__}, SGD(momentum=0.9) lr {args.lr}, no clipping, "
          f"steps {args.steps}, batch {args.batch_size}", flush=True)
    for step in range(args.steps):
        lo = step * args.batch_size
        x, y = x_all[lo:lo + args.batch_size], y_all[lo:lo + args.batch_size]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        # max_norm=inf: measure the norm without clipping.
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        opt.step()
        print(pipe(step, loss.item(), grad_norm.item(), opt.param_groups[0]["lr"]), flush=True)


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 50, d: int = 32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.fc = nn.Linear(d, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.fc(self.emb(ids))))


def loss_zero(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    vocab, seq_len, max_len = 50, 24, 24
    model = TinyLM(vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    g = torch.Generator().manual_seed(args.seed)
    print(f"torch {torch.__version__}, TinyLM next-token loss on response tokens only, "
          f"max_len {max_len}, steps {args.steps}, batch {args.batch_size}", flush=True)
    for step in range(args.steps):
        ids = torch.randint(0, vocab, (args.batch_size, seq_len + 1), generator=g)
        # Source A: 8-token prompts.  Source B (from --fault-step on): 40-token
        # prompts, truncated to max_len -> no response token survives.
        prompt_len = 8 if step < args.fault_step else 40
        inp, tgt = ids[:, :-1][:, :max_len], ids[:, 1:][:, :max_len]
        pos = torch.arange(inp.shape[1])
        mask = (pos >= prompt_len).float().expand_as(tgt)
        opt.zero_grad(set_to_none=True)
        tok_loss = F.cross_entropy(model(inp).reshape(-1, vocab), tgt.reshape(-1),
                                   reduction="none").view_as(tgt)
        loss = (tok_loss * mask).sum() / mask.sum().clamp(min=1.0)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(pipe(step, loss.item(), grad_norm.item(), opt.param_groups[0]["lr"]), flush=True)


# --------------------------------------------------------------------------
# ddp

def ddp(args: argparse.Namespace) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    group_rank = int(os.environ.get("GROUP_RANK", "0"))
    torch.manual_seed(args.seed)
    model = DDP(MLP())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    x_all, y_all = make_data(args.batch_size * args.steps, rank=rank, seed=args.seed)
    print(f"rank {rank}/{world} (node {group_rank}, local_rank {local_rank}): "
          f"torch {torch.__version__}, steps {args.steps}, batch {args.batch_size}", flush=True)
    me = rank == args.fault_rank
    t_start = time.time()
    for step in range(args.steps):
        t0 = time.perf_counter()
        if args.fault == "straggler" and me and step >= args.fault_step:
            time.sleep(args.sleep)  # slow data loading on this rank only
        lo = step * args.batch_size
        x, y = x_all[lo:lo + args.batch_size], y_all[lo:lo + args.batch_size]
        if args.fault == "input-nan" and me and step == args.fault_step:
            x = x * float("nan")
        if args.fault == "crash" and me and step == args.fault_step:
            raise ValueError(f"bad sample in batch at step {step}: label out of range")
        if args.fault == "sigkill" and me and step == args.fault_step:
            # Stands in for the kernel OOM killer.
            os.kill(os.getpid(), signal.SIGKILL)
        if args.fault == "thread-exception" and me and step == args.fault_step:
            # A background prefetch thread dies (threading's excepthook prints it, the process goes
            # on) and the training loop then waits forever for the batch it was to deliver.
            batches: queue.Queue = queue.Queue()

            def prefetch() -> None:
                raise OSError(f"prefetch of batch {step} failed: shard unavailable")

            threading.Thread(target=prefetch, name="prefetch").start()
            batches.get()
        if args.fault == "handled-exception" and me and step == args.fault_step:
            # The script catches an error, prints its traceback and trains on (a skipped batch).
            try:
                raise ValueError(f"bad sample in batch at step {step}: label out of range")
            except ValueError:
                traceback.print_exc()
                print(f"rank {rank}: skipping batch {step}", flush=True)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        t2 = time.perf_counter()
        line = pipe(step, loss.item(), grad_norm.item(), opt.param_groups[0]["lr"])
        if args.fault == "straggler":
            line += f" | data_time_ms {(t1 - t0) * 1e3:.1f} | step_time_ms {(t2 - t0) * 1e3:.1f}"
        print(line, flush=True)
    print(f"rank {rank}: finished {args.steps} steps in {time.time() - t_start:.1f}s", flush=True)
    dist.destroy_process_group()


def main() -> None:
    args = parse_args()
    {
        "anomaly-nan": anomaly_nan,
        "dataloader-kill": dataloader_kill,
        "ckpt-truncated": ckpt_truncated,
        "safetensors-truncated": safetensors_truncated,
        "lr-spike": lr_spike,
        "lr-diverge": lr_diverge,
        "loss-zero": loss_zero,
        "ddp": ddp,
    }[args.scenario](args)


if __name__ == "__main__":
    main()
