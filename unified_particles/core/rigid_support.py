# SPDX-License-Identifier: GPL-3.0-or-later
"""Shock propagation from grains to the coarse rigid bodies resting on them, energy-safe: the body
support pass that follows the grain support pass (``grain_support.py``) in worlds of several sizes.
Arrays in, ``x_pred`` corrected in place."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .contacts import FacesFn, coarse_faces
from .face_plan import FacePlan
from .model import ParticleModel

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# A face contact supports its body when the push it gives the body points at most ~60 degrees from up
# (against gravity): the pass stands for the ground under the grains, never for grains to the side.
SUPPORT_COS = 0.5


class BodySupport:
    """:func:`support_bodies` with the rigid-grain pairs of the candidate list picked once per list (the
    list is kept for many small steps, ``PairCache``; a byte gather over a million pairs costs ~1 ms),
    and their coarse faces found by a :class:`face_plan.FacePlan` of those pairs."""

    def __init__(self) -> None:
        self._key: IntArray | None = None
        self._i = np.zeros(0, np.int64)
        self._j = np.zeros(0, np.int64)
        self._plan = FacePlan()

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
        friction_scales: tuple[float, float] = (1.0, 1.0),
    ) -> None:
        """:func:`support_bodies` (same arguments), ``x_pred`` corrected in place."""
        if self._key is not pair_i:
            rigid = np.isfinite(model.particle_sdf_depth)
            pairs = np.flatnonzero((rigid[pair_i] & grain[pair_j]) | (grain[pair_i] & rigid[pair_j]))
            self._i, self._j, self._key = pair_i[pairs], pair_j[pairs], pair_i
        depth, normal, faces = sdf
        if not len(self._i) or depth is None or normal is None or faces is None:
            return
        i, j = self._i, self._j
        coarse = self._plan.faces(np.ascontiguousarray(x_pred.T), i, j, radius, depth, normal, faces)
        _support(x, x_pred, i, j, coarse, depth, model, gravity, friction_scales)


def support_bodies(
    x: FloatArray,
    x_pred: FloatArray,
    pair_i: IntArray,
    pair_j: IntArray,
    radius: FloatArray,
    sdf: tuple[FloatArray | None, Callable[[IntArray], FloatArray] | None, FacesFn | None],
    model: ParticleModel,
    gravity: FloatArray,
    friction_scales: tuple[float, float] = (1.0, 1.0),
) -> None:
    """Stop a coarse rigid body's step into the grains under it, as the ground under them would.

    A rock of 5 cm particles on a bed of 5 mm grains weighs a thousand grains per particle. The one
    Jacobi iteration per small step gives each grain under it the whole correction and the rock ~1/1000
    of it (their masses), so the grains are pushed down into the bed while the rock barely slows; the
    grain support pass then holds them on the ground, and nothing holds the rock: it fell through a
    3 cm bed to the floor at its full speed (2.4 m/s after 0.3 m). Shock propagation (Macklin et al.
    2014 Sec. 4.3, after Guendelman, Bridson and Fedkiw 2003, Sec. 7) treats the supported layers below
    as immovable for what rests on them; this pass does that for the bodies, after the grains were
    supported, at the body level: the step each body's face contacts (``contacts.coarse_faces``,
    pushes within ~60 degrees of up, ``SUPPORT_COS``) with grains ask is one body motion.

    Energy-safe, as the grain pass: the body is moved by lambda along n, its contacts' pushes weighted
    by what they ask (each at most its overlap, at most how far the body moved into that grain during
    the step), lambda as far as the contact that asks most needs but at most the translation's own
    approach along n this step (-t . n). So only the part of its step into the grains goes, its sliding
    and its rotation stay: |t + lambda n| <= |t|, its kinetic energy never grows, and a rock landing on
    sand stops within one small step of its surface instead of throwing the grains out of its way.

    The grains' friction comes with it, as the contacts' (Macklin 2014 Eq. 24-26) with lambda for the
    penetration depth d: the translation's sliding part is removed whole when shorter than mu_s lambda,
    else shortened by mu_k lambda (mu the contacts' mean coefficient, weighted by what they ask). A body
    held by this pass is held by it alone (the contact pass gives it ~1/1000 of each grain's push), so
    without it a box slid over sand as over ice; resting, lambda = g h^2 per small step, a deceleration
    of mu g: Coulomb's.

    Args:
        x, x_pred: (N, 3) positions at the step's start and predicted, metres; ``x_pred`` is changed.
        pair_i, pair_j: (P,) candidate pairs of a rigid particle and a (movable) grain, either order.
        radius: (N,) particle radii, metres.
        sdf: (depth (N,), normals function, faces function) of the rigid particles
            (``Solver._rigid_sdf_world``).
        model: the particle model (shape matching, dynamic particles).
        gravity: (3,) m/s^2; the up direction is against it.
        friction_scales: the settings' (static, dynamic) friction scales (``contacts._friction``).
    """
    depth, normal, faces = sdf
    if depth is None or normal is None or faces is None:
        return
    xt = np.ascontiguousarray(x_pred.T)
    d = np.take(xt, pair_i, axis=1) - np.take(xt, pair_j, axis=1)
    coarse = coarse_faces(d, pair_i, pair_j, radius, depth, normal, faces)
    _support(x, x_pred, pair_i, pair_j, coarse, depth, model, gravity, friction_scales)


def _support(
    x: FloatArray,
    x_pred: FloatArray,
    pair_i: IntArray,
    pair_j: IntArray,
    coarse: tuple[IntArray, FloatArray, FloatArray] | None,
    depth: FloatArray,
    model: ParticleModel,
    gravity: FloatArray,
    friction_scales: tuple[float, float],
) -> None:
    """:func:`support_bodies` from the pairs' coarse faces ``coarse`` (``contacts.coarse_faces``'s
    result for pairs (pair_i, pair_j)); ``depth`` (N,) the rigid particles' SDF depths."""
    sm = model.shape_matching
    g = float(np.linalg.norm(gravity))
    if sm is None or coarse is None or g == 0.0:
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
    ok = ask > 0.0
    if not ok.any():
        return
    body_p, grain, push, ask = body_p[ok], grain[ok], push[:, ok], ask[ok]
    nb = sm.n_bodies
    body = model.particle_rigid_body[body_p]
    # Each body's push direction: its contacts' pushes weighted by what they ask, (B, 3).
    total = np.stack([np.bincount(body, weights=ask * push[k], minlength=nb) for k in range(3)], 1)
    length = np.sqrt(np.einsum("bi,bi->b", total, total))
    direction = total / np.maximum(length, 1e-300)[:, None]
    # How far along it the body must go for every contact (the one that asks most decides, as the
    # immovable support of Guendelman et al.); contacts at more than 60 degrees from it are left to the
    # solve (they would ask a long way for a little).
    along = np.einsum("ik,ki->k", push, direction[body])
    need = np.zeros(nb)
    fits = along > SUPPORT_COS
    np.maximum.at(need, body[fits], ask[fits] / along[fits])
    # ... and at most the approach of its translation along it this step: the translation's mass-weighted
    # mean step's part into the grains goes, the sliding part stays.
    step = x_pred[sm.idx] - x[sm.idx]
    mass = np.bincount(sm.body, weights=sm.mass, minlength=nb)
    moved = [np.bincount(sm.body, weights=sm.mass * step[:, k], minlength=nb) for k in range(3)]
    move: FloatArray = np.stack(moved, 1) / np.maximum(mass, 1e-300)[:, None]
    into = -np.einsum("bi,bi->b", move, direction)
    lam = np.clip(need, 0.0, np.maximum(into, 0.0))
    lam *= np.bincount(sm.body, weights=model.particle_dynamic[sm.idx], minlength=nb) > 0  # not kinematic
    # Coulomb friction on the sliding part, the contacts' own rule with lambda as the depth.
    pair_mu = 0.5 * (model.particle_friction[body_p] + model.particle_friction[grain])
    weight = np.bincount(body, weights=ask, minlength=nb)
    mu = np.bincount(body, weights=ask * pair_mu, minlength=nb) / np.maximum(weight, 1e-300)
    slide = move - np.einsum("bi,bi->b", move, direction)[:, None] * direction
    slide_len = np.sqrt(np.einsum("bi,bi->b", slide, slide))
    static, dynamic = friction_scales
    keep = np.where(
        slide_len < static * mu * lam, 0.0, 1.0 - dynamic * mu * lam / np.maximum(slide_len, 1e-300)
    )
    shift = lam[:, None] * direction - (1.0 - np.clip(keep, 0.0, 1.0))[:, None] * slide
    x_pred[sm.idx] += shift[sm.body]
