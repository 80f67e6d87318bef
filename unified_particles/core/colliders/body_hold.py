# SPDX-License-Identifier: GPL-3.0-or-later
"""Colliders keep the last word over rigid bodies: shape matching never moves a body back into one.

A collider has infinite mass, but within a small step its contacts come first and shape matching then
fits each rigid body to all of its particles' corrections, weighted alike (``rigid_contact_weight``):
the collider's push on a body's lowest row is averaged with the pushes of whatever presses on the body
from above. A 0.2 kg domino standing on a one-quad ground under a 1 kg hollow icosphere (a public
.blend made for Blender's rigid bodies, session 8) had its bottom row put back at exactly one radius by
the collider pass in every small step, and shape matching moved it down again by 1-3 mm each time
(the shell's ~200 contacts on its top against the ground's 40 below): 0.050 -> 0.005 m in a frame,
then past the plane, whose two-sided contact pushed it on through.

:func:`hold_bodies_out` translates each such body back along its contacts' normals, after shape
matching (and the joints), by the most any of its collider contacts was moved back into its collider
since the contact pass put it out: the body as a whole, so it stays rigid; only ever outwards, so
nothing is pulled towards a collider; and only bodies with collider contacts.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .contacts import ColliderContacts

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Passes of the per-body projection. A body on one flat collider needs one (every normal the same); one
# in a corner (two normals) gets the deepest contact's push first and the other's remainder second.
HOLD_PASSES = 2


def hold_bodies_out(
    x: FloatArray,
    col: ColliderContacts,
    placed: FloatArray,
    particle_body: IntArray,
    rigid: NDArray[np.bool_],
    rigid_idx: IntArray,
    rigid_body: IntArray,
) -> None:
    """Move each rigid body back out along its collider contacts, in place.

    Args:
        x: (N, 3) positions after shape matching, metres; changed in place.
        col: the small step's collider contacts (dynamic particles, depth > 0; world normals).
        placed: (K, 3) where the contact pass left each contact's particle (``x[col.idx]`` then).
        particle_body: (N,) each particle's rigid body number (anything for non-rigid particles).
        rigid: (N,) True for rigid particles (kinematic ones have no contacts in ``col``: never pushed).
        rigid_idx, rigid_body: (R,) the rigid particles and their bodies (``ShapeMatching.idx``, ``.body``).

    Each body b is moved by t_b, the smallest push along one contact normal that puts every contact k back
    in front of its plane: (x_k + t_b - placed_k) . n_k >= 0 (exact for contacts sharing a normal).
    """
    mine = rigid[col.idx]
    if not mine.any():
        return
    idx, normal = col.idx[mine], col.normal[mine]
    # How far back into its collider each contact was moved since the contact pass, metres (> 0: in).
    sunk = np.einsum("ij,ij->i", placed[mine] - x[idx], normal)
    if not (sunk > 0.0).any():
        return
    body = particle_body[idx]
    push = np.zeros((int(rigid_body.max()) + 1, 3))
    for _ in range(HOLD_PASSES):
        left = sunk - np.einsum("ij,ij->i", push[body], normal)
        deep = left > 0.0
        if not deep.any():
            break
        # Per body its deepest remaining contact: sort by (body, -left), keep each body's first row.
        sel = np.flatnonzero(deep)
        order = sel[np.lexsort((-left[sel], body[sel]))]
        first = order[np.r_[True, body[order][1:] != body[order][:-1]]]
        push[body[first]] += left[first, None] * normal[first]
    moved = np.any(push != 0.0, axis=1)
    rows = np.flatnonzero(moved[rigid_body])
    x[rigid_idx[rows]] += push[rigid_body[rows]]
