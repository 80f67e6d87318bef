# SPDX-License-Identifier: GPL-3.0-or-later
"""Particle-particle contacts: non-penetration, static/kinetic friction and cohesion (Macklin 2014, Sec. 5-6).

Pure functions: arrays in, per-particle corrections out. The caller accumulates them (Jacobi) and applies
them with over-relaxation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .fastops import gather_difference

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

_UP = np.array([[0.0], [0.0], [1.0]])
# Rigid particle indices -> (nearest faces' directions in the body frame (3F, K), rotations (9, K)),
# coordinate-major (see _face_dots).
FacesFn = Callable[[IntArray], tuple[FloatArray, FloatArray]]
# (positions (3, N) coordinate-major, i, j) -> the coarse-face pairs of the list (i, j) as
# :func:`coarse_faces` returns them, or None (``face_plan.FacePlan``, indexed once per list).
CoarseFn = Callable[[FloatArray, IntArray, IntArray], "tuple[IntArray, FloatArray, FloatArray] | None"]

# A rigid particle whose centre lies deeper than this many radii below its body's outermost particle layer
# (see World.add_rigid) is "interior": its stored SDF gradient, not the particle-pair direction, tells
# which way to separate (paper Sec. 5.1).
DEEP_SDF_RADII = 1.75
# Cohesion acts on pairs whose gap (surface to surface) is below this many radii.
COHESION_RANGE_RADII = 0.5


def contact_inv_mass_pairs(
    w: FloatArray, i: IntArray, j: IntArray, max_mass_ratio: float, radius: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """Per-pair inverse masses with the heavier side limited to ``max_mass_ratio`` times the lighter.

    A per-particle mass ratio above ~100:1 (a heavy box on a light cloth) lets the heavy body tunnel
    in a few iterations: its share of every correction vanishes. Limiting the ratio keeps the heavy
    side responsive. Zero inverse masses (pinned or kinematic particles) stay zero.

    With ``radius`` (N,) (several sizes) the limit is on the ratio of densities: a particle r_i / r_j
    times larger may be (r_i / r_j)^3 times heavier beyond it. A 5 cm pebble hitting a 1 cm grain of
    the same density weighs 125 times as much, and limiting that to 10 broke momentum in every such
    collision (the pebble bounced off the grain as off a wall).
    """
    wi = w[i]
    wj = w[j]
    k = 1.0 / max_mass_ratio
    if radius is not None:
        v = (radius[j] / radius[i]) ** 3  # V_j / V_i
        ki, kj = k * np.minimum(v, 1.0), k * np.minimum(1.0 / v, 1.0)
        wi = np.where(wi > 0.0, np.maximum(wi, wj * ki), 0.0)
        wj = np.where(wj > 0.0, np.maximum(wj, wi * kj), 0.0)
        return wi, wj
    wi = np.where(wi > 0.0, np.maximum(wi, wj * k), 0.0)
    wj = np.where(wj > 0.0, np.maximum(wj, wi * k), 0.0)
    return wi, wj


# A face normal replaces the particle-pair direction between two rigid bodies when they are closer
# than ~26 degrees (wider cones let the arbitrary gradients at box edges push sideways: energy) ...
FACE_NORMAL_COS = 0.9
# ... and within ~37 degrees when the other particle is not rigid (cloth pushed sideways opens
# holes a heavy body falls through).
FACE_NORMAL_COS_ONE_SIDED = 0.8
# Between two rigid bodies the boundary reflection applies only to overlaps deeper than this many
# radii: applied to every grazing contact, the ambiguous SDF gradients at box edges and corners
# turned it into a source of energy that kept a pile of boxes tumbling.
FLIP_DEPTH = 0.2


def _rigid_normals(
    n: FloatArray,
    c: FloatArray,
    di: FloatArray,
    dj: FloatArray,
    s: FloatArray,
    rigid: NDArray[np.bool_],
    gi: FloatArray,
    gj: FloatArray,
    radius: float | FloatArray,
    faces_i: FacesFn | None = None,
    faces_j: FacesFn | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Contact normals and depths for pairs involving rigid particles (paper Sec. 5.1, extended).

    Vectors are coordinate-major, (3, K) (see :func:`particle_contacts`).

    Candidates for the direction particle i must move: into its own body (-grad phi_i) or out of j's
    body (+grad phi_j); non-rigid particles have no candidate (zero gradient). ``faces_i(sub)`` and
    ``faces_j(sub)`` give, for rigid-rigid pairs ``sub``, the directions of the faces nearest each
    side's particle in its body frame, (3F, S) (two at a box's edge, three at a corner; zero where
    fewer), and the body rotations, (9, S) (see ``_face_dots``); they are tried where neither
    gradient is in the cone.

    * Deep pair (the shallower particle lies > 1.75 r inside its body): that particle's SDF normal,
      whatever the pair direction, so interpenetrating bodies separate the short way (paper).
    * Otherwise, if a candidate is within ~37 degrees of the pair direction, it replaces the
      direction (the depth stays the overlap of the two spheres): a flat face then pushes straight
      out instead of like a bumpy layer of spheres (which pushes stacked boxes sideways into the
      "valleys" until the stack falls).
    * Otherwise the pair direction, reflected when it points into the shallower particle's body
      (paper's boundary rule) -- between two rigid bodies only for overlaps deeper than
      ``FLIP_DEPTH`` radii.
    """
    use_i = di <= dj
    fin_i, fin_j = np.isfinite(di), np.isfinite(dj)
    both = fin_i & fin_j  # rigid on both sides
    cand_i = -gi if fin_i.all() else np.where(fin_i, -gi, 0.0)
    cand_j = gj if fin_j.all() else np.where(fin_j, gj, 0.0)
    deep = rigid & (s > DEEP_SDF_RADII * radius)
    dot_i = _dot(n, cand_i)
    dot_j = _dot(n, cand_j)
    best = np.where(dot_i >= dot_j, cand_i, cand_j)
    best_dot = np.maximum(dot_i, dot_j)
    # Against a non-rigid partner (cloth, grain) the face normal applies over a wider cone.
    one_sided = ~both
    cone = np.where(one_sided, FACE_NORMAL_COS_ONE_SIDED, FACE_NORMAL_COS)
    face = rigid & ~deep & (best_dot > cone)
    if faces_i is not None and faces_j is not None:
        # A particle at a box's edge or corner lies on two or three faces, and its gradient is
        # whichever the closest-point search met first (geometry.sampling._tied_directions): where neither
        # gradient is in the cone, try each face. Where two stacked boxes' edges meet, both gradients
        # can be side faces, and only the top and bottom faces are near the pair direction. Without
        # them those pairs pushed along the pair direction, sideways towards any offset like a sphere
        # resting on a sphere: a column of 20 boxes placed 2 mm off centre toppled within 4 s.
        sub = np.flatnonzero(both & ~(deep | face))
        if sub.size:
            _face_normals(faces_i, faces_j, sub, n, cone, best, face)
    dot_s = np.where(use_i, dot_i, dot_j)
    flip = rigid & ~deep & ~face & (dot_s < 0.0) & (one_sided | (c < -FLIP_DEPTH * radius))
    # The shallower particle's candidate only where a deep pair or a flip needs it (rare in piles).
    any_deep, any_flip = bool(deep.any()), bool(flip.any())
    n_shallow = np.where(use_i, cand_i, cand_j) if any_deep or any_flip else n
    out = np.where(face, best, np.where(deep, n_shallow, n) if any_deep else n)
    if any_flip:  # rare in rigid piles (overlaps past FLIP_DEPTH): the reflection only where needed
        out = np.where(flip, n - 2.0 * dot_s * n_shallow, out)
    # The depth stays the spheres' true overlap: measuring it along the face normal (the projected
    # separation) pushes tilted, barely touching pairs apart by up to 0.4 r and pumped energy into
    # tumbling bodies until a pile of boxes never came to rest.
    return out, c


