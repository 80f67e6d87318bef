# SPDX-License-Identifier: GPL-3.0-or-later
"""The cloth-held contact pass: loads (grains, rigid particles) put back on a cloth after its stretch solve.

The stiff stretch solve runs after the contacts and pulls each cloth vertex back to where the rest of the
cloth and the pins hold it, undoing the cloth's share of every contact correction. With the mass-ratio
limit (10:1) the heavy side's share is only 1/11, so a grain or crate on the cloth got ~1/11 of the
overlap back per small step: a contact that soft is a spring that a falling block of sand compresses by
more than a radius and pushes straight through, between the vertices, while the cloth hardly stretches
(hammock demo, 700 kg of sand on 0.9 kg of cloth: 600-1300 of the 1287 grains and both crates went
through the cloth's interior; twice the substeps only slowed it down). So the cloth-load contacts are
solved once more after the stretch solve with the cloth counting as immovable (its position is the
stretch solve's answer): only the load moves out, and the step ends with the load on the cloth.

Two things make that pass a source of energy unless handled here (issue 24, item 5):

* **Friction.** The first contact pass applies friction with the same 1:10 split, and the stretch solve
  undoes the cloth's 10/11 of it too, so a heavy load kept ~1/11 of its friction: a box resting in a
  cloth sling slid along it and out. The pass here applies Coulomb friction (paper Eq. 24-26) with the
  cloth held, relative to the cloth's own motion in the step.
* **Push-out velocity.** A held cloth is infinitely heavy, so whatever moved the cloth into a load this
  step (the jitter of light vertices under a heavy load, ~0.5-1 m/s at the default budget) would be
  handed to the load as velocity by the velocity update v = (x* - x) / h: a resting box in a sling
  bounced ever higher and was thrown out. The pass may stop a load's own motion (up to cancelling its
  velocity along the correction), never push it off faster: the rest of each correction moves the load
  without becoming velocity (as the stabilization of Macklin et al. 2014, Sec. 4.4, removes initial
  overlap). The pass can therefore only lower a load's kinetic energy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .cloth_triangles import apply_triangle_contacts
from .contacts import FacesFn, particle_contacts
from .corrections import apply_pair_jacobi

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# A load (grain, rigid particle) may rest this many radii deep in a cloth. Going through between the
# vertices takes an overlap of about a radius. With no slop the load's mass stops mattering (a
# 5000 kg/m^3 box sagged a cloth no more than a 2 kg/m^3 one); with 0.25 a box corner still poked
# through a loaded cloth for a frame.
CLOTH_CONTACT_SLOP_RADII = 0.2


def hold_loads_on_cloth(
    x: FloatArray,
    x_pred: FloatArray,
    pair_i: IntArray,
    pair_j: IntArray,
    is_cloth: NDArray[np.bool_],
    w_contact: FloatArray,
    radius: float | FloatArray,
    relaxation: float,
    friction: FloatArray,
    static_scale: float,
    dynamic_scale: float,
    sdf: tuple[FloatArray | None, Callable[[IntArray], FloatArray] | None, FacesFn | None],
    triangles: tuple[IntArray, FloatArray] | None = None,
) -> tuple[IntArray, FloatArray]:
    """Cloth-load contacts with the cloth held, applied to ``x_pred`` in place.

    Only overlap beyond the slop is removed (rest distance 2r - slop r): the load rests that deep in the
    cloth and the next first contact pass sees it, so the sag still grows with the load's mass.

    Args:
        x: (N, 3) positions at the start of the small step, metres.
        x_pred: (N, 3) predicted positions after the stretch solve, metres; corrected in place.
        pair_i, pair_j: (P,) the small step's candidate pairs.
        is_cloth: (N,) cloth particles.
        w_contact: (N,) contact inverse masses, 1/kg (the loads' side; the cloth's is taken as 0).
        radius: particle radius r, metres: one, or (N,) per particle (a cloth's thickness).
        relaxation: SOR factor of the Jacobi-averaged pair corrections.
        friction: (N,) Coulomb coefficients; static_scale, dynamic_scale: their multipliers.
        sdf: the rigid particles' SDF depth, normal and faces functions (``particle_contacts``).
        triangles: the loads' contacts with the cloth's triangles, cloth held, computed on ``x_pred``
            (``cloth_triangles.ClothTriangles.contacts``), applied here with the particle contacts.

    Returns:
        (idx, shift): the loads moved (K,) and the part of each one's correction, (K, 3) metres, that
        must not become velocity: the caller subtracts shift / h from their velocities after the update.
    """
    mixed = is_cloth[pair_i] != is_cloth[pair_j]
    tri_idx, tri_delta = (np.zeros(0, np.int64), np.zeros((0, 3))) if triangles is None else triangles
    none = (np.zeros(0, np.int64), np.zeros((0, 3)))
    idx, delta = none[0], np.zeros((3, 0))
    if mixed.any():
        w_load = np.where(is_cloth, 0.0, w_contact)  # 0 = immovable, kept 0 by the ratio limit
        r = radius * (1.0 - 0.5 * CLOTH_CONTACT_SLOP_RADII)
        idx, delta, _ = particle_contacts(
            x_pred, x, pair_i[mixed], pair_j[mixed], w_load, r, np.inf,
            friction, static_scale, dynamic_scale, None, *sdf,
        )  # fmt: skip
    if not len(idx) and not len(tri_idx):
        return none
    moved = np.unique(np.concatenate([idx[~is_cloth[idx]], tri_idx[~is_cloth[tri_idx]]]))
    before = x_pred[moved]
    if len(idx):
        apply_pair_jacobi(x_pred, idx, delta, relaxation)
    if len(tri_idx):
        apply_triangle_contacts(x_pred, tri_idx, tri_delta, relaxation)
    dx = x_pred[moved] - before
    size = np.sqrt(np.einsum("ij,ij->i", dx, dx))
    unit = dx / np.maximum(size, 1e-300)[:, None]
    # The load's own motion this step against the correction: at most that much of it is velocity.
    approach = -np.einsum("ij,ij->i", before - x[moved], unit)
    stopped = np.clip(approach, 0.0, size)
    return moved, (size - stopped)[:, None] * unit
