# SPDX-License-Identifier: GPL-3.0-or-later
"""A deterministic thread pool for the large per-step passes (neighbour search, particle contacts).

NumPy releases the GIL inside most array operations, so threads running NumPy calls on separate
chunks of one array use several cores. Results must not depend on the thread count (determinism is a
promise of this project), so the work is cut into chunks whose boundaries depend only on the problem
size (:data:`PAIR_CHUNK`, :data:`SEARCH_CHUNK`; never on the number of threads), every chunk runs
the same arithmetic whichever thread picks it up, and the chunks' results are put together in chunk
order. The passes parallelised so far are element-wise per chunk (each pair's result depends on that
pair only) and their chunk results are concatenated, so they are bit-identical to the unchunked
computation, with one thread or many. Below two chunks' worth of items a pass runs as one chunk in
the calling thread: handing small chunks to threads costs more than it gains.

Chunks are sized to stay in the CPU caches: on the 2-core machine the benchmarks run on, threads
working on arrays of millions of entries at once were slower than one thread (fresh large arrays are
page-faulted in under a lock, and memory bandwidth is shared), while the same work in chunks of tens
of thousands of entries scaled.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
T = TypeVar("T")
R = TypeVar("R")

# Chunk sizes. Fixed: chunk boundaries never depend on the thread count. A pass over fewer than two
# chunks' worth of items is one chunk on the calling thread (no pool, no chunking cost), so scenes
# below about 32,000 particles run exactly as without the pool. Chunks stay in the CPU caches, which
# made even one thread faster than one call over everything (neighbour search of 100k settled grains:
# 98 ms of CPU time in chunks of 16,384 particles against 148 ms in one piece; contacts of 1M grains:
# 800 ms in chunks of 65,536 pairs against 1216 ms; benchmarks/levers.py measures the passes).
PAIR_CHUNK = 65_536  # candidate pairs per chunk of a contact pass
SEARCH_CHUNK = 16_384  # particles per range of cells of a neighbour search

_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


@functools.cache
def default_threads() -> int:
    """The thread count used when the ``threads`` setting is None: every core this process may use.

    The cores of its CPU affinity where the platform tells them (Linux: a process pinned to 4 of 64
    cores gets 4), else ``os.cpu_count()``. Asked once: ``os.cpu_count()`` took 30 us, and the
    solver asks every small step."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)


def resolve_threads(threads: int | None) -> int:
    """``threads`` as a count >= 1 (None means :func:`default_threads`)."""
    return default_threads() if threads is None else max(1, int(threads))


def chunk_bounds(n: int, size: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of ``size`` items covering 0..n; one range when n < 2 * size.

    A function of n and the fixed size only: the same ranges with any thread count.
    """
    if n < 2 * size:
        return [(0, n)]
    return [(a, min(a + size, n)) for a in range(0, n, size)]


def pair_chunks(n: int) -> list[tuple[int, int]]:
    """Chunks of a contact pass over n candidate pairs (:data:`PAIR_CHUNK` each)."""
    return chunk_bounds(n, PAIR_CHUNK)


def search_chunks(n: int) -> list[tuple[int, int]]:
    """Chunks of a neighbour search over n particles (:data:`SEARCH_CHUNK` each)."""
    return chunk_bounds(n, SEARCH_CHUNK)


def _pool(threads: int) -> ThreadPoolExecutor:
    with _pools_lock:
        pool = _pools.get(threads)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="unified-particles")
            _pools[threads] = pool
        return pool


def map_ordered(fn: Callable[[T], R], items: Sequence[T], threads: int) -> list[R]:
    """``[fn(item) for item in items]``, on up to ``threads`` threads; results in the order of items.

    ``fn`` must only read shared arrays and return new ones (no writes to shared state), so the
    result is the same whichever thread runs which item. One thread (or one item) runs in the
    calling thread, the same calls in the same order.
    """
    if threads <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    return list(_pool(threads).map(fn, items))


def pair_chunks_map(
    fn: Callable[[IntArray, IntArray], tuple[IntArray, FloatArray, IntArray]],
    i: IntArray,
    j: IntArray,
    threads: int,
    views: Sequence[tuple[IntArray, IntArray]] | None = None,
) -> tuple[IntArray, FloatArray, IntArray]:
    """A pair pass (``contacts.particle_contacts`` bound to its other arguments) over chunks of the
    pair list (i, j), put together as if run on the whole list. ``views``: the chunks of (i, j) as
    :func:`pair_chunks` cuts them, made once per list by the caller (``face_plan.ChunkFacePlans``, whose
    plans key on the chunks' arrays), else sliced here.

    ``fn(i, j)`` returns (idx (2K,), delta (3, 2K), touching): the K active pairs' i sides then j
    sides, their corrections, and the touching particles. Every pair's result depends on that pair
    only, so concatenating the chunks' i sides, then their j sides, in chunk order gives the very
    arrays of the unchunked call: bit-identical, with any thread count (``touching`` holds the same
    indices, in another order; it is used as a set).
    """
    if views is None:
        bounds = pair_chunks(len(i))
        views = [(i, j)] if len(bounds) == 1 else [(i[a:b], j[a:b]) for a, b in bounds]
    if len(views) == 1:
        return fn(*views[0])
    parts = map_ordered(lambda ij: fn(*ij), views, threads)
    halves = [len(p[0]) // 2 for p in parts]
    idx = np.concatenate(
        [p[0][:k] for p, k in zip(parts, halves, strict=True)]
        + [p[0][k:] for p, k in zip(parts, halves, strict=True)]
    )
    delta = np.concatenate(
        [p[1][:, :k] for p, k in zip(parts, halves, strict=True)]
        + [p[1][:, k:] for p, k in zip(parts, halves, strict=True)],
        axis=1,
    )
    touching = np.concatenate([p[2] for p in parts])
    return idx, delta, touching
