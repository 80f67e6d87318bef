# SPDX-License-Identifier: GPL-3.0-or-later
"""Neighbour search on a uniform grid: all particle pairs closer than a cutoff.

Particles are binned into cubic cells of edge ``>= cutoff`` and sorted by cell key (a stable sort, so
the output is deterministic). Each occupied cell then looks at itself and the 13 "forward" cells of
its 3x3x3 block (a half shell), so every unordered pair of neighbouring cells is visited once; cell
pairs are expanded to particle pairs with ``np.repeat`` arithmetic. The lookups are batched
``np.searchsorted`` calls on the occupied cell keys: no Python loop over particles or cells, O(N)
work beyond the sort. Small inputs are processed a few shell offsets at a time to bound memory; large
ones (from two ``parallel.SEARCH_CHUNK`` of particles) one shell offset and one range of cells per task,
on the thread pool, concatenated in the order of the walk, so the result is the same list either way.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from .fastops import column_max, column_min
from .parallel import map_ordered, search_chunks

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

# Above about this many candidate particle pairs per batch, shell offsets are processed in groups.
_MAX_QUERIES_PER_BATCH = 4_000_000


def find_pairs(
    positions: FloatArray,
    cutoff: float,
    group: IntArray | None = None,
    group_self_collides: NDArray[np.bool_] | None = None,
    threads: int = 1,
) -> tuple[IntArray, IntArray]:
    """All unordered pairs (i, j), i < j, with ``|x_i - x_j| < cutoff``.

    Args:
        positions: (N, 3) particle centres, metres.
        cutoff: interaction distance, metres (> 0).
        group: optional (N,) body id per particle. Pairs within one group are skipped unless
            ``group_self_collides[group]`` is True (granular material collides with itself, a rigid
            body never does).
        group_self_collides: (G,) bool per group id; required when ``group`` is given.
        threads: threads to use for large inputs (see :mod:`.parallel`); the result is the same,
            bit for bit and in the same order, whatever the count.

    Returns:
        (i, j): two (P,) int64 arrays with ``i < j``, in the order of the sorted cell walk
        (deterministic for the same input).
    """
    x = np.asarray(positions, dtype=np.float64)
    n = x.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty.copy()
    cell = float(cutoff)
    origin = column_min(x)
    # +1 so that the -1 neighbour offset of the lowest cell stays a valid non-negative coordinate.
    c = np.floor((x - origin) / cell).astype(np.int64) + 1
    dims = column_max(c) + 2
    stride = np.array([dims[1] * dims[2], dims[2], 1], dtype=np.int64)
    key = np.einsum("ij,j->i", c, stride)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    # Occupied cells: key, first sorted position, particle count.
    first = np.flatnonzero(np.concatenate([[True], skey[1:] != skey[:-1]]))
    sg = None if group is None else np.asarray(group)[order]
    selfc = None if group_self_collides is None else np.asarray(group_self_collides, dtype=bool)
    if sg is not None and selfc is not None and selfc[sg].all():
        sg = None  # every body present collides with itself (a granular scene): no pair to skip
    grid = _Grid(
        sx=x[order],
        order=order,
        sg=sg,
        selfc=selfc,
        ukey=skey[first],
        first=first,
        ucount=np.diff(np.append(first, n)),
        cutoff2=cell * cell,
    )
    offset_keys = np.einsum("ij,j->i", _HALF_SHELL, stride)
    # Cell ranges of about SEARCH_CHUNK particles each (a function of the input only, see parallel.py).
    bounds = search_chunks(n)
    if len(bounds) == 1:
        # Small input: all cells at once, shell offsets batched to bound memory.
        # Expected particle pairs per shell offset ~ sum(count^2).
        ucount = grid.ucount
        per_offset = max(int((ucount * ucount).sum()), 1)
        per_batch = int(np.clip(_MAX_QUERIES_PER_BATCH // per_offset, 1, len(offset_keys)))
        tasks = [
            (offset_keys[b0 : b0 + per_batch], 0, len(grid.ukey))
            for b0 in range(0, len(offset_keys), per_batch)
        ]
    else:
        # Large input: one shell offset and one range of cells per task, offsets outermost, so the
        # concatenated result is in the same order as the batched walk above.
        cuts = np.searchsorted(first, [a for a, _ in bounds[1:]])
        edges = [0, *(int(k) for k in cuts), len(grid.ukey)]
        ranges = [(a, b) for a, b in itertools.pairwise(edges) if b > a]
        tasks = [(offset_keys[k : k + 1], a, b) for k in range(len(offset_keys)) for a, b in ranges]
    parts = map_ordered(grid.pairs, tasks, threads)
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return empty, empty.copy()
    if len(parts) == 1:
        return parts[0]
    i = np.concatenate([p[0] for p in parts])
    j = np.concatenate([p[1] for p in parts])
    return i, j


class _Grid:
    """The sorted particles and occupied cells of one :func:`find_pairs` call (read only)."""

    def __init__(
        self,
        sx: FloatArray,
        order: IntArray,
        sg: IntArray | None,
        selfc: NDArray[np.bool_] | None,
        ukey: IntArray,
        first: IntArray,
        ucount: IntArray,
        cutoff2: float,
    ) -> None:
        self.sx, self.order, self.sg, self.selfc = sx, order, sg, selfc
        self.ukey, self.first, self.ucount, self.cutoff2 = ukey, first, ucount, cutoff2

    def pairs(self, task: tuple[IntArray, int, int]) -> tuple[IntArray, IntArray]:
        """Close pairs between the occupied cells ``c0 .. c1 - 1`` and their neighbours at the shell
        offsets ``okeys`` (offset-major, then cell, then particle), as original indices (lo, hi)."""
        okeys, c0, c1 = task
        ukey, first, ucount = self.ukey, self.first, self.ucount
        n_cells = len(ukey)
        empty = np.zeros(0, dtype=np.int64)
        # Neighbour cell of every occupied cell of the range for every offset, in one search.
        q = (ukey[None, c0:c1] + okeys[:, None]).ravel()
        pos = np.minimum(np.searchsorted(ukey, q), n_cells - 1)
        hit = ukey[pos] == q
        a_cells = np.tile(np.arange(c0, c1, dtype=np.int64), len(okeys))[hit]
        b_cells = pos[hit]
        own = a_cells == b_cells  # offset 0: a cell with itself
        # Level 1: one row per particle of cell a.
        na = ucount[a_cells]
        rows = np.repeat(np.arange(len(na), dtype=np.int64), na)
        a_local = np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(na) - na, na)
        pa_row = first[a_cells][rows] + a_local
        # Level 2: its partners in cell b; inside its own cell only the later ones (each pair once).
        own_r = own[rows]
        nb_r = ucount[b_cells][rows]
        start = np.where(own_r, pa_row + 1, first[b_cells][rows])
        count = np.where(own_r, nb_r - a_local - 1, nb_r)
        total = int(count.sum())
        if total == 0:
            return empty, empty
        pa = np.repeat(pa_row, count)
        pb = np.repeat(start - (np.cumsum(count) - count), count) + np.arange(total, dtype=np.int64)
        sg, selfc = self.sg, self.selfc
        if sg is not None:
            # Same-body pairs are dropped before any distance is computed (rigid bodies are dense).
            ga = sg[pa]
            keep = ga != sg[pb]
            if selfc is not None:
                keep |= selfc[ga]
            pa, pb = pa[keep], pb[keep]
        d = np.take(self.sx, pa, axis=0)
        d -= np.take(self.sx, pb, axis=0)
        close = np.einsum("ij,ij->i", d, d) < self.cutoff2
        i = self.order[pa[close]]
        j = self.order[pb[close]]
        lo = np.minimum(i, j)
        np.maximum(i, j, out=j)
        return lo, j


def brute_force_pairs(positions: FloatArray, cutoff: float) -> tuple[IntArray, IntArray]:
    """Reference O(N^2) version of :func:`find_pairs` (no groups), for tests; (i, j) with i < j."""
    x = np.asarray(positions, dtype=np.float64)
    d = x[:, None, :] - x[None, :, :]
    close = np.einsum("ijk,ijk->ij", d, d) < cutoff * cutoff
    i, j = np.nonzero(np.triu(close, k=1))
    return i.astype(np.int64), j.astype(np.int64)


# All 27 cell offsets (the full 3x3x3 block): a query particle looks at every neighbouring cell.
_FULL_SHELL = np.array(list(itertools.product((-1, 0, 1), repeat=3)), dtype=np.int64)


def pairs_touching(positions: FloatArray, query: IntArray, cutoff: float) -> tuple[IntArray, IntArray]:
    """All unordered pairs (i, j), i < j, with ``|x_i - x_j| < cutoff`` and i or j in ``query``.

    The work is proportional to the query particles and their neighbourhoods (plus a sort of the cell
    keys of all particles), not to every pair: it refreshes a neighbour list for the few particles
    that moved. Each pair is found once, with the same distance test as :func:`find_pairs` (so the
    same pairs). Order: unspecified (callers sort).

    Args:
        positions: (N, 3) particle centres, metres.
        query: (Q,) distinct particle indices.
        cutoff: interaction distance, metres (> 0).
    """
    x = np.asarray(positions, dtype=np.float64)
    query = np.asarray(query, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    n = x.shape[0]
    if n < 2 or len(query) == 0:
        return empty, empty.copy()
    cell = float(cutoff)
    origin = column_min(x)
    c = np.floor((x - origin) / cell).astype(np.int64) + 1
    dims = column_max(c) + 2
    stride = np.array([dims[1] * dims[2], dims[2], 1], dtype=np.int64)
    key = np.einsum("ij,j->i", c, stride)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    first = np.flatnonzero(np.concatenate([[True], skey[1:] != skey[:-1]]))
    ukey = skey[first]
    ucount = np.diff(np.append(first, n))
    offsets = np.einsum("ij,j->i", _FULL_SHELL, stride)
    q = (key[query][:, None] + offsets[None, :]).ravel()
    pos = np.minimum(np.searchsorted(ukey, q), len(ukey) - 1)
    hit = ukey[pos] == q
    a = np.repeat(query, len(offsets))[hit]
    b_cell = pos[hit]
    count = ucount[b_cell]
    total = int(count.sum())
    if total == 0:
        return empty, empty.copy()
    pa = np.repeat(a, count)
    pb = order[
        np.repeat(first[b_cell] - (np.cumsum(count) - count), count) + np.arange(total, dtype=np.int64)
    ]
    # A pair of two query particles is met from both ends: keep it from its lower index only.
    is_query = np.zeros(n, dtype=bool)
    is_query[query] = True
    keep = (pb != pa) & (~is_query[pb] | (pa < pb))
    pa, pb = pa[keep], pb[keep]
    d = np.take(x, pa, axis=0)
    d -= np.take(x, pb, axis=0)
    close = np.einsum("ij,ij->i", d, d) < cell * cell
    i, j = pa[close], pb[close]
    lo = np.minimum(i, j)
    np.maximum(i, j, out=j)
    return lo, j
