# SPDX-License-Identifier: GPL-3.0-or-later
"""Interior sampling of rigid bodies: a principal-axes grid inside a mesh, with signed distances."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .. import geometry
from ..errors import SimulationInputError
from .closest import _signed
from .grids import _grid_distance, _grid_winding, _node_boxes
from .mesh import _check_spacing, _flat_error, _outward, _signed_volume, _soup_is_closed, _triangle_soup
from .triangles import _box_cells, _closest_on_triangles
from .winding import _winding_fast

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _principal_frame(tri: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Area-weighted centroid (3,) and principal axes (3, 3) (columns, right-handed) of a surface.

    The covariance uses the exact second moment of each triangle, ``(A / 12) (sum_i v_i v_i^T + s s^T)`` with
    ``s = sum_i v_i``. Where eigenvalues tie (a cube, a regular prism, a sphere) the eigenvectors are
    arbitrary, which would sample a rotated cube as a staircase; there the axes are taken from the dominant
    face normals instead (largest area of triangles parallel to the axis).
    """
    area_vec = 0.5 * np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    area = np.linalg.norm(area_vec, axis=1)
    total = float(area.sum())
    centre = (area[:, None] * tri.sum(axis=1)).sum(axis=0) / (3.0 * total)
    rel = tri - centre
    srel = rel.sum(axis=1)
    second = np.einsum("f,fki,fkj->ij", area, rel, rel) + np.einsum("f,fi,fj->ij", area, srel, srel)
    cov = second / (12.0 * total)
    evals, evecs = np.linalg.eigh(cov)
    tol = 1e-6 * max(float(evals[-1]), 1e-300)
    gap01 = evals[1] - evals[0] <= tol
    gap12 = evals[2] - evals[1] <= tol
    axes = evecs.copy()
    if gap01 or gap12:
        normal = area_vec / area[:, None]
        cand_idx = np.argsort(-area, kind="stable")[: min(64, area.size)]
        cands = normal[cand_idx]

        def best_direction(dirs: FloatArray) -> FloatArray | None:
            lens = np.linalg.norm(dirs, axis=1)
            ok = lens > 0.5
            if not ok.any():
                return None
            u = dirs[ok] / lens[ok, None]
            parallel = np.abs(u @ normal.T) > math.cos(math.radians(1.0))
            score = parallel.astype(np.float64) @ area
            result: FloatArray = u[int(np.argmax(score))]
            return result

        # The first axis: the dominant face normal where all three tie, else the one untied eigenvector;
        # the second: the dominant face normal across it.
        u1 = best_direction(cands) if gap01 and gap12 else (evecs[:, 2] if gap01 else evecs[:, 0])
        if u1 is not None:
            u2 = best_direction(cands - np.outer(cands @ u1, u1))
            if u2 is not None:
                u2 = u2 - (u2 @ u1) * u1
                u2 /= np.linalg.norm(u2)
                axes = np.stack([u1, u2, np.cross(u1, u2)], axis=1)
    if np.linalg.det(axes) < 0.0:
        axes[:, 2] = -axes[:, 2]
    return centre, axes


