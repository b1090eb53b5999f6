#!/usr/bin/env python3
"""Tiny PyTorch training script used to produce REAL sample logs for nanscope.

Trains a 2-layer MLP on a fixed synthetic 10-class classification problem
(random data, labels from a random "teacher" matrix), either as a single
process or under torchrun with DDP over gloo (CPU only).  One fault can be
injected at a known rank and step with --fault / --fault-rank / --fault-step.

Every value printed on a step line is the Python formatting of the real
tensor value (so a NaN prints as ``nan`` and an infinity as ``inf``).

Faults:
  none            clean run
  grad-inf        after backward, write +inf into one gradient element on
                  --fault-rank at --fault-step (stands in for an fp16
                  overflow); with --amp the GradScaler skips that step and
                  halves its scale
  input-nan       multiply the input batch of --fault-rank by NaN at
                  --fault-step (NaN loss on that rank only; under DDP the
                  all-reduce spreads NaN gradients to every rank)
  weight-nan      write NaN into fc1.weight[0, 0] at --fault-step (NaN
                  forever after: nothing resets the weight)
  crash           --fault-rank indexes past the end of its data shard at
                  --fault-step -> real IndexError raised by torch
  hang            --fault-rank stops joining collectives at --fault-step
                  (sleeps --hang-seconds); the others hit the gloo timeout
  oom             --fault-rank lowers its own RLIMIT_AS right before a large
                  allocation at --fault-step -> real DefaultCPUAllocator error

Step line formats (--fmt):
  pipe   step 12 | loss 2.3012 | grad_norm 0.9134 | lr 1.0e-03 | scale 32768.0
  kv     step=12, loss=2.3012, grad_norm=0.9134, lr=0.001
  colon  Step 12: loss: 2.3012
"""
import argparse
import datetime
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--fmt", choices=["pipe", "kv", "colon"], default="pipe")
    p.add_argument("--amp", action="store_true",
                   help="torch.autocast('cpu', float16) + torch.amp.GradScaler('cpu')")
    p.add_argument("--init-scale", type=float, default=2.0 ** 16)
    p.add_argument("--growth-interval", type=int, default=2000)
    p.add_argument("--scheduler", action="store_true",
                   help="LambdaLR linear warmup, stepped after every optimizer step")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--fault", default="none",
                   choices=["none", "grad-inf", "input-nan", "weight-nan", "crash", "hang", "oom"])
    p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=-1)
    p.add_argument("--skip-nonfinite", action="store_true",
                   help="without --amp: zero grads and skip optimizer.step() when grad norm is non-finite")
    p.add_argument("--pg-timeout", type=float, default=1800.0,
                   help="init_process_group timeout in seconds")
    p.add_argument("--hang-seconds", type=float, default=600.0)
    p.add_argument("--oom-gib", type=float, default=8.0)
    p.add_argument("--record", action="store_true",
                   help="wrap main() in torch.distributed.elastic's @record (error file for torchrun)")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args()


class MLP(nn.Module):
    def __init__(self, d_in=32, d_hidden=64, n_classes=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, n_classes)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def make_shard(rank, n, d_in=32, n_classes=10, seed=1234):
    # The teacher is shared by all ranks, the samples differ per rank.
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(d_in, n_classes, generator=g)
    g = torch.Generator().manual_seed(seed + 1000 + rank)
    x = torch.randn(n, d_in, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return x, y


def fmt_line(fmt, step, loss, grad_norm, lr, scale):
    if fmt == "pipe":
        s = f"step {step} | loss {loss:.4f} | grad_norm {grad_norm:.4f} | lr {lr:.1e}"
        if scale is not None:
            s += f" | scale {scale}"
        return s
    if fmt == "kv":
        s = f"step={step}, loss={loss:.4f}, grad_norm={grad_norm:.4f}, lr={lr:.6g}"
        if scale is not None:
            s += f", scale={scale}"
        return s
    return f"Step {step}: loss: {loss:.4f}"


def main():
    args = parse_args()
    distributed = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    if distributed:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group(
            "gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1

    torch.manual_seed(args.seed)  # same initial weights on every rank
    model = MLP()
    if distributed:
        model = DDP(model)
    raw = model.module if distributed else model
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = None
    if args.scheduler:
        w = args.warmup
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / w))
    scaler = None
    if args.amp:
        scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale,
                                      growth_interval=args.growth_interval)

    n = args.batch_size * args.steps
    x_all, y_all = make_shard(rank, n, seed=args.seed)

    print(f"rank {rank}/{world}: torch {torch.__version__}, params "
          f"{sum(p.numel() for p in model.parameters())}, amp={'fp16' if args.amp else 'off'}, "
          f"steps {args.steps}, batch {args.batch_size}", flush=True)

    is_fault_rank = rank == args.fault_rank
    t0 = time.time()
    for step in range(args.steps):
        lo = step * args.batch_size
        hi = lo + args.batch_size
        if args.fault == "crash" and is_fault_rank and step == args.fault_step:
            # Off-by-one-shard bug: index past the end of this rank's data.
            idx = torch.arange(lo, hi) + n
            x, y = x_all[idx], y_all[idx]
        else:
            x, y = x_all[lo:hi], y_all[lo:hi]

        if args.fault == "input-nan" and is_fault_rank and step == args.fault_step:
            x = x * float("nan")
        if args.fault == "weight-nan" and step == args.fault_step:
            with torch.no_grad():
                raw.fc1.weight[0, 0] = float("nan")
        if args.fault == "hang" and is_fault_rank and step == args.fault_step:
            # Stops taking part in collectives (e.g. stuck in I/O).
            time.sleep(args.hang_seconds)
        if args.fault == "oom" and is_fault_rank and step == args.fault_step:
            # Real allocation failure: cap this process's address space just
            # above what it uses now, then allocate a large buffer.
            with open("/proc/self/status") as f:
                vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
            resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20), resource.RLIM_INFINITY))
            nbytes = int(args.oom_gib * (1 << 30))
            buf = torch.empty(nbytes // 4, dtype=torch.float32)
            buf.zero_()

        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            with torch.autocast("cpu", dtype=torch.float16):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
            scaler.scale(loss).backward()
        else:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()

        if args.fault == "grad-inf" and is_fault_rank and step == args.fault_step:
            with torch.no_grad():
                raw.fc2.weight.grad[0, 0] = float("inf")

        skipped = False
        if scaler is not None:
            scaler.unscale_(opt)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scale_before = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            scale = scaler.get_scale()
        else:
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scale = None
            if args.skip_nonfinite and not torch.isfinite(grad_norm):
                print(f"WARNING: non-finite grad norm {grad_norm.item()} at step {step}, "
                      f"zeroing grads and skipping optimizer.step()", flush=True)
                opt.zero_grad(set_to_none=True)
                skipped = True
            else:
                opt.step()
        lr = opt.param_groups[0]["lr"]
        if sched is not None:
            sched.step()

        print(fmt_line(args.fmt, step, loss.item(), grad_norm.item(), lr, scale), flush=True)

    print(f"rank {rank}: finished {args.steps} steps in {time.time() - t0:.1f}s", flush=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    if "--record" in sys.argv:
        from torch.distributed.elastic.multiprocessing.errors import record
        main = record(main)
    main()