def _face_normals(
    faces_i: FacesFn,
    faces_j: FacesFn,
    sub: IntArray,
    n: FloatArray,
    cone: FloatArray,
    best: FloatArray,
    face: NDArray[np.bool_],
) -> None:
    """For pairs ``sub``: the face direction (-R_i f for i's faces, R_j f for j's) nearest the pair
    direction n, written into ``best`` (3, K) and ``face`` (K,) where it is inside ``cone``.

    Few NumPy calls (the lists are short in rigid piles, so call overhead is the cost): both sides in
    one (3F, 2S) gather, and dot(R f, n) = dot(f, R^T n), n turned into each body rather than every
    face out of it.
    """
    m = sub.size
    local_i, rot_i = faces_i(sub)
    local_j, rot_j = faces_j(sub)
    local = np.concatenate([local_i, local_j], axis=1).reshape(-1, 3, 2 * m)  # (F, 3, 2S)
    rot = np.concatenate([rot_i, rot_j], axis=1).reshape(3, 3, 2 * m)
    ns = n[:, sub]
    body_n = np.einsum("abs,as->bs", rot, np.concatenate([-ns, ns], axis=1))  # R^T (-n | n)
    dots = np.einsum("fbs,bs->fs", local, body_n)  # (F, 2S); zero rows (no face) give 0
    dots = np.concatenate([dots[:, :m], dots[:, m:]])  # (2F, S): i's faces, then j's
    pick = dots.argmax(axis=0)
    ok = np.flatnonzero(dots[pick, np.arange(m)] > cone[sub])
    if not ok.size:
        return
    nf = len(local)
    pick = pick[ok]
    on_j = pick >= nf
    col = ok + m * on_j  # column of the chosen side
    f = local[pick - nf * on_j, :, col]  # (S_ok, 3)
    world = np.einsum("abs,sb->as", rot[:, :, col], f)
    best[:, sub[ok]] = np.where(on_j, world, -world)
    face[sub[ok]] = True


