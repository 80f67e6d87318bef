# SPDX-License-Identifier: GPL-3.0-or-later
"""Candidate pairs of a coarse rigid face cut to the face's slab (issue 22, item 6).

A rigid surface particle at least ``contacts.COARSE_FACE_RATIO`` times its partner meets it with its body's
flat face: the plane r out along whichever of its outward directions points most towards the partner,
up to sqrt(2) r sideways. Its candidate reach is therefore grown to sqrt(3) r + r_small
(``sizes._reaches``), a sphere that holds about eight times the fine grains that can meet the face: under
a 10 cm rock particle resting on 1 cm sand, the sphere reaches 8 cm into the sand, the face 1-2 cm
(bench S9: 27 % of all candidates were sand-rock pairs, and the contact passes, grain support and
depenetration read them all every small step).

This module keeps, of those pairs, only the ones the face can reach before the list is searched again:
height above the face h = max_d (R d) . e over the particle's outward directions d (its SDF normal and
nearest faces, build frame; R its body's rotation; e from it to the small particle, all at the list's
reference positions) below the pair's reach r_b + r_s + (m_b + m_s) / 2 (+ cohesion), the touch
tolerance, and what a turn of the body by up to ``SLAB_TURN`` can add. Why that is enough: while the list
holds, each particle stays within m / 2 of its reference (relative to a common shift), so e changes by at
most (m_b + m_s) / 2; a turn by phi moves each direction by at most phi, so h changes by at most
(m_b + m_s) / 2 + phi |e'|. Any contact (the face's gap h - r_b - r_s, or the spheres' |e| - r_b - r_s, which
is never below it) or touch within the tolerance has h below that bound. The solver hands the bodies'
rotations to every search and check: a body turned more than ``SLAB_TURN`` since its pairs were cut has
them searched again (:func:`turned`). A list searched without rotations (a snapshot's, or with kinematic
bodies, whose pairs ``struck.struck_contacts`` reads farther out) is not cut.

A cut list depends on the rotations it was cut at, not only on its reference positions: a snapshot
rebuilds it uncut. The two lists differ only in pairs no contact, touch or cohesion reaches, so the results
are the same (``tests/core/test_face_slab.py`` resumes a rock on sand bit for bit).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .contacts import coarse_pairs, coarse_surface_of
from .model import KIND_CLOTH

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# How far (radians) a body may turn before its cut pairs are searched again. Each search of a rock costs
# its particles' neighbourhoods once; the slack it buys, SLAB_TURN |e|, is 2 cm at the 20 cm reach of a
# 10 cm rock particle (a 1 cm margin), so the slab keeps a third of the sphere's grains (bench S9).
SLAB_TURN = 0.1
# The solver's touch tolerance (solver.TOUCH_TOLERANCE_RADII): pairs this close count as touching (they
# weight shape matching), so they must stay listed as surely as those in contact.
TOUCH_RADII = 0.1


def coarse_surface(model: Any) -> BoolArray:
    """(N,) the rigid surface particles that meet smaller ones with a face: depth below the outer layer
    < r and r at least ``contacts.COARSE_FACE_RATIO`` times the smallest (``contacts.coarse_surface_of``)."""
    r = model.particle_radius
    if not len(r):
        return np.zeros(0, dtype=bool)
    return coarse_surface_of(model.particle_sdf_depth, r)


def cut_rotations(model: Any, rotation: FloatArray | None) -> FloatArray:
    """(B, 3, 3) the rotations a list searched now is cut at: each body's ``rotation`` (B, 3, 3), or NaN
    (not cut) for every body when None."""
    n = model.rigid_count
    if rotation is None or len(rotation) != n:
        return np.full((n, 3, 3), np.nan)
    return np.array(rotation, dtype=np.float64)


def turned(model: Any, cut: FloatArray, rotation: FloatArray | None) -> BoolArray:
    """(B,) the bodies whose pairs must be searched again: cut at a rotation more than ``SLAB_TURN`` from
    ``rotation`` (B, 3, 3), or cut while the search now has no rotations (None)."""
    was_cut = ~np.isnan(cut[:, 0, 0])
    if rotation is None or len(rotation) != len(cut) or not was_cut.any():
        return was_cut
    # The angle phi of R_now R_cut^T: trace = 1 + 2 cos(phi).
    trace = np.einsum("bij,bij->b", rotation, np.where(was_cut[:, None, None], cut, 0.0))
    stale: BoolArray = was_cut & (trace < 1.0 + 2.0 * np.cos(SLAB_TURN))
    return stale


def whole_bodies(model: Any, far: BoolArray, bodies: BoolArray) -> tuple[BoolArray, BoolArray]:
    """``far`` (N,) grown to every particle of each rigid body with a coarse surface particle that has a
    far particle or is in ``bodies`` (B,), and those bodies (B,): a body's pairs are cut at one rotation,
    so they are searched again together."""
    sm = model.shape_matching
    if sm is None:
        return far, bodies
    has_coarse = np.bincount(sm.body, weights=coarse_surface(model)[sm.idx], minlength=sm.n_bodies) > 0
    moved = np.bincount(sm.body, weights=far[sm.idx], minlength=sm.n_bodies) > 0
    hit = has_coarse & (moved | bodies)
    if not hit.any():
        return far, hit
    out = far.copy()
    out[sm.idx[hit[sm.body]]] = True
    return out, hit


def slab_keep(
    x: FloatArray,
    i: IntArray,
    j: IntArray,
    model: Any,
    reach: FloatArray,
    margin: FloatArray,
    cut: FloatArray,
) -> BoolArray:
    """(K,) which pairs (i, j) to keep: all but those of a coarse rigid surface particle (cut at a rotation
    in ``cut`` (B, 3, 3), see :func:`cut_rotations`) and a particle at most 1 / ``COARSE_FACE_RATIO`` its
    size (``contacts.coarse_pairs``; not cloth: its pass after shape matching sees the bodies turned)
    that lie beyond both the spheres' reach and the face's slab (module docstring).

    ``x`` (N, 3) the reference positions, metres; ``reach`` (N,) each particle's share of the cutoff
    (``sizes._reaches``), ``margin`` (N,), metres.
    """
    keep = np.ones(len(i), dtype=bool)
    sm = model.shape_matching
    if sm is None or not len(i):
        return keep
    r = model.particle_radius
    sub, on_j = coarse_pairs(coarse_surface(model), r, i, j)
    if not sub.size:
        return keep
    b = np.where(on_j, j[sub], i[sub])
    s = np.where(on_j, i[sub], j[sub])
    body = model.particle_rigid_body[b]
    rot = cut[body]  # (S, 3, 3)
    e = x[s] - x[b]
    dist = np.sqrt(np.einsum("ij,ij->i", e, e))
    sums = reach[b] + reach[s]
    able = ~np.isnan(rot[:, 0, 0]) & (dist >= sums) & (model.particle_kind[s] != KIND_CLOTH)
    if not able.any():
        return keep
    sub, b, rot, e, dist, sums = sub[able], b[able], rot[able], e[able], dist[able], sums[able]
    s = s[able]
    row = np.zeros(len(r), dtype=np.int64)
    row[sm.idx] = np.arange(len(sm.idx))
    # The outward directions in the build frame, (S, 4, 3): the SDF normal, then the nearest faces (zero
    # rows where fewer, whose height 0 is in the max as in contacts.coarse_faces).
    dirs = np.concatenate([model.particle_sdf_normal[b][:, None, :], model.rigid_faces[row[b]]], axis=1)
    body_e = np.einsum("sab,sa->sb", rot, e)  # R^T e: (R d) . e = d . (R^T e)
    h = np.einsum("sdb,sb->sd", dirs, body_e).max(axis=1)
    longest = np.sqrt(np.einsum("sdb,sdb->sd", dirs, dirs).max(axis=1))  # 1 for unit directions
    shift = 0.5 * (margin[b] + margin[s])
    tol = TOUCH_RADII * 0.5 * (r[b] + r[s])
    # r_b + r_s + shift <= sums; the directions' lengths L scale both what the shift and the turn add:
    # h' >= h - L (shift + SLAB_TURN (|e| + shift)). 1e-9 of the reach: rounding never decides a pair.
    bound = sums + tol + (longest - 1.0) * shift + longest * SLAB_TURN * (dist + shift) + 1e-9 * sums
    keep[sub] = h < bound
    return keep
