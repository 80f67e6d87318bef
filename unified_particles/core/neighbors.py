# SPDX-License-Identifier: GPL-3.0-or-later
"""Neighbour search on a uniform grid: all particle pairs closer than a cutoff.

Particles are binned into cubic cells of edge cutoff / k (k = CELLS_PER_CUTOFF, 2) and sorted by cell
key (a stable sort, so the output is deterministic). Keys number the cells z fastest, so a column of
2k + 1 cells is one run of the sorted particles: each particle meets its candidates in a few runs (its
own column from itself on, and the columns at the lexicographically positive (dx, dy) offsets), run
bounds read from a prefix sum over all cells of the box, and runs are expanded to particle pairs with
``np.repeat`` arithmetic (:class:`_Columns`); the particles of a large group that does not collide with
itself (a liquid's collider samples) meet only the other particles of each run (:class:`_LoneGroup`). A
box too sparse for that table (more than 8 cells per particle: particles flung far apart) falls back to
cutoff-size cells, each occupied cell looking at itself and the 13 "forward" cells of its 3x3x3 block
found by ``np.searchsorted`` on the occupied keys (:class:`_Grid`). No Python loop over particles or
cells, O(N) work beyond the sort. Work is split into fixed chunks of the input, run on the thread pool
and concatenated in order, so the result is the same list whatever the thread count.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .fastops import column_max, column_min, gather_difference
from .parallel import chunk_bounds, map_ordered, search_chunks

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


def _half_shell(k: int) -> IntArray:
    """Own cell first, then the lexicographically positive offsets of the (2k+1)^3 block of cells of edge
    cutoff / k (every cell of it can hold a particle within the cutoff of one in the centre cell)."""
    if k == 1:
        return _HALF_SHELL
    r = range(-k, k + 1)
    rest = [d for d in itertools.product(r, r, r) if d > (0, 0, 0)]
    return np.array([(0, 0, 0), *rest], dtype=np.int64)


# Cells of edge cutoff / CELLS_PER_CUTOFF: the 5x5x5 block of half-size cells around a particle's cell
# covers 15.6 cutoff^3 against 27 for the 3x3x3 block of cutoff-size cells, so 1.7x fewer candidate pairs
# reach the distance test. On a 100k-particle lattice (one thread): a liquid's list (cutoff 5r) 342 ms
# with cutoff-size cells and one run per cell pair, 280 ms with half-size cells by columns; grains
# (cutoff 3.1r at a 2.2r pitch) 113 ms and 72 ms.
CELLS_PER_CUTOFF = 2
# Boxes with at most this many cells per particle are searched by columns (_Columns, a dense prefix
# table over all cells); sparser ones (particles flung far apart) by binary search over occupied cells.
_DENSE_TABLE_CELLS_PER_PARTICLE = 8

# Particles per task of the column search: about 400k candidate pairs for a liquid (k = 2), so that a
# task's arrays stay in the processor's cache (16k-particle tasks made the distance test 2x slower).
COLUMN_CHUNK = 2048

# Above about this many candidate particle pairs per batch, shell offsets are processed in groups.
_MAX_QUERIES_PER_BATCH = 4_000_000


def find_pairs(
    positions: FloatArray,
    cutoff: float,
    group: IntArray | None = None,
    group_self_collides: NDArray[np.bool_] | None = None,
    threads: int = 1,
    cells_per_cutoff: int = CELLS_PER_CUTOFF,
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
        cells_per_cutoff: k, cells of edge cutoff / k searched over a (2k+1)^3 block (1 when the box
            is too sparse for a table of its cells).

    Returns:
        (i, j): two (P,) int64 arrays with ``i < j``, in the order of the sorted cell walk
        (deterministic for the same input).
    """
    x = np.asarray(positions, dtype=np.float64)
    n = x.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty.copy()
    k, n_keys, stride, key = _bin(x, cutoff, cells_per_cutoff)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    srt = _Sorted.of(x, order, cutoff, group, group_self_collides)
    if n_keys <= _DENSE_TABLE_CELLS_PER_PARTICLE * n:
        columns = _Columns(srt, skey, n_keys, stride, k)
        return _concatenate(map_ordered(columns.pairs, chunk_bounds(n, COLUMN_CHUNK), threads))
    # Occupied cells: key, first sorted position, particle count.
    first = np.flatnonzero(np.concatenate([[True], skey[1:] != skey[:-1]]))
    grid = _Grid(srt, ukey=skey[first], first=first, ucount=np.diff(np.append(first, n)))
    offset_keys = np.einsum("ij,j->i", _half_shell(k), stride)
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