def _faces_of(faces: FacesFn, side: IntArray) -> FacesFn:
    """The nearest faces of the particles ``side[sub]``, for the pairs ``sub`` (see ``_rigid_normals``)."""
    return lambda sub: faces(side[sub])


def _dot(a: FloatArray, b: FloatArray) -> FloatArray:
    """Column-wise dot products of (3, K) arrays."""
    out: FloatArray = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    return out


def particle_contacts(
    x_pred: FloatArray,
    x_prev: FloatArray | None,
    i: IntArray,
    j: IntArray,
    w: FloatArray,
    radius: float | FloatArray,
    max_mass_ratio: float = np.inf,
    friction: FloatArray | None = None,
    static_scale: float = 1.0,
    dynamic_scale: float = 1.0,
    cohesion: FloatArray | None = None,
    sdf_depth: FloatArray | None = None,
    sdf_normal: Callable[[IntArray], FloatArray] | None = None,
    sdf_faces: FacesFn | None = None,
    touch_tolerance: float | FloatArray = 0.0,
    kinetic: tuple[FloatArray, BoolArray] | None = None,
    coarse_plan: CoarseFn | None = None,
) -> tuple[IntArray, FloatArray, IntArray]:
    """Corrections for candidate pairs (i, j) of particles of radius r (one, or r_i per particle).

    Non-penetration (the standard PBD contact): C = |x_ij| - (r_i + r_j) <= 0 (2r for one radius),
    dx_i = -w_i / (w_i + w_j) * C * n, dx_j = +w_j / (w_i + w_j) * C * n, with n = x_ij / |x_ij|.

    Friction (paper Eq. 24-26): the relative tangential displacement during the step,
    dx_t = [(x*_i - x_i) - (x*_j - x_j)] projected off n, is removed completely when
    |dx_t| < mu_s d (static) and otherwise reduced by mu_k d (kinetic), d = penetration depth;
    mu is the mean of the two particles' coefficients times the static/dynamic scale. Grain pairs
    (``kinetic``) slide with their own kinetic coefficient mu_k instead, see :func:`_friction`.

    Rigid particles (paper Sec. 5.1): ``sdf_depth`` is the distance of each particle's centre below its
    body's outermost particle layer (+inf for non-rigid particles) and ``sdf_normal`` the body's outward
    SDF gradient in world space; see :func:`_rigid_normals`.

    Cohesion: pairs with 0 < gap < 0.5 r are pulled together by the mean ``cohesion`` (0..1) times
    the gap.

    Per-pair quantities are computed only for the pairs in contact: candidate lists carry a margin
    and are mostly inactive.

    Args:
        x_pred: (N, 3) predicted positions x*, metres.
        x_prev: (N, 3) positions at the start of the step (for friction); None disables friction.
        i, j: (P,) candidate pair indices.
        w: (N,) contact inverse masses, 1/kg (0 = immovable).
        radius: particle radius r, metres: one float, or (N,) one per particle (``sizes``).
        max_mass_ratio: limit of the inverse-mass ratio within a pair (see contact_inv_mass_pairs).
        friction: (N,) Coulomb coefficient per particle, or None for no friction.
        static_scale, dynamic_scale: multipliers of mu for sticking and sliding.
        cohesion: (N,) cohesion strength per particle in [0, 1], or None.
        sdf_depth: (N,) depth of the particle below its body's outermost particle layer, metres
            (+inf if not rigid).
        sdf_normal: function giving, for particle indices, the unit outward normal (3, K),
            coordinate-major, of each particle's body at the particle, world frame (evaluated for
            touching pairs only).
        sdf_faces: function giving, for rigid particle indices, the outward directions of the faces
            nearest each particle in its body's frame, (3F, K) coordinate-major (zero where fewer),
            and the body rotations, (9, K) (or None).
        touch_tolerance: pairs with a gap below this (metres; (N,) per particle with (N,) radii, a
            pair's the mean of its two) count as touching.
        kinetic: ((N,) kinetic coefficient per particle, (N,) bool mask): pairs with both particles in
            the mask (grains) slide with the mean of their coefficients; None: all slide with ``friction``.
        coarse_plan: the coarse-face pairs of this list (i, j) from a plan indexed once per list
            (``face_plan.ChunkFacePlans``), in place of :func:`coarse_faces` (several sizes only).

    Returns:
        (idx, delta, touching): (2K,) particle indices and (3, 2K) position corrections, metres,
        coordinate-major, for the K active pairs (first the i sides then the j sides), and the indices
        of particles in pairs closer than 2r + touch_tolerance (used to weight shape matching).
    """
    # Coordinate-major (3, K) arithmetic: NumPy 1.26 is 8-10x slower at scaling (K, 3) rows by
    # (K,) factors than at (3, K) (see fastops); x_pred is transposed once per call.
    xt = np.ascontiguousarray(x_pred.T)
    d = gather_difference(xt, i, j)
    if np.ndim(radius) > 0 and sdf_depth is not None and sdf_normal is not None and sdf_faces is not None:
        coarse = (
            coarse_faces(d, i, j, radius, sdf_depth, sdf_normal, sdf_faces)  # type: ignore[arg-type]
            if coarse_plan is None
            else coarse_plan(xt, i, j)
        )
        if coarse is not None:  # those pairs meet a face; the others go on as sphere pairs
            face = _coarse_face_contacts(
                xt, x_prev, i, j, *coarse, w, radius, max_mass_ratio,  # type: ignore[arg-type]
                friction, static_scale, dynamic_scale, kinetic, touch_tolerance,
            )  # fmt: skip
            other = np.ones(len(i), dtype=bool)  # the sphere pairs: masked, not copied out of the list
            other[coarse[0]] = False
            spheres = _sphere_contacts(
                xt, x_prev, i, j, d, w, radius, max_mass_ratio, friction, static_scale, dynamic_scale,
                cohesion, sdf_depth, sdf_normal, sdf_faces, touch_tolerance, kinetic, other,
            )  # fmt: skip
            return _merge(spheres, face)
    return _sphere_contacts(
        xt, x_prev, i, j, d, w, radius, max_mass_ratio, friction, static_scale, dynamic_scale, cohesion,
        sdf_depth, sdf_normal, sdf_faces, touch_tolerance, kinetic,
    )  # fmt: skip


