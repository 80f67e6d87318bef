# SPDX-License-Identifier: GPL-3.0-or-later
"""Shock propagation from grains to the coarse rigid bodies resting on them, energy-safe: the body
support pass that follows the grain support pass (``grain_support.py``) in worlds of several sizes.
Arrays in, ``x_pred`` corrected in place."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .contacts import FacesFn, _coarse_faces
from .model import ParticleModel

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# A face contact supports its body when the push it gives the body points at most ~60 degrees from up
# (against gravity): the pass stands for the ground under the grains, never for grains to the side.
SUPPORT_COS = 0.5


class BodySupport:
    """:func:`support_bodies` with the rigid-grain pairs of the candidate list picked once per list (the
    list is kept for many small steps, ``PairCache``; a byte gather over a million pairs costs ~1 ms)."""

    def __init__(self) -> None:
        self._key: IntArray | None = None
        self._pairs = np.zeros(0, np.int64)

    def __call__(
        self,
        x: FloatArray,
        x_pred: FloatArray,
        pair_i: IntArray,
        pair_j: IntArray,
        grain: BoolArray,
        radius: FloatArray,
        sdf: tuple[FloatArray | None, Callable[[IntArray], FloatArray] | None, FacesFn | None],
        model: ParticleModel,
        gravity: FloatArray,
    ) -> None:
        """:func:`support_bodies` (same arguments), ``x_pred`` corrected in place."""
        if self._key is not pair_i:
            rigid = np.isfinite(model.particle_sdf_depth)
            self._pairs = np.flatnonzero((rigid[pair_i] & grain[pair_j]) | (grain[pair_i] & rigid[pair_j]))
            self._key = pair_i
        if len(self._pairs):
            support_bodies(x, x_pred, pair_i[self._pairs], pair_j[self._pairs], radius, sdf, model, gravity)


def support_bodies(
    x: FloatArray,
    x_pred: FloatArray,
    pair_i: IntArray,
    pair_j: IntArray,
    radius: FloatArray,
    sdf: tuple[FloatArray | None, Callable[[IntArray], FloatArray] | None, FacesFn | None],
    model: ParticleModel,
    gravity: FloatArray,
) -> None:
    """Stop a coarse rigid body's step into the grains under it, as the ground under them would.

    A rock of 5 cm particles on a bed of 5 mm grains weighs a thousand grains per particle. The one
    Jacobi iteration per small step gives each grain under it the whole correction and the rock ~1/1000
    of it (their masses), so the grains are pushed down into the bed while the rock barely slows; the
    grain support pass then holds them on the ground, and nothing holds the rock: it fell through a
    3 cm bed to the floor at its full speed (2.4 m/s after 0.3 m). Shock propagation (Macklin et al.
    2014 Sec. 4.3, after Guendelman, Bridson and Fedkiw 2003, Sec. 7) treats the supported layers below
    as immovable for what rests on them; this pass does that for the bodies, after the grains were
    supported, at the body level: the step each body's face contacts (``contacts._coarse_faces``,
    pushes within ~60 degrees of up, ``SUPPORT_COS``) with grains ask is one body motion.

    Energy-safe, as the grain pass: a body's step x* - x only loses part of its translation (the
    factor mu in [0, 1] that removes its approach into its deepest-reaching contact: at most the
    contact's overlap, at most how far the body moved into that grain during the step), never grows,
    and the rotation is kept. So its kinetic energy never grows and it ends between where it started
    and where the solve put it: a rock landing on sand stops within one small step of its surface
    instead of throwing the grains out of its way.

    Args:
        x, x_pred: (N, 3) positions at the step's start and predicted, metres; ``x_pred`` is changed.
        pair_i, pair_j: (P,) candidate pairs of a rigid particle and a (movable) grain, either order.
        radius: (N,) particle radii, metres.
        sdf: (depth (N,), normals function, faces function) of the rigid particles
            (``Solver._rigid_sdf_world``).
        model: the particle model (shape matching, dynamic particles).
        gravity: (3,) m/s^2; the up direction is against it.
    """
    sm = model.shape_matching
    depth, normal, faces = sdf
    g = float(np.linalg.norm(gravity))
    if sm is None or depth is None or normal is None or faces is None or g == 0.0:
        return
    xt = np.ascontiguousarray(x_pred.T)
    d = np.take(xt, pair_i, axis=1) - np.take(xt, pair_j, axis=1)
    coarse = _coarse_faces(d, pair_i, pair_j, radius, depth, normal, faces)
    if coarse is None:
        return
    pick, n, gap = coarse
    over = np.flatnonzero(gap < 0.0)
    if not over.size:
        return
    pick, n, gap = pick[over], n[:, over], gap[over]
    i, j = pair_i[pick], pair_j[pick]
    on_i = np.isfinite(depth[i])  # the rigid side; n points from j to i
    body_p = np.where(on_i, i, j)
    grain = np.where(on_i, j, i)
    push = np.where(on_i, n, -n)  # the way the body is pushed, (3, K)
    up = -np.asarray(gravity, dtype=np.float64) / g
    keep = np.flatnonzero(up @ push > SUPPORT_COS)
    if not keep.size:
        return
    body_p, grain, push, gap = body_p[keep], grain[keep], push[:, keep], gap[keep]
    # How far the body moved into each grain this step (relative to the grain), and what the contact asks.
    rel = (x_pred[body_p] - x[body_p]) - (x_pred[grain] - x[grain])
    approach = -np.einsum("ki,ik->k", rel, push)
    ask = np.minimum(-gap, approach)
    # The bodies' translations this step: mass-weighted mean step of their particles, (B, 3).
    nb = sm.n_bodies
    step = x_pred[sm.idx] - x[sm.idx]
    mass = np.bincount(sm.body, weights=sm.mass, minlength=nb)
    total = [np.bincount(sm.body, weights=sm.mass * step[:, k], minlength=nb) for k in range(3)]
    move: FloatArray = np.stack(total, 1) / np.maximum(mass, 1e-300)[:, None]
    body = model.particle_rigid_body[body_p]
    into = -np.einsum("ki,ik->k", move[body], push)  # the translation's approach along each push
    ok = (ask > 0.0) & (into > 0.0)
    if not ok.any():
        return
    mu = np.zeros(nb)
    np.maximum.at(mu, body[ok], np.minimum(ask[ok] / into[ok], 1.0))
    dynamic = np.bincount(sm.body, weights=model.particle_dynamic[sm.idx], minlength=nb) > 0
    mu *= dynamic  # kinematic and pinned bodies follow their own motion
    x_pred[sm.idx] -= (mu[:, None] * move)[sm.body]
