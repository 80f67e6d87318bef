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

Two more make a rigid load in an inextensible cloth sling keep its swing and stay at rest (issue 24, item 5;
session 11; docs/physics.md, *The sling's swing*):

* **A rigid body is stopped as a whole.** Judged per particle in the world frame, the stop is not the same
  in every direction: in a swing the strap's two walls move with the box and push it both ways in turn;
  the wall ahead (against a particle's motion) became velocity and the wall behind only a shift, so every
  jiggle between them took speed off the box (released at 20 degrees it hung after half a swing). A
  rigid body's held corrections are summed first into its translation D (sum over the body's particles
  / their count, what shape matching makes of them): the two walls' pushes cancel, and the body may lose
  its own translation along D up to a cap, never be pushed off faster; the rest of every particle's
  correction, the rotation included, is a shift, so the body's kinetic energy can only drop. The cap is
  |D| for a glancing motion and |D| n_body / n_touching (the touching particles' full push, what the
  per-particle stop gives) for a body driving head-on into the cloth: |D| (1 + (n_body / n_touching - 1)
  cos^2 phi), phi the angle between the body's motion and -D. With |D| alone a box 1000 times a vertex's
  mass kept most of its approach speed every small step and went through a tethered cloth
  (test_tethers.py); with the touching count alone the swing stopped as before. The cos^2 blend between
  the two is a choice (measured, not derived).
* **No slop between a rigid load and inextensible cloth.** In the slop band the first contact pass, with
  its 1:10 mass-ratio split, moves the light vertices and hands 1/11 of the overlap to the load as
  velocity every small step: the strap's jitter moved a resting box 5 cm in 3 s. The slop is there so
  that a load's mass reaches the cloth and the sag grows with it; an inextensible cloth's shape does not
  depend on the load (``cloth_load.py``), so a rigid load rests at 2r on it (grains keep the slop, or a
  grain striking a free cloth loses its momentum to this pass, ``test_cloth_triangles.py``; compliant
  vertices keep it, or the sag stops growing with the load, ``test_cloth_compliance.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .cloth_triangles import apply_triangle_contacts
from .contacts import FacesFn, _merge, particle_contacts
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
    bodies: tuple[IntArray, IntArray, int] | None = None,
    soft_cloth: NDArray[np.bool_] | None = None,
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
        bodies: the rigid particles (R,), their body numbers (R,) and the body count, or None: those
            loads are stopped body by body and rest at 2r on cloth vertices not in ``soft_cloth``.
        soft_cloth: (N,) the cloth vertices with an edge compliant within the step
            (``cloth_load.carry_loads``), or None: all inextensible.

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
        pi, pj = pair_i[mixed], pair_j[mixed]
        flush = np.zeros(len(pi), dtype=bool)  # rigid load on an inextensible vertex: rest at 2r
        if bodies is not None:
            on_rigid = np.zeros(len(x), dtype=bool)
            on_rigid[bodies[0]] = True
            hard = ~soft_cloth if soft_cloth is not None else np.ones(len(x), dtype=bool)
            flush = (on_rigid[pi] & hard[pj]) | (on_rigid[pj] & hard[pi])
        slopped = radius * (1.0 - 0.5 * CLOTH_CONTACT_SLOP_RADII)
        parts = []
        for sel, r in ((~flush, slopped), (flush, radius)):
            if sel.any():
                parts.append(particle_contacts(
                    x_pred, x, pi[sel], pj[sel], w_load, r, np.inf,
                    friction, static_scale, dynamic_scale, None, *sdf,
                ))  # fmt: skip
        idx, delta, _ = parts[0] if len(parts) == 1 else _merge(parts[0], parts[1])
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
    shift = (size - stopped)[:, None] * unit
    if bodies is None:
        return moved, shift
    return _stop_bodies_whole(x, x_pred, moved, dx, shift, bodies)


def _stop_bodies_whole(
    x: FloatArray,
    x_pred: FloatArray,
    moved: IntArray,
    dx: FloatArray,
    shift: FloatArray,
    bodies: tuple[IntArray, IntArray, int],
) -> tuple[IntArray, FloatArray]:
    """The held pass's (idx, shift) with the rigid bodies among the loads stopped as a whole: each
    touched body's particles get velocity only from the part of its translation D that cancels its own
    translation along D, up to the module docstring's cap; every other part of their corrections is a
    shift. ``dx`` (K, 3): the held corrections of ``moved``, already in ``x_pred``."""
    members, body, n_bodies = bodies
    body_of = np.full(len(x), -1, np.int64)
    body_of[members] = body
    rigid = body_of[moved] >= 0
    if not rigid.any():
        return moved, shift
    touching = np.bincount(body_of[moved[rigid]], minlength=n_bodies).astype(np.float64)
    sel = touching[body] > 0.0
    idx, b = members[sel], body[sel]
    count = np.maximum(np.bincount(b, minlength=n_bodies), 1).astype(np.float64)
    d = np.zeros((len(x_pred), 3))
    d[moved[rigid]] = dx[rigid]
    d_idx = d[idx]
    own = x_pred[idx] - x[idx] - d_idx  # each particle's motion this step before the held correction
    per = count[:, None]
    translate = np.stack([np.bincount(b, weights=d_idx[:, k], minlength=n_bodies) for k in range(3)], 1) / per
    motion = np.stack([np.bincount(b, weights=own[:, k], minlength=n_bodies) for k in range(3)], 1) / per
    size = np.sqrt(np.einsum("ij,ij->i", translate, translate))
    unit = translate / np.maximum(size, 1e-300)[:, None]
    approach = -np.einsum("ij,ij->i", motion, unit)
    speed = np.sqrt(np.einsum("ij,ij->i", motion, motion))
    head_on = np.clip(approach / np.maximum(speed, 1e-300), 0.0, 1.0) ** 2
    cap = size * (1.0 + (count / np.maximum(touching, 1.0) - 1.0) * head_on)
    stopped = np.clip(approach, 0.0, cap)[:, None] * unit  # (B, 3)
    rest = moved[~rigid]
    return np.concatenate([rest, idx]), np.concatenate([shift[~rigid], d_idx - stopped[b]])