def _sphere_contacts(
    xt: FloatArray,
    x_prev: FloatArray | None,
    i: IntArray,
    j: IntArray,
    d: FloatArray,
    w: FloatArray,
    radius: float | FloatArray,
    max_mass_ratio: float,
    friction: FloatArray | None,
    static_scale: float,
    dynamic_scale: float,
    cohesion: FloatArray | None,
    sdf_depth: FloatArray | None,
    sdf_normal: Callable[[IntArray], FloatArray] | None,
    sdf_faces: FacesFn | None,
    touch_tolerance: float | FloatArray,
    kinetic: tuple[FloatArray, BoolArray] | None,
    only: BoolArray | None = None,
) -> tuple[IntArray, FloatArray, IntArray]:
    """:func:`particle_contacts` of the pairs (i, j), d (3, P) = x_i - x_j, ``xt`` (3, N) the predicted
    positions, coordinate-major: the spheres' contacts (no coarse faces), of the pairs ``only`` (P,) marks
    (None: all)."""
    sized = np.ndim(radius) > 0  # one radius per particle: per-pair rest distances r_i + r_j
    d2 = _dot(d, d)
    rest: Any = radius[i] + radius[j] if sized else 2.0 * radius  # type: ignore[index]
    tol: Any = touch_tolerance
    if np.ndim(tol) > 0:
        tol = 0.5 * (tol[i] + tol[j])
    # Squared distances first: most candidates (the list has a margin) are not touching.
    near = d2 < (rest + tol) ** 2
    if only is not None:
        near &= only
    touching = np.concatenate([i[near], j[near]])
    reach = COHESION_RANGE_RADII * (0.5 * rest if sized else radius) if cohesion is not None else 0.0
    within = d2 < (rest + reach) ** 2
    if only is not None:
        within &= only
    sel = np.flatnonzero(within)
    if not sel.size:  # nothing in reach (bodies falling apart): skip the ~40 calls on empty arrays
        return np.zeros(0, np.int64), np.zeros((3, 0)), touching
    i, j, d = i[sel], j[sel], d[:, sel]
    if sized:
        rest = rest[sel]
    dist = np.sqrt(d2[sel])
    c = dist - rest
    coh = None
    if cohesion is not None:
        coh = 0.5 * (cohesion[i] + cohesion[j])
        keep = np.flatnonzero((c < 0.0) | (coh > 0.0))
        i, j, d, dist, c, coh = _take(keep, i, j, d, dist, c, coh)
        rest = rest[keep] if sized else rest
    wi, wj = contact_inv_mass_pairs(w, i, j, max_mass_ratio, radius if sized else None)  # type: ignore[arg-type]
    wsum = wi + wj
    if not np.all(wsum > 0.0):  # both sides immovable (pinned, kinematic): nothing to do
        keep = np.flatnonzero(wsum > 0.0)
        i, j, d, dist, c, wi, wj, wsum = _take(keep, i, j, d, dist, c, wi, wj, wsum)
        coh = None if coh is None else coh[keep]
        rest = rest[keep] if sized else rest
    # Per pair, the mean radius (r_i + r_j) / 2 scales the rigid-contact thresholds (_rigid_normals).
    n, c = _contact_normals(
        i, j, d, dist, c, 0.5 * rest if sized else radius, sdf_depth, sdf_normal, sdf_faces
    )

    inv_wsum = 1.0 / wsum
    # Penetration is resolved fully; cohesion closes a fraction of the gap.
    # (Times 1 without cohesion is exact: skipped.)
    lam = (-c * inv_wsum if coh is None else -c * np.where(c < 0.0, 1.0, coh) * inv_wsum) * n
    dxi = wi * lam
    dxj = -wj * lam

    if x_prev is not None and friction is not None:
        tf = _friction(xt, x_prev, i, j, n, c, inv_wsum, friction, static_scale, dynamic_scale, kinetic)
        dxi -= wi * tf
        dxj += wj * tf

    return np.concatenate([i, j]), np.concatenate([dxi, dxj], axis=1), touching


