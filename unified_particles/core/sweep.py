# SPDX-License-Identifier: GPL-3.0-or-later
"""Swept particle-particle contacts: a fast particle never passes through another in one small step.

Contacts are tested at the end of each small step, so two particles whose relative motion in one step
is more than about their diameter can jump past each other (a fast grain through a cloth, between its
vertices, or through a rigid body's particles). :func:`limit_fast_paths` finds, before the solve, the
pairs whose straight paths over the step (start ``x``, predicted ``x*``) pass within a diameter of
each other and would be past their closest approach by the step's end, and shortens both paths to the
moment they overlap by ``SWEPT_OVERLAP_RADII`` radii: the contact pass of the same step then pushes
them apart with the usual mass-weighted corrections, on the side they came from.

Only particles whose step exceeds ``FAST_STEP_RADII`` radii are swept: slower pairs cannot pass
through each other without overlapping at a step's end, which the contact pass holds. So scenes
without fast particles pay one pass over the displacements per small step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .fastops import column_max, column_min, rows_all
from .model import KIND_RIGID, ParticleModel
from .neighbors import find_pairs

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Particles moving more than this many radii in one small step have their paths swept.
FAST_STEP_RADII = 1.0
# Swept pairs are stopped this many radii deep in contact (the contact pass resolves the rest, sharing
# the momentum by mass; stopped exactly at touch, a fast body would lose its whole step's motion).
SWEPT_OVERLAP_RADII = 0.25


def limit_fast_paths(
    x: FloatArray,
    x_pred: FloatArray,
    radius: float | FloatArray,
    group: IntArray | None = None,
    group_self_collides: NDArray[np.bool_] | None = None,
    movable: NDArray[np.bool_] | None = None,
    model: ParticleModel | None = None,
) -> int:
    """Shorten, in place, the predicted steps ``x_pred - x`` of pairs that would pass through each other.

    A pair's relative path p(t) = (x_i - x_j) + t (d_i - d_j), t in [0, 1], that starts apart
    (|p(0)| > 2r - overlap), reaches its closest approach before the step's end and comes closer than
    2r - overlap gets both steps scaled to the first t with |p(t)| = 2r - overlap (each particle keeps
    the smallest t of its pairs). Pairs skipped by ``group`` (as in :func:`find_pairs`) are ignored;
    only ``movable`` particles (default all) are shortened (pinned and kinematic ones keep their paths).
    A movable particle whose first touch is with an immovable one is carried with it instead (see
    there; with ``model``, a rigid body's particle is carried with its whole body). Returns the number of
    particles whose step was shortened or carried. ``radius``: one, or (N,) per particle (a pair then
    touches at r_i + r_j, each particle's fast limit its own).
    """
    d = x_pred - x
    step2 = np.einsum("ij,ij->i", d, d)
    sized = np.ndim(radius) > 0
    limit: Any = FAST_STEP_RADII * radius
    fast = step2 > limit * limit
    if not fast.any():
        return 0
    fi = np.flatnonzero(fast)
    # Fast paths sampled every `spacing`, other particles by the midpoint of their short paths: a pair
    # within 2r at some time has representatives within 2r + spacing / 2 + max(spacing, limit) / 2
    # (with several sizes: each fast path sampled at its own radius, the cutoff from the largest).
    spacing: Any = radius
    if sized:
        top = float(np.max(radius))
        cutoff = 2.0 * top + 0.5 * top + 0.5 * max(top, FAST_STEP_RADII * top)
        spacing = radius[fi]  # type: ignore[index]
    else:
        cutoff = 2.0 * radius + 0.5 * spacing + 0.5 * max(spacing, limit)
    n_s = np.floor(np.sqrt(step2[fi]) / spacing).astype(np.int64) + 2
    owner = np.repeat(fi, n_s)
    k = np.arange(owner.size, dtype=np.int64) - np.repeat(np.cumsum(n_s) - n_s, n_s)
    samples = x[owner] + (k / (n_s.repeat(n_s) - 1.0))[:, None] * d[owner]
    lo = column_min(samples) - cutoff
    hi = column_max(samples) + cutoff
    mid = 0.5 * (x + x_pred)
    slow = np.flatnonzero(~fast & rows_all((mid >= lo) & (mid <= hi)))
    pts = np.concatenate([mid[slow], samples])
    pid = np.concatenate([slow, owner])
    g = None if group is None else np.asarray(group)[pid]
    a, b = find_pairs(pts, cutoff, g, group_self_collides)
    i, j = pid[a], pid[b]
    keep = (i != j) & (fast[i] | fast[j])
    if not keep.any():
        return 0
    n = x.shape[0]
    lo_ij = np.minimum(i[keep], j[keep])
    key = np.unique(lo_ij * n + np.maximum(i[keep], j[keep]))
    i, j = key // n, key % n
    p0 = x[i] - x[j]
    dd = d[i] - d[j]
    qa = np.einsum("ij,ij->i", dd, dd)
    qb = np.einsum("ij,ij->i", p0, dd)  # half the linear coefficient
    # r_i + r_j less the overlap (a quarter of the pair's mean radius): 2r - r / 4 for one radius.
    if sized:
        rest = radius[i] + radius[j]  # type: ignore[index]
        touch: Any = rest - SWEPT_OVERLAP_RADII * 0.5 * rest
    else:
        touch = 2.0 * radius - SWEPT_OVERLAP_RADII * radius
    qc = np.einsum("ij,ij->i", p0, p0) - touch * touch
    disc = qb * qb - qa * qc
    meets = (qc > 0.0) & (qa > 0.0) & (disc >= 0.0)  # apart at the start, touching at some time
    safe_a = np.where(meets, qa, 1.0)
    t = (-qb - np.sqrt(np.maximum(disc, 0.0))) / safe_a
    meets &= (t >= 0.0) & (t <= 1.0)
    # Two movable particles whose closest approach comes after the step's end still overlap at its end
    # (the contact pass holds them); one overtaken by an immovable partner may be deep in it by then.
    ok = meets & (-qb < qa)
    mixed = None if movable is None else meets & (movable[i] != movable[j])
    if mixed is not None:
        ok |= mixed
    if not ok.any():
        return 0
    carried = 0
    if mixed is not None and mixed.any():
        moved_with = _carry(x, x_pred, d, i[mixed], j[mixed], t[mixed], movable, model)
        carried = len(moved_with)
        gone = np.zeros(n, dtype=bool)
        gone[moved_with] = True  # their path is settled
        ok &= ~mixed & ~gone[i] & ~gone[j]
    scale = np.ones(n)
    np.minimum.at(scale, i[ok], t[ok])
    np.minimum.at(scale, j[ok], t[ok])
    if movable is not None:
        scale[~movable] = 1.0
    moved = np.flatnonzero((scale < 1.0) & (step2 > 0.0))
    x_pred[moved] = x[moved] + scale[moved, None] * d[moved]
    return int(moved.size) + carried


def _carry(
    x: FloatArray,
    x_pred: FloatArray,
    d: FloatArray,
    i: IntArray,
    j: IntArray,
    t: FloatArray,
    movable: NDArray[np.bool_] | None,
    model: ParticleModel | None = None,
) -> IntArray:
    """Carry, in place, each movable particle of the pairs (i, j) with one immovable side to where that
    partner ends the step, at their relative position p(t) at the touch (x*_partner + p(t)); a particle
    touched by several goes with the first (smallest ``t``). Returns the carried particles.

    Against an immovable partner (a kinematic body's particle, a pin), stopping the movable one at the
    touch leaves it where the partner passes through it in the next step: a grain swept by an animated
    board at 8 m/s went through it. For a partner at rest this is the movable one's own path cut at t.

    A rigid body's particle (``model`` given) moves its whole body: each struck body is translated by
    the largest carry of its particles, as ``struck.push_struck_bodies`` moves a body a collider strikes.
    Carried alone, the few struck particles were pulled back by shape matching to a body that lagged
    its striker, so the next small step took the striker deeper: a kinematic paddle at 20 m/s (2.6
    radii per small step) passed through a 0.2 m box, which left at 2.5 m/s.
    """
    assert movable is not None
    p_t = (x[i] - x[j]) + t[:, None] * (d[i] - d[j])
    first_i = movable[i]
    mover = np.where(first_i, i, j)
    target = np.where(first_i[:, None], x_pred[j] + p_t, x_pred[i] - p_t)
    order = np.lexsort((t, mover))
    head = np.ones(len(order), dtype=bool)
    head[1:] = mover[order][1:] != mover[order][:-1]
    pick = order[head]
    carried, target = mover[pick], target[pick]
    sm = None if model is None else model.shape_matching
    if sm is not None and model is not None:
        rigid = model.particle_kind[carried] == KIND_RIGID
        if rigid.any():
            body = model.particle_rigid_body[carried[rigid]]
            shift = target[rigid] - x_pred[carried[rigid]]
            size = np.einsum("ij,ij->i", shift, shift)
            by = np.lexsort((size, body))  # by body, then size: the last of each body is its largest
            last = np.ones(len(by), dtype=bool)
            last[:-1] = body[by][1:] != body[by][:-1]
            per_body = np.zeros((sm.n_bodies, 3))
            per_body[body[by[last]]] = shift[by[last]]
            struck = np.zeros(sm.n_bodies, dtype=bool)
            struck[body] = True
            whole = struck[sm.body]
            x_pred[sm.idx[whole]] += per_body[sm.body[whole]]
            carried, target = carried[~rigid], target[~rigid]
            x_pred[carried] = target
            return np.concatenate([carried, sm.idx[whole]]).astype(np.int64)
    x_pred[carried] = target
    return np.asarray(carried, dtype=np.int64)