def _bin(x: FloatArray, cutoff: float, k: int) -> tuple[int, int, IntArray, IntArray]:
    """Cells of edge cutoff / k (k = 1 when the box would have more than _DENSE_TABLE_CELLS_PER_PARTICLE
    cells per particle): (k, number of cell keys in the padded box, key strides, (N,) cell keys)."""
    n = len(x)
    origin = column_min(x)
    while True:
        cell = float(cutoff) / k
        # +k so that the -k neighbour offset of the lowest cell stays a valid non-negative coordinate.
        c = np.floor((x - origin) / cell).astype(np.int64) + k
        dims = column_max(c) + k + 1
        n_keys = int(np.prod(dims.astype(np.float64)))
        if k == 1 or n_keys <= _DENSE_TABLE_CELLS_PER_PARTICLE * n:
            break
        k = 1  # a sparse box (particles far apart): cells of the cutoff
    stride = np.array([dims[1] * dims[2], dims[2], 1], dtype=np.int64)
    return k, n_keys, stride, np.einsum("ij,j->i", c, stride)


def _concatenate(parts: list[tuple[IntArray, IntArray]]) -> tuple[IntArray, IntArray]:
    parts = [p for p in parts if len(p[0])]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


@dataclass(frozen=True)
class _Sorted:
    """The particles of one search in cell-key order (read only): coordinate-major positions, the
    original index of each sorted position, and the group filter (None: no pair to skip)."""

    sxt: FloatArray
    order: IntArray
    sg: IntArray | None
    selfc: NDArray[np.bool_] | None
    cutoff2: float

    @classmethod
    def of(
        cls,
        x: FloatArray,
        order: IntArray,
        cutoff: float,
        group: IntArray | None = None,
        group_self_collides: NDArray[np.bool_] | None = None,
    ) -> _Sorted:
        sg = None if group is None else np.asarray(group)[order]
        selfc = None if group_self_collides is None else np.asarray(group_self_collides, dtype=bool)
        if sg is not None and selfc is not None and selfc[sg].all():
            sg = None  # every body present collides with itself (a granular scene): no pair to skip
        return cls(np.ascontiguousarray(x[order].T), order, sg, selfc, float(cutoff) * float(cutoff))

    def close(self, pa: IntArray, pb: IntArray) -> tuple[IntArray, IntArray]:
        """Of candidate pairs (pa, pb) of sorted positions, those closer than the cutoff, as original
        indices (lo, hi); pairs within a group that does not collide with itself are dropped first
        (rigid bodies are dense, so before any distance is computed)."""
        sg, selfc = self.sg, self.selfc
        if sg is not None:
            ga = sg[pa]
            keep = ga != sg[pb]
            if selfc is not None:
                keep |= selfc[ga]
            pa, pb = pa[keep], pb[keep]
        close = _within(self.sxt, pa, pb, self.cutoff2)
        i = self.order[pa[close]]
        j = self.order[pb[close]]
        lo = np.minimum(i, j)
        np.maximum(i, j, out=j)
        return lo, j


