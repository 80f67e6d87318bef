# SPDX-License-Identifier: GPL-3.0-or-later
"""Hair (``World.add_hair``): many short ropes whose roots ride on a surface mesh.

Every strand is a chain of particles at the points it was drawn with (no resampling: the Blender layer
writes them back point for point). Its links are XPBD distance constraints solved with the cloth and rope
stretch (graph-coloured Gauss-Seidel, two colours for chains); bending is a distance constraint across two
links whose rest length is the drawn one, so a strand keeps its style (a curl keeps its span; the
direction of the bend is not held, as for ropes). Each free particle gets a tether to its root (long range
attachment, as pinned ropes do): no farther from the root than its rest arc length times (1 + give), which
holds the length of a 32-point strand that a few Gauss-Seidel sweeps per small step cannot.

The root of each strand is a pinned (infinite mass) particle on a triangle of a surface mesh, at fixed
barycentric coordinates, as Blender's Curves surface attachment defines it (``surface_uv_coordinate``
names a point of the surface's UV map, so a triangle and barycentric weights). The caller moves the
surface's vertices before each step (:meth:`Hair.set_surface`); the roots follow in a straight line over
the step's small steps and sit exactly on the deformed surface at its end (``World.set_pin_targets``).
Optionally the second point is pinned too, at a fixed offset in the root triangle's frame (edge, in-plane
normal of the edge, face normal): the strand then leaves the surface at the angle it was drawn with as the
surface turns, as a follicle holds a hair.

Hair particles are rope particles (``KIND_ROPE``): they collide with colliders and every other body
through the ordinary particle contacts. Strand-strand contacts are off by default (one collision group
that does not self-collide); on, they are the ordinary sphere contacts between the particles of different
strands (and of one strand more than two links apart), not capsule-capsule contacts between segments: a
strand can slip between two points of another whose gap is wider than the two radii. The same holds for
colliders: only the points collide, so points should be no farther apart than about 2r where a strand
must not cut a collider's edge. Damping is per particle (``damping``, 1/s: v *= exp(-damping h) each small
step), for hair that settles without slowing the rest of the scene.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .bodies import Body
from .builder import WorldBuilder, nonnegative, positive
from .distance import DistanceConstraints, compliant_strain
from .errors import SimulationInputError
from .geometry import MAX_COORDINATE
from .geometry.closest import _closest
from .model import KIND_ROPE

if TYPE_CHECKING:
    from .world import World

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Tension, N, of a plausible maximal pull on one strand (a comb through wet hair): the tethers leave a
# strand the stretch its compliance allows under it (see rope.ROPE_TETHER_TENSION).
HAIR_TETHER_TENSION = 1.0
# Barycentric weights this far outside [0, 1] still count as inside a UV triangle (a root on a shared edge).
_UV_SLACK = 1e-9


class Hair(Body):
    """Strands of particles whose roots are attached to a surface mesh.

    Attributes:
        offsets: (S + 1,) strand s is particles ``indices[offsets[s]:offsets[s + 1]]`` (root first).
        root_triangles: (S,) triangle (row of ``surface_faces``) each root is on.
        root_barycentric: (S, 3) the root's barycentric weights on its triangle.
        surface_faces: (T, 3) the surface's triangles (vertex indices).
        root_offsets: (S, 3) the second point's offset from the root in the root triangle's frame
            (edge, in-plane normal, face normal), metres; None when only the roots are pinned.
        mass: total mass of the free particles, kg.
    """

    kind = "hair"

    def __init__(
        self,
        world: World,
        indices: IntArray,
        group: int,
        name: str | None,
        offsets: IntArray,
        attachment: tuple[IntArray, FloatArray, IntArray],
        root_offsets: FloatArray | None,
        mass: float,
    ) -> None:
        super().__init__(world, indices, group, name)
        self.offsets = offsets
        self.root_triangles, self.root_barycentric, self.surface_faces = attachment
        self.root_offsets = root_offsets
        self.mass = mass

    @property
    def strand_count(self) -> int:
        """Number of strands S."""
        return len(self.offsets) - 1

    @property
    def pinned(self) -> IntArray:
        """World indices of the driven particles: the roots, then the second points (if kept)."""
        first = self.indices[self.offsets[:-1]]
        return first if self.root_offsets is None else np.concatenate([first, first + 1])

    def attachment_points(self, surface_vertices: ArrayLike) -> FloatArray:
        """(S, 3) the roots' places, metres, on the surface with vertices ``surface_vertices`` (V, 3)."""
        v = _surface(surface_vertices, self.surface_faces)
        corners = v[self.surface_faces[self.root_triangles]]  # (S, 3 corners, 3)
        out: FloatArray = np.einsum("sk,skj->sj", self.root_barycentric, corners)
        return out

    def driven_positions(self, surface_vertices: ArrayLike) -> FloatArray:
        """Positions of :attr:`pinned` (K, 3), metres, on the surface ``surface_vertices`` (V, 3)."""
        v = _surface(surface_vertices, self.surface_faces)
        roots = self.attachment_points(v)
        if self.root_offsets is None:
            return roots
        frames = triangle_frames(v[self.surface_faces[self.root_triangles]])
        return np.concatenate([roots, roots + np.einsum("sij,sj->si", frames, self.root_offsets)])

    def set_surface(self, surface_vertices: ArrayLike) -> None:
        """Move the surface to ``surface_vertices`` (V, 3), world metres, by the end of the next step: the
        roots (and second points) ride along in a straight line over its small steps."""
        self._world.set_pin_targets(self.pinned, self.driven_positions(surface_vertices))