def _principal_box(tri: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """The surface in its principal frame (:func:`_principal_frame`): centre (3,), axes (3, 3), the
    triangles in that frame (k, 3, 3) and their bounding box ``lo``, ``hi`` (3,) each, metres."""
    centre, axes = _principal_frame(tri)
    local = (tri - centre) @ axes
    flat = local.reshape(-1, 3)
    return centre, axes, local, flat.min(axis=0), flat.max(axis=0)


def _check_solid(extent: FloatArray) -> None:
    """Raise the flat-mesh error for a principal-frame ``extent`` (3,) with one side ~0."""
    if float(extent.min()) <= 1e-6 * max(float(extent.max()), 1e-300):
        raise _flat_error()


def _sample_grid(
    tri: FloatArray, spacing: float
) -> tuple[FloatArray, FloatArray, FloatArray, tuple[int, int, int], FloatArray]:
    """Centre, axes, local triangles, sample counts per axis and local grid origin of the sampling grid."""
    centre, axes, local, lo, hi = _principal_box(tri)
    extent = hi - lo
    _check_solid(extent)
    # floor: a box of side k * spacing gets exactly k samples per axis, a half spacing from each face.
    counts = np.maximum(np.floor(extent / spacing + 1e-6), 1.0)
    origin = 0.5 * (lo + hi) - 0.5 * (counts - 1.0) * spacing
    shape = (int(counts[0]), int(counts[1]), int(counts[2]))
    return centre, axes, local, shape, origin


@dataclass
class InteriorSamples:
    """Particle centres inside a mesh with the mesh's signed distance at each (Macklin 2014, sec. 5.1).

    Attributes
    ----------
    points : (P, 3) float64, metres, in the input (mesh) frame.
    sdf : (P,) float64, metres, signed distance to the surface (negative inside).
    sdf_gradient : (P, 3) float64 unit vectors, the outward direction (gradient of the sdf); at samples
        equally near to several faces (a box's edges and corners) the mean of their directions.
    sdf_faces : (P, MAX_TIED_FACES, 3) float64, the outward directions of the faces nearest to each sample
        (two at a box's edge, three at a corner), zero rows where there are fewer; row 0 is the gradient
        where there is one face (or more than ``MAX_TIED_FACES``). Empty (0, 3, 3) means "row 0 only".
    """

    points: FloatArray
    sdf: FloatArray
    sdf_gradient: FloatArray
    sdf_faces: FloatArray = field(default_factory=lambda: np.zeros((0, MAX_TIED_FACES, 3)))

    def faces(self) -> FloatArray:
        """``sdf_faces``, filled in from the gradient when it is empty."""
        if len(self.sdf_faces) == len(self.points):
            return self.sdf_faces
        out = np.zeros((len(self.points), MAX_TIED_FACES, 3))
        out[:, 0] = self.sdf_gradient
        return out


def sample_interior(vertices: npt.ArrayLike, faces: npt.ArrayLike, spacing: float) -> InteriorSamples:
    """Particle centres on a grid of the given spacing inside a mesh, with signed distances.

    The grid is aligned with the mesh's principal axes (area-weighted covariance of the surface; face
    normals break ties), so a rotated box is sampled as a clean box rather than a staircase, and centred on
    the mesh's bounding box in that frame, so samples are symmetric. A node is inside when its generalized
    winding number is >= 0.5 (works for open and non-manifold meshes such as Suzanne). If no node is inside
    (a body thinner than the spacing) but the mesh has volume, the volume centroid is the single sample.

    Parameters
    ----------
    vertices : (n, 3) metres. faces : (m, 3) vertex indices.
    spacing : metres between neighbouring samples (= 2 * particle radius).

    Raises
    ------
    SimulationInputError
        Invalid mesh, flat/zero-volume mesh, or a grid larger than ``MAX_SAMPLE_GRID_NODES``.
    """
    s = _check_spacing(spacing)
    tri = _outward(_triangle_soup(vertices, faces))
    centre, axes, local, shape, origin = _sample_grid(tri, s)
    n_nodes = shape[0] * shape[1] * shape[2]
    if n_nodes > geometry.MAX_SAMPLE_GRID_NODES:
        raise SimulationInputError(
            f"filling this mesh at spacing {s:.3g} m needs a grid of {n_nodes:,} candidate particles "
            f"(limit {geometry.MAX_SAMPLE_GRID_NODES:,}); use a larger particle radius or a smaller mesh"
        )
    # Exact distances out to just over one spacing: the winding-number fill below relies on them.
    dist, cp = _grid_distance(local, origin, s, shape, band=1.01 * s)
    w = _grid_winding(local, origin, s, dist)
    inside = w >= 0.5
    if float(w.max()) < 0.75 and not _soup_is_closed(tri):
        # An open sheet (a bumpy plane, terrain) has no inside: behind its concave bumps the winding number
        # creeps just above 0.5, but a real solid, even one with holes like Suzanne, reaches ~1 inside.
        raise _flat_error()
    if not inside.any():
        # Nothing inside at this spacing (a thin body). A closed mesh with volume still gets one particle,
        # at its volume centroid; an open one only if that centroid reads as inside (an open, bumpy sheet
        # has a meaningless signed volume and is better told to be cloth).
        volume, centroid = _signed_volume(tri, centre)
        extent = np.ptp(local.reshape(-1, 3), axis=0)
        if abs(volume) <= 1e-9 * float(np.prod(extent)):
            raise _flat_error()
        if not _soup_is_closed(tri) and _winding_fast(tri, centroid[None, :])[0] < 0.5:
            raise _flat_error()
        sdf, grad = _signed(tri, centroid[None, :])
        return InteriorSamples(centroid[None, :].copy(), sdf, grad)
    idx = np.nonzero(inside)
    node_local = origin + s * np.stack(idx, axis=1).astype(np.float64)
    d = dist[idx]
    outward = cp[idx] - node_local
    tiny = d <= 1e-9 * s
    grad_local = outward / np.where(tiny, 1.0, d)[:, None]
    faces_local = np.zeros((len(d), MAX_TIED_FACES, 3))
    faces_local[:, 0] = grad_local
    near = np.flatnonzero((d <= 1.01 * s) & ~tiny)
    if near.size:
        flat = np.ravel_multi_index(idx, shape)[near]
        # The gradient stays the closest face's (contacts try it first; it passes for most pairs,
        # so the faces are looked at only for the rest, see contacts._rigid_normals).
        tied, tied_faces = _tied_directions(local, origin, s, shape, dist, flat)
        found = ~np.isnan(tied[:, 0])
        faces_local[near[found]] = tied_faces[found]
    points = node_local @ axes.T + centre
    grad = grad_local @ axes.T
    faces = faces_local @ axes.T
    if tiny.any():
        # On the surface the direction to the closest point is undefined: use the triangle normal.
        _, grad_tiny = _signed(tri, points[tiny])
        grad[tiny] = grad_tiny
        faces[tiny, 0] = grad_tiny
    return InteriorSamples(points, -d, grad, faces)


# Faces closer to a sample than the nearest one plus this many spacings count as equally near (a tie).
TIE_TOLERANCE_SPACINGS = 0.01
# Tied faces kept per sample (a box's corner has three); more (a cone's tip) keep only their mean.
MAX_TIED_FACES = 3
# Tied directions closer than this (unit vectors, per coordinate) are one face (two triangles of a quad).
_TIE_DIRECTION_QUANTUM = 1e-6


def _tied_directions(
    tri: FloatArray,
    origin: FloatArray,
    cell: float,
    shape: tuple[int, int, int],
    dist: FloatArray,
    nodes: IntArray,
) -> tuple[FloatArray, FloatArray]:
    """The faces nearest to grid ``nodes`` (flat indices, within one cell of the surface): the distinct
    outward directions to every triangle within ``TIE_TOLERANCE_SPACINGS`` of the nearest one.

    A box's edge and corner samples are exactly as far from two or three faces. The closest-point
    search keeps whichever face it met first, so an edge particle on the top of a box could carry
    the side face's normal, and two boxes stacked on each other then had contacts that took the
    particle-pair direction (a sphere resting on a sphere: a sideways push towards any offset that
    toppled a column of 20 boxes within 4 s). The contacts try each of these faces (see
    ``contacts._rigid_normals``). Returns (len(nodes), 3) normalized means of the directions, NaN
    rows where they cancel (a sample midway between two opposite faces: its row is left as it was),
    and (len(nodes), MAX_TIED_FACES, 3) directions (zero rows where fewer; only the mean where more).
    """
    nx, ny, nz = shape
    dims = np.array(shape, dtype=np.int64)
    band = 1.01 * cell
    wanted = np.full(nx * ny * nz, -1, dtype=np.int64)
    wanted[nodes] = np.arange(nodes.size)
    flat_d = dist.ravel()
    tol = TIE_TOLERANCE_SPACINGS * cell
    rows: list[IntArray] = []
    dirs: list[FloatArray] = []
    for owner, ix, iy, iz in _box_cells(*_node_boxes(tri, origin, cell, dims, band)):
        node = (ix * ny + iy) * nz + iz
        keep = np.flatnonzero(wanted[node] >= 0)
        if not keep.size:
            continue
        node, owner = node[keep], owner[keep]
        p = origin + cell * np.stack([ix[keep], iy[keep], iz[keep]], axis=1).astype(np.float64)
        t = tri[owner]
        diff = _closest_on_triangles(p, t[:, 0], t[:, 1], t[:, 2]) - p
        dt = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        tie = np.flatnonzero((dt <= flat_d[node] + tol) & (dt > 0.0))
        rows.append(wanted[node[tie]])
        dirs.append(diff[tie] / dt[tie, None])
    out = np.full((nodes.size, 3), np.nan)
    faces = np.zeros((nodes.size, MAX_TIED_FACES, 3))
    if not rows:
        return out, faces
    row = np.concatenate(rows)
    u = np.concatenate(dirs)
    # One direction per face: the two triangles of a quad give the same one.
    key = np.column_stack([row, np.round(u / _TIE_DIRECTION_QUANTUM).astype(np.int64)])
    _, first = np.unique(key, axis=0, return_index=True)
    first.sort()
    row, u = row[first], u[first]
    total = np.stack([np.bincount(row, weights=u[:, k], minlength=nodes.size) for k in range(3)], axis=1)
    length = np.sqrt(np.einsum("ij,ij->i", total, total))
    # Directions that (nearly) cancel leave no direction: keep the closest face's normal there.
    ok = length > 0.5
    out[ok] = total[ok] / length[ok, None]
    # The distinct directions, in the order met, into rows 0.. of each node's faces.
    order = np.argsort(row, kind="stable")
    row, u = row[order], u[order]
    count = np.bincount(row, minlength=nodes.size)
    slot = np.arange(row.size) - np.repeat(np.cumsum(count) - count, count)
    few = (count[row] <= MAX_TIED_FACES) & ok[row]
    faces[row[few], slot[few]] = u[few]
    many = ok & (count > MAX_TIED_FACES)
    faces[many, 0] = out[many]
    return out, faces
