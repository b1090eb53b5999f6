"""pyarrow on first use, with the memory pool and thread settings every columnar module shares
(the reader, the native lanes, step batches)."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

_PA = None
OWN_PROCESS = False  # the CLI sets it: then Arrow's default pool is the system allocator too


def _arrow():
    """pyarrow, pyarrow.compute and the memory pool the reader uses (imported on first use).

    The system allocator returns a chunk's memory when it is freed; Arrow's default pool
    (mimalloc / jemalloc) keeps it resident, which shows as a higher peak RSS. Arrow's own thread
    pool is limited to one thread: parallelism comes from worker processes (--jobs), and every
    extra thread can hold a malloc arena of its own, which made peak RSS depend on machine load."""
    global _PA
    if _PA is None:
        import pyarrow as pa
        import pyarrow.compute as pc

        pa.set_cpu_count(1)
        if OWN_PROCESS:
            pa.set_memory_pool(pa.system_memory_pool())  # for the few calls that take no pool argument
        _PA = (pa, pc, pa.system_memory_pool())
    return _PA


def _np_bool(arr) -> "Any":
    return arr.fill_null(False).to_numpy(zero_copy_only=False)


def _take(arr, at) -> "Any":
    pa, pc, pool = _arrow()
    return pc.take(arr, pa.array(at, type=pa.int64(), memory_pool=pool), memory_pool=pool)


# RE2 passes over a big array run in slices on this many threads (Arrow's kernels release the GIL;
# the Python work between them stays on one). scan.scan_all sets it from the cores each scanning
# process may use (threads_for); NANSCOPE_THREADS overrides it (1: no threads).
THREADS = 1
_SLICE_ROWS = 1 << 12  # no split below this many rows per slice: a dispatch costs ~50 us
_POOL: Optional[Any] = None


def threads_for(jobs: int) -> int:
    """The threads each of `jobs` scanning processes may use for its RE2 passes: the cores this
    process may run on, shared out (at least one), or NANSCOPE_THREADS."""
    env = os.environ.get("NANSCOPE_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (not Linux)
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, jobs))


def sliced(fn: Callable[..., Any], arr: Any, *args: Any, **kw: Any) -> Any:
    """fn(arr, *args, **kw) for an Arrow kernel that works row by row (a regex match or extract,
    is_valid), run over THREADS slices of `arr` at once and concatenated: the same array."""
    n = THREADS
    if n <= 1 or len(arr) < 2 * _SLICE_ROWS:
        return fn(arr, *args, **kw)
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="nanscope-re2")
    n = min(n, len(arr) // _SLICE_ROWS)
    step = -(-len(arr) // n)
    parts = [arr.slice(i * step, step) for i in range(n)]
    futs = [_POOL.submit(fn, part, *args, **kw) for part in parts[1:]]
    first = fn(parts[0], *args, **kw)
    pa = _arrow()[0]
    return pa.concat_arrays([first] + [f.result() for f in futs])


def _after_fork() -> None:  # a forked worker has none of the parent's threads: it starts its own pool
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