def _take(keep: IntArray, *arrays: NDArray[Any]) -> tuple[NDArray[Any], ...]:
    """The pairs ``keep`` of per-pair arrays, (K,) or coordinate-major (3, K)."""
    return tuple(a[..., keep] for a in arrays)


def _contact_normals(
    i: IntArray,
    j: IntArray,
    d: FloatArray,
    dist: FloatArray,
    c: FloatArray,
    radius: float | FloatArray,
    sdf_depth: FloatArray | None,
    sdf_normal: Callable[[IntArray], FloatArray] | None,
    sdf_faces: FacesFn | None,
) -> tuple[FloatArray, FloatArray]:
    """Unit normals (3, K) from j to i, and the depths: the pair direction, or for rigid particles the
    direction their bodies' signed distances give (:func:`_rigid_normals`, paper Sec. 5.1)."""
    rest = 2.0 * radius
    # Coincident centres have no direction; pick +z (deterministic) rather than dividing by zero.
    safe = dist > 1e-12 * rest
    n = d / dist if safe.all() else np.where(safe, d / np.where(safe, dist, 1.0), _UP)

    if sdf_depth is not None and sdf_normal is not None:
        di, dj = sdf_depth[i], sdf_depth[j]
        s = np.minimum(di, dj)
        rigid = np.isfinite(s)
        if rigid.any():
            fi = None if sdf_faces is None else _faces_of(sdf_faces, i)
            fj = None if sdf_faces is None else _faces_of(sdf_faces, j)
            k = len(i)
            g = sdf_normal(np.concatenate([i, j]))  # both sides in one call: (3, 2K)
            n, c = _rigid_normals(n, c, di, dj, s, rigid, g[:, :k], g[:, k:], radius, fi, fj)
    return n, c


