# SPDX-License-Identifier: GPL-3.0-or-later
"""Signed distance volumes (``SDFVolume``): a mesh's distance sampled once on a grid."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from .. import geometry
from ..errors import SimulationInputError
from .closest import _surface_gradient
from .grids import _grid_coords, _grid_distance, _grid_winding
from .mesh import _check_spacing, _outward, _triangle_soup

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class SDFVolume:
    """Signed distance grid of a mesh, sampled once in the collider's local frame.

    Attributes
    ----------
    origin : (3,) float64, metres, position of node (0, 0, 0).
    cell_size : float, metres between nodes (same on all axes).
    distance : (nx, ny, nz) float32, metres, signed distance at the nodes (negative inside).
    gradient : (nx, ny, nz, 3) float32, unit outward direction at the nodes.
    """

    def __init__(
        self, origin: npt.ArrayLike, cell_size: float, distance: npt.ArrayLike, gradient: npt.ArrayLike
    ) -> None:
        self.origin = np.asarray(origin, dtype=np.float64).reshape(3)
        self.cell_size = float(cell_size)
        self.distance = np.ascontiguousarray(distance, dtype=np.float32)
        self.gradient = np.ascontiguousarray(gradient, dtype=np.float32)
        if self.distance.ndim != 3 or min(self.distance.shape) < 2:
            raise SimulationInputError(
                f"SDF grid must be 3-D with >= 2 nodes per axis, got {self.distance.shape}"
            )
        if self.gradient.shape != (*self.distance.shape, 3):
            raise SimulationInputError("SDF gradient grid must have shape distance.shape + (3,)")
        if not (math.isfinite(self.cell_size) and self.cell_size > 0.0):
            raise SimulationInputError("SDF cell size must be positive")

    @property
    def shape(self) -> tuple[int, int, int]:
        """Nodes per axis."""
        nx, ny, nz = self.distance.shape
        return (nx, ny, nz)

    @classmethod
    def from_mesh(
        cls, vertices: npt.ArrayLike, faces: npt.ArrayLike, cell_size: float, padding: float | None = None
    ) -> SDFVolume:
        """Sample a mesh's signed distance on a grid around it.

        Parameters
        ----------
        vertices : (n, 3) metres, in the collider's local frame. faces : (m, 3) vertex indices.
        cell_size : requested node spacing, metres. Raised so no axis has more than ``SDF_MAX_CELLS`` cells.
        padding : metres added around the mesh bounding box (default 2 cells), so particles approaching
            the surface are inside the grid.

        Distances are exact within 1.5 cells of the surface (narrow band), propagated by sweeps farther
        out; the sign is the generalized winding number (evaluated near the surface with far-field
        clusters, copied along grid lines elsewhere), so open meshes get a sensible sign. A closed mesh
        that is inside-out as a whole (negative volume) is flipped first.
        """
        cell = _check_spacing(cell_size)
        tri = _outward(_triangle_soup(vertices, faces))
        pad = 2.0 * cell if padding is None else float(padding)
        if not math.isfinite(pad) or pad < 0.0:
            raise SimulationInputError(f"SDF padding must be >= 0 metres, got {padding!r}")
        lo = tri.reshape(-1, 3).min(axis=0) - pad
        hi = tri.reshape(-1, 3).max(axis=0) + pad
        extent = hi - lo
        cell = max(cell, float(extent.max()) / geometry.SDF_MAX_CELLS)
        counts = np.maximum(np.ceil(extent / cell - 1e-9).astype(np.int64), 1) + 1
        origin = 0.5 * (lo + hi) - 0.5 * (counts - 1) * cell
        shape = (int(counts[0]), int(counts[1]), int(counts[2]))
        dist, cp = _grid_distance(tri, origin, cell, shape, band=1.5 * cell)
        w = _grid_winding(tri, origin, cell, dist)
        inside = w > 0.5
        sdf = np.where(inside, -dist, dist)
        coords = _grid_coords(origin, cell, shape)
        nodes = np.stack(np.meshgrid(*coords, indexing="ij"), axis=-1)
        away = nodes - cp
        tiny = dist <= 1e-6 * cell
        grad = away / np.where(tiny, 1.0, dist)[..., None]
        grad = np.where(inside[..., None], -grad, grad)
        if tiny.any():
            grad[tiny] = _surface_gradient(tri, nodes[tiny])
        return cls(origin, cell, sdf, grad)

    def to_dict(self) -> dict[str, npt.NDArray[np.generic]]:
        """Plain arrays (no pickle needed) for snapshots: origin, cell_size, distance, gradient."""
        return {
            "origin": self.origin.copy(),
            "cell_size": np.array(self.cell_size, dtype=np.float64),
            "distance": self.distance.copy(),
            "gradient": self.gradient.copy(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, npt.ArrayLike]) -> SDFVolume:
        """Inverse of :meth:`to_dict`."""
        return cls(data["origin"], float(np.asarray(data["cell_size"])), data["distance"], data["gradient"])

    def query(self, points_local: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Signed distance and outward unit normal at points in the collider's local frame.

        Inside the grid: trilinear interpolation of the node distances and of the node gradients
        (normalized); where the interpolated gradient is ~0 (on a medial surface) the derivative of the
        trilinear distance is used instead. Outside the grid: the point is clamped to the grid box and the
        result is conservative: distance = |point - clamped| + distance(clamped), normal towards the point.

        Parameters
        ----------
        points_local : (P, 3) metres.

        Returns
        -------
        distance : (P,) float64 metres (negative inside). normal : (P, 3) float64 unit vectors.
        """
        p = np.asarray(points_local, dtype=np.float64).reshape(-1, 3)
        n = np.array(self.distance.shape, dtype=np.int64)
        u = (p - self.origin) / self.cell_size
        uc = np.clip(u, 0.0, (n - 1).astype(np.float64))
        base = np.minimum(np.floor(uc).astype(np.int64), n - 2)
        f = uc - base
        i, j, k = base[:, 0], base[:, 1], base[:, 2]
        fx, fy, fz = f[:, 0:1], f[:, 1:2], f[:, 2:3]
        dist = np.zeros(p.shape[0])
        grad = np.zeros((p.shape[0], 3))
        ddist = np.zeros((p.shape[0], 3))
        for di in (0, 1):
            wx = fx if di else 1.0 - fx
            sx = 1.0 if di else -1.0
            for dj in (0, 1):
                wy = fy if dj else 1.0 - fy
                sy = 1.0 if dj else -1.0
                for dk in (0, 1):
                    wz = fz if dk else 1.0 - fz
                    sz = 1.0 if dk else -1.0
                    value = self.distance[i + di, j + dj, k + dk].astype(np.float64)
                    weight = (wx * wy * wz)[:, 0]
                    dist += weight * value
                    grad += weight[:, None] * self.gradient[i + di, j + dj, k + dk]
                    # Derivative of the trilinear interpolant (per cell unit), for the fallback normal.
                    ddist[:, 0] += sx * (wy * wz)[:, 0] * value
                    ddist[:, 1] += sy * (wx * wz)[:, 0] * value
                    ddist[:, 2] += sz * (wx * wy)[:, 0] * value
        length = np.linalg.norm(grad, axis=1)
        weak = length < 1e-3
        normal = grad / np.where(weak, 1.0, length)[:, None]
        if weak.any():
            dl = np.linalg.norm(ddist[weak], axis=1)
            up = np.array([0.0, 0.0, 1.0])
            fallback = np.where((dl > 0.0)[:, None], ddist[weak] / np.where(dl > 0.0, dl, 1.0)[:, None], up)
            normal[weak] = fallback
        offset = (u - uc) * self.cell_size
        outside = np.linalg.norm(offset, axis=1)
        out_mask = outside > 0.0
        if out_mask.any():
            dist[out_mask] = outside[out_mask] + np.maximum(dist[out_mask], 0.0)
            normal[out_mask] = offset[out_mask] / outside[out_mask, None]
        return dist, normal
