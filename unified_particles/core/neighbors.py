# SPDX-License-Identifier: GPL-3.0-or-later
"""Neighbour search on a uniform grid: all particle pairs closer than a cutoff.

Particles are binned into cubic cells of edge ``>= cutoff`` and sorted by cell key (a stable sort, so
the output is deterministic). Each particle then looks at its own cell and the 13 "forward" cells of
its 3x3x3 block (a half shell), so every unordered pair of neighbouring cells is visited once. The
lookups are batched ``np.searchsorted`` calls on the sorted keys: no Python loop over particles, about
O(N) work beyond the sort. Large inputs are processed a few shell offsets at a time to bound memory.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Own cell first, then the 13 offsets (dx, dy, dz) that are lexicographically positive.
_HALF_SHELL = np.array(
    [(0, 0, 0)]
    + [
        (dx, dy, dz)
        for dx in (-1, 0, 1)
        for dy in (-1, 0, 1)
        for dz in (-1, 0, 1)
        if (dx, dy, dz) > (0, 0, 0)
    ],
    dtype=np.int64,
)

# Above this many (particle, offset) queries per batch, offsets are processed in smaller groups.
_MAX_QUERIES_PER_BATCH = 2_000_000


def find_pairs(
    positions: FloatArray,
    cutoff: float,
    group: IntArray | None = None,
    group_self_collides: NDArray[np.bool_] | None = None,
) -> tuple[IntArray, IntArray]:
    """All unordered pairs (i, j), i < j, with ``|x_i - x_j| < cutoff``.

    Args:
        positions: (N, 3) particle centres, metres.
        cutoff: interaction distance, metres (> 0).
        group: optional (N,) body id per particle. Pairs within one group are skipped unless
            ``group_self_collides[group]`` is True (granular material collides with itself, a rigid
            body never does).
        group_self_collides: (G,) bool per group id; required when ``group`` is given.

    Returns:
        (i, j): two (P,) int64 arrays with ``i < j``, ordered by the sorted cell walk (deterministic
        for the same input).
    """
    x = np.asarray(positions, dtype=np.float64)
    n = x.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty.copy()
    cell = float(cutoff)
    lo = x.min(axis=0)
    # +1 so that the -1 neighbour offset of the lowest cell stays a valid non-negative coordinate.
    c = np.floor((x - lo) / cell).astype(np.int64) + 1
    dims = c.max(axis=0) + 2
    stride = np.array([dims[1] * dims[2], dims[2], 1], dtype=np.int64)
    key = np.einsum("ij,j->i", c, stride)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    sx = x[order]
    offset_keys = _HALF_SHELL @ stride
    cell_end = np.searchsorted(skey, skey, side="right")

    sorted_pos = np.arange(n, dtype=np.int64)
    per_batch = max(1, _MAX_QUERIES_PER_BATCH // n)
    cutoff2 = cell * cell
    out_i: list[IntArray] = []
    out_j: list[IntArray] = []
    for b in range(0, len(offset_keys), per_batch):
        okeys = offset_keys[b : b + per_batch]
        query = (skey[None, :] + okeys[:, None]).ravel()
        start = np.searchsorted(skey, query, side="left")
        end = np.searchsorted(skey, query, side="right")
        if b == 0:
            # Own cell: only partners later in the sorted order, so each pair appears once.
            start[:n] = sorted_pos + 1
            end[:n] = cell_end
        counts = end - start
        total = int(counts.sum())
        if total == 0:
            continue
        first = np.cumsum(counts) - counts
        pi = np.repeat(np.tile(sorted_pos, len(okeys)), counts)
        pj = np.repeat(start - first, counts) + np.arange(total, dtype=np.int64)
        d = sx[pi] - sx[pj]
        close = np.einsum("ij,ij->i", d, d) < cutoff2
        out_i.append(pi[close])
        out_j.append(pj[close])
    if not out_i:
        return empty, empty.copy()
    i = order[np.concatenate(out_i)]
    j = order[np.concatenate(out_j)]
    if group is not None:
        g = np.asarray(group)
        keep = g[i] != g[j]
        if group_self_collides is not None:
            keep |= np.asarray(group_self_collides, dtype=bool)[g[i]]
        i, j = i[keep], j[keep]
    return np.minimum(i, j), np.maximum(i, j)


def brute_force_pairs(positions: FloatArray, cutoff: float) -> tuple[IntArray, IntArray]:
    """Reference O(N^2) version of :func:`find_pairs` (no groups), for tests; (i, j) with i < j."""
    x = np.asarray(positions, dtype=np.float64)
    d = x[:, None, :] - x[None, :, :]
    close = np.einsum("ijk,ijk->ij", d, d) < cutoff * cutoff
    i, j = np.nonzero(np.triu(close, k=1))
    return i.astype(np.int64), j.astype(np.int64)
