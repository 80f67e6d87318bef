# SPDX-License-Identifier: GPL-3.0-or-later
"""Fill limits: what a fill's size depends on (``FillMeasure``), its estimate, and the smallest radius
that keeps every limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .. import geometry
from .mesh import (
    _check_spacing,
    _is_closed,
    _outward,
    _signed_volume,
    _triangle_soup,
    as_triangles,
    as_vertices,
)
from .sampling import _principal_box

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass
class FillMeasure:
    """What the fill limits depend on: the mesh's extent in the sampling frame and its volume.

    ``extent`` (3,) metres, the bounding box of the mesh in the principal-axes frame that
    :func:`sample_interior` samples in (computed the same way); ``volume`` m^3, None for an open or
    non-manifold mesh (whose volume is ill-defined).
    """

    extent: FloatArray
    volume: float | None

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

    def shell_count(self, spacing: float) -> int:
        """An estimate of the particles :func:`~.rigid_fill.shell_of` keeps at radius ``spacing / 2``:
        :meth:`rigid_count` less the fitted grid's nodes inside its outer layer (a box's exactly; another
        mesh's in proportion to its share of its principal box)."""
        box = float(np.prod(self.extent))
        share = 1.0 if self.volume is None or box <= 0.0 else min(self.volume / box, 1.0)
        deep = float(np.prod(np.maximum(self._rigid_axes(spacing) - 2.0, 0.0))) * share
        return max(1, self.rigid_count(spacing) - int(deep * (1.0 + 1e-9)))

    def rigid_count(self, spacing: float) -> int:
        """An upper estimate of :func:`~.rigid_fill.sample_rigid`'s particle count at radius ``spacing / 2``:
        its fitted grid, and unless the mesh fills its principal box (a box) a surface layer of one
        particle per r^2 of that box's surface (measured on spheres: 0.6-1.1 per r^2 of theirs)."""
        estimate = max(float(self.count(spacing)), float(self.rigid_grid_nodes(spacing)))
        if self.volume is None or self.volume < 0.99 * float(np.prod(self.extent)):
            e = self.extent
            estimate += 2.0 * float(e[0] * e[1] + e[1] * e[2] + e[0] * e[2]) / (0.5 * spacing) ** 2
        return int(max(1.0, min(math.ceil(estimate * (1.0 - 1e-9)), 9.0e18)))


def fill_measure(vertices: npt.ArrayLike, faces: npt.ArrayLike) -> FillMeasure:
    """The :class:`FillMeasure` of a mesh, O(m log m), no grid."""
    v = as_vertices(vertices)
    f = as_triangles(faces, v.shape[0])
    tri = _outward(_triangle_soup(v, f))
    centre, _, _, lo, hi = _principal_box(tri)
    extent = hi - lo  # as _sample_grid computes it
    volume = abs(_signed_volume(tri, centre)[0]) if _is_closed(f) else None
    return FillMeasure(extent, volume)


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
