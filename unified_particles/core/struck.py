# SPDX-License-Identifier: GPL-3.0-or-later
"""Contacts with surfaces of infinite mass that move: moving colliders and kinematic bodies.

A collider or a kinematic body strikes what it meets. Two things went wrong with plain PBD there
(issue 24, items 7 and 8):

* Hits added energy. The velocity update v = (x* - x) / h turns every position correction into
  velocity, including the removal of an overlap the struck body carried into the step (shape matching
  spreads a contact's push over the whole body over a few small steps, so a struck body lags its
  striker and the overlap grows). A box struck by a paddle at 12 m/s left at 18 m/s.
  :func:`bound_rebound` applies Newton's law of restitution against a wall of infinite mass moving at
  u after the velocity update: the normal velocity a contact leaves is at most u_n + e (u_n - v_n)+,
  v_n the normal velocity before the step (or v_n itself, if that was larger: a contact never slows
  what already leaves faster).
* Moving colliders tunnelled. The collider contacts come first in a small step and are Jacobi-averaged
  per particle, then the particle contacts push a grain back into the collider: a board swept along
  the ground through grains gave each grain half its push (averaged with the ground contact), less
  what the grains ahead pushed back, and went through them. :func:`hold_out` gives the moving
  colliders the last word (after the particle contacts), contact after contact, not averaged, and
  :func:`hold_out_of_kinematic` does the same for kinematic particles.

Static colliders keep the plain rules (with restitution 0 nothing here runs for them): held exactly
on a static floor, a poured pile's friction (which scales with the overlap left, PBD Eq. 24-26) was
lost and Dry Sand stood at 20 degrees instead of 32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .collider_set import ColliderSet
from .colliders import ColliderContacts
from .contacts import particle_contacts
from .corrections import apply_pair_jacobi
from .fastops import row_abs_max
from .kinematic import KinematicFrame
from .model import KIND_RIGID, ParticleModel

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# A surface strikes a particle when it approaches it along the contact normal by more than this fraction
# of its speed (see strikes): a ground sliding sideways has normals a rounding error off its motion.
STRIKE_COSINE = 1e-3
# A grain ending a small step deeper than this many radii in a moving collider is held out of it
# (hold_grains_out_at_end). Shallower ones are left to the next step's contacts: holding every grain
# exactly (or to 0.02-0.25 r) made the zero-gravity spray of test_tunnelling's 48 m/s board fail on
# its grid (grains leaving the board's edges at exactly its speed then fell behind its plane).
HOLD_DEEP_RADII = 0.5


def moving_contacts(col: ColliderContacts) -> BoolArray:
    """(K,) True for the contacts with a collider surface that moves (nonzero surface velocity)."""
    return np.asarray(row_abs_max(col.velocity) > 0.0)


def contact_planes(x: FloatArray, col: ColliderContacts) -> FloatArray:
    """(K,) where each contact puts its particle along its normal: x . n + depth (the surface plus a
    radius), from the positions ``x`` (N, 3) the contacts were found at."""
    return np.asarray(np.einsum("ij,ij->i", x[col.idx], col.normal) + np.maximum(col.depth, 0.0))


def hold_out(x: FloatArray, col: ColliderContacts, plane: FloatArray) -> FloatArray:
    """Put the particles back in front of each moving-collider contact's plane, in place.

    ``plane`` (K,) from :func:`contact_planes`. The contacts of one particle are taken one after the
    other (Gauss-Seidel, by their rank among that particle's contacts: a few passes, each over distinct
    particles), not averaged: averaged with its contact on the ground, a grain got half a board's push.
    Normal direction only; the collider pass applied friction. Returns (K,) how far each contact moved
    its particle here, metres.
    """
    pushed = np.zeros(len(col.idx))
    moving = np.flatnonzero(moving_contacts(col))
    if not len(moving):
        return pushed
    idx, normal, plane = col.idx[moving], col.normal[moving], plane[moving]
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    first = np.ones(len(idx), dtype=bool)
    first[1:] = sorted_idx[1:] != sorted_idx[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(len(idx)), 0))
    rank = np.empty(len(idx), dtype=np.int64)
    rank[order] = np.arange(len(idx)) - start
    for r in range(int(rank.max()) + 1):  # a particle's contacts: a few (one per collider it touches)
        k = np.flatnonzero(rank == r)  # distinct particles
        gap = plane[k] - np.einsum("ij,ij->i", x[idx[k]], normal[k])
        inside = gap > 0.0
        if inside.any():
            k = k[inside]
            x[idx[k]] += gap[inside, None] * normal[k]
            pushed[moving[k]] = gap[inside]
    return pushed


def hold_grains_out_at_end(
    colliders: ColliderSet,
    x: FloatArray,
    radius: float | FloatArray,
    alpha: float,
    dt_frame: float,
    grain: BoolArray,
    x_start: FloatArray | None = None,
    h: float = 0.0,
) -> None:
    """Put the grains back in front of the moving colliders at the small step's end, in place.

    The collider pass holds what touches a moving surface when the step's contacts are found; the
    particle contacts and the grain support pass then push grains back into it (a grain ahead of a board
    at 8 m/s is slower than the board, and a grain that met the board only through its neighbours had
    no contact to hold it). A grain left 0.8 r deep in a 2 r board at the step's end was deep in its
    middle after the board's next small step and pushed out behind it (2-8 of 25 grains behind a board
    swept at 8 m/s). So the moving colliders' contacts are found again on the final positions ``x``
    (N, 3) at fraction ``alpha`` of the frame and each grain deeper than ``HOLD_DEEP_RADII`` is held in
    front of them (:func:`hold_out`): a moving collider has infinite mass and the last word; a grain less
    deep still has its centre in front of the face, where the next step's contacts (swept ones for a
    fast board) find it. ``radius``: one, or (N,) per particle,
    metres; ``grain`` (N,) the dynamic grains (other particles keep the first pass's:
    rigid bodies move as a whole, cloth and soft bodies keep their constraints).

    With ``x_start`` (N, 3), the positions at the small step's start (of length ``h``, s), the contacts
    are swept (``MeshCollider.contacts``): a grain whose path relative to the collider crossed its face
    this step is held on the side it came from. The closest face alone is the wrong one past a thin
    board's mid-plane: a grain the particle contacts pushed 0.2 r back through a 0.4 r board (2 cm at
    r = 5 cm) was held out of its back and left behind (test_tunnelling's board at 12 m/s, with the
    grains moved by 10 um).
    """
    col = colliders.contacts(x, radius, alpha, dt_frame, 0.0, x_start, h)
    r = np.asarray(radius)[col.idx] if np.ndim(radius) else radius
    keep = (col.depth > HOLD_DEEP_RADII * r) & grain[col.idx] & moving_contacts(col)
    if keep.any():
        col = ColliderContacts(
            col.idx[keep], col.normal[keep], col.depth[keep], col.velocity[keep], col.friction[keep]
        )
        hold_out(x, col, contact_planes(x, col))


def strikes(velocity: FloatArray, normal: FloatArray, rest_speed: float) -> BoolArray:
    """(K,) True where a surface moving at ``velocity`` (K, 3) strikes along ``normal`` (K, 3): it approaches
    faster than ``rest_speed`` (m/s; slower is a resting contact, as for restitution) and along the normal
    by more than ``STRIKE_COSINE`` of its speed (a surface sliding past, a conveyor, strikes nothing)."""
    un = np.einsum("ij,ij->i", velocity, normal)
    speed = np.sqrt(np.einsum("ij,ij->i", velocity, velocity))
    return np.asarray((un > rest_speed) & (un > STRIKE_COSINE * speed))


def push_struck_bodies(
    x: FloatArray, col: ColliderContacts, model: ParticleModel, rest_speed: float
) -> FloatArray:
    """Move each rigid body a moving collider strikes (its surface approaching, u . n > 0) as a whole, in
    place, by the deepest of those contacts along its normal, and take that off every contact's depth
    of the body (``col.depth``, in place), before the collider corrections are computed.

    Pushed particle by particle, a struck body lags its striker: shape matching spreads the push of the
    few touching particles over the whole body, so the next small step finds them deep in the striker
    again (a paddle at 20 m/s, 2.6 radii per small step at r = 2 cm, went into the box and through
    it). A wall of infinite mass moves what it strikes with it at once, the whole body. Returns (K,)
    how far each contact's particle moved along its normal, metres.
    """
    sm = model.shape_matching
    none = np.zeros(len(col.idx))
    if sm is None or not len(col.idx):
        return none
    idx, n = col.idx, col.normal
    rigid = model.particle_kind[idx] == KIND_RIGID
    hit = np.flatnonzero(strikes(col.velocity, n, rest_speed) & (col.depth > 0.0) & rigid)
    if not len(hit):
        return none
    body = model.particle_rigid_body[idx[hit]]
    order = np.lexsort((col.depth[hit], body))  # by body, then depth: the last of each body is its deepest
    last = np.ones(len(order), dtype=bool)
    last[:-1] = body[order][1:] != body[order][:-1]
    pick = hit[order[last]]
    shift = np.zeros((sm.n_bodies, 3))
    shift[model.particle_rigid_body[idx[pick]]] = col.depth[pick, None] * n[pick]
    x[sm.idx] += shift[sm.body]
    moved = np.where(rigid, np.einsum("ij,ij->i", shift[model.particle_rigid_body[idx]], n), 0.0)
    col.depth -= moved
    return np.asarray(moved)


def hold_out_of_kinematic(
    x: FloatArray,
    kin: KinematicFrame,
    pair_i: IntArray,
    pair_j: IntArray,
    w_contact: FloatArray,
    radius: float | FloatArray,
    max_mass_ratio: float,
    sdf: tuple[object, object, object],
    model: ParticleModel,
) -> None:
    """The contacts with kinematic particles once more, after all the other pairs, in place: only the
    other side moves (``w_contact`` is 0 on kinematic particles), no friction (the pass applied it).

    A kinematic body has infinite mass, but the Jacobi average split its push with the pushes of the
    particles ahead, so a board moving two radii per small step left grains deep in it, and the next
    step took it through them. A rigid body it strikes moves as a whole by the largest of its particles'
    corrections (see :func:`push_struck_bodies`).
    """
    mixed = kin.mask[pair_i] != kin.mask[pair_j]
    if not mixed.any():
        return
    idx, delta, _ = particle_contacts(
        x, None, pair_i[mixed], pair_j[mixed], w_contact, radius, max_mass_ratio,
        None, 1.0, 1.0, None, *sdf,  # type: ignore[arg-type]
    )  # fmt: skip
    if not len(idx):
        return
    sm = model.shape_matching
    rigid = (model.particle_kind[idx] == KIND_RIGID) & ~kin.mask[idx]
    if sm is not None and rigid.any():
        d = delta[:, rigid].T  # (M, 3)
        body = model.particle_rigid_body[idx[rigid]]
        order = np.lexsort((np.einsum("ij,ij->i", d, d), body))  # the last of each body: its largest
        last = np.ones(len(order), dtype=bool)
        last[:-1] = body[order][1:] != body[order][:-1]
        shift = np.zeros((sm.n_bodies, 3))
        shift[body[order[last]]] = d[order[last]]
        shift[kin.bodies] = 0.0
        x[sm.idx] += shift[sm.body]
        delta = np.where(rigid, 0.0, delta)
    apply_pair_jacobi(x, idx, delta, 1.0)


@dataclass
class StruckContacts:
    """Contacts with infinite-mass surfaces in one small step (see :func:`bound_rebound`).

    Attributes:
        idx: (K,) particle indices.
        normal: (K, 3) unit normals from the surface towards the particle.
        velocity: (K, 3) the surface's velocity at the contact, m/s (rows of kinematic contacts are
            filled in by :func:`bound_rebound` from the kinematic particle's velocity).
        vn_before: (K,) the particle's normal velocity before the velocity update, m/s.
        push: (K,) how far the contact moved its particle along the normal this small step, m (inf
            for kinematic contacts: pushed by the whole pair pass).
        wall: (K,) the kinematic particle of a kinematic contact, -1 for collider contacts.
        bounce: (K,) True where restitution applies (collider contacts).
    """

    idx: IntArray
    normal: FloatArray
    velocity: FloatArray
    vn_before: FloatArray
    push: FloatArray
    wall: IntArray
    bounce: BoolArray


def struck_contacts(
    x_pred: FloatArray,
    v: FloatArray,
    col: ColliderContacts,
    push: FloatArray,
    restitution: float,
    kin: KinematicFrame | None,
    pair_i: IntArray,
    pair_j: IntArray,
    reach: float | FloatArray,
    model: ParticleModel,
) -> StruckContacts | None:
    """The contacts :func:`bound_rebound` treats, gathered before the velocity update (``v`` (N, 3) is
    still the predicted velocity, gravity included): the contacts with moving colliders (with
    ``restitution`` > 0 every collider contact), with ``push`` (K,) how far each moved its particle
    this small step (m), and, with kinematic bodies, the particle pairs of a kinematic and a free
    particle closer than ``reach`` (2 r plus the touch tolerance; with several sizes (N,) each
    particle's share, ``sizes.pair_reach``, a pair's the sum of its two) at ``x_pred``. None when there
    are none."""
    keep = np.ones(len(col.idx), dtype=bool) if restitution > 0.0 else moving_contacts(col)
    idx, normal, velocity = col.idx[keep], col.normal[keep], col.velocity[keep]
    push = push[keep]
    wall = np.full(len(idx), -1, dtype=np.int64)
    if kin is not None and len(pair_i):
        one = kin.mask[pair_i] != kin.mask[pair_j]
        if one.any():
            a, b = pair_i[one], pair_j[one]
            a_kin = kin.mask[a]
            free, solid = np.where(a_kin, b, a), np.where(a_kin, a, b)
            d = x_pred[free] - x_pred[solid]
            dist = np.sqrt(np.einsum("ij,ij->i", d, d))
            lim = reach if np.ndim(reach) == 0 else reach[free] + reach[solid]  # type: ignore[index]
            near = (dist < lim) & (dist > 0.0)
            if near.any():
                idx = np.concatenate([idx, free[near]])
                normal = np.concatenate([normal, d[near] / dist[near, None]])
                velocity = np.concatenate([velocity, np.zeros((int(near.sum()), 3))])
                wall = np.concatenate([wall, solid[near]])
                push = np.concatenate([push, np.full(int(near.sum()), np.inf)])
    if not len(idx):
        return None
    vn_before = _normal_velocity(v, idx, normal, model, wall < 0)
    return StruckContacts(idx, normal, velocity, vn_before, push, wall, wall < 0)


def _normal_velocity(
    v: FloatArray, idx: IntArray, normal: FloatArray, model: ParticleModel, whole: BoolArray
) -> FloatArray:
    """(K,) the velocity (N, 3) of particles ``idx`` along ``normal`` (K, 3), m/s; for a rigid particle its
    body's (the mass-weighted mean of its particles': a struck body's particles off the contact carry
    the excess speed as much as the one touching, which shape matching may already have slowed)."""
    vel = v[idx]
    sm = model.shape_matching
    if sm is not None:
        rigid = (model.particle_kind[idx] == KIND_RIGID) & whole
        if rigid.any():
            mass = np.bincount(sm.body, weights=sm.mass, minlength=sm.n_bodies)
            vt = v[sm.idx].T * sm.mass
            momentum = [np.bincount(sm.body, weights=vt[k], minlength=sm.n_bodies) for k in range(3)]
            mean = np.stack(momentum, 1) / np.maximum(mass, 1e-300)[:, None]
            vel = np.where(rigid[:, None], mean[model.particle_rigid_body[idx]], vel)
    return np.asarray(np.einsum("ij,ij->i", vel, normal))


def bound_rebound(
    v: FloatArray,
    struck: StruckContacts,
    restitution: float,
    rest_speed: float,
    h: float,
    model: ParticleModel,
    kin: KinematicFrame | None,
) -> None:
    """Velocities after contacts with infinite-mass surfaces moving at u, in place: restitution and a bound.

    Newton's law of restitution against a wall of infinite mass (Goldstein, *Classical Mechanics*,
    ch. 3): the normal velocity after the impact is v_n' = u_n + e (u_n - v_n) for an approach speed
    u_n - v_n > 0, and the contact adds nothing to a particle already leaving faster. So here
    v_n' <= max(u_n + e (u_n - v_n)+, v_n), e = ``restitution`` (0: the surface's speed at most; 1: the
    elastic wall's 2 u_n). The overlap a struck body carried into the step is still removed (positions
    are not touched), only the velocity that removal would have added goes, and never more than the
    velocity the contact's own push gave (``struck.push`` / ``h``, ``h`` the small step, s). Collider contacts
    approaching faster than ``rest_speed`` (m/s; slower ones are resting) bounce to exactly
    u_n + e (u_n - v_n); kinematic contacts, like all particle pairs, are inelastic but bounded.

    A rigid body moves as one: its particles off the contact carry the same excess speed, so each body
    takes the change of its contact with the largest one, on that contact's normal, for all its
    particles (kinematic bodies are left alone).
    """
    idx, n = struck.idx, struck.normal
    velocity = struck.velocity
    kinematic = struck.wall >= 0
    if kinematic.any():  # a kinematic particle's velocity is its motion's: the wall's
        velocity = velocity.copy()
        velocity[kinematic] = v[struck.wall[kinematic]]
    un = np.einsum("ij,ij->i", velocity, n)
    approach = un - struck.vn_before
    vn_after = _normal_velocity(v, idx, n, model, ~kinematic)
    bound = np.maximum(un + restitution * np.maximum(approach, 0.0), struck.vn_before)
    # A contact only takes back what it gave: the velocity of its own push, push / h. What other contacts
    # gave (grains squeezing a grain along a moving face) is theirs (a grain sliding off a board's edge
    # at 48 m/s lost 0.9 m/s along the stroke and fell behind it).
    target = np.maximum(np.minimum(vn_after, bound), vn_after - struck.push / h)
    # Struck bodies only: rigid ones (grains keep the plain velocity update, see the module docstring),
    # by a surface that strikes them (see strikes: a surface moving away strikes nothing, and the
    # contacts of particles that ended on its far side are not strikes).
    struck_body = (model.particle_kind[idx] == KIND_RIGID) & strikes(velocity, n, rest_speed)
    target = np.where(struck_body, target, vn_after)
    if restitution > 0.0:
        bounce = struck.bounce & (approach > rest_speed)
        target = np.where(bounce, un + restitution * approach, target)
    change = target - vn_after
    sm = model.shape_matching
    if sm is not None:
        rigid = model.particle_kind[idx] == KIND_RIGID
        if rigid.any():
            body = model.particle_rigid_body[idx[rigid]]
            c, nr = change[rigid], n[rigid]
            # Per body the contact with the largest |change| (lexsort: by body, then |change|; last wins).
            order = np.lexsort((np.abs(c), body))
            last = np.ones(len(order), dtype=bool)
            last[:-1] = body[order][1:] != body[order][:-1]
            pick = order[last]
            dv = np.zeros((sm.n_bodies, 3))
            dv[body[pick]] = c[pick, None] * nr[pick]
            if kin is not None:
                dv[kin.bodies] = 0.0
            v[sm.idx] += dv[sm.body]
            change = np.where(rigid, 0.0, change)
    moved = change != 0.0
    if moved.any():
        # A particle with several contacts takes them one after the other (each bound holds for its normal).
        v[idx[moved]] += change[moved, None] * n[moved]
