# SPDX-License-Identifier: GPL-3.0-or-later
"""An open mesh keeps every particle on its side: no correction carries a centre through it in a small step.

An open mesh (a single quad for a ground, a table top, a sheet) has no inside: its contacts are two-sided,
pushing a particle out of whichever side its centre is on. The swept contacts (``sweeps``) test the
paths that end in contact with it when the contacts are found, early in the small step; what moves a
particle after that (the particle pairs, shape matching, joints, the cloth solves) is not tested there,
and a centre carried past the surface then gets the far side's contact in the next small step and is
pushed on through. :func:`held_sides` tests each particle's whole path of the small step, from where it
started to where every correction left it, against the surface once more at the step's end (only the
paths whose box meets the mesh's), and puts a particle that crossed back one radius in front of the
crossing point, on the side it came from (as ``sweeps.hold_crossed`` does for the contacts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..fastops import rotate_translate, rows_all
from .crossings import exact_surface_crossings
from .deforming import DeformingSurface
from .exact import ExactSurface

if TYPE_CHECKING:
    from .mesh import MeshCollider

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


def is_open(mesh: MeshCollider) -> bool:
    """True for an open mesh (two-sided contacts: a ground quad, a sheet), False for a closed one."""
    surface = mesh._deform if mesh._deform is not None else mesh._probe
    return surface is not None and not surface.closed


def keep_mesh_sides(
    mesh: MeshCollider,
    x_prev: FloatArray,
    x: FloatArray,
    alpha: float,
    alpha_prev: float,
    movable: BoolArray,
    radius: float | FloatArray,
) -> None:
    """An open mesh: put the particles whose path ``x_prev`` -> ``x`` (N, 3, world) this small step
    crossed it back on the side they came from, in place (:func:`held_sides`; a closed mesh does
    nothing). ``alpha_prev``, ``alpha``: the fractions of the frame at the step's start and end."""
    if not is_open(mesh):
        return
    deform = mesh._update_deform() if mesh._deform is not None else None
    rp, tp = mesh._pose_at(alpha_prev)
    r, t = mesh._pose_at(alpha)
    q_prev = rotate_translate(x_prev, rp, -(tp @ rp))
    q = rotate_translate(x, r, -(t @ r))
    held = held_sides(q_prev, q, movable, radius, deform, mesh._probe, alpha_prev, alpha)
    if held is not None:
        x[held[0]] = rotate_translate(held[1], r.T, t)  # local to world: q R^T + t


def held_sides(
    q_prev: FloatArray,
    q: FloatArray,
    movable: BoolArray,
    radius: float | FloatArray,
    deform: DeformingSurface | None,
    probe: ExactSurface | None,
    alpha_prev: float,
    alpha: float,
) -> tuple[IntArray, FloatArray] | None:
    """The particles whose path ``q_prev`` -> ``q`` (N, 3), collider frame, crossed an open surface, and
    where they go instead; None if none did (or the surface is closed).

    Args:
        q_prev: (N, 3) positions at the small step's start, in the collider's pose then, metres.
        q: (N, 3) positions after every correction, in its pose at the step's end, metres.
        movable: (N,) the particles that may be moved (dynamic, not kinematic or pinned).
        radius: particle radius, metres: one, or (N,) per particle.
        deform: the deforming surface (its triangles move between ``alpha_prev`` and ``alpha``), else
            ``probe``, the static triangles.

    Returns:
        (idx (M,), positions (M, 3) in the collider frame): each one radius in front of its crossing
        point along the crossed triangle's normal, on the side the path came from.
    """
    if deform is not None:
        if deform.closed:
            return None
        lo, hi = deform.lo, deform.hi  # grown by its band; the crossing test sorts the rest out
    elif probe is not None and not probe.closed:
        lo, hi = probe.lo + probe.band, probe.hi - probe.band  # the triangles' own box
    else:
        return None
    # A path can only cross a triangle if its box meets the triangles' box.
    low, high = np.minimum(q_prev, q), np.maximum(q_prev, q)
    near = movable & rows_all(low <= hi) & rows_all(high >= lo)
    which = np.flatnonzero(near)
    if which.size == 0:
        return None
    if deform is not None:
        hits = deform.crossings(q_prev, q, which, alpha_prev, alpha)
    else:
        assert probe is not None
        hits = exact_surface_crossings(probe, q_prev, q, which)
    if hits.idx.size == 0:
        return None
    r = radius[hits.idx] if np.ndim(radius) else radius  # type: ignore[index]
    out = r - np.einsum("ij,ij->i", q[hits.idx] - hits.point, hits.normal)
    return hits.idx, q[hits.idx] + out[:, None] * hits.normal