def _friction(
    xt: FloatArray,
    x_prev: FloatArray,
    i: IntArray,
    j: IntArray,
    n: FloatArray,
    c: FloatArray,
    inv_wsum: FloatArray,
    friction: FloatArray,
    static_scale: float,
    dynamic_scale: float,
    kinetic: tuple[FloatArray, BoolArray] | None = None,
) -> FloatArray:
    """Friction (paper Eq. 24-26) of pairs (i, j) with normals ``n`` (3, K) and gaps ``c`` (K,): the
    tangential correction (3, K), metres per unit inverse mass (i gets -w_i times it, j +w_j times it).
    ``xt`` (3, N) are the predicted positions, coordinate-major; ``x_prev`` (N, 3) those before.

    Sticking contacts hold by the full (static) mu. Pairs of grains (``kinetic``: coefficient and mask,
    see :func:`particle_contacts`) slide with their kinetic mu_k: these particles carry no rotation, so
    their relative tangential motion includes what real grains do by rolling, which costs only rolling
    resistance (:func:`rolling_resistance`), not sliding friction; a lower mu_k stands in for it and lets
    a collapsing column run out as far as real sand (Lube et al. 2004; docs/physics.md)."""
    mu = 0.5 * (friction[i] + friction[j])
    mu_k = mu
    if kinetic is not None:
        coefficient, grain = kinetic
        mu_k = np.where(grain[i] & grain[j], 0.5 * (coefficient[i] + coefficient[j]), mu)
    pt = np.ascontiguousarray(x_prev.T)
    rel = (np.take(xt, i, axis=1) - np.take(pt, i, axis=1)) - (
        np.take(xt, j, axis=1) - np.take(pt, j, axis=1)
    )
    t = rel - _dot(rel, n) * n
    tl = np.sqrt(_dot(t, t))
    pen = np.maximum(-c, 0.0)
    factor = np.where(
        tl < static_scale * mu * pen,
        1.0,
        np.minimum(dynamic_scale * mu_k * pen / np.maximum(tl, 1e-300), 1.0),
    )
    tf: FloatArray = t * (factor * inv_wsum)
    return tf


def rolling_resistance(
    x_pred: FloatArray,
    x_prev: FloatArray,
    i: IntArray,
    j: IntArray,
    w: FloatArray,
    radius: float | FloatArray,
    rolling: FloatArray,
    max_mass_ratio: float = np.inf,
) -> tuple[IntArray, FloatArray]:
    """Rolling resistance of touching grains: a second, Coulomb-limited tangential pass after the contacts.

    The model is the constant directional torque model ("type A") of Ai, Chen, Rotter, Ooi, "Assessment
    of rolling resistance models in discrete element simulations", Powder Technology 206 (2011): a
    resistance of constant magnitude mu_r times the normal load, opposing the relative motion, that
    stands in for the grains' non-spherical shape (real sand grains interlock; round ones roll away).
    Particles here carry no rotation, so the relative rolling-like motion of two touching grains is
    their relative tangential displacement, and the load is the penetration depth d (as for friction,
    Macklin 2014 Eq. 24-26). Measured after the non-penetration corrections of the same small step
    (``x_pred`` already corrected), so it includes the sideways drift those corrections give a grain
    resting on a slope, which the friction of the contact pass (measured before them) never sees:

    dx_t = [(x*_i - x_i) - (x*_j - x_j)] projected off n, removed entirely when |dx_t| < mu_r d,
    otherwise shortened by mu_r d; mu_r the mean of the two particles' ``rolling``, split by inverse mass.

    Args:
        x_pred: (N, 3) predicted positions after this small step's contact corrections, metres.
        x_prev: (N, 3) positions at the start of the small step, metres.
        i, j: (K,) the contact pass's active pairs.
        w: (N,) contact inverse masses, 1/kg.
        radius: particle radius r, metres: one, or (N,) one per particle.
        rolling: (N,) rolling resistance coefficient mu_r per particle (0 = none).
        max_mass_ratio: limit of the inverse-mass ratio within a pair (see contact_inv_mass_pairs).

    Returns:
        (idx, delta): (2M,) particle indices and (3, 2M) corrections, metres, coordinate-major, for the
        M resisting pairs (first the i sides then the j sides), as :func:`particle_contacts` returns.
    """
    mu = 0.5 * (rolling[i] + rolling[j])
    keep = np.flatnonzero(mu > 0.0)
    i, j, mu = i[keep], j[keep], mu[keep]
    xt = np.ascontiguousarray(x_pred.T)
    d = np.take(xt, i, axis=1)
    d -= np.take(xt, j, axis=1)
    dist = np.sqrt(_dot(d, d))
    rest = radius[i] + radius[j] if np.ndim(radius) else 2.0 * radius  # type: ignore[index]
    pen = rest - dist
    touching = np.flatnonzero((pen > 0.0) & (dist > 0.5e-12 * rest))
    i, j, d, dist, pen, mu = (
        i[touching],
        j[touching],
        d[:, touching],
        dist[touching],
        pen[touching],
        mu[touching],
    )
    wi, wj = contact_inv_mass_pairs(w, i, j, max_mass_ratio, radius if np.ndim(radius) else None)  # type: ignore[arg-type]
    wsum = wi + wj
    movable = np.flatnonzero(wsum > 0.0)
    if len(movable) < len(i):
        i, j, d, dist, pen, mu = (
            i[movable],
            j[movable],
            d[:, movable],
            dist[movable],
            pen[movable],
            mu[movable],
        )
        wi, wj, wsum = wi[movable], wj[movable], wsum[movable]
    n = d / dist
    pt = np.ascontiguousarray(x_prev.T)
    rel = (np.take(xt, i, axis=1) - np.take(pt, i, axis=1)) - (
        np.take(xt, j, axis=1) - np.take(pt, j, axis=1)
    )
    t = rel - _dot(rel, n) * n
    tl = np.sqrt(_dot(t, t))
    budget = mu * pen
    factor = np.where(tl < budget, 1.0, budget / np.maximum(tl, 1e-300))
    tf = t * (factor / wsum)
    return np.concatenate([i, j]), np.concatenate([-wi * tf, wj * tf], axis=1)


