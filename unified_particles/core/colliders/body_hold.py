# SPDX-License-Identifier: GPL-3.0-or-later
"""Colliders keep the last word over rigid bodies: shape matching never fits a body back into one.

A collider has infinite mass, but within a small step its contacts come first and shape matching then
fits each rigid body to all of its particles' corrections, weighted alike (``rigid_contact_weight``):
the collider's push on a body's lowest row is averaged with the pushes of whatever presses on the body
from elsewhere. A 0.2 kg domino standing on a one-quad ground under a 1 kg hollow icosphere (a public
.blend made for Blender's rigid bodies, session 8) had its bottom row put back at one radius by the
collider pass in every small step and shape matching moved it down again by 1-3 mm each time (the
shell's ~200 contacts on its top against the ground's 40 below): 0.050 -> 0.005 m in a frame, then past
the plane, whose two-sided contact pushed it on through.

:func:`hold_bodies_out` fits each body whose collider contacts shape matching moved back in once more,
after shape matching (and the joints): the same rigid fit, to its shape-matched positions with each
sunk contact's particle put back where the contact pass left it (along the contact normal, so friction
keeps its part), that point weighted ``HOLD_WEIGHT`` times the whole body. The held points then stay
where the collider put them and the rest of the body moves as little as it can (mass-weighted): a body
pressed straight in moves straight back out, one that turned on a corner turns back about that corner
(a plain lift of the whole body there gave a tall domino pivoting on one corner the corner's whole
correction as upward speed and threw it into the air).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..rotations import polar_rotations_batch
from .contacts import ColliderContacts

if TYPE_CHECKING:
    from ..shape_matching import ShapeMatching

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Weight of a held point in the fit, relative to its whole body's mass: the held points end within
# about 1 / HOLD_WEIGHT of their sinking from where the collider put them.
HOLD_WEIGHT = 1.0e4


def hold_bodies_out(
    x: FloatArray,
    col: ColliderContacts,
    plane: FloatArray,
    particle_body: IntArray,
    rigid: NDArray[np.bool_],
    sm: ShapeMatching,
) -> None:
    """Fit each rigid body with collider contacts that sank since the contact pass once more, in place.

    Args:
        x: (N, 3) positions after shape matching, metres; changed in place.
        col: the small step's collider contacts (dynamic particles, depth > 0; world normals).
        plane: (K,) where each contact puts its particle along its normal, metres: x . n + depth with
            x where the contact was found (``struck.contact_planes``), the collider's surface plus r.
        particle_body: (N,) each particle's rigid body number (anything for non-rigid particles).
        rigid: (N,) True for rigid particles (kinematic ones have no contacts in ``col``: never moved).
        sm: the bodies' shape matching (rest positions, masses, rows).

    Contact k of particle i sank by s_k = plane_k - x_i . n_k; where s_k > 0 the fit's target for
    particle i is x_i + s_k n_k (summed over its contacts), elsewhere x_i. Minimizes, per body, the
    weighted squared distance of the rigid motion R q + t from the targets: the shape-matching fit.
    """
    mine = rigid[col.idx]
    if not mine.any():
        return
    idx, normal = col.idx[mine], col.normal[mine]
    # How far into its collider each contact's particle is now, metres (> 0: in).
    sunk = plane[mine] - np.einsum("ij,ij->i", x[idx], normal)
    deep = sunk > 0.0
    if not deep.any():
        return
    idx, lift = idx[deep], sunk[deep, None] * normal[deep]
    bodies = np.unique(particle_body[idx])
    flag = np.zeros(int(sm.body.max()) + 1, dtype=bool)
    flag[bodies] = True
    rows = np.flatnonzero(flag[sm.body])  # the affected bodies' rows of the rigid arrays
    local = np.searchsorted(bodies, sm.body[rows])  # their bodies numbered 0..B'-1
    nb = len(bodies)
    members = sm.idx[rows]
    target = x[members]
    weight = sm.mass[rows].copy()
    # Particle -> its row among ``rows`` (the held particles are among them: their bodies were flagged).
    where = np.searchsorted(members, idx) if np.all(members[1:] > members[:-1]) else None
    if where is None:
        order = np.argsort(members)
        where = order[np.searchsorted(members[order], idx)]
    np.add.at(target, where, lift)
    body_mass = np.bincount(local, weights=weight, minlength=nb)
    weight[where] = HOLD_WEIGHT * body_mass[local[where]]
    rest = sm.rest[rows]
    # The weighted fit (as ShapeMatching._fit): centres, then A = sum w (y - c)(q - q_c)^T, R = polar(A).
    total = np.bincount(local, weights=weight, minlength=nb)
    c = np.empty((nb, 3))
    qc = np.empty((nb, 3))
    for k in range(3):
        c[:, k] = np.bincount(local, weights=weight * target[:, k], minlength=nb) / total
        qc[:, k] = np.bincount(local, weights=weight * rest[:, k], minlength=nb) / total
    dy, dq = target - c[local], rest - qc[local]
    a = np.empty((9, nb))
    for i in range(3):
        for j in range(3):
            a[3 * i + j] = np.bincount(local, weights=weight * dy[:, i] * dq[:, j], minlength=nb)
    rot = polar_rotations_batch(a)
    x[members] = np.einsum("kij,kj->ki", rot[local], dq) + c[local]
