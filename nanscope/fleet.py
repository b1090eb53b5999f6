"""`nanscope fleet ROOT`: every job of a cluster diagnosed, one table of findings across jobs, and
what no single log shows: the same host (or GPU) behind the hardware-class failures of several
jobs, and a failure class present in every job from some time on (a change rolled out).

A job is each sub-folder of ROOT (all files below it, as `diagnose FOLDER` reads them) and each
file directly in ROOT; with a pattern, each file matching it (a glob relative to ROOT) is a job.
A job's time is the newest modification time of its files (when it stopped writing). Jobs are
diagnosed in worker processes (`jobs`) or as Dask tasks (`engine="dask[:ADDRESS]"`); a task sends
back the rows below, never the report objects.

Hardware-class findings are the retryable infrastructure faults of the gpu and distributed
categories (Xid, ECC, a GPU fallen off the bus, NCCL / fabric errors): data from the signatures,
not a list kept here. Their hosts come from nanscope.hosts.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from nanscope.dask_scan import dask_client, parse_engine
from nanscope.errors import InputError, NanscopeError
from nanscope.hosts import hosts_of

HARDWARE_CATEGORIES = frozenset({"gpu", "distributed"})
MIN_RECURRENCE = 2  # jobs sharing a host before it is a suspect
MIN_ROLLOUT = 3  # jobs in a row (and at least one before without it) before a class is a rollout


@dataclass
class Job:
    name: str
    root: str  # the job's folder, or its one file
    paths: list


@dataclass
class JobResult:
    job: str
    time: float  # newest mtime of its files, seconds since the epoch
    verdict: str
    rows: list = field(default_factory=list)  # one dict per finding (FLEET_COLUMNS)
    error: Optional[str] = None  # the job could not be diagnosed at all


FLEET_COLUMNS = ("job", "job_time", "verdict", "finding_id", "severity", "category", "retryable", "hardware",
                 "initiating_rank", "confidence", "hosts", "gpus", "first_step", "title", "error")


def discover(root: str, pattern: Optional[str] = None) -> list[Job]:
    """The jobs under root (see the module docstring), sorted by name."""
    if not os.path.isdir(root):
        raise InputError("fleet: not a folder", root)
    jobs: list[Job] = []
    if pattern:
        for p in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
            if os.path.isfile(p):
                jobs.append(Job(os.path.relpath(p, root), p, [p]))
    else:
        for name in sorted(os.listdir(root)):
            if name.startswith("."):
                continue
            p = os.path.join(root, name)
            if os.path.isdir(p) or os.path.isfile(p):
                jobs.append(Job(name, p, [p]))
    if not jobs:
        raise InputError("fleet: no jobs found" + (f" matching '{pattern}'" if pattern else ""), root)
    return jobs


def job_time(job: Job) -> float:
    newest = 0.0
    for p in job.paths:
        if os.path.isdir(p):
            for d, _, files in os.walk(p):
                for f in files:
                    try:
                        newest = max(newest, os.path.getmtime(os.path.join(d, f)))
                    except OSError:
                        pass
        else:
            try:
                newest = max(newest, os.path.getmtime(p))
            except OSError:
                pass
    return newest


_LOADED: dict = {}  # signatures loaded once per worker process, by (folders, select, ignore)


def diagnose_job(job: Job, options: Any, diagnose: Callable, load_signatures: Callable) -> JobResult:
    """One job's rows (runs in a worker process or a Dask task). `diagnose` and `load_signatures`
    are nanscope.api's (passed in: this floor is below the api), module functions that pickle by
    name."""
    key = (tuple(options.signatures), tuple(options.select), tuple(options.ignore))
    sigs = options.bundled_signatures
    if sigs is None:
        if key not in _LOADED:
            _LOADED[key] = load_signatures(options)
        sigs = _LOADED[key]
    opts = dataclasses.replace(options, bundled_signatures=list(sigs), select=(), ignore=(), jobs=1,
                               engine=None, progress=None)
    t = job_time(job)
    try:
        report = diagnose(job.paths, opts)
    except NanscopeError as e:
        return JobResult(job.name, t, "error", [], str(e))
    rows = []
    root = job.root if os.path.isdir(job.root) else os.path.dirname(job.root)
    for f in report.findings:
        hardware = bool(f.sig is not None and f.sig.retryable and f.category in HARDWARE_CATEGORIES)
        hosts, gpus = hosts_of([(e.source, e.text) for e in f.evidence], root) if hardware else ([], [])
        rows.append({"finding_id": f.id, "severity": f.severity, "category": f.category, "retryable": f.retryable,
                     "hardware": hardware, "initiating_rank": f.initiating_rank, "confidence": f.confidence,
                     "hosts": hosts, "gpus": [g for g in gpus if "/" in g], "first_step": f.first_step,
                     "title": f.title})
    return JobResult(job.name, t, report.verdict, rows)


def run(root: str, pattern: Optional[str], options: Any, engine: Optional[str], jobs: Optional[int],
        diagnose: Callable, load_signatures: Callable) -> list[JobResult]:
    """Every job under root diagnosed (nanscope.api.fleet passes its diagnose and
    load_signatures); results sorted by job time, then name."""
    load_signatures(options)  # bad --signatures / --select fail before any job runs
    found = discover(root, pattern)
    kind, address = parse_engine(engine)
    task = functools.partial(diagnose_job, options=options, diagnose=diagnose, load_signatures=load_signatures)
    if kind == "dask":
        results = _on_dask(found, task, address, jobs)
    else:
        n = jobs or _cores()
        if n < 2 or len(found) < 2:
            results = [task(j) for j in found]
        else:
            with ProcessPoolExecutor(max_workers=min(n, len(found))) as pool:
                results = list(pool.map(task, found, chunksize=4))
    return sorted(results, key=lambda r: (r.time, r.job))


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _on_dask(found: Sequence[Job], task: Callable, address: Optional[str], workers: Optional[int]) -> list[JobResult]:
    client, close = dask_client(address, workers)
    try:
        futures = client.map(task, list(found), pure=False)
        try:
            return client.gather(futures)
        except Exception as e:  # noqa: BLE001 - a task's failure becomes a clear error
            raise NanscopeError(f"a Dask task failed: {type(e).__name__}: {e}") from None
    finally:
        close()


def table_rows(results: Sequence[JobResult]) -> list[dict]:
    """One row per finding; a job without findings (or that failed) is one row without a finding."""
    out = []
    for r in results:
        base = {"job": r.job, "job_time": r.time, "verdict": r.verdict, "error": r.error}
        if not r.rows:
            out.append({**{c: None for c in FLEET_COLUMNS}, **base, "hosts": [], "gpus": []})
        for row in r.rows:
            out.append({**{c: None for c in FLEET_COLUMNS}, **base, **row})
    return out


def summarize(results: Sequence[JobResult], min_recurrence: int = MIN_RECURRENCE,
              min_rollout: int = MIN_ROLLOUT) -> dict:
    """Dominant classes, suspect hosts and GPUs, rollouts (results sorted by time)."""
    verdicts: dict[str, int] = {}
    classes: dict[str, dict] = {}
    by_host: dict[str, dict] = {}
    by_gpu: dict[str, dict] = {}
    for r in results:
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
        for row in r.rows:
            c = classes.setdefault(row["finding_id"], {"id": row["finding_id"], "category": row["category"],
                                                       "jobs": [], "findings": 0})
            c["findings"] += 1
            if r.job not in c["jobs"]:
                c["jobs"].append(r.job)
            for key, table in (("hosts", by_host), ("gpus", by_gpu)):
                for h in row[key]:
                    e = table.setdefault(h, {"jobs": [], "findings": []})
                    if r.job not in e["jobs"]:
                        e["jobs"].append(r.job)
                    if row["finding_id"] not in e["findings"]:
                        e["findings"].append(row["finding_id"])
    ranked = sorted(classes.values(), key=lambda c: (-len(c["jobs"]), c["id"]))

    def suspects(table: dict, what: str) -> list[dict]:
        return sorted(({what: k, "jobs": v["jobs"], "findings": v["findings"]}
                       for k, v in table.items() if len(v["jobs"]) >= min_recurrence),
                      key=lambda s: (-len(s["jobs"]), s[what]))

    return {"jobs": len(results), "verdicts": verdicts,
            "failed_jobs": [r.job for r in results if r.error],
            "classes": [{"id": c["id"], "category": c["category"], "jobs": len(c["jobs"]), "findings": c["findings"]}
                        for c in ranked],
            "suspect_hosts": suspects(by_host, "host"), "suspect_gpus": suspects(by_gpu, "gpu"),
            "rollouts": rollouts(results, min_rollout)}


def rollouts(results: Sequence[JobResult], min_jobs: int = MIN_ROLLOUT) -> list[dict]:
    """Classes present in every job from some job on (at least min_jobs of them) and absent from
    the job just before: the time a change rolled out."""
    out = []
    ids = sorted({row["finding_id"] for r in results for row in r.rows})
    has = [{row["finding_id"] for row in r.rows} for r in results]
    for fid in ids:
        k = len(results)
        while k > 0 and fid in has[k - 1]:
            k -= 1
        since = len(results) - k
        if since >= min_jobs and k > 0:
            before = sum(1 for h in has[:k] if fid in h)
            out.append({"id": fid, "since_job": results[k].job, "since_time": results[k].time,
                        "jobs_since": since, "jobs_before": k, "jobs_before_with_it": before})
    return out


def arrow_table(results: Sequence[JobResult]) -> Any:
    """The findings across jobs as an Arrow table (hosts and gpus as lists; job_time in UTC)."""
    import pyarrow as pa

    from nanscope.redact import redact

    schema = pa.schema([
        ("job", pa.string()), ("job_time", pa.timestamp("s", tz="UTC")), ("verdict", pa.dictionary(pa.int8(), pa.string())),
        ("finding_id", pa.dictionary(pa.int16(), pa.string())), ("severity", pa.dictionary(pa.int8(), pa.string())),
        ("category", pa.dictionary(pa.int8(), pa.string())), ("retryable", pa.bool_()), ("hardware", pa.bool_()),
        ("initiating_rank", pa.int64()), ("confidence", pa.dictionary(pa.int8(), pa.string())),
        ("hosts", pa.list_(pa.string())), ("gpus", pa.list_(pa.string())), ("first_step", pa.int64()),
        ("title", pa.string()), ("error", pa.string()),
    ])
    rows = table_rows(results)
    cols = {c: [r[c] for r in rows] for c in FLEET_COLUMNS}
    cols["job_time"] = [int(t) if t else None for t in cols["job_time"]]
    cols["error"] = [redact(e) if e else e for e in cols["error"]]
    return pa.table(cols, schema=schema)


def write_table(results: Sequence[JobResult], path: str) -> int:
    """Write the table as Parquet (atomically); the number of rows."""
    import pyarrow.parquet as pq

    from nanscope.output import open_output

    table = arrow_table(results)
    with open_output(path, binary=True) as out:
        pq.write_table(table, out, compression="zstd")
    return table.num_rows