# A rigid particle at least this many times as large as the particle it touches meets it with the flat
# face of its body, not its sphere: 5 mm grains fell straight through the 41%-of-r holes between the
# 5 cm particles of a box (all 64 of 64, sizes 10x apart; tests/core/test_sizes.py).
COARSE_FACE_RATIO = 2.0
# ... within this many of its radii to the side of it: sqrt(2) r covers the square cell of the face's
# particle lattice around it, so every point of the face is near one particle.
COARSE_FACE_LATERAL = float(np.sqrt(2.0))


def coarse_surface_of(sdf_depth: FloatArray, radius: FloatArray) -> BoolArray:
    """(N,) the rigid surface particles that meet much smaller ones with their body's face: depth below
    the outer layer < r, and r at least ``COARSE_FACE_RATIO`` times the smallest particle's."""
    out: BoolArray = (sdf_depth < radius) & (radius >= COARSE_FACE_RATIO * float(radius.min()))
    return out


def coarse_pairs(
    coarse: BoolArray, radius: FloatArray, i: IntArray, j: IntArray
) -> tuple[IntArray, BoolArray]:
    """Of pairs (i, j), those with a ``coarse`` (:func:`coarse_surface_of`) side at least
    ``COARSE_FACE_RATIO`` times the other, (S,) into the pairs, and (S,) whether that side is j. The
    contacts (:func:`coarse_faces`) and the candidate list's slab cut (``face_slab.slab_keep``) both ask."""
    ri, rj = radius[i], radius[j]
    big_i = coarse[i] & (ri >= COARSE_FACE_RATIO * rj)
    big_j = coarse[j] & (rj >= COARSE_FACE_RATIO * ri)
    sub = np.flatnonzero(big_i | big_j)
    return sub, big_j[sub]


def coarse_faces(
    d: FloatArray,
    i: IntArray,
    j: IntArray,
    radius: FloatArray,
    sdf_depth: FloatArray,
    sdf_normal: Callable[[IntArray], FloatArray],
    sdf_faces: FacesFn,
) -> tuple[IntArray, FloatArray, FloatArray] | None:
    """Pairs of a rigid surface particle (depth below the outer layer < r) and one at most 1 /
    ``COARSE_FACE_RATIO`` its size, met by the body's face: the plane r out along whichever of the
    particle's outward directions (SDF normal, nearest faces: ``sdf_faces``) points most towards the
    small particle, where that one lies within ``COARSE_FACE_LATERAL`` r of the particle sideways.

    ``d`` (3, P) is x_i - x_j. Returns (pairs (F,) into i, j; normals (3, F) from j to i; gaps (F,),
    metres: height above the face less the small radius), or None for no such pair.
    """
    # Per particle first (a coarse surface particle is at least twice the smallest), then only the pairs
    # with one: grain-grain pairs, most of a sand bed's list, cost two byte gathers.
    coarse = coarse_surface_of(sdf_depth, radius)
    cand = np.flatnonzero(coarse[i] | coarse[j])
    if not cand.size:
        return None
    i, j, d = i[cand], j[cand], d[:, cand]
    sub, on_j = coarse_pairs(coarse, radius, i, j)  # on_j: the rigid side is j
    if not sub.size:
        return None
    ri, rj = radius[i], radius[j]
    rig = np.where(on_j, j[sub], i[sub])
    e = np.where(on_j, d[:, sub], -d[:, sub])  # rigid particle -> small one
    # A coarse particle has many small partners: its normal and faces are looked up once, then spread.
    uniq, back = np.unique(rig, return_inverse=True)
    normal = np.take(sdf_normal(uniq), back, axis=1)  # (3, S) world
    local, rot = (np.take(a, back, axis=1) for a in sdf_faces(uniq))  # (3F, S) body frame, (9, S)
    m = len(rig)
    rot3 = rot.reshape(3, 3, m)
    body_e = np.einsum("abs,as->bs", rot3, e)  # R^T e: dot(R f, e) = dot(f, R^T e)
    dots = np.einsum("fbs,bs->fs", local.reshape(-1, 3, m), body_e)  # (F, S)
    pick = dots.argmax(axis=0)
    h = dots[pick, np.arange(m)]
    world = np.einsum("abs,sb->as", rot3, local.reshape(-1, 3, m)[pick, :, np.arange(m)])
    h_n = _dot(normal, e)
    use_n = h_n >= h
    h = np.where(use_n, h_n, h)
    direction = np.where(use_n, normal, world)
    r_big = radius[rig]
    lateral2 = _dot(e, e) - h * h
    face = np.flatnonzero(lateral2 <= (COARSE_FACE_LATERAL * r_big) ** 2)
    if not face.size:
        return None
    small = np.where(on_j, ri[sub], rj[sub])
    gap = h[face] - r_big[face] - small[face]
    n = np.where(on_j[face], direction[:, face], -direction[:, face])
    return cand[sub[face]], n, gap


