"""pyarrow on first use, with the memory pool and thread settings every columnar module shares
(the reader, the native lanes, step batches)."""

from __future__ import annotations

from typing import Any

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
