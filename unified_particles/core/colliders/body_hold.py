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

:func:`hold_rigid_bodies_out` moves each body whose collider contacts shape matching moved back in once
more, after shape matching (and the joints; :func:`hold_bodies_out`): the smallest rigid motion (in the
body's kinetic metric, mass and inertia about its centre of mass) that puts each sunk contact's particle
back on the plane the contact pass put it on, along the contact normal only (friction keeps its part). A
body pressed straight in moves straight back out, one that turned on a corner turns back about that
corner (a plain lift of the whole body there gave a tall domino pivoting on one corner the corner's
whole correction as upward speed and threw it into the air). A first version pinned the sunk points
where they were put back, in all three directions: the ground then pushed sideways too, and the bottom
box of a stack struck by a frictionless paddle (test_struck) was squeezed out ahead of the paddle at 9.4
m/s instead of 8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .contacts import ColliderContacts

if TYPE_CHECKING:
    from ..collider_set import ColliderSet
    from ..shape_matching import ShapeMatching

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Weight of a held contact in the fit, relative to its whole body's mass: the held points end within
# about 1 / HOLD_WEIGHT of their sinking from the collider's plane.
HOLD_WEIGHT = 1.0e4
# Solves of the active set (contacts that push) at most; 2-3 settle a body on a face or an edge.
ACTIVE_SET_PASSES = 6


def hold_rigid_bodies_out(
    colliders: ColliderSet,
    x: FloatArray,
    found_at: FloatArray,
    found: tuple[ColliderContacts, float | FloatArray],
    radius: float | FloatArray,
    alpha: float,
    dt_frame: float,
    held: NDArray[np.bool_],
    particle_body: IntArray,
    sm: ShapeMatching,
    x_start: FloatArray,
    h: float,
    friction: tuple[FloatArray, float, float],
) -> None:
    """No rigid body ends a small step in a collider: move each body with a ``held`` particle in one at
    its final position ``x`` (N, 3) back out, in place.

    Args:
        x: (N, 3) positions after shape matching, metres; changed in place.
        found_at: (N, 3) the positions the step's collider contacts were found at, metres.
        found: those contacts, every one within the touch tolerance (depth > -tol, the contact pass
            keeps only depth > 0), and the tolerance, metres (one, or (N,)): ``ColliderSet.found``.
        radius: particle radius, one or (N,), metres; ``alpha``: the fraction of the frame of
            ``dt_frame`` s reached (the colliders' pose).
        held: (N,) the dynamic rigid particles; ``particle_body`` (N,) their body numbers.
        x_start: (N, 3) the positions at the small step's start, metres; ``h`` the small step, s.
        friction: (N,) the particles' friction coefficients and the static and kinetic scales.

    Every contact found, not only those deep when found: a particle just above the ground then (a body
    lifted by the last step's hold) and pressed in by the particle contacts and shape matching had no
    contact to hold it (a box under a 20 times heavier one sank 3 mm every other small step). Each held
    contact's plane is where it was found (x . n + depth at ``found_at``); a particle farther than r +
    tol from every collider when they were found can only be in one if it moved more than tol since
    (distance is 1-Lipschitz): those few are looked up again at ``x``.
    """
    col, tol = found
    # Those that moved more than tol since are looked up again below, and only there (once each).
    moved = held & (np.einsum("ij,ij->i", x - found_at, x - found_at) > np.square(tol))
    mine = held[col.idx] & ~moved[col.idx]
    idx, normal = col.idx[mine], col.normal[mine]
    plane = np.einsum("ij,ij->i", found_at[idx], normal) + col.depth[mine]
    sunk = plane - np.einsum("ij,ij->i", x[idx], normal)
    deep = sunk > 0.0
    parts = [(idx[deep], normal[deep], sunk[deep], col.friction[mine][deep], col.velocity[mine][deep])]
    if moved.any():
        which = np.flatnonzero(moved)
        r = radius[which] if np.ndim(radius) else radius  # type: ignore[index]
        again = colliders.open_contacts(x[which], r, alpha, dt_frame)
        keep = again.depth > 0.0
        parts.append(
            (
                which[again.idx[keep]],
                again.normal[keep],
                again.depth[keep],
                again.friction[keep],
                again.velocity[keep],
            )
        )
    idx, normal, sunk, mu_collider, velocity = (np.concatenate(a) for a in zip(*parts, strict=True))
    if not len(idx):
        return
    # Coulomb friction for the hold's own push (the contact pass's friction scaled with its own depth
    # only; without this a box sliding down a 35 degree incline, mu 0.5, lost a tenth of its friction):
    # the particle's tangential motion over the step relative to the surface is shortened by mu_k s
    # (kinetic only: contacts.collider_corrections, with the sinking s for the depth; a static branch
    # stuck a box a kinematic bat pushed from rest, and the bat went through it).
    particle_mu, _, mu_k = friction
    mu = 0.5 * (particle_mu[idx] + mu_collider)
    rel = x[idx] - x_start[idx] - velocity * h
    t = rel - np.einsum("ij,ij->i", rel, normal)[:, None] * normal
    tl = np.sqrt(np.einsum("ij,ij->i", t, t))
    back = np.minimum(mu_k * mu * sunk, tl)
    slide = tl > 0.0
    hold_bodies_out(
        x, idx, normal, sunk, particle_body, sm, (slide, -t[slide] / tl[slide, None], back[slide])
    )


def hold_bodies_out(
    x: FloatArray,
    idx: IntArray,
    normal: FloatArray,
    sunk: FloatArray,
    particle_body: IntArray,
    sm: ShapeMatching,
    friction: tuple[NDArray[np.bool_], FloatArray, FloatArray],
) -> None:
    """Move each rigid body with sunk collider contacts back out, in place.

    Args:
        x: (N, 3) positions after shape matching, metres; changed in place.
        idx: (K,) the contacts' rigid particles; ``normal`` (K, 3) their world normals.
        sunk: (K,) how far each is in (the collider's surface plus r along its normal minus x . n),
            metres, > 0.
        particle_body: (N,) each particle's rigid body number.
        sm: the bodies' shape matching (rest positions, masses, rows).
        friction: (which (K,) contacts slide, their directions (S, 3) against the slip and how far (S,)
            metres) the push's Coulomb friction moves them (all False and empty: no friction).

    Contact k of particle i sank by s_k. Per body, the rigid motion xi = (t, w)
    about its centre of mass c (a point moves by t + w x (x_i - c)) minimizes the motion's kinetic
    metric xi^T M xi (M = diag(m, m, m, I_c)) plus HOLD_WEIGHT m sum_k (J_k xi - s_k)^2 over the sunk
    contacts that push, J_k = (n_k, (x_k - c) x n_k): the sunk points are put back on their planes along
    the normals only (a frictionless ground gives no sideways push) and the body moves as little as it
    can. A collider only pushes: a contact the motion lifts off its plane anyway (J_k xi > s_k) is left
    out and the motion solved again, a few times (an active set: the contacts end on or above their
    planes). Held as equalities instead, every sunk point of a domino's bottom face was put back on the
    ground in every small step, which undid any tilt that began while the trailing edge still sank under
    gravity: a domino struck at its top stood as if welded, and one leaning 20 degrees rose back upright.
    A body with sunk contacts on both sides of an open mesh (facing against their mean by more than 120
    degrees: half pressed through a sheet) is not held: no rigid motion puts points back on both sides,
    and fitting them threw a 0.2 kg domino of the public domino .blend 275 m (session 9; a box started
    astride a quad, tilted 30 degrees, reached 371 m/s); its contacts alone act on it. The rotation is
    applied exactly (Rodrigues), so the body stays rigid.
    """
    bodies, held_body = np.unique(particle_body[idx], return_inverse=True)
    flag = np.zeros(int(sm.body.max()) + 1, dtype=bool)
    flag[bodies] = True
    rows = np.flatnonzero(flag[sm.body])  # the affected bodies' rows of the rigid arrays
    local = np.searchsorted(bodies, sm.body[rows])  # their bodies numbered 0..B'-1
    nb = len(bodies)
    members, m = sm.idx[rows], sm.mass[rows]
    y = x[members]
    body_mass = np.bincount(local, weights=m, minlength=nb)
    c = _group_sums(local, m[:, None] * y, nb) / body_mass[:, None]
    d = y - c[local]
    # Inertia about the centre of mass, sum m (|d|^2 I - d d^T), (B', 3, 3).
    outer = _group_sums(local, m[:, None] * d[:, _I] * d[:, _J], nb)
    metric = np.zeros((nb, 6, 6))
    metric[:, 0, 0] = metric[:, 1, 1] = metric[:, 2, 2] = body_mass
    metric[:, 3:, 3:][:, _I, _J] = -outer
    metric[:, 3:, 3:][:, _I, _J] += (outer[:, 0] + outer[:, 4] + outer[:, 8])[:, None] * np.eye(3).ravel()
    jac = np.concatenate([normal, np.cross(x[idx] - c[held_body], normal)], axis=1)  # (K', 6)
    w = HOLD_WEIGHT * body_mass[held_body]
    # The body's side of an open mesh: the mean of its contacts' normals, weighted by their sinking.
    side = _group_sums(held_body, sunk[:, None] * normal, nb)
    facing = np.einsum("ij,ij->i", normal, side[held_body])
    astride = np.zeros(nb, dtype=bool)
    astride[held_body[facing < -0.5 * np.linalg.norm(side[held_body], axis=1)]] = True
    active = ~astride[held_body]
    # Coulomb friction rows (along each sliding contact's direction against its slip, as far as the
    # friction takes off it), for the contacts that push only: in the same fit as the push (fitted after
    # it, on the slip the push left, a box slid 0.937 m down a 35 degree quad ramp in 1 s, analytic
    # 0.804; fitted together 0.765).
    slide, direction, back = friction
    fjac = np.concatenate([direction, np.cross(x[idx[slide]] - c[held_body[slide]], direction)], axis=1)
    rows_jac, rows_target = np.concatenate([jac, fjac]), np.concatenate([sunk, back])
    rows_body = np.concatenate([held_body, held_body[slide]])
    xi = np.zeros((nb, 6))
    for _ in range(ACTIVE_SET_PASSES):
        weight = w * active
        xi = _fit(metric, rows_jac, rows_target, np.concatenate([weight, weight[slide]]), rows_body, nb)
        pushing = active & (np.einsum("ij,ij->i", jac, xi[held_body]) < sunk)
        if np.array_equal(pushing, active):
            break
        active = pushing
    rot = _rodrigues(xi[:, 3:])
    x[members] = np.einsum("kij,kj->ki", rot[local], d) + c[local] + xi[local, :3]


def _fit(
    metric: FloatArray, jac: FloatArray, target: FloatArray, weight: FloatArray, body: IntArray, nb: int
) -> FloatArray:
    """(B', 6) per body the motion xi minimizing xi^T M xi + sum_k weight_k (J_k xi - target_k)^2 over
    its rows k (``body`` (K,) their bodies 0..B'-1; ``metric`` (B', 6, 6), ``jac`` (K, 6))."""
    jj = (weight[:, None, None] * jac[:, :, None] * jac[:, None, :]).reshape(-1, 36)
    a = metric + _group_sums(body, jj, nb).reshape(nb, 6, 6)
    b = _group_sums(body, (weight * target)[:, None] * jac, nb)
    return np.linalg.solve(a, b[..., None])[..., 0]


_I, _J = np.divmod(np.arange(9), 3)


def _group_sums(group: IntArray, values: FloatArray, n: int) -> FloatArray:
    """(n, C) the sums of the rows of ``values`` (K, C) per ``group`` (K,) in 0..n-1: one bincount over
    the flattened entries (each sum in the order of its rows, as a bincount per column gives)."""
    cols = values.shape[1]
    keys = (group[:, None] * cols + np.arange(cols)).ravel()
    sums = np.bincount(keys, weights=values.ravel(), minlength=n * cols)  # int64 zeros if K = 0
    return sums.astype(np.float64, copy=False).reshape(n, cols)


def _rodrigues(w: FloatArray) -> FloatArray:
    """(B, 3, 3) rotations by the rotation vectors ``w`` (B, 3), radians about their direction."""
    angle = np.linalg.norm(w, axis=1)
    safe = np.where(angle > 0.0, angle, 1.0)
    k = w / safe[:, None]
    kx = np.zeros((len(w), 3, 3))
    kx[:, 0, 1], kx[:, 0, 2], kx[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    kx[:, 1, 0], kx[:, 2, 0], kx[:, 2, 1] = k[:, 2], -k[:, 1], k[:, 0]
    s, cos = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * kx + (1.0 - cos) * (kx @ kx)