class _Columns:
    """Neighbour search by columns of cells, for boxes with a dense cell table (read only).

    Cells of edge cutoff / k are numbered z fastest, so the 2k + 1 cells of a column (x, y fixed,
    z from z0 - k to z0 + k) are consecutive keys and their particles one run of the sorted order. A
    particle therefore meets its candidates in 1 + ((2k + 1)^2 - 1) / 2 runs: the rest of its own
    column from itself on, and the columns at the lexicographically positive (dx, dy) offsets (the
    others meet it from their side). Run bounds come from the prefix sum of the particles per key.
    Against one run per cell pair, this cuts the per-row bookkeeping 3x (k = 1) to 5x (k = 2).
    """

    def __init__(self, srt: _Sorted, skey: IntArray, n_keys: int, stride: IntArray, k: int) -> None:
        self.srt, self.skey, self.k = srt, skey, k
        self.lone = _LoneGroup.of(srt)
        # cstart[q]: sorted position of the first particle of key q (n_keys + 1 entries).
        self.cstart = np.zeros(n_keys + 1, dtype=np.int64)
        np.cumsum(np.bincount(skey, minlength=n_keys), out=self.cstart[1:])
        r = range(-k, k + 1)
        self.columns = np.array(
            [dx * stride[0] + dy * stride[1] for dx, dy in itertools.product(r, r) if (dx, dy) > (0, 0)],
            dtype=np.int64,
        )
        self.all_columns = np.array([dx * stride[0] + dy * stride[1] for dx, dy in itertools.product(r, r)])

    def touching(self, query: IntArray) -> tuple[IntArray, IntArray]:
        """Close pairs with a member among the sorted positions ``query`` (distinct), each once, as
        original indices (lo, hi): every column around a query particle, the pairs of two query
        particles kept from the earlier one's side."""
        k, cstart = self.k, self.cstart
        kq = self.skey[query]
        base = kq[None, :] + self.all_columns[:, None]  # (C, Q)
        lo = cstart[base - k].ravel()
        count = cstart[base + k + 1].ravel() - lo
        total = int(count.sum())
        empty = np.zeros(0, dtype=np.int64)
        if total == 0:
            return empty, empty.copy()
        pa = np.repeat(np.tile(query, len(self.all_columns)), count)
        pb = _runs(lo, count)
        keep = _once(pa, pb, query, len(self.skey))
        return self.srt.close(pa[keep], pb[keep])

    def pairs(self, chunk: tuple[int, int]) -> tuple[IntArray, IntArray]:
        """Close pairs whose earlier member (in the walk) is one of sorted particles p0 .. p1 - 1, as
        original indices (lo, hi); run-major, then particle, then partner."""
        p0, p1 = chunk
        k, cstart = self.k, self.cstart
        p = np.arange(p0, p1, dtype=np.int64)
        kp = self.skey[p0:p1]
        base = kp[None, :] + self.columns[:, None]  # (C, m) column keys at this particle's z
        lo = np.concatenate([p + 1, cstart[base - k].ravel()])
        hi = np.concatenate([cstart[kp + k + 1], cstart[base + k + 1].ravel()])
        lone = self.lone
        if lone is not None:  # that group's rows run over the other particles of their runs only
            rows = np.tile(lone.member[p0:p1], len(self.columns) + 1)
            start = lone.before[lo]
            count = np.where(rows, lone.before[hi] - start, hi - lo)
            lo = np.where(rows, start + len(self.skey), lo)
        else:
            count = hi - lo
        total = int(count.sum())
        if total == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty.copy()
        pa = np.repeat(np.tile(p, len(self.columns) + 1), count)
        pb = _runs(lo, count)
        return self.srt.close(pa, pb if lone is None else lone.table[pb])


# A group that does not collide with itself is walked apart (_LoneGroup) when it holds at least this share
# of the particles: a liquid's collider samples (80 % of its search in a small tank, 79 % of the candidate
# pairs there were sample-sample pairs, all dropped by the group filter).
LONE_GROUP_SHARE = 0.5


