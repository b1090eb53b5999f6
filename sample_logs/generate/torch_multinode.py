#!/usr/bin/env python3
"""A tiny data-parallel training script for two-node torchrun jobs on localhost (CPU, gloo).

Used by make_multinode_logs.sh to produce the REAL sample logs in sample_logs/multinode/.
Every error message in those logs is printed by PyTorch / gloo / torchrun itself; this script
only sets up the situation and prints plain step lines.  Steps are 0-based.

--wrap   ddp | fsdp (FullyShardedDataParallel) | fsdp2 (torch.distributed.fsdp.fully_shard)
--fault  one of, on global rank --fault-rank at step --fault-step:
  none          healthy
  input-nan     the batch is multiplied by NaN (on every rank with --fault-rank -1)
  stall         the rank sleeps --sleep seconds inside the step, before its backward pass (and so
                before the gradient all-reduce); the others wait in the collective until the
                process-group timeout (--pg-timeout seconds)
  extra-collective  the rank all-reduces its loss once more than the others (a "log the mean
                loss" written under `if rank == ...`); run with TORCH_DISTRIBUTED_DEBUG=DETAIL
                so torch checks every collective's fingerprint
  crash         raise ValueError (only in restart attempt 0 with --first-attempt-only)
  handled       the rank looks for an optional file that is not there, catches the
                FileNotFoundError, prints it with traceback.print_exc() and goes on
"""
import argparse
import datetime
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--wrap", default="ddp", choices=["ddp", "fsdp", "fsdp2"])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--fault", default="none",
                   choices=["none", "input-nan", "stall", "extra-collective", "crash", "handled"])
    p.add_argument("--fault-rank", type=int, default=0, help="global rank; -1: every rank")
    p.add_argument("--fault-step", type=int, default=-1)
    p.add_argument("--sleep", type=float, default=30.0, help="stall: seconds")
    p.add_argument("--pg-timeout", type=float, default=120.0, help="process-group timeout, seconds")
    p.add_argument("--first-attempt-only", action="store_true",
                   help="inject only when TORCHELASTIC_RESTART_COUNT is 0")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args()


class MLP(nn.Module):
    def __init__(self, d_in: int = 32, d_hidden: int = 64, n_classes: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


def make_data(n: int, rank: int, seed: int, d_in: int = 32, n_classes: int = 10):
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(d_in, n_classes, generator=g)
    g = torch.Generator().manual_seed(seed + 1000 + rank)
    x = torch.randn(n, d_in, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return x, y


def wrap(model: nn.Module, how: str) -> nn.Module:
    if how == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model)
    if how == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        return FSDP(model, device_id=None, use_orig_params=True)
    from torch.distributed.fsdp import fully_shard
    fully_shard(model.fc1)
    fully_shard(model.fc2)
    fully_shard(model)
    return model


def grad_norm_of(model: nn.Module) -> float:
    if hasattr(model, "clip_grad_norm_"):  # FSDP1: the norm over all shards
        return float(model.clip_grad_norm_(float("inf")))
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
    if hasattr(norm, "full_tensor"):  # FSDP2: a DTensor
        norm = norm.full_tensor()
    return float(norm)


def main() -> None:
    args = parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    group_rank = int(os.environ.get("GROUP_RANK", "0"))
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch.manual_seed(args.seed)
    model = wrap(MLP(), args.wrap)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    x_all, y_all = make_data(args.batch_size * args.steps, rank, args.seed)
    print(f"rank {rank}/{world} (node {group_rank}, local_rank {local_rank}): torch {torch.__version__}, "
          f"{args.wrap}, restart attempt {attempt}, steps {args.steps}, batch {args.batch_size}", flush=True)
    me = args.fault_rank in (-1, rank) and not (args.first_attempt_only and attempt > 0)
    t_start = time.time()
    for step in range(args.steps):
        lo = step * args.batch_size
        x, y = x_all[lo:lo + args.batch_size], y_all[lo:lo + args.batch_size]
        fault_now = me and step == args.fault_step
        if fault_now and args.fault == "input-nan":
            x = x * float("nan")
        if fault_now and args.fault == "crash":
            raise ValueError(f"bad sample in batch at step {step}: label out of range")
        if fault_now and args.fault == "handled":
            try:
                with open("eval_prompts.jsonl", encoding="utf-8") as f:
                    print(f"rank {rank}: {len(f.readlines())} eval prompts", flush=True)
            except FileNotFoundError:
                traceback.print_exc()
                print(f"rank {rank}: no eval prompts, skipping the sample generation", flush=True)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        if fault_now and args.fault == "stall":
            time.sleep(args.sleep)
        loss.backward()
        gn = grad_norm_of(model)
        opt.step()
        shown = loss.detach()
        if args.fault == "extra-collective" and me and step >= args.fault_step:
            dist.all_reduce(shown)
            shown = shown / world
        print(f"step {step} | loss {shown.item():.4f} | grad_norm {gn:.4f} | lr {args.lr:.1e}", flush=True)
    print(f"rank {rank}: finished {args.steps} steps in {time.time() - t_start:.1f}s", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
