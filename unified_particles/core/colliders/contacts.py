# SPDX-License-Identifier: GPL-3.0-or-later
"""Contacts against colliders and their corrections: push out by the depth, Coulomb friction relative
to the moving surface.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass
class ColliderContacts:
    """Contacts of particles against colliders found in one solver step.

    Attributes:
        idx: (K,) particle indices (a particle may appear once per collider it touches).
        normal: (K, 3) unit outward surface normals, world frame.
        depth: (K,) penetration depth of the particle sphere, metres (> 0).
        velocity: (K, 3) velocity of the collider surface at the contact, m/s.
        friction: (K,) Coulomb friction coefficient of the collider side.
    """

    idx: IntArray
    normal: FloatArray
    depth: FloatArray
    velocity: FloatArray
    friction: FloatArray

    @staticmethod
    def concatenate(parts: list[ColliderContacts]) -> ColliderContacts:
        if not parts:
            z = np.zeros((0, 3))
            return ColliderContacts(np.zeros(0, np.int64), z, np.zeros(0), z.copy(), np.zeros(0))
        if len(parts) == 1:
            return parts[0]
        return ColliderContacts(
            np.concatenate([p.idx for p in parts]),
            np.concatenate([p.normal for p in parts]),
            np.concatenate([p.depth for p in parts]),
            np.concatenate([p.velocity for p in parts]),
            np.concatenate([p.friction for p in parts]),
        )


def collider_corrections(
    x_pred: FloatArray,
    x_prev: FloatArray | None,
    contacts: ColliderContacts,
    mu_static_scale: float,
    mu_kinetic_scale: float,
    particle_friction: FloatArray,
    h: float,
    friction_depth: FloatArray | None = None,
    kinetic_ratio: FloatArray | None = None,
) -> FloatArray:
    """(K, 3) corrections for collider contacts: push out by the depth, then Coulomb friction.

    Non-penetration: dx = depth * n. Friction (paper Eq. 24-26 with an infinite-mass partner): the
    particle's tangential displacement relative to the surface, (x* - x) - v_surface h, is removed
    when it is below mu_s * depth (static) and otherwise shortened by mu_k * depth (kinetic). The
    pair coefficient is the mean of the particle's and the collider's friction. ``friction_depth`` (K,),
    if given, is the depth friction scales with instead of ``contacts.depth`` (m: a struck body moved as
    a whole before these corrections keeps the friction of its whole contact). ``kinetic_ratio`` (N,),
    if given, scales each particle's mu_k (grains: kinetic / static friction, see contacts._friction).
    """
    n = contacts.normal
    # Near contacts (depth <= 0) get no push and, with zero depth, no friction either.
    dx = np.maximum(contacts.depth, 0.0)[:, None] * n
    if x_prev is None:
        return dx
    idx = contacts.idx
    mu = 0.5 * (particle_friction[idx] + contacts.friction)
    mu_k = mu if kinetic_ratio is None else mu * kinetic_ratio[idx]
    rel = (x_pred[idx] - x_prev[idx]) - contacts.velocity * h
    t = rel - np.einsum("ij,ij->i", rel, n)[:, None] * n
    tl = np.sqrt(np.einsum("ij,ij->i", t, t))
    pen = np.maximum(contacts.depth if friction_depth is None else friction_depth, 0.0)
    factor = np.where(
        (tl < mu_static_scale * mu * pen) & (pen > 0.0),
        1.0,
        np.minimum(mu_kinetic_scale * mu_k * pen / np.maximum(tl, 1e-300), 1.0),
    )
    return dx - t * factor[:, None]