def _surface(vertices: ArrayLike, faces: IntArray) -> FloatArray:
    """Checked surface vertices (V, 3) for triangles ``faces``."""
    v = np.asarray(vertices, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 3 or (len(faces) and int(faces.max()) >= len(v)):
        raise SimulationInputError(
            f"the hair surface's vertices must be (V, 3) with V > {int(faces.max()) if len(faces) else 0}"
            f" (the vertex count it was added with), got shape {v.shape}"
        )
    if not np.isfinite(v).all():
        raise SimulationInputError("the hair surface's vertices contain NaN or infinite coordinates")
    return v


def triangle_frames(corners: FloatArray) -> FloatArray:
    """(S, 3, 3) orthonormal frames of triangles ``corners`` (S, 3, 3), columns: the first edge's
    direction, the in-plane normal to it, the face normal (right-handed)."""
    e1 = corners[:, 1] - corners[:, 0]
    n = np.cross(e1, corners[:, 2] - corners[:, 0])
    e1 = e1 / np.maximum(np.linalg.norm(e1, axis=1, keepdims=True), 1e-300)
    n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    return np.stack([e1, np.cross(n, e1), n], axis=2)


def barycentric(p: FloatArray, corners: FloatArray) -> FloatArray:
    """(K, 3) barycentric weights of points ``p`` (K, D) in triangles ``corners`` (K, 3, D), D = 2 or 3
    (3: of p's projection on the triangle's plane)."""
    e1 = corners[:, 1] - corners[:, 0]
    e2 = corners[:, 2] - corners[:, 0]
    d = p - corners[:, 0]
    d11, d12, d22 = (e1 * e1).sum(1), (e1 * e2).sum(1), (e2 * e2).sum(1)
    d1, d2 = (d * e1).sum(1), (d * e2).sum(1)
    det = d11 * d22 - d12 * d12
    det = np.where(np.abs(det) > 0.0, det, 1.0)  # degenerate triangles: weights of no use, no warning
    v = (d22 * d1 - d12 * d2) / det
    w = (d11 * d2 - d12 * d1) / det
    return np.stack([1.0 - v - w, v, w], axis=1)


def attach_to_surface(
    vertices: ArrayLike, faces: ArrayLike, points: ArrayLike
) -> tuple[IntArray, FloatArray]:
    """Surface attachments of ``points`` (S, 3): (triangle (S,), barycentric weights (S, 3)) of the
    closest point of the mesh ``vertices`` (V, 3), ``faces`` (T, 3) to each, metres."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    tri = v[f]
    area2 = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    real = np.flatnonzero(area2 > 0.0)
    if not len(real):
        raise SimulationInputError("the hair surface has no triangle with an area: give a real mesh")
    _, closest, t = _closest(tri[real], p)
    triangles = real[t]
    return triangles, barycentric(closest, tri[triangles])


def locate_uv(uv_corners: ArrayLike, uv: ArrayLike, chunk: int = 1 << 22) -> tuple[IntArray, FloatArray]:
    """Triangles holding UV points: (triangle (S,), barycentric weights (S, 3)) of each ``uv`` (S, 2) in the
    UV triangles ``uv_corners`` (T, 3, 2) (a Curves object's ``surface_uv_coordinate`` on its surface's UV
    map); a point in no triangle gets the nearest triangle's (weights clamped onto it), -1 for none at all.
    Brute force in chunks of about ``chunk`` point-triangle pairs: build time only."""
    tri = np.asarray(uv_corners, dtype=np.float64)
    q = np.asarray(uv, dtype=np.float64).reshape(-1, 2)
    out_t = np.full(len(q), -1, np.int64)
    out_w = np.zeros((len(q), 3))
    if not len(tri):
        return out_t, out_w
    step = max(1, chunk // len(tri))
    for s in range(0, len(q), step):  # chunks of points, each against every triangle at once
        p = q[s : s + step]
        k, t = len(p), len(tri)
        w = barycentric(np.repeat(p, t, axis=0), np.tile(tri, (k, 1, 1))).reshape(k, t, 3)
        outside = np.maximum(-w.min(axis=2), 0.0)  # 0 inside, else how far out (in weights)
        best = np.argmin(outside, axis=1)
        out_t[s : s + step] = best
        bw = np.clip(w[np.arange(k), best], 0.0, None)
        out_w[s : s + step] = bw / bw.sum(axis=1, keepdims=True)
    return out_t, out_w


def _strands(points: ArrayLike, points_per_strand: ArrayLike | None) -> tuple[FloatArray, IntArray]:
    """Flat (N, 3) points and (S + 1,) offsets from (S, P, 3) points or (N, 3) points and counts."""
    x = np.array(points, dtype=np.float64)
    if x.ndim == 3 and x.shape[2] == 3 and points_per_strand is None:
        offsets = np.arange(x.shape[0] + 1, dtype=np.int64) * x.shape[1]
        x = x.reshape(-1, 3)
    elif x.ndim == 2 and x.shape[1] == 3 and points_per_strand is not None:
        counts = np.asarray(points_per_strand)
        if counts.ndim == 0:
            counts = np.full(len(x) // max(int(counts), 1), int(counts))
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        if counts.ndim != 1 or offsets[-1] != len(x):
            raise SimulationInputError(
                f"points_per_strand must add up to the number of points ({len(x)}), got {points_per_strand!r}"
            )
    else:
        raise SimulationInputError(
            "hair points must be (S, P, 3) strands, or (N, 3) points with points_per_strand (P or (S,) "
            f"counts); got shape {x.shape}"
        )
    if len(offsets) < 2 or np.diff(offsets).min() < 2:
        raise SimulationInputError("hair needs at least one strand and every strand at least 2 points")
    if not np.all(np.isfinite(x)) or np.abs(x).max() > MAX_COORDINATE:
        raise SimulationInputError(
            f"hair points must be finite and within {MAX_COORDINATE:g} m of the origin"
        )
    return x, offsets


def _attachment(
    x: FloatArray,
    offsets: IntArray,
    surface_vertices: ArrayLike,
    surface_faces: ArrayLike,
    root_triangles: ArrayLike | None,
    root_barycentric: ArrayLike | None,
) -> tuple[FloatArray, IntArray, IntArray, FloatArray]:
    """Checked surface (V, 3), faces (T, 3) and each root's triangle (S,) and weights (S, 3)."""
    f = np.asarray(surface_faces)
    if f.ndim != 2 or f.shape[1] != 3 or not len(f) or not np.issubdtype(f.dtype, np.integer):
        raise SimulationInputError(f"surface_faces must be (T, 3) vertex indices, T >= 1; got {f.shape}")
    faces = f.astype(np.int64)
    v = np.asarray(surface_vertices, dtype=np.float64)
    if faces.min() < 0:
        raise SimulationInputError("surface_faces must be vertex indices >= 0")
    v = _surface(v, faces)
    n_strands = len(offsets) - 1
    if (root_triangles is None) != (root_barycentric is None):
        raise SimulationInputError("give root_triangles and root_barycentric together (or neither)")
    if root_triangles is None:
        tri, bary = attach_to_surface(v, faces, x[offsets[:-1]])
    else:
        tri = np.asarray(root_triangles, dtype=np.int64).reshape(-1)
        bary = np.asarray(root_barycentric, dtype=np.float64)
        if tri.shape != (n_strands,) or bary.shape != (n_strands, 3):
            raise SimulationInputError(
                f"root_triangles must be ({n_strands},) and root_barycentric ({n_strands}, 3), one per strand"
            )
        if tri.min() < 0 or tri.max() >= len(faces) or not np.isfinite(bary).all():
            raise SimulationInputError(f"root_triangles must be rows of surface_faces (0..{len(faces) - 1})")
    return v, faces, tri, bary


def add_hair(
    builder: WorldBuilder,
    points: ArrayLike,
    surface_vertices: ArrayLike,
    surface_faces: ArrayLike,
    points_per_strand: ArrayLike | None = None,
    root_triangles: ArrayLike | None = None,
    root_barycentric: ArrayLike | None = None,
    radius: float | None = None,
    mass: float | None = None,
    density: float = 1300.0,
    stretch_compliance: float = 0.0,
    bend_compliance: float | None = 1e-3,
    damping: float = 0.0,
    friction: float = 0.3,
    self_collision: bool = False,
    keep_root_direction: bool = True,
    tether_give: float | None = 0.01,
    name: str | None = None,
) -> Hair:
    """Add hair: strands of particles at ``points``, each root attached to a triangle of a surface mesh.

    Args:
        builder: the world's builder (checks, particle arrays).
        points: (S, P, 3) strands of P points each, root first, world metres; or (N, 3) with
            ``points_per_strand``.
        surface_vertices: (V, 3) the surface mesh now, world metres (moved later by ``Hair.set_surface``).
        surface_faces: (T, 3) its triangles (vertex indices).
        points_per_strand: with (N, 3) points: P (every strand) or (S,) counts, each >= 2.
        root_triangles: (S,) row of ``surface_faces`` each root is on; None (with ``root_barycentric``):
            the triangle of the surface point closest to the strand's first point.
        root_barycentric: (S, 3) the root's barycentric weights on its triangle.
        radius: particle radius, metres; None: the world's.
        mass: all the hair, kg, spread evenly over its particles; None: ``density`` times a solid
            cylinder of radius r along every strand.
        density: kg/m^3, used without ``mass`` (hair keratin: 1300).
        stretch_compliance: XPBD compliance of each link, m/N (0 = inextensible).
        bend_compliance: XPBD compliance of the distance across two links (rest: as drawn), m/N; None:
            no bending stiffness (a chain).
        damping: velocity damping rate of the hair's particles, 1/s (v *= exp(-damping t)), >= 0.
        friction: Coulomb coefficient.
        self_collision: strand-strand contacts (sphere contacts between points; see the module notes).
        keep_root_direction: pin the second point too, at its offset in the root triangle's frame.
        tether_give: no particle farther from its root than (1 + give + stretch_compliance * 1 N) times
            its rest arc length; None: no tethers.
        name: optional label.

    Every strand is moved rigidly so that its root lies exactly on its attachment point.
    """
    r = builder._radius(radius)
    x, offsets = _strands(points, points_per_strand)
    v, faces, tri, bary = _attachment(
        x, offsets, surface_vertices, surface_faces, root_triangles, root_barycentric
    )
    sc = nonnegative(stretch_compliance, "stretch_compliance")
    bc = None if bend_compliance is None else nonnegative(bend_compliance, "bend_compliance")
    damp = nonnegative(damping, "damping")
    friction = nonnegative(friction, "friction")
    give = None if tether_give is None else nonnegative(tether_give, "tether_give")
    n, n_strands = len(x), len(offsets) - 1
    builder._check_capacity(n, f"{name!r} as hair" if name else "this hair")
    strand = np.repeat(np.arange(n_strands), np.diff(offsets))
    first = offsets[:-1]
    corners = v[faces[tri]]
    roots = np.einsum("sk,skj->sj", bary, corners)
    x += (roots - x[first])[strand]  # each strand rigidly onto its root
    seg = np.linalg.norm(np.diff(x, axis=0), axis=1)
    same = strand[1:] == strand[:-1]
    arc = np.concatenate([[0.0], np.cumsum(np.where(same, seg, 0.0))])
    arc -= arc[first][strand]  # rest arc length from the strand's root, metres
    pinned = first if not keep_root_direction else np.concatenate([first, first + 1])
    root_offsets = None
    if keep_root_direction:
        root_offsets = np.einsum("sji,sj->si", triangle_frames(corners), x[first + 1] - roots)
    if mass is None:
        length = np.bincount(strand[1:][same], seg[same], minlength=n_strands)
        m = positive(density, "density") * np.pi * r * r * (length / np.diff(offsets))[strand]
    else:
        m = np.full(n, positive(mass, "hair mass") / n)
    inv_mass = 1.0 / m
    inv_mass[pinned] = 0.0
    idx, group = builder._append(
        x, bool(self_collision), np.zeros_like(x), inv_mass=inv_mass, contact_inv_mass=inv_mass,
        kind=KIND_ROPE, friction=friction, radius=r, damping=damp,
    )  # fmt: skip
    g0 = int(idx[0])
    local = np.arange(n, dtype=np.int64)
    links = np.stack([local[:-1][same], local[1:][same]], axis=1)
    stretch = DistanceConstraints.build(links, x, np.full(len(links), sc), True, n)
    two = local[:-2][strand[2:] == strand[:-2]] if bc is not None else np.zeros(0, np.int64)
    bend = DistanceConstraints.build(
        np.stack([two, two + 2], axis=1), x, np.full(len(two), bc or 0.0), False, n
    )
    for con in (stretch, bend):
        con.a = con.a + g0
        con.b = con.b + g0
    tether = None
    if give is not None:
        free = np.setdiff1d(local, pinned)
        limit = 1.0 + give + compliant_strain(sc, HAIR_TETHER_TENSION)
        tether = (free + g0, first[strand[free]] + g0, arc[free] * limit)
    builder.model.add_cloth_constraints(stretch, bend, tether)
    total = float(m.sum() - m[pinned].sum())
    body = Hair(builder.world, idx, group, name, offsets, (tri, bary, faces), root_offsets, total)
    builder.bodies.append(body)
    return body
