"""Host names behind a finding, from the log text and from per-node file layouts (for `fleet`).

From the text, only where a framework prints the host in a fixed place:
- NCCL's debug prefix `HOST:PID:TID [DEV] NCCL WARN ...` (nccl src/debug.cc: "%s:%d:%d [%d] NCCL"),
  the host that printed the line;
- torchelastic's failure table `  host      : HOST` (torch/distributed/elastic/multiprocessing/
  errors/__init__.py, _FAILURE_FORMAT_TEMPLATE);
- Slurm `srun: error: HOST: task N: ...` and `slurmstepd: error: *** STEP|JOB ... ON HOST CANCELLED`;
- a syslog / journal line `Mon DD HH:MM:SS HOST kernel: ...` (the kernel's NVRM Xid lines).
From a path: one file or folder per node named by Slurm's `%N` (the node's short host name, e.g.
`gpu-a17.log`, `ip-10-0-3-4/rank_0.log`): a name of letters, digits, dashes and dots that ends in a
digit. Per-rank and per-attempt layout names (`rank_3`, `worker-3`, `node1`, `attempt_0`) are
indices, not hosts, and never count.
GPUs: an Xid line names the GPU by PCI bus id (`NVRM: Xid (PCI:0000:3b:00): 79`); with a host that
makes the GPU's identity (`HOST/PCI:0000:3b:00`).
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Optional

_NCCL = re.compile(r"(?:^|\s|\]:?)([A-Za-z0-9][A-Za-z0-9.\-]*):\d+:\d+ \[\d+\] (?:\S+ )?NCCL (?:WARN|INFO|ERROR)")
_ELASTIC = re.compile(r"^\s*host\s+:\s+([A-Za-z0-9][A-Za-z0-9.\-]*)\s*$")
_SRUN = re.compile(r"\bsrun: error: ([A-Za-z0-9][A-Za-z0-9.\-]*): tasks? [\d\-,]+:")
_STEPD = re.compile(r"\*\*\* (?:STEP|JOB) [\d.]+(?:\+\d+)? ON ([A-Za-z0-9][A-Za-z0-9.\-]*) CANCELLED")
_SYSLOG = re.compile(r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) ([A-Za-z0-9][A-Za-z0-9.\-]*) kernel: ")
_PCI = re.compile(r"NVRM: Xid \((PCI:[0-9a-fA-F:.]+)\)")
_HOSTLIKE = re.compile(r"[A-Za-z][A-Za-z0-9.\-]*\d")
_INDEX = re.compile(r"(?:rank|worker|proc|process|local_rank|node|attempt|task|job|run|step|epoch|part|shard)"
                    r"[_\-.]?\d+", re.I)
_NOT_HOSTS = {"localhost"}


def host_in_line(text: str) -> Optional[str]:
    """The host a framework printed in this line, if it prints one in a fixed place."""
    for rx in (_NCCL, _ELASTIC, _SRUN, _STEPD, _SYSLOG):
        m = rx.search(text)
        if m and m.group(1).lower() not in _NOT_HOSTS:
            return m.group(1)
    return None


def gpu_in_line(text: str) -> Optional[str]:
    m = _PCI.search(text)
    return m.group(1) if m else None


def host_from_path(path: str, job_root: str) -> Optional[str]:
    """A per-node layout below the job's folder: the innermost folder or file stem named like a
    Slurm node (see the module docstring)."""
    try:
        rel = os.path.relpath(path, job_root)
    except ValueError:
        return None
    parts = rel.split(os.sep)
    if parts and parts[0] == os.pardir:
        return None
    names = [p for p in parts[:-1]] + [_stem(parts[-1])]
    for name in reversed(names):
        if _HOSTLIKE.fullmatch(name) and not _INDEX.fullmatch(name) and name.lower() not in _NOT_HOSTS:
            return name
    return None


def _stem(name: str) -> str:
    for ext in (".gz", ".zst", ".log", ".out", ".err", ".txt"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    return name


def hosts_of(lines: Iterable[tuple[str, str]], job_root: str) -> tuple[list[str], list[str]]:
    """Hosts and GPUs named by evidence lines given as (source path, text)."""
    hosts: list[str] = []
    gpus: list[str] = []
    for source, text in lines:
        host = host_in_line(text) or host_from_path(source, job_root)
        if host and host not in hosts:
            hosts.append(host)
        pci = gpu_in_line(text)
        if pci:
            gpu = f"{host}/{pci}" if host else pci
            if gpu not in gpus:
                gpus.append(gpu)
    return hosts, gpus