@dataclass(frozen=True)
class _LoneGroup:
    """The largest group that does not collide with itself, when it holds LONE_GROUP_SHARE of a search's
    particles: its particles' rows of the column walk meet only the other particles of each run.

    Those are a contiguous range of the other particles' sorted positions (``table[n:]``), in the run's
    order, so the walk lists the very pairs, in the very order, that the group filter of
    :meth:`_Sorted.close` would have kept of the whole runs, without expanding the rest.

    Attributes:
        member: (N,) bool, sorted position in the group.
        before: (N + 1,) int64, particles not in the group before each sorted position.
        table: (N + M,) int64, sorted positions: 0 .. N - 1, then the M particles not in the group.
    """

    member: NDArray[np.bool_]
    before: IntArray
    table: IntArray

    @classmethod
    def of(cls, srt: _Sorted) -> _LoneGroup | None:
        sg, selfc = srt.sg, srt.selfc
        if sg is None or selfc is None or not len(sg):
            return None
        count = np.bincount(sg, minlength=len(selfc))[: len(selfc)]
        count[selfc] = 0
        g = int(np.argmax(count))
        if count[g] < LONE_GROUP_SHARE * len(sg):
            return None
        member = sg == g
        n = len(sg)
        before = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(~member, out=before[1:])
        table = np.concatenate([np.arange(n, dtype=np.int64), np.flatnonzero(~member)])
        return cls(member, before, table)


class _Grid:
    """The occupied cells of one sparse :func:`find_pairs` call (read only)."""

    def __init__(self, srt: _Sorted, ukey: IntArray, first: IntArray, ucount: IntArray) -> None:
        self.srt, self.ukey, self.first, self.ucount = srt, ukey, first, ucount

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
        return self.srt.close(pa, _runs(start, count))


def _runs(start: IntArray, count: IntArray) -> IntArray:
    """Concatenated ranges start[r] .. start[r] + count[r] - 1 (np.repeat arithmetic, no loop)."""
    runs = np.repeat(start - (np.cumsum(count) - count), count) + np.arange(int(count.sum()), dtype=np.int64)
    return np.asarray(runs, dtype=np.int64)


def _within(xt: FloatArray, a: NDArray[Any], b: NDArray[Any], cutoff2: float) -> NDArray[np.bool_]:
    """(K,) whether |x_a - x_b|^2 < cutoff2 for coordinate-major (3, N) positions: the one distance test
    of :func:`find_pairs` and :func:`pairs_touching`, so that both find the same pairs bit for bit."""
    d = gather_difference(xt, a, b)
    return np.asarray(np.einsum("ij,ij->j", d, d) < cutoff2)


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
    k, n_keys, stride, key = _bin(x, cutoff, CELLS_PER_CUTOFF)
    order = np.argsort(key, kind="stable")
    skey = key[order]
    rank = np.empty(n, dtype=np.int64)  # sorted position of each particle
    rank[order] = np.arange(n, dtype=np.int64)
    srt = _Sorted.of(x, order, cutoff)
    if n_keys <= _DENSE_TABLE_CELLS_PER_PARTICLE * n:
        return _Columns(srt, skey, n_keys, stride, k).touching(rank[query])
    # A box too sparse for the column table: cutoff-size cells (k = 1 here), the 27 around each query.
    first = np.flatnonzero(np.concatenate([[True], skey[1:] != skey[:-1]]))
    ukey = skey[first]
    ucount = np.diff(np.append(first, n))
    offsets = np.einsum("ij,j->i", _FULL_SHELL, stride)
    sq = rank[query]
    q = (skey[sq][:, None] + offsets[None, :]).ravel()
    pos = np.minimum(np.searchsorted(ukey, q), len(ukey) - 1)
    hit = ukey[pos] == q
    b_cell = pos[hit]
    count = ucount[b_cell]
    if int(count.sum()) == 0:
        return empty, empty.copy()
    pa = np.repeat(np.repeat(sq, len(offsets))[hit], count)
    pb = _runs(first[b_cell], count)
    keep = _once(pa, pb, sq, n)
    return srt.close(pa[keep], pb[keep])


def _once(pa: IntArray, pb: IntArray, query: IntArray, n: int) -> NDArray[np.bool_]:
    """Which candidates (pa from ``query``, pb any of n) to keep so that each pair is met once: not a
    particle with itself, and a pair of two query particles only from its lower position."""
    is_query = np.zeros(n, dtype=bool)
    is_query[query] = True
    return np.asarray((pb != pa) & (~is_query[pb] | (pa < pb)))
