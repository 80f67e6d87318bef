# SPDX-License-Identifier: GPL-3.0-or-later
"""Shock propagation for grains, energy-safe: the grain support pass that ends each small step when
``shock_propagation`` > 0 (Macklin et al. 2014 Sec. 4.3, after Guendelman, Bridson and Fedkiw 2003).
Arrays in, ``x_pred`` corrected in place."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .fastops import gather_difference

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# Grain support pass (support_grains): layers this many radii thick, swept bottom up.
# One radius took twice the sweeps and held a 40-grain column no better (99.98% of its height).
SUPPORT_LAYER_RADII = 2.0
# The sweep looks at pairs closer than 2r plus this many radii: a grain below that stopped leaves the
# one above it overlapping it. With only the pairs that overlapped before the sweep (0) that column lost
# 1.5% of its height instead of 0.02%.
SUPPORT_REACH_RADII = 0.5
# SupportSweep tries the guess of a pile at rest again after this many small steps where it did not (one
# frame at the default 16 small steps).
REST_RETRY_STEPS = 16


def support_grains(
    x: FloatArray,
    x_pred: FloatArray,
    pair_i: IntArray,
    pair_j: IntArray,
    grain: BoolArray,
    every_pair: bool,
    radius: float | FloatArray,
    gravity: FloatArray,
    try_rest: bool = True,
) -> bool:
    """Shock propagation for grains, done so that it adds no energy (x, x_pred (N, 3), metres).

    The solve's one Jacobi iteration per small step carries a grain's support one layer up per
    small step: a column n grains high falls freely for n small steps before its top grain feels
    the ground, and the overlap it then holds grows with depth (1 cm grains, 40 high, at the
    default 16 small steps of 1/384 s per frame: 72% of the height lost, and the overlap resolved
    as velocity threw the column up to twice its height). Shock propagation (Macklin 2014 Sec. 4.3,
    after Guendelman, Bridson, Fedkiw 2003, "Nonconvex rigid bodies with stacking", Sec. 7) treats
    each grain as immovable for the ones above it and sweeps the contacts bottom up, layer by layer
    (layers a grain diameter thick, ``SUPPORT_LAYER_RADII``), so the whole pile is supported within
    one small step. Its masses are not the real ones, so its corrections are kept energy-safe: a
    grain's step x* - x only loses (some of) its part into the grains below, never grows. A grain it
    acts on can only slow down (kinetic energy never grows), and it stays between where it started
    and where the solve put it; a grain sliding into one below may be turned upwards, trading speed
    for height as a real one would, never more than it had.

    With ``try_rest`` the sweep first tries the answer for a pile at rest (every grain where it
    started), checked exactly in one pass; the result is the sweep's either way. Returns whether that
    guess held for every grain (vacuously when none is pushed; :class:`SupportSweep` tries it again
    only then, or once in a while).
    """
    g = float(np.linalg.norm(gravity))
    if g == 0.0:
        return True
    i, j = pair_i, pair_j
    if not every_pair:
        both = np.flatnonzero(grain[pair_i] & grain[pair_j])
        i, j = pair_i[both], pair_j[both]
    if not len(i):
        return True
    # One radius r, or (N,) per particle: then a pair's r is its mean (r_i + r_j) / 2, and the layers
    # are as thick as the smallest grain's diameter (a grain never shares a layer with its support).
    sized = np.ndim(radius) > 0
    r: Any = 0.5 * (radius[i] + radius[j]) if sized else radius  # type: ignore[index]
    # Pairs that touch, or will once the grain below has stopped (coordinate-major gathers: see
    # fastops); none overlapping: nothing to push.
    xt = np.ascontiguousarray(x_pred.T)
    d = gather_difference(xt, i, j)
    d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    if not (d2 < (2.0 * r) ** 2).any():
        return True
    # A grain is pushed only out of its supports as the sweep left them, and the sweep moves a grain
    # back along its own step x* - x by at most the step's length: a pair farther apart than 2r plus
    # the longer of its grains' steps never overlaps in the sweep, and adds exactly nothing. Resting
    # grains step g h^2 (66 um at the default h): of a grain pile's candidate pairs only those in
    # contact remain (a third of them in the S4 blocks, whose side neighbours are 2.2r apart).
    st = np.subtract(xt, x.T)  # (3, N) each particle's step x* - x
    step_len = np.sqrt(st[0] * st[0] + st[1] * st[1] + st[2] * st[2])
    cap = SUPPORT_REACH_RADII * r
    near = np.flatnonzero(d2 < (2.0 * r + np.minimum(float(step_len.max()), cap)) ** 2)  # longest step
    i, j, d2 = i[near], j[near], d2[near]
    if sized:
        r, cap = r[near], cap[near]
    reach = 2.0 * r + np.minimum(np.maximum(step_len[i], step_len[j]), cap)  # each pair's own
    near = np.flatnonzero(d2 < reach * reach)
    i, j = i[near], j[near]
    if sized:
        r = r[near]
    height = np.dot(-gravity / g, xt)
    hi, hj = height[i], height[j]
    above = hi >= hj
    upper = np.where(above, i, j)
    lower = np.where(above, j, i)
    # A pair's layer is its upper grain's: each grain is pushed in one layer only, from the layers
    # below it (already pushed) and the grains of its own layer as they were (not yet pushed).
    layer = SUPPORT_LAYER_RADII * (float(np.min(r)) if sized else r)
    level = np.floor((np.maximum(hi, hj) - height[grain].min()) / layer)
    n = len(x_pred)
    # Sorted by layer, then by upper grain (stable: each grain's pairs keep their order): each
    # layer's pairs are a slice, and each grain's pairs within it a run (summed by reduceat).
    order = np.argsort(level.astype(np.int64) * n + upper, kind="stable")
    upper, lower, level = upper[order], lower[order], level[order]
    if sized:
        r = r[order]
    runs = np.flatnonzero(np.concatenate(([True], upper[1:] != upper[:-1])))  # each grain's first pair
    run_grain = upper[runs]
    m = len(runs)
    run_level = level[runs]
    layer_runs = np.flatnonzero(np.concatenate(([True], run_level[1:] != run_level[:-1])))
    layer_runs_end = np.concatenate((layer_runs[1:], [m]))
    # The sweep works on a compact coordinate-major copy of the grains it touches, the pushed ones
    # first in run order (a layer's pushed grains are then one slice, updated in place), then those
    # that are only supports. The upper grains' positions and steps do not change before their
    # layer, so they are gathered once: each layer costs a fixed number of NumPy calls on its pairs.
    local = np.full(n, -1, dtype=np.int64)
    local[run_grain] = np.arange(m)
    is_below = np.zeros(n, dtype=bool)
    is_below[lower] = True
    is_below[run_grain] = False
    below_only = np.flatnonzero(is_below)
    local[below_only] = np.arange(m, m + len(below_only))
    pos = np.take(xt, np.concatenate((run_grain, below_only)), axis=1)  # (3, G)
    lower_local = local[lower]
    up = np.take(xt, upper, axis=1)  # (3, P) upper grain of each pair, as before the sweep
    step = np.take(st, run_grain, axis=1)  # (3, M) each pushed grain's step x* - x
    rest = 2.0 * r  # (P,) per pair with several sizes, in the sorted order
    start = 0  # the first layer the sweep does
    if try_rest:
        # Guess: every grain where it started, the answer for a pile at rest (its supports held, each
        # grain pushed back by exactly its own step). One pass over all layers at once checks it, each
        # grain's supports in lower layers at their guesses, with the same floating-point operations as
        # the sweep: the lowest layer where a grain does not land exactly on its guess is exact (its
        # supports' guesses were), and so is every layer below it (they landed on their guesses); the
        # sweep goes on from the layer above. A pile at rest on a lattice (the S3 and S4 blocks after
        # landing) costs one pass instead of one per layer; in a settled random packing grains rest
        # in pockets, keep a sliding remainder of their step, and the guess fails in the lowest layer.
        guess = pos.copy()
        guess[:, :m] = np.take(x.T, run_grain, axis=1)
        lower_level = np.where(lower_local < m, run_level[np.minimum(lower_local, m - 1)], -1.0)
        below = np.take(guess, lower_local, axis=1)
        same = np.flatnonzero(lower_level == level)  # supports in the grain's own layer: not yet pushed
        below[:, same] = np.take(pos, lower_local[same], axis=1)
        pushed = pos[:, :m] + _push(up - below, runs, step, rest, r)
        moved = pushed != guess[:, :m]
        off = np.flatnonzero(moved[0] | moved[1] | moved[2])
        if not len(off):
            x_pred[run_grain] = pushed.T
            return True
        first = run_level[off].min()
        done = np.flatnonzero(run_level <= first)
        pos[:, done] = pushed[:, done]
        start = int(np.searchsorted(run_level[layer_runs], first, side="right"))
    bounds = zip(
        layer_runs[start:].tolist(),
        layer_runs_end[start:].tolist(),
        runs[layer_runs[start:]].tolist(),
        strict=True,
    )
    for ra, rb, a in bounds:  # layers, bottom up
        b = int(runs[rb]) if rb < m else len(upper)
        d = up[:, a:b] - np.take(pos, lower_local[a:b], axis=1)
        rest_ab, r_ab = (rest[a:b], r[a:b]) if sized else (rest, r)
        pos[:, ra:rb] += _push(d, runs[ra:rb] - a, step[:, ra:rb], rest_ab, r_ab)
    x_pred[run_grain] = pos[:, :m].T
    return False


def _push(d: FloatArray, runs: IntArray, step: FloatArray, rest: Any, r: Any) -> FloatArray:
    """(3, M) each grain's move out of its supports: ``d`` (3, P) from each support to the grain (used
    as scratch), the grains' pairs in runs starting at ``runs`` (M,), their steps x* - x (3, M),
    ``rest`` the contact distance and ``r`` the radius, metres (scalars, or (P,) per pair). One NumPy
    call per dot product (einsum over the coordinate axis): a layer's few hundred pairs cost calls, not
    arithmetic."""
    dist = np.sqrt(np.einsum("ij,ij->j", d, d))
    overlap = rest - dist
    # Out of the (immovable) grain below, by the overlap; summed over each grain's supports.
    d *= np.maximum(overlap, 0.0) / np.maximum(dist, 1e-12 * r)
    total = np.add.reduceat(d, runs, axis=1)
    push = np.sqrt(np.einsum("ij,ij->j", total, total))
    total /= np.maximum(push, 1e-300)  # the push's direction
    # Only the step's part into the supports goes, at most the push: the sliding part stays.
    into = np.clip(-np.einsum("ij,ij->j", step, total), 0.0, push)
    total *= into
    return total


class SupportSweep:
    """:func:`support_grains` with the rest guess tried only where it pays: after a small step where it
    held, and once every ``REST_RETRY_STEPS`` small steps otherwise (a pile that came to rest). In a
    random packing it fails at once and would cost a pass for nothing. The result does not depend on
    when it is tried (support_grains gives the sweep's result either way), so a snapshot need not keep
    this state."""

    def __init__(self) -> None:
        self.rest_held = True
        self.since_try = 0

    def __call__(
        self,
        x: FloatArray,
        x_pred: FloatArray,
        pair_i: IntArray,
        pair_j: IntArray,
        grain: BoolArray,
        every_pair: bool,
        radius: float | FloatArray,
        gravity: FloatArray,
    ) -> None:
        """:func:`support_grains` (same arguments), x_pred corrected in place."""
        try_rest = self.rest_held or self.since_try >= REST_RETRY_STEPS
        held = support_grains(x, x_pred, pair_i, pair_j, grain, every_pair, radius, gravity, try_rest)
        if try_rest:
            self.rest_held, self.since_try = held, 0
        else:
            self.since_try += 1
