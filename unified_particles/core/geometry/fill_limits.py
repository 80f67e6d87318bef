# SPDX-License-Identifier: GPL-3.0-or-later
"""Fill limits: what a fill's size depends on (``FillMeasure``), its estimate, and the smallest radius
that keeps every limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import geometry
from .mesh import (
    _check_spacing,
    _is_closed,
    _outward,
    _signed_volume,
    _with_area,
    as_triangles,
    as_vertices,
)
from .sampling import _principal_box

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# The surface layer of sample_rigid, in particles per grid node of a layer of the fitted grid across the
# inset surface, beyond the grid nodes inside it (inset volume / cell). Beside flat faces the grid nodes on
# the inset faces (a box's) or moved onto them (a sheared box's): half a layer beyond the volume's share,
# as for any lattice cut by a plane, and a box's edges (_edge_nodes). Beside curved faces the half-spacing
# layer: measured on sample_rigid's output (2-3 radii each, session 9) 6.9 layers' worth on icospheres,
# 6.3-6.5 on a low-poly and a hollow ball, 5.6 on a torus, 4.7 on a cylinder's side: fewer where the
# surface runs along a grid axis (the fine nodes of one row along it project onto one another).
_FLAT_LAYER = 0.5
_CURVED_LAYER = 6.6
# ... scaled by (mean |n_x| + |n_y| + |n_z| of the curved faces / 1.5, a ball's)^2: 0.72 on a cylinder's
# side (measured 4.7 / 6.6), 1 on a ball.
_BALL_FACING = 1.5
# sample_rigid's fine layer covers about this many grid spacings either side of an edge whose faces turn
# by more than a dimple's worth and less than a sharp edge's 45 degrees (rigid_fill._flat_nodes: a node
# is curved when a neighbour one spacing away has another normal; the fine nodes reach half a step on).
_CURVED_BAND_SPACINGS = 1.5
# ... and "more than a dimple's worth": rigid_fill._FLAT_DIMPLE_RADII r over a spacing of ~2 r, in radians.
_CURVED_MIN_ANGLE = 0.01
_CURVED_MAX_ANGLE = math.radians(45.0)
# A sharp edge within 10 degrees of a principal axis has a row of grid nodes along it (_edge_nodes).
_ALONG_AXIS_COS = math.cos(math.radians(10.0))


@dataclass
class FillMeasure:
    """What the fill limits depend on: the mesh's extent in the sampling frame, its volume and (closed
    meshes) the measures of its surface that the rigid fill's surface layer follows.

    ``extent`` (3,) metres, the bounding box of the mesh in the principal-axes frame that
    :func:`sample_interior` samples in (computed the same way); ``volume`` m^3, None for an open or
    non-manifold mesh (whose volume is ill-defined). ``area`` m^2; ``curvature`` m, the sum over edges of
    length x tan(turn / 2) (the integral of the mean curvature of a smooth surface; a box's edges count
    their length each); ``euler`` the Euler characteristic (2 for a ball, 4 for a hollow one). Those three
    give the inset surface's volume and area by Steiner's formula (:meth:`inset`). ``face_area`` (k,) m^2
    and ``curved_rim`` (k,) m: per triangle its area and the length of its edges across which the surface
    turns like a curved face's (:data:`_CURVED_MIN_ANGLE` .. :data:`_CURVED_MAX_ANGLE`). ``facing`` (3,)
    m^2, the area facing each principal axis (sum of area x |normal component|), ``face_l1`` (k,) each
    triangle's |n_x| + |n_y| + |n_z| in that frame; ``sharp`` (2, 3): the
    edges turning by more than that (a box's), their lengths (m) and their count, each split by its
    direction's |components| along the principal axes.
    """

    extent: FloatArray
    volume: float | None
    area: float = 0.0
    curvature: float = 0.0
    euler: int = 2
    face_area: FloatArray = field(default_factory=lambda: np.zeros(0))
    curved_rim: FloatArray = field(default_factory=lambda: np.zeros(0))
    facing: FloatArray = field(default_factory=lambda: np.ones(3))
    face_l1: FloatArray = field(default_factory=lambda: np.zeros(0))
    _sorted: tuple[FloatArray, ...] | None = field(default=None, repr=False, compare=False)
    sharp: FloatArray = field(default_factory=lambda: np.zeros((2, 3)))

    def grid_nodes(self, spacing: float) -> int:
        """Grid nodes :func:`sample_interior` evaluates at ``spacing`` (limit ``MAX_SAMPLE_GRID_NODES``)."""
        counts = np.maximum(np.floor(self.extent / spacing + 1e-6), 1.0)
        return int(min(float(np.prod(counts)), 9.0e18))

    def count(self, spacing: float) -> int:
        """The estimate of :func:`estimate_interior_count` at ``spacing``."""
        box = float(self.grid_nodes(spacing))
        estimate = box if self.volume is None else min(self.volume / spacing**3, box)
        estimate = math.ceil(estimate * (1.0 - 1e-9))  # 999.9999999 -> 1000 (a box of 10 x 10 x 10 spacings)
        return int(max(1.0, min(estimate, 9.0e18)))

    def rigid_grid_nodes(self, spacing: float) -> int:
        """Grid nodes :func:`~.rigid_fill.sample_rigid` evaluates at radius ``spacing / 2`` (its grid fitted
        to the principal box, at most 2.5 r apart), or :func:`sample_interior`'s if more."""
        nodes = float(np.prod(self._rigid_axes(spacing)))
        return int(min(max(nodes, float(self.grid_nodes(spacing))), 9.0e18))

    def _rigid_axes(self, spacing: float) -> FloatArray:
        """(3,) nodes per axis of :func:`~.rigid_fill.fitted_axis` at radius ``spacing / 2``."""
        r = 0.5 * spacing
        inner = np.maximum(self.extent - spacing, 0.0)
        fit = np.maximum(np.maximum(np.round(inner / spacing), np.ceil(inner / (2.5 * r) - 1e-9)), 1.0)
        out: FloatArray = np.where(inner <= 1e-9 * r, 0.0, fit) + 1.0
        return out

    def _box_like(self) -> bool:
        """The mesh fills its principal box (a box): the fitted grid is its fill, exactly."""
        return self.volume is None or self.volume >= 0.99 * float(np.prod(self.extent))

    def inset(self, depth: float) -> tuple[float, float]:
        """Volume (m^3) and area (m^2) of the surface moved ``depth`` metres inwards, by Steiner's formula
        V - A d + C d^2 - (2 pi chi / 3) d^3 and its derivative (exact for a ball; for a box C counts each
        edge's length once, which makes it exact there too, corners aside). Both at least 0."""
        if self.volume is None:
            return 0.0, 0.0
        d = float(depth)
        corners = 2.0 * math.pi * self.euler / 3.0
        volume = self.volume - self.area * d + self.curvature * d * d - corners * d**3
        area = self.area - 2.0 * self.curvature * d + 3.0 * corners * d * d
        return max(volume, 0.0), max(area, 0.0)

    def _rigid_estimate(self, spacing: float) -> tuple[float, float, float]:
        """(particles inside, the surface layer beyond them, the whole surface layer) of sample_rigid at
        radius ``spacing / 2`` for a closed mesh that is not a box: the fitted grid's nodes in the inset
        body (its volume over the grid's cell), its nodes on the inset surface (a layer of the grid has
        ``step along the normal / cell`` nodes per m^2; :data:`_FLAT_LAYER`, :data:`_CURVED_LAYER`, the
        curved share from the edges across which the faces turn) and on its sharp edges."""
        r = 0.5 * spacing
        axes = self._rigid_axes(spacing)
        inner = np.maximum(self.extent - spacing, 0.0)
        steps = np.where(axes > 1.0, inner / np.maximum(axes - 1.0, 1.0), spacing)
        cell = float(np.prod(steps))
        volume, area = self.inset(r)
        # The inset surface's area facing axis k shrinks with the other two sides (exact for a box and a
        # ball: 2 (a - 2r)(b - 2r), 2 pi (R - r)^2); a layer of the grid across it has 1 / (h_i h_j) nodes
        # per m^2.
        shrink = np.maximum(1.0 - spacing / np.maximum(self.extent, 1e-300), 0.0)
        facing = self.facing * np.array([shrink[1] * shrink[2], shrink[0] * shrink[2], shrink[0] * shrink[1]])
        per_layer = float(facing @ steps) / cell
        if volume <= 0.0:
            # Thinner than 2r everywhere: no inset surface; the grid nodes inside the mesh stay (one layer
            # in a plate's middle: half the nodes of its two faces' layers).
            assert self.volume is not None
            thin = max(self.volume / cell, 0.5 * per_layer)
            return thin, 0.0, thin
        band = _CURVED_BAND_SPACINGS * cell ** (1.0 / 3.0)
        curved, curved_l1 = self._curved_area(band)
        share = curved / self.area if self.area > 0.0 else 0.0
        facing_l1 = curved_l1 / curved if curved > 0.0 else _BALL_FACING
        edges = self._edge_nodes(r, steps)
        inside = volume / cell
        # The curved layer's nodes lie on no grid layer: per cell face (cell^(2/3)) of the inset surface.
        weight = _CURVED_LAYER * (facing_l1 / _BALL_FACING) ** 2
        curved_layer = weight * share * area / cell ** (2.0 / 3.0)
        beyond = _FLAT_LAYER * (1.0 - share) * per_layer + curved_layer + edges
        whole = (1.0 - share) * per_layer + curved_layer + 2.0 * edges
        return inside, beyond, whole

    def _curved_area(self, band: float) -> tuple[float, float]:
        """The area (m^2) within ``band`` metres of the curved edges, sum over triangles of
        min(area, curved rim x band), and the same weighted by each triangle's ``face_l1``. O(log k): the
        triangles sorted by area / rim once (a triangle whose ratio is at most the band is all curved),
        so :func:`smallest_fill_radius`'s bisection costs no pass over the mesh per step."""
        if self._sorted is None:
            rim = np.maximum(self.curved_rim, 1e-300)
            order = np.argsort(self.face_area / rim)
            a, c, w = self.face_area[order], self.curved_rim[order], self.face_l1[order]
            zero = np.zeros(1)
            self._sorted = (
                (a / rim[order]),
                np.concatenate([zero, np.cumsum(a)]),
                np.concatenate([zero, np.cumsum(a * w)]),
                np.concatenate([zero, np.cumsum(c[::-1])])[::-1],
                np.concatenate([zero, np.cumsum((c * w)[::-1])])[::-1],
            )
        ratio, area, area_l1, rim_after, rim_l1_after = self._sorted
        k = int(np.searchsorted(ratio, band, side="right"))
        return float(area[k] + band * rim_after[k]), float(area_l1[k] + band * rim_l1_after[k])

    def _edge_nodes(self, r: float, steps: FloatArray) -> float:
        """Grid nodes along the sharp edges beyond the faces' share (a box's (L / h + 1)^3 less its volume
        and faces terms: a quarter of an inset edge's length over the step along it, per edge)."""
        inset = np.maximum(self.sharp[0] - 2.0 * r * self.sharp[1], 0.0)
        return float((inset / steps).sum()) / 4.0

    def shell_count(self, spacing: float) -> int:
        """An estimate of the particles :func:`~.rigid_fill.shell_of` keeps at radius ``spacing / 2``: its
        surface layer (a box's outer grid layer, exactly; another closed mesh's, :meth:`_rigid_estimate`;
        a body thinner than two layers is all wall, every particle of :meth:`rigid_count`)."""
        if self._box_like():
            deep = float(np.prod(np.maximum(self._rigid_axes(spacing) - 2.0, 0.0)))
            return max(1, self.rigid_count(spacing) - int(deep * (1.0 + 1e-9)))
        whole = self._rigid_estimate(spacing)[2]
        return int(max(1.0, min(math.ceil(whole), self.rigid_count(spacing))))

    def rigid_count(self, spacing: float) -> int:
        """An estimate of :func:`~.rigid_fill.sample_rigid`'s particle count at radius ``spacing / 2``: a
        box's fitted grid (exact); another closed mesh's grid nodes inside and surface layer
        (:meth:`_rigid_estimate`, within 30 % on balls, cylinders, tori, sheared boxes: test_fill_estimate);
        an open mesh's whole fitted grid and a surface layer of one particle per r^2 of its box (an upper
        bound: its volume is unknown)."""
        if self._box_like():
            estimate = max(float(self.count(spacing)), float(self.rigid_grid_nodes(spacing)))
            if self.volume is None:
                e = self.extent
                estimate += 2.0 * float(e[0] * e[1] + e[1] * e[2] + e[0] * e[2]) / (0.5 * spacing) ** 2
        else:
            estimate = sum(self._rigid_estimate(spacing)[:2])
        return int(max(1.0, min(math.ceil(estimate * (1.0 - 1e-9)), 9.0e18)))


def _surface_measures(tri: FloatArray, corner: IntArray) -> dict[str, Any]:
    """The surface fields of :class:`FillMeasure` (area, curvature, euler, face_area, curved_rim, facing,
    face_l1, sharp) of a closed outward triangle soup (k, 3, 3) in the principal frame, whose corners are
    the vertices ``corner`` (k, 3). O(k log k)."""
    cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    double = np.linalg.norm(cross, axis=1)
    normal = cross / np.maximum(double, 1e-300)[:, None]
    used, index = np.unique(corner, return_inverse=True)  # the vertices the triangles use, 0..n-1
    corner = index.reshape(-1, 3).astype(np.int64)
    a = corner.reshape(-1)
    b = corner[:, [1, 2, 0]].reshape(-1)
    owner = np.repeat(np.arange(len(tri)), 3)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * (int(index.max()) + 1) + hi
    order = np.argsort(key, kind="stable")
    key, owner, lo, hi = key[order], owner[order], lo[order], hi[order]
    # Each edge of a closed manifold mesh appears twice in a row; anything else (non-manifold) is skipped.
    _, first, uses = np.unique(key, return_index=True, return_counts=True)
    pair = first[uses == 2]
    f1, f2 = owner[pair], owner[pair + 1]
    welded = np.zeros((int(index.max()) + 1, 3))
    welded[index.reshape(-1)] = tri.reshape(-1, 3)
    length = np.linalg.norm(welded[hi[pair]] - welded[lo[pair]], axis=1)
    turn = np.arccos(np.clip(np.einsum("ij,ij->i", normal[f1], normal[f2]), -1.0, 1.0))
    # Convex (turning away, positive) when the other face's centroid lies below this face's plane.
    below = np.einsum("ij,ij->i", tri[f2].mean(axis=1) - welded[lo[pair]], normal[f1]) < 0.0
    signed = np.where(below, turn, -turn)
    # tan(turn / 2) is the inset's edge term (a box's right angles: 1 per length); capped at 120 degrees,
    # where an edge this sharp has thinned the body to nothing within a few insets anyway.
    curvature = float((length * np.tan(0.5 * np.clip(signed, -2.0 * math.pi / 3, 2.0 * math.pi / 3))).sum())
    bent = (turn > _CURVED_MIN_ANGLE) & (turn < _CURVED_MAX_ANGLE)
    rim = np.bincount(f1[bent], length[bent], len(tri)) + np.bincount(f2[bent], length[bent], len(tri))
    euler = len(used) - len(pair) + len(tri)
    # Sharp edges along a principal axis (a box's, a sheared box's): the fitted grid's rows run along them.
    along = np.abs(welded[hi[pair]] - welded[lo[pair]]).max(axis=1) >= _ALONG_AXIS_COS * length
    sharp = (turn >= _CURVED_MAX_ANGLE) & along
    direction = (
        np.abs(welded[hi[pair]] - welded[lo[pair]])[sharp] / np.maximum(length[sharp], 1e-300)[:, None]
    )
    return {
        "area": float(0.5 * double.sum()),
        "curvature": curvature,
        "euler": euler,
        "face_area": 0.5 * double,
        "curved_rim": rim,
        "facing": 0.5 * (double[:, None] * np.abs(normal)).sum(axis=0),
        "face_l1": np.abs(normal).sum(axis=1),
        "sharp": np.stack([(length[sharp, None] * direction).sum(axis=0), direction.sum(axis=0)]),
    }


def fill_measure(vertices: npt.ArrayLike, faces: npt.ArrayLike) -> FillMeasure:
    """The :class:`FillMeasure` of a mesh, O(m log m), no grid."""
    v = as_vertices(vertices)
    f = as_triangles(faces, v.shape[0])
    soup = v[f]
    # The triangles _triangle_soup keeps (those with area), with their vertex indices.
    area2 = np.linalg.norm(np.cross(soup[:, 1] - soup[:, 0], soup[:, 2] - soup[:, 0]), axis=1)
    kept = f[_with_area(area2, float(np.ptp(v, axis=0).max()))]
    given = v[kept]
    tri = _outward(given)
    if tri is not given:
        kept = kept[:, ::-1]  # _outward turned an inside-out mesh's triangles round
    centre, _, local, lo, hi = _principal_box(tri)
    extent = hi - lo  # as _sample_grid computes it
    if not _is_closed(f):
        return FillMeasure(extent, None)
    volume = abs(_signed_volume(tri, centre)[0])
    return FillMeasure(extent, volume, **_surface_measures(local, kept))


def estimate_interior_count(vertices: npt.ArrayLike, faces: npt.ArrayLike, spacing: float) -> int:
    """Cheap estimate of ``len(sample_interior(vertices, faces, spacing).points)``, O(m log m), no grid.

    Closed meshes: ``|volume| / spacing^3`` (within a few percent plus surface effects for smooth shapes).
    Open or non-manifold meshes, whose volume is ill-defined: the number of grid nodes in the principal-axes
    bounding box, an upper bound (and exactly the grid ``sample_interior`` would evaluate). Always >= 1.
    Meant to refuse absurd particle counts before anything is allocated.
    """
    s = _check_spacing(spacing)
    return fill_measure(vertices, faces).count(s)


def _decimal(mantissa: int, exponent: int) -> float:
    """The float nearest to ``mantissa * 10**-exponent`` (so it prints as that decimal)."""
    return mantissa / 10**exponent if exponent >= 0 else float(mantissa * 10 ** (-exponent))


def smallest_fill_radius(
    vertices: npt.ArrayLike | FillMeasure,
    faces: npt.ArrayLike | None = None,
    max_count: float = float("inf"),
    max_grid_nodes: int | None = None,
    rigid: bool = False,
) -> float:
    """The smallest particle radius, rounded up to 4 significant digits, at which a fill keeps every limit.

    The limits are the estimated particle count (:func:`estimate_interior_count` at spacing ``2 r``) at most
    ``max_count`` (what the memory limit or a grain limit allows), and the sampling grid at most
    ``max_grid_nodes`` (default :data:`MAX_SAMPLE_GRID_NODES`). The result is what an error message may
    suggest: it passes the same checks as written (4 digits) and as a Blender float property stores it
    (float32). ``vertices`` may be a :class:`FillMeasure` already computed (then ``faces`` is not needed).
    ``rigid``: the estimates of a rigid body's fill (``FillMeasure.rigid_count``, ``rigid_grid_nodes``).
    """
    if isinstance(vertices, FillMeasure):
        measure = vertices
    else:
        measure = fill_measure(vertices, faces if faces is not None else np.zeros((0, 3), np.int64))
    nodes_limit = geometry.MAX_SAMPLE_GRID_NODES if max_grid_nodes is None else int(max_grid_nodes)
    count_limit = max(float(max_count), 1.0)

    def ok(radius: float) -> bool:
        spacing = 2.0 * float(radius)
        if rigid:
            return (
                measure.rigid_count(spacing) <= count_limit
                and measure.rigid_grid_nodes(spacing) <= nodes_limit
            )
        return measure.count(spacing) <= count_limit and measure.grid_nodes(spacing) <= nodes_limit

    def ok_as_typed(radius: float) -> bool:
        return ok(radius) and ok(float(np.float32(radius)))

    hi = max(float(measure.extent.max()), 1e-9)  # spacing 2 * extent: one node, one particle
    lo = hi * 1e-9
    if ok(lo):
        hi = lo
    else:
        for _ in range(200):  # geometric bisection: both counts only fall as the radius grows
            mid = math.sqrt(lo * hi)
            if mid <= lo or mid >= hi:
                break
            if ok(mid):
                hi = mid
            else:
                lo = mid
    exponent = 3 - math.floor(math.log10(hi))  # 4 significant digits
    mantissa = math.ceil(hi * 10.0**exponent * (1.0 - 1e-12))
    while not ok_as_typed(_decimal(mantissa, exponent)):
        mantissa += 1
    return _decimal(mantissa, exponent)
