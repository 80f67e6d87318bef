# SPDX-License-Identifier: GPL-3.0-or-later
"""Fluid held out of colliders after the density solve (small step 5).

The density solve pushes liquid against whatever lies under it: at the bottom of a deep column its
pressure pushed particles through the floor (a 2.5 m dam break at r = 2.5 cm: 67 mm out) unless they go
back onto the surface afterwards.

The hold-out asks the colliders a second time in the small step (the contact pass asked first). A mesh
collider keeps the particles near its surface from one query to the next while none moved a margin
(``colliders.volume.VolumeContacts.near_points``), but only for the same reach: asked at r + tolerance by
the contact pass and at r here, the list was searched afresh at every query (3,840 of 3,960 near-point
queries in a small liquid tank, benchmarks/small_liquid_notes.md). So the hold-out asks at the contact
pass's reach and keeps the contacts with depth > 0 itself.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .collider_set import ColliderSet
from .colliders import ColliderContacts, collider_corrections
from .contact_pass import TOUCH_TOLERANCE_RADII
from .corrections import apply_jacobi
from .model import ParticleModel

FloatArray = NDArray[np.float64]


def hold_fluid_out(
    colliders: ColliderSet,
    x_pred: FloatArray,
    radius: float | FloatArray,
    alpha: float,
    dt_frame: float,
    model: ParticleModel,
) -> None:
    """Fluid particles inside a collider at ``x_pred`` (N, 3, in place) go back onto its surface, without
    friction (the step's contact pass applied it); several contacts of one particle are averaged (Jacobi).
    ``radius`` the particles' radii, m; ``alpha`` the fraction of the frame ``dt_frame`` (s) reached (the
    mesh colliders' pose); ``model`` says which particles are fluid."""
    is_fluid = model.particle_is_fluid
    col = colliders.contacts(x_pred, radius, alpha, dt_frame, _shared_tolerance(colliders, radius))
    if not len(col.idx):
        return
    keep = (col.depth > 0.0) & is_fluid[col.idx]
    if not keep.any():
        return
    col = ColliderContacts(
        col.idx[keep], col.normal[keep], col.depth[keep], col.velocity[keep], col.friction[keep]
    )
    delta = collider_corrections(x_pred, None, col, 1.0, 1.0, model.particle_friction, 0.0)
    apply_jacobi(x_pred, col.idx, delta, 1.0)


def _shared_tolerance(colliders: ColliderSet, radius: float | FloatArray) -> float | FloatArray:
    """The contact pass's tolerance (m, per particle like ``radius``) where asking with it finds the same
    contacts of depth > 0 as asking with none, so the colliders' candidate lists serve both queries;
    else 0.

    A volume collider's contact is a pure function of the distance (depth = r - d, kept where d < reach),
    so a larger reach only adds contacts of depth <= 0, which the caller drops. An exact collider's reach
    also moves the band it trusts (an open mesh's, and the deep volume lookup of a closed one's), which
    could change a contact of depth > 0: those ask at r as before."""
    if any(mesh.exact_contacts for mesh in colliders.meshes):
        return 0.0
    return TOUCH_TOLERANCE_RADII * radius