def _coarse_face_contacts(
    xt: FloatArray,
    x_prev: FloatArray | None,
    i: IntArray,
    j: IntArray,
    pairs: IntArray,
    n: FloatArray,
    c: FloatArray,
    w: FloatArray,
    radius: FloatArray,
    max_mass_ratio: float,
    friction: FloatArray | None,
    static_scale: float,
    dynamic_scale: float,
    kinetic: tuple[FloatArray, BoolArray] | None,
    touch_tolerance: float | FloatArray,
) -> tuple[IntArray, FloatArray, IntArray]:
    """Non-penetration and friction of the coarse-face pairs ``pairs`` of (i, j) (normals n (3, F) from j
    to i, gaps c (F,)), as :func:`particle_contacts` returns them (no cohesion on a face)."""
    i, j = i[pairs], j[pairs]
    tol: Any = touch_tolerance
    if np.ndim(tol) > 0:
        tol = 0.5 * (tol[i] + tol[j])
    near = c < tol
    touching = np.concatenate([i[near], j[near]])
    wi, wj = contact_inv_mass_pairs(w, i, j, max_mass_ratio, radius)
    act = np.flatnonzero((c < 0.0) & (wi + wj > 0.0))
    i, j, n, c, wi, wj = i[act], j[act], n[:, act], c[act], wi[act], wj[act]
    inv_wsum = 1.0 / (wi + wj)
    lam = (-c * inv_wsum) * n
    dxi, dxj = wi * lam, -wj * lam
    if x_prev is not None and friction is not None:
        tf = _friction(xt, x_prev, i, j, n, c, inv_wsum, friction, static_scale, dynamic_scale, kinetic)
        dxi -= wi * tf
        dxj += wj * tf
    return np.concatenate([i, j]), np.concatenate([dxi, dxj], axis=1), touching


def _merge(
    a: tuple[IntArray, FloatArray, IntArray], b: tuple[IntArray, FloatArray, IntArray]
) -> tuple[IntArray, FloatArray, IntArray]:
    """Two :func:`particle_contacts` results as one: i sides of both, then j sides of both, the pairs in
    (i, j) order, the candidate lists' own: the sums over a particle's pairs then do not depend on how the
    list was chunked (``parallel.pair_chunks_map``) nor on which pairs out of reach it holds
    (``face_slab``)."""
    ka, kb = len(a[0]) // 2, len(b[0]) // 2
    pi = np.concatenate([a[0][:ka], b[0][:kb]])
    pj = np.concatenate([a[0][ka:], b[0][kb:]])
    if not len(pi):
        return pi, np.zeros((3, 0)), np.concatenate([a[2], b[2]])
    order = np.argsort(pi * (int(pj.max()) + 1) + pj, kind="stable")
    delta_i = np.concatenate([a[1][:, :ka], b[1][:, :kb]], axis=1)[:, order]
    delta_j = np.concatenate([a[1][:, ka:], b[1][:, kb:]], axis=1)[:, order]
    idx = np.concatenate([pi[order], pj[order]])
    return idx, np.concatenate([delta_i, delta_j], axis=1), np.concatenate([a[2], b[2]])
