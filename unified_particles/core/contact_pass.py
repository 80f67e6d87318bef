# SPDX-License-Identifier: GPL-3.0-or-later
"""Step 5's contact pass (and step 4's, without friction): collider contacts, then particle contacts.

Moved out of ``solver.py`` (its size limit) without a change: :func:`contact_pass` applies the
collider contacts (with the moving-collider hold of ``struck.py``), then the particle pairs on the
thread pool (``contacts.particle_contacts``), rolling resistance, the kinematic bodies' last word and
the cloth triangles; :func:`cloth_contact_pass` gives cloth-load contacts the last word after the
stretch solve; :func:`rigid_sdf_world` rotates the rigid particles' SDF normals and nearest faces to
world space for both. Each reads the solver's settings, sizes and caches (``Solver`` delegates to it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .cloth_contacts import CLOTH_CONTACT_SLOP_RADII, hold_loads_on_cloth
from .colliders import ColliderContacts, collider_corrections
from .contacts import FacesFn, particle_contacts, rolling_resistance
from .corrections import apply_jacobi, apply_pair_jacobi
from .parallel import pair_chunks_map, resolve_threads
from .state import ParticleState
from .struck import contact_planes, hold_out, hold_out_of_kinematic, moving_contacts, push_struck_bodies

if TYPE_CHECKING:
    from .solver import Solver

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# A particle within this many radii of a contact counts as touching for the shape-matching weights:
# resting contacts flicker on and off at exactly zero gap, and weights that flicker inject energy.
TOUCH_TOLERANCE_RADII = 0.1
# Collider contacts approaching slower than the speed gravity adds in this many small steps do not
# bounce, so resting contacts stay at rest.
RESTITUTION_REST_STEPS = 2.0


def contact_pass(
    solver: Solver,
    state: ParticleState,
    x_pred: FloatArray,
    x_prev: FloatArray | None,
    pair_i: IntArray,
    pair_j: IntArray,
    w_contact: FloatArray,
    alpha: float,
    dt_frame: float,
    h: float,
    apply: bool = False,
) -> tuple[FloatArray, BoolArray, ColliderContacts]:
    """Collider contacts then particle contacts (with friction when ``x_prev`` is given).

    With ``apply`` the corrections are applied to ``x_pred`` in place family by family; without,
    the summed corrections are returned (stabilization applies them to x and x*).
    Returns (delta (N, 3), touching (N,) bool, collider contacts).
    """
    s, model = solver.settings, solver.model
    n = len(x_pred)
    target = x_pred if apply else x_pred.copy()
    touching = np.zeros(n, dtype=bool)
    r = solver.sizes[0]
    tol = TOUCH_TOLERANCE_RADII * r
    col = solver.colliders.contacts(target, r, alpha, dt_frame, tol, x_prev, h)
    if x_prev is not None:
        solver.collider_push, solver.last_word = np.zeros(0), False
    if len(col.idx):
        touching[col.idx] = True
        # Pinned particles (zero inverse mass) never move: a collider must not push them either.
        # It did: a post collider touching a hammock's pinned edge shoved one pin inwards, and with
        # no gravity or contact to stop it the pin then slid across the scene at constant speed,
        # pulling a 1.2 m ridge of cloth through the hammock that tipped the loads off its side.
        dynamic = model.particle_dynamic if solver._dynamic is None else solver._dynamic  # kinematic: held
        active = (col.depth > 0.0) & dynamic[col.idx]
        # Fluid grips colliders as every particle does: Coulomb friction with the mean of both sides'
        # coefficients, the fluid's own being 0 (issue 25: on frictionless floors a dropped cube of
        # water kept sliding at 1.3 m/s as isolated beads, 6 m wide after 3 s).
        if not active.all():
            col = ColliderContacts(
                col.idx[active],
                col.normal[active],
                col.depth[active],
                col.velocity[active],
                col.friction[active],
            )
        pressed = col.depth.copy()  # friction keeps the whole contact's depth
        rest_speed = RESTITUTION_REST_STEPS * solver.g_norm * h
        # Planes never move: without mesh colliders no contact strikes or needs holding (struck.py).
        moving = x_prev is not None and len(solver.colliders.meshes) > 0
        shifted = push_struck_bodies(target, col, model, rest_speed) if moving else 0.0
        delta = collider_corrections(
            target,
            x_prev,
            col,
            s.static_friction_scale,
            s.dynamic_friction_scale,
            model.particle_friction,
            h,
            pressed,
            model.grain_kinetic_ratio,
        )
        plane = contact_planes(target, col) if moving else None
        count = apply_jacobi(target, col.idx, delta, 1.0)
        if x_prev is not None:  # how far each contact moved its particle (read by struck_contacts)
            solver.collider_push = np.maximum(col.depth, 0.0) / count[col.idx]
        if moving and plane is not None:
            # Moving colliders: each contact in full, not averaged with the particle's others.
            solver.collider_push = shifted + solver.collider_push + hold_out(target, col, plane)
            solver.last_word = bool(moving_contacts(col).any())  # held again at the step's end
    if len(pair_i):
        # Large lists in fixed chunks of pairs on the thread pool (core/parallel.py): the same
        # arrays as one call. Positions are passed as transposed views of coordinate-major
        # copies, so particle_contacts does not copy them again for every chunk.
        xt = np.ascontiguousarray(target.T)
        pt = None if x_prev is None else np.ascontiguousarray(x_prev.T)
        sdf = rigid_sdf_world(solver, state)
        # Several sizes: each chunk's coarse faces from a plan indexed once per list (face_plan.py).
        plans = solver.face_plans if np.ndim(r) and sdf[0] is not None else None
        views = None if plans is None else plans.chunks(pair_i, pair_j)
        idx, delta, near = pair_chunks_map(
            lambda ci, cj: particle_contacts(
                xt.T, None if pt is None else pt.T, ci, cj, w_contact, r, s.max_mass_ratio,
                model.particle_friction, s.static_friction_scale, s.dynamic_friction_scale,
                model.particle_cohesion if model.has_cohesion else None, *sdf, touch_tolerance=tol,
                kinetic=model.grain_kinetic,
                coarse_plan=None if plans is None else plans.coarse_fn(ci, r, *sdf),  # type: ignore[arg-type]
            ),
            pair_i, pair_j, resolve_threads(s.threads), views,
        )  # fmt: skip
        touching[near] = True
        if apply and len(idx) and solver.soft_gain is not None:  # soft particles' contact mass (soft.py)
            delta = delta * solver.soft_gain[idx]
        if len(idx):  # with several sizes a rigid particle counts its partners by mass (corrections.py)
            share = None if np.ndim(r) == 0 else (model.particle_inv_mass, solver._rigid_mask())
            apply_pair_jacobi(target, idx, delta, s.relaxation, share)
            if model.has_rolling_friction and x_prev is not None:
                # Grains' rolling resistance (contacts.rolling_resistance), on the pairs just
                # active, after their non-penetration corrections.
                k = len(idx) // 2
                idx, delta = rolling_resistance(
                    target, x_prev, idx[:k], idx[k:], w_contact, r,
                    model.particle_rolling_friction, s.max_mass_ratio,
                )  # fmt: skip
                if len(idx):
                    apply_pair_jacobi(target, idx, delta, s.relaxation, share)
        if x_prev is not None and solver.kinematic is not None:  # infinite mass: last word (struck.py)
            hold_out_of_kinematic(
                target, solver.kinematic, pair_i, pair_j, w_contact, r, s.max_mass_ratio,
                sdf, model,
            )  # fmt: skip
    if solver.cloth_triangles is not None and x_prev is not None:  # what the vertices let through
        touching[solver.cloth_triangles.solve(model, s, target, x_prev, w_contact, *solver.sizes)] = True
    return target - x_pred, touching, col


def cloth_contact_pass(
    solver: Solver,
    state: ParticleState,
    x_pred: FloatArray,
    pair_i: IntArray,
    pair_j: IntArray,
    w: FloatArray,
    soft_cloth: NDArray[np.bool_] | None = None,
) -> tuple[IntArray, FloatArray]:
    """Cloth-load contacts once more after the stretch solve, cloth held, with friction; returns the
    loads' corrections that must not become velocity (``cloth_contacts.hold_loads_on_cloth``;
    ``soft_cloth``: its compliant vertices, from ``cloth_load.carry_loads``)."""
    s, x, ct = solver.settings, state.positions, solver.cloth_triangles
    tri = (
        None
        if ct is None
        else ct.contacts(solver.model, s, x_pred, x, w, CLOTH_CONTACT_SLOP_RADII, *solver.sizes)
    )
    sm = solver.model.shape_matching
    bodies = None if sm is None else (sm.idx, sm.body, sm.n_bodies)
    return hold_loads_on_cloth(
        x, x_pred, pair_i, pair_j, solver.model.particle_is_cloth, w, solver.sizes[0],
        s.relaxation, solver.model.particle_friction, s.static_friction_scale, s.dynamic_friction_scale,
        rigid_sdf_world(solver, state), tri, bodies, soft_cloth,
    )  # fmt: skip


def rigid_sdf_world(
    solver: Solver, state: ParticleState
) -> tuple[FloatArray | None, Callable[[IntArray], FloatArray] | None, FacesFn | None]:
    """Per-particle SDF depth, and functions rotating the stored SDF normals and the nearest faces'
    directions (``model.rigid_faces``) to world space."""
    model = solver.model
    sm = model.shape_matching
    if sm is None:
        return None, None, None
    rotation = state.rigid_rotation
    body_of = model.particle_rigid_body
    if solver._rigid_row is None:  # particle -> its row in the rigid arrays (sm.idx order)
        solver._rigid_row = np.zeros(model.particle_count, np.int64)
        solver._rigid_row[sm.idx] = np.arange(len(sm.idx))
        solver._rigid_faces_t = np.ascontiguousarray(model.rigid_faces.reshape(len(sm.idx), -1).T)
        solver._sdf_normal_t = np.ascontiguousarray(model.particle_sdf_normal.T)
    row, faces_t, local_t = solver._rigid_row, solver._rigid_faces_t, solver._sdf_normal_t
    rotation_t = np.ascontiguousarray(rotation.reshape(-1, 9).T)

    def normal(idx: IntArray) -> FloatArray:
        # (3, K), coordinate-major: R n_local, row k = R_k0 n_0 + R_k2 n_2 + R_k1 n_1, the order in which
        # np.einsum("kij,kj->ik") summed it on NumPy 1.26 and 2.5 (same bits; 20 against 42 us for the
        # 1800 rows of S2's contacts). Non-rigid particles have a zero local normal, so any rotation
        # gives zero.
        r = np.take(rotation_t, np.take(body_of, idx), axis=1)
        n = np.take(local_t, idx, axis=1)
        out: FloatArray = r[0::3] * n[0]
        out += r[2::3] * n[2]
        out += r[1::3] * n[1]
        return out

    def faces(idx: IntArray) -> tuple[FloatArray, FloatArray]:
        # Rigid particles only, coordinate-major: nearest faces (3F, K) in the build frame,
        # rotations (9, K).
        return np.take(faces_t, row[idx], axis=1), np.take(rotation_t, body_of[idx], axis=1)

    return model.particle_sdf_depth, normal, faces
