# SPDX-License-Identifier: GPL-3.0-or-later
"""Particle sizes: every body its own radius (``World.add_rigid(radius=...)`` and the like).

A radius is either one float for every particle (the fast path: a world whose bodies all use the world's
radius runs exactly the arithmetic it ran before sizes existed) or an (N,) array, one radius per
particle. The passes that take a ``radius`` accept both; this module holds what they share: the rest
distance of a pair (r_i + r_j), the per-particle search margin, and the neighbour search by size class
(:func:`find_sized_pairs`), which keeps the candidate list of a scene with sizes 10x apart as short as
that of one size: a cell sized for the largest particles would hand every small one (10x)^3 times the
candidates it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import SimulationInputError
from .face_slab import cut_rotations, slab_keep, turned, whole_bodies
from .fastops import column_max, column_min, rows_all
from .neighbors import find_pairs, pairs_touching

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# A radius: one for every particle, or (N,) one per particle, metres.
Radius = float | FloatArray

# Size classes are powers of this ratio apart: within a class radii differ by less than 2x, so the
# class's cells (sized by its largest particle) hold at most 2^3 = 8 times the candidates one size would.
CLASS_RATIO = 2.0


def is_uniform(radius: Radius) -> bool:
    """Whether ``radius`` is one float for every particle (the fast path)."""
    return np.ndim(radius) == 0


def pair_rest(radius: Radius, i: IntArray, j: IntArray) -> Radius:
    """Contact distance of pairs (i, j): r_i + r_j, metres ((K,) per pair, or 2r for one radius)."""
    if is_uniform(radius):
        return 2.0 * float(radius)  # type: ignore[arg-type]
    r = np.asarray(radius)
    out: FloatArray = r[i] + r[j]
    return out


def of(radius: Radius, idx: IntArray) -> Radius:
    """The radii of particles ``idx`` (the float itself for one radius)."""
    return radius if is_uniform(radius) else np.asarray(radius)[idx]


def largest(radius: Radius) -> float:
    """The largest radius, metres (0 for no particles)."""
    return float(radius) if is_uniform(radius) else float(np.max(radius, initial=0.0))  # type: ignore[arg-type]


def smallest(radius: Radius) -> float:
    """The smallest radius, metres (inf for no particles)."""
    return float(radius) if is_uniform(radius) else float(np.min(radius, initial=np.inf))  # type: ignore[arg-type]


def grain_radii(count: int, radius: object, spread: float = 0.0, seed: int = 0) -> FloatArray:
    """(P,) radii of ``count`` grains, metres: ``radius`` (a float, or (P,) one per grain) times a seeded
    factor uniform in [1 - spread, 1 + spread] (``spread`` in [0, 1): real sand is not monodisperse).
    The same seed gives the same grains.

    Raises:
        SimulationInputError: a radius that is not a positive number of metres, a (P,) array of another
            length, or a spread outside [0, 1).
    """
    try:
        r = np.asarray(radius, dtype=np.float64)
        sp = float(spread)
    except (TypeError, ValueError):
        raise SimulationInputError(
            f"grain radius must be metres (a number or one per grain), got {radius!r}"
        ) from None
    if r.ndim > 1 or (r.ndim == 1 and len(r) != count) or not np.all(np.isfinite(r)) or np.any(r <= 0.0):
        raise SimulationInputError(
            f"grain radius must be a positive number of metres or {count} of them (one per grain)"
        )
    if not (np.isfinite(sp) and 0.0 <= sp < 1.0):
        raise SimulationInputError(
            f"radius_spread must be in [0, 1) (a fraction of the radius), got {spread!r}"
        )
    out = np.broadcast_to(r, (count,)).astype(np.float64)
    if sp > 0.0:
        out = out * np.random.default_rng(int(seed)).uniform(1.0 - sp, 1.0 + sp, count)
    return out


def world_sizes(
    particle_radius: FloatArray, world_radius: float, world_margin: float
) -> tuple[Radius, Radius]:
    """(radius, margin) for the solver: the world's own floats when every particle has the world's
    radius (bit for bit the arithmetic of one radius), one float each when every particle shares another
    radius, else (N,) arrays. The margin scales with each particle's radius (world_margin / world_radius
    of it), so a small grain's candidate list reaches as many of its diameters as a large one's, up to
    that of a particle CLASS_RATIO times the smallest (S9: landing frames 12-15 s -> 9-9.5 s, memory
    219 -> 172 MB).
    """
    n = len(particle_radius)
    if n == 0:
        return world_radius, world_margin
    first = float(particle_radius[0])
    if bool(np.all(particle_radius == first)):
        if first == world_radius:
            return world_radius, world_margin
        return first, first * (world_margin / world_radius)
    # Capped at the margin of a particle CLASS_RATIO times the smallest: a coarse particle's margin sets how
    # many fine neighbours it lists ((r + m / 2)^3 of them), and there are few coarse particles to refresh.
    capped = np.minimum(particle_radius, CLASS_RATIO * float(particle_radius.min()))
    return particle_radius, capped * (world_margin / world_radius)


def size_classes(radius: FloatArray) -> IntArray:
    """(N,) size class of each particle: k for radii in [CLASS_RATIO^k, CLASS_RATIO^(k+1)) times the
    smallest."""
    r0 = float(radius.min())
    k = np.floor(np.log(radius / r0) / np.log(CLASS_RATIO) + 1e-9)
    return np.asarray(k, dtype=np.int64)


def find_sized_pairs(
    x: FloatArray,
    reach: FloatArray,
    group: IntArray,
    group_self_collides: BoolArray,
    threads: int = 1,
    up: FloatArray | None = None,
    query: BoolArray | None = None,
) -> tuple[IntArray, IntArray]:
    """All pairs (i, j), i < j, closer than reach_i + reach_j (across size classes: the larger
    particle's ``up`` (N,) instead of its reach, if given), skipping same-group pairs of groups that
    do not self-collide (as :func:`neighbors.find_pairs`).

    ``reach`` (N,) is each particle's share of the cutoff, metres (its radius plus half its margin,
    plus its cohesion range). Particles are split into size classes (:func:`size_classes`); pairs
    within a class come from one :func:`find_pairs` at the class's largest cutoff, pairs across classes
    a < b from :func:`pairs_touching` over both classes' particles with the larger class as the query,
    at the sum of the two classes' largest reaches. Every list is then cut to the pairs' own cutoffs.
    A pure function of its inputs (the caller sorts the pairs). ``query`` (N,) bool: only the pairs with a
    member in it (a refresh of the particles that moved): within a class :func:`pairs_touching` from them;
    across classes the moved large ones against the small class and the moved small ones against the
    large class only (never a small one's (10x)^3 small neighbours at the large cutoff).
    """
    cls = size_classes(reach)
    classes = np.unique(cls)
    members = [np.flatnonzero(cls == c) for c in classes]
    up = reach if up is None else up
    top = [float(reach[m].max()) for m in members]
    top_up = [float(up[m].max()) for m in members]
    parts_i: list[IntArray] = []
    parts_j: list[IntArray] = []

    def add(i: IntArray, j: IntArray, cross: bool) -> None:
        if cross:  # the pairs within one class come from that class's own search
            keep = cls[i] != cls[j]
            i, j = i[keep], j[keep]
        gi = group[i]
        keep = (gi != group[j]) | group_self_collides[gi]
        parts_i.append(i[keep])
        parts_j.append(j[keep])

    def touching(sub: IntArray, q: IntArray, cutoff: float, cross: bool) -> None:
        if len(sub) > 1 and len(q):
            i, j = pairs_touching(x[sub], q, cutoff)
            add(sub[i], sub[j], cross)

    for a, ma in enumerate(members):  # a few classes: a loop over size classes, not particles
        if query is None and len(ma) > 1:
            i, j = find_pairs(x[ma], 2.0 * top[a], group[ma], group_self_collides, threads)
            add(ma[i], ma[j], False)
        elif query is not None:
            touching(ma, np.flatnonzero(query[ma]), 2.0 * top[a], False)
        for b in range(a + 1, len(members)):
            mb = members[b]
            reach_ab = top[a] + top_up[b]
            if query is None:  # class b, the larger, as the query: each of them meets its small neighbours
                touching(np.concatenate([ma, mb]), np.arange(len(ma), len(ma) + len(mb)), reach_ab, True)
                continue
            fb, fa = mb[query[mb]], ma[query[ma]]
            near = _near(x, ma, fb, reach_ab)
            touching(np.concatenate([near, fb]), np.arange(len(near), len(near) + len(fb)), reach_ab, True)
            # Moved small ones against the large ones that did not move (the others met them above),
            # the large ones as the query: the moved small ones among themselves at this cutoff would be
            # (10x)^3 pairs each (S9: a rock resting on 1 cm sand, 2-3 s of a 3 s frame), all dropped.
            still = _near(x, mb[~query[mb]], fa, reach_ab)
            if len(fa):
                touching(
                    np.concatenate([fa, still]), np.arange(len(fa), len(fa) + len(still)), reach_ab, True
                )
    if not parts_i:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy()
    i, j = np.concatenate(parts_i), np.concatenate(parts_j)
    d = x[i] - x[j]
    ci, cj = cls[i], cls[j]
    cut = np.where(ci < cj, reach[i] + up[j], np.where(ci > cj, up[i] + reach[j], reach[i] + reach[j]))
    keep = np.einsum("ij,ij->i", d, d) < cut * cut
    i, j = i[keep], j[keep]
    return np.minimum(i, j), np.maximum(i, j)


def _near(x: FloatArray, among: IntArray, around: IntArray, reach: float) -> IntArray:
    """The particles ``among`` within ``reach`` of the box around the particles ``around`` (all of them
    when ``around`` is empty): a refresh searches only there (sorting every small grain for a few moved
    rock particles was most of a refresh)."""
    if not len(around) or not len(among):
        return among
    xa = x[around]
    lo, hi = column_min(xa) - reach, column_max(xa) + reach
    out: IntArray = among[rows_all((x[among] >= lo) & (x[among] <= hi))]
    return out


def sized_candidates(
    x: FloatArray,
    model: Any,
    margin: FloatArray,
    cohesion_radii: float,
    active: BoolArray | None,
    threads: int = 1,
    rotation: FloatArray | None = None,
    cache: Any = None,
) -> tuple[IntArray, IntArray]:
    """The solver's contact candidates for several sizes: pairs closer than reach_i + reach_j with
    reach = r + margin / 2 (+ ``cohesion_radii`` r / 2 with cohesion), among ``active`` particles (None:
    all), by :func:`find_sized_pairs`; ``model`` a ``ParticleModel``, ``margin`` (N,) metres. With a
    ``cache`` (the ``PairCache`` the list goes into) the coarse faces' pairs are cut to their slabs at
    the bodies' ``rotation`` (B, 3, 3; None: not cut), recorded in ``cache.cut`` (``face_slab``)."""
    cut = None if cache is None else cut_rotations(model, rotation)
    reach, up = _reaches(model, margin, cohesion_radii)
    group, selfc = model.particle_group, model.group_self_collides
    if active is not None and not active.all():
        live = np.flatnonzero(active)
        i, j = find_sized_pairs(x[live], reach[live], group[live], selfc, threads, up[live])
        i, j = live[i], live[j]
    else:
        i, j = find_sized_pairs(x, reach, group, selfc, threads, up)
    if cache is not None and cut is not None:
        cache.cut = cut
        keep = slab_keep(x, i, j, model, reach, margin, cut)
        i, j = i[keep], j[keep]
    return i, j


# Auto particle size: at least this many particles across a body's thinnest dimension (a wall of one
# particle has no inside; of two, no face a contact can lean on; three hold a flat face and a core).
AUTO_PARTICLES_ACROSS = 3


def fitted_radius(vertices: Any, across: int = AUTO_PARTICLES_ACROSS) -> float:
    """The particle radius, metres, that puts ``across`` particles across the thinnest extent of a mesh's
    principal box (its vertices' extents along the principal axes of their spread): thinnest / (2 across).

    Raises:
        SimulationInputError: fewer than 4 vertices, or a flat mesh (no thickness to fill).
    """
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    if len(v) < 4 or not np.all(np.isfinite(v)):
        raise SimulationInputError("an Auto particle size needs a mesh with finite vertices and a volume")
    c = v - v.mean(axis=0)
    _, axes = np.linalg.eigh(c.T @ c)
    local = c @ axes
    thinnest = float((local.max(axis=0) - local.min(axis=0)).min())
    if not thinnest > 0.0:
        raise SimulationInputError("this mesh is flat: an Auto particle size needs a thickness to fit")
    return thinnest / (2.0 * int(across))


# A rigid body without its own radius (World.add_rigid(radius=None)) whose thinnest side is thinner than
# RIGID_FIT_BELOW world radii gets that side / RIGID_FIT_RADII: two layers of particles 0.8 r apart whose
# spheres touch both faces. Measured on a running-bond wall of 0.2 x 0.1 x 0.07 m bricks
# (tests/core/test_exact_shapes.py), r per brick: one layer (side / 2) and two layers 0.1-0.33 r apart
# (side / 2.1, side / 2.33) fell (15-27 deg in 2 s: the spheres of a face were more than 2r apart along it
# and the row above nestled between them); side / 2.55 and side / 2.8 stood (0.2-0.5 deg, 4 mm). Two layers
# 0.4 r apart (0.12 m bricks at 5 cm, side / 2.4) stand in columns (tests/blender/test_real_scenes.py) and
# keep the world's radius, as every thicker body does.
RIGID_FIT_BELOW = 2.35
RIGID_FIT_RADII = 2.8
# ... down to this fraction of the world's radius: a thinner side gets one layer whose spheres stick out
# by at most this much r, and a 1 mm sheet does not become millions of particles (16x the area density
# of the world's radius at most).
RIGID_FIT_FLOOR = 0.25


def rigid_radius(extent: Any, radius: float) -> float:
    """A rigid body's particle radius, metres, when it has none of its own: the world's ``radius`` unless
    its thinnest side (``extent`` (3,), its principal box, metres) is thinner than ``RIGID_FIT_BELOW`` r,
    then that side / ``RIGID_FIT_RADII``, not below ``RIGID_FIT_FLOOR`` r.

    At the world's radius a side thinner than 2r gets one middle layer whose spheres stick out of both
    faces: a wall of 7 cm bricks at r = 5 cm had its rows 3 cm apart on the spheres and fell.
    """
    side = float(np.min(extent))
    if side >= RIGID_FIT_BELOW * radius:
        return radius
    return max(side / RIGID_FIT_RADII, RIGID_FIT_FLOOR * radius)


def _reaches(model: Any, margin: FloatArray, cohesion_radii: float) -> tuple[FloatArray, FloatArray]:
    """Each particle's share of a pair's cutoff, metres: r + margin / 2 (+ the cohesion range), and across
    size classes for the larger side (``find_sized_pairs(up=)``)."""
    r = model.particle_radius
    reach = r + 0.5 * margin
    if model.has_cohesion:
        reach = reach + 0.5 * cohesion_radii * r
    # A rigid surface particle meets a much smaller one with its body's flat face, up to sqrt(2) r to
    # the side and r + r_small out (contacts.COARSE_FACE_LATERAL): up to sqrt(3) r + r_small away.
    surface = model.particle_sdf_depth < r
    return reach, np.where(surface, reach + (np.sqrt(3.0) - 1.0) * r, reach)


def pair_reach(model: Any, margin: FloatArray) -> FloatArray:
    """(N,) each particle's share of the distance at which a pair may touch, metres: r + margin / 2, and
    for a coarse rigid surface particle its face's reach (``_reaches``). A pair's is the sum of its two,
    ``struck.struck_contacts``' reach with several sizes (it was twice the largest radius plus the
    largest margin for every pair: 0.22 m in S9, rocks of 10 cm particles on 1 cm sand)."""
    return _reaches(model, margin, 0.0)[1]


def refresh_sized(
    cache: Any,
    x: FloatArray,
    model: Any,
    margin: Any,
    active: BoolArray | None,
    keep_pairs: Callable[[IntArray, IntArray], tuple[IntArray, IntArray]],
    limits: tuple[float, float, int, float],
    rotation: FloatArray | None = None,
) -> tuple[IntArray, IntArray] | None:
    """The solver's candidate list (a ``PairCache``) at ``x`` with several sizes: kept while every particle
    is within half its own margin of the median shift c (only relative motion matters: |d_ij| changes by at
    most |u_i - c| + |u_j - c|, within the pair's (m_i + m_j) / 2); else, as for one size
    (``Solver._candidates``), the particles past ``ahead`` of that get the reference x - c and only their
    pairs are searched again (``find_sized_pairs(query=)``), merged in (i, j) order. None: search everything
    afresh (too many moved, free fluid slots, or fewer particles than pay for a refresh). ``margin`` (N,),
    metres; ``limits``: (ahead, largest fraction refreshed, fewest particles, cohesion range in radii);
    ``keep_pairs``: the solver's filter of found pairs. ``rotation`` (B, 3, 3): the bodies' rotations now
    (None: none to cut at); a list cut to the coarse faces' slabs (``cache.cut``, ``face_slab``) also
    has the pairs of every body turned past ``face_slab.SLAB_TURN`` searched again, at this rotation."""
    ahead, fraction, fewest, cohesion_radii = limits
    moved = x - cache.reference
    c = np.median(moved, axis=0)
    dev = moved - c
    dev2 = np.einsum("ij,ij->i", dev, dev)
    half2 = (0.5 * margin) ** 2
    cut = cache.cut
    stale = None if cut is None else turned(model, cut, rotation)
    if bool(np.all(dev2 < half2)) and (stale is None or not stale.any()):
        return cache.i, cache.j
    far = dev2 >= (ahead * ahead) * half2
    if stale is not None:  # a body's pairs at one rotation: all of them searched again, or none
        far, bodies = whole_bodies(model, far, stale)
    n = len(x)
    if active is not None or n < fewest or int(np.count_nonzero(far)) > fraction * n:
        return None
    cache.reference[far] = x[far] - c
    keep = ~(far[cache.i] | far[cache.j])
    old_key = cache.i[keep] * n + cache.j[keep]
    reach, up = _reaches(model, margin, cohesion_radii)
    group, selfc = model.particle_group, model.group_self_collides
    i, j = find_sized_pairs(cache.reference, reach, group, selfc, 1, up, far)
    if cut is not None:
        cut[bodies] = cut_rotations(model, rotation)[bodies]
        keep = slab_keep(cache.reference, i, j, model, reach, margin, cut)
        i, j = i[keep], j[keep]
    i, j = keep_pairs(i, j)
    new_key = np.sort(i * n + j)
    key = np.insert(old_key, np.searchsorted(old_key, new_key), new_key)
    cache.i, cache.j = key // n, key % n
    return cache.i, cache.j
