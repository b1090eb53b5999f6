#!/usr/bin/env python3
"""Small PyTorch training scripts that fail with PyTorch's own runtime errors (CPU only).

Used by make_core_logs.sh to produce the REAL sample logs in sample_logs/core/. Every error message
in those logs is printed by PyTorch (or Python's multiprocessing) itself; this script only sets up the
situation and prints plain training-script step lines (`step N | loss X`). Steps are 0-based.

Scenarios (first positional argument):

  inplace        an activation modified in place after autograd saved it (sigmoid_ then *=): the
                 first backward fails
  rnn-no-detach  a recurrent state carried from one step to the next without detach(): the second
                 step's backward runs into the freed graph of the first
  frozen         every parameter frozen (requires_grad_(False)) before training: backward of the
                 loss has no graph
  resume-other-width  a checkpoint saved by a model with hidden size 64, loaded into one with 48
  weights-only   a checkpoint holding an argparse.Namespace next to the state dict, loaded with
                 torch.load's default (weights_only=True since 2.6)
  lfs-pointer    the checkpoint path holds a Git LFS pointer (text) instead of the file
  fd-limit       DataLoader(num_workers=2) under a low RLIMIT_NOFILE, keeping every batch alive:
                 the workers' file-descriptor sharing runs out of descriptors
  healthy        a clean short run (the same loop, nothing injected)
"""

from __future__ import annotations

import argparse
import os
import resource
import sys

import torch
from torch import nn


def step_line(step: int, loss: float) -> None:
    print(f"step {step} | loss {loss:.4f}", flush=True)


def data(n: int = 256, d: int = 16, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (x.sum(dim=1, keepdim=True) > 0).float()
    return x, y


class MLP(nn.Module):
    def __init__(self, d_in: int = 16, hidden: int = 64):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor, inplace: bool = False) -> torch.Tensor:
        h = self.fc1(x)
        if inplace:
            h = h.sigmoid_()  # autograd saves the sigmoid's output for its backward...
            h *= 2.0          # ...and this changes it in place
        else:
            h = torch.sigmoid(h) * 2.0
        return self.fc2(h)


def train(model: nn.Module, steps: int, inplace_from: int = -1, lr: float = 0.1) -> None:
    x, y = data()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad] or model.parameters(), lr=lr)
    loss_fn = nn.BCEWithLogitsLoss()
    for step in range(steps):
        i = (step * 32) % len(x)
        xb, yb = x[i:i + 32], y[i:i + 32]
        loss = loss_fn(model(xb, inplace=0 <= inplace_from <= step), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step_line(step, loss.item())


def rnn_no_detach(steps: int) -> None:
    torch.manual_seed(0)
    cell = nn.RNNCell(8, 16)
    head = nn.Linear(16, 1)
    opt = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.05)
    x = torch.randn(steps, 4, 8)
    h = torch.zeros(4, 16)
    for step in range(steps):
        h = cell(x[step], h)  # h keeps the previous step's graph: it should be h.detach()
        loss = head(h).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step_line(step, loss.item())


def resume_other_width(tmp: str) -> None:
    path = os.path.join(tmp, "ckpt.pt")
    torch.save({"model": MLP(hidden=64).state_dict(), "step": 100}, path)
    print(f"saved {path}", flush=True)
    model = MLP(hidden=48)
    ckpt = torch.load(path)
    model.load_state_dict(ckpt["model"])


def weights_only(tmp: str, args: argparse.Namespace) -> None:
    path = os.path.join(tmp, "ckpt.pt")
    torch.save({"model": MLP().state_dict(), "args": args}, path)
    print(f"saved {path}", flush=True)
    ckpt = torch.load(path)
    MLP().load_state_dict(ckpt["model"])


def lfs_pointer(tmp: str) -> None:
    path = os.path.join(tmp, "model.pt")
    with open(path, "w") as f:  # what `git clone` without git-lfs leaves in place of the file
        f.write("version https://git-lfs.github.com/spec/v1\n"
                "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
                "size 1048576\n")
    print(f"loading {path}", flush=True)
    MLP().load_state_dict(torch.load(path))


class Batches(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 4096

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.full((8,), float(i))


def fd_limit(nofile: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    print(f"RLIMIT_NOFILE {nofile} (was {soft})", flush=True)
    loader = torch.utils.data.DataLoader(Batches(), batch_size=1, num_workers=2)
    kept = []
    for step, batch in enumerate(loader):
        kept.append(batch)  # every batch stays alive: its shared-memory fd stays open
        if step % 256 == 0:
            print(f"batch {step}/{len(loader)}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("scenario")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--fault-step", type=int, default=3)
    p.add_argument("--tmp", default=".")
    p.add_argument("--nofile", type=int, default=128)
    args = p.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__} scenario {args.scenario}", flush=True)
    if args.scenario == "inplace":
        train(MLP(), args.steps, inplace_from=args.fault_step)
    elif args.scenario == "rnn-no-detach":
        rnn_no_detach(args.steps)
    elif args.scenario == "frozen":
        model = MLP()
        model.requires_grad_(False)
        train(model, args.steps)
    elif args.scenario == "resume-other-width":
        resume_other_width(args.tmp)
    elif args.scenario == "weights-only":
        weights_only(args.tmp, args)
    elif args.scenario == "lfs-pointer":
        lfs_pointer(args.tmp)
    elif args.scenario == "fd-limit":
        fd_limit(args.nofile)
    elif args.scenario == "healthy":
        train(MLP(), args.steps)
        print("done", flush=True)
    else:
        p.error(f"unknown scenario {args.scenario}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
