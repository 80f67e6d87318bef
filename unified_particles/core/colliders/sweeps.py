# SPDX-License-Identifier: GPL-3.0-or-later
"""Swept contacts of a mesh collider: fast particles are held on the side of the surface they came from.

A particle that moved more than ``SWEEP_MIN_RADII`` radii relative to the collider in a small step has its
path (from its position at the step's start, in the collider's pose then, to its predicted position, in
the pose at the step's end) tested against the triangles; where it crosses the surface (entering, for a
closed mesh) it is held one radius off the crossing point instead of getting the contact at its end.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .. import colliders
from ..fastops import rows_all
from .contacts import ColliderContacts
from .crossings import SegmentHits, exact_surface_crossings
from .deforming import DeformingSurface
from .exact import ExactSurface

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def crossed_paths(
    touching: IntArray,
    q_prev: FloatArray,
    q: FloatArray,
    radius: float,
    thinnest: float,
    deform: DeformingSurface | None,
    probe: ExactSurface | None,
    alpha_prev: float,
    alpha: float,
) -> SegmentHits | None:
    """First crossings of the fast paths ``q_prev`` -> ``q`` (N, 3), collider frame, through the surface;
    None where no path needs the test.

    ``touching``: the particles with an ordinary contact at ``q``. ``deform`` the deforming surface (its
    triangles move between ``alpha_prev`` and ``alpha``), else ``probe`` the static triangles.
    """
    step = q - q_prev
    closed = deform.closed if deform is not None else probe is not None and probe.closed
    thick = closed and not math.isfinite(thinnest)
    limit = (colliders.SWEEP_CLOSED_MIN_RADII if thick else colliders.SWEEP_MIN_RADII) * radius
    step2 = np.einsum("ij,ij->i", step, step)
    fast_mask = step2 > limit * limit
    if thick and fast_mask.any():
        # Through a thick closed collider a path either ends in contact (then the contact is checked)
        # or is long enough to have passed its whole thickness (more than r + r + the >= r thickness).
        in_contact = np.zeros(len(q), dtype=bool)
        in_contact[touching] = True
        through = colliders.SWEEP_THROUGH_RADII * radius
        fast_mask &= in_contact | (step2 > through * through)
    if not closed and touching.size:
        # An open mesh is two-sided: a particle whose centre ends just past it (a slow path pressed
        # through by a contact, or a thin particle's short path) gets the contact of the far side and
        # is pushed on through. Every path that ends in contact is tested, so the side it came from holds.
        fast_mask[touching] |= step2[touching] > 0.0
    if deform is not None and deform.max_vertex_travel() * (alpha - alpha_prev) > limit:
        # The surface itself moves fast: every particle near it is swept (relative to it).
        fast_mask |= rows_all((q >= deform.lo) & (q <= deform.hi))
    fast = np.flatnonzero(fast_mask)
    if fast.size == 0:
        return None
    if deform is not None:
        return deform.crossings(q_prev, q, fast, alpha_prev, alpha)
    if probe is not None:
        return exact_surface_crossings(probe, q_prev, q, fast)
    return None


def hold_crossed(
    found: ColliderContacts,
    hits: SegmentHits,
    q: FloatArray,
    rotation: FloatArray,
    velocity: FloatArray,
    radius: float,
    friction: float,
) -> ColliderContacts:
    """``found`` with the contacts of the particles that crossed replaced by contacts that hold them one
    radius off the crossing point, on the side the path came from. ``rotation`` (3, 3) turns the
    collider frame's normals into the world's; ``velocity`` (M, 3) is the surface's at the crossings."""
    depth = radius - np.einsum("ij,ij->i", q[hits.idx] - hits.point, hits.normal)
    keep = ~np.isin(found.idx, hits.idx)
    swept = ColliderContacts(
        hits.idx, hits.normal @ rotation.T, depth, velocity, np.full(hits.idx.shape, friction)
    )
    kept = ColliderContacts(
        found.idx[keep], found.normal[keep], found.depth[keep], found.velocity[keep], found.friction[keep]
    )
    return ColliderContacts.concatenate([kept, swept])
