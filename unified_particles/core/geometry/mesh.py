# SPDX-License-Identifier: GPL-3.0-or-later
"""Mesh input checks and whole-mesh properties: validated vertices and faces, triangle soups,
closedness, the enclosed volume and the outward orientation.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .. import geometry
from ..errors import SimulationInputError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def as_vertices(vertices: npt.ArrayLike) -> FloatArray:
    """Validate mesh vertex positions.

    Parameters
    ----------
    vertices : array_like, shape (n, 3), metres.

    Returns
    -------
    float64 array, shape (n, 3), C-contiguous (a copy when the input was not already that).

    Raises
    ------
    SimulationInputError
        Empty, wrong shape, not numeric, NaN/inf, or |coordinate| > ``MAX_COORDINATE``.
    """
    try:
        v = np.ascontiguousarray(vertices, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise SimulationInputError(
            f"mesh vertices must be a numeric (n, 3) array of positions in metres ({exc})"
        ) from None
    if v.ndim != 2 or v.shape[1] != 3:
        raise SimulationInputError(
            f"mesh vertices must have shape (n, 3), got {v.shape}; pass one xyz row per vertex"
        )
    if v.shape[0] == 0:
        raise SimulationInputError(
            "the mesh has no vertices; add geometry or remove the object from the simulation"
        )
    finite = np.isfinite(v)
    if not finite.all():
        bad = int(np.count_nonzero(~finite.all(axis=1)))
        raise SimulationInputError(
            f"{bad} mesh vertices have NaN or infinite coordinates; fix the mesh (e.g. Merge by Distance, "
            "check modifiers and drivers) before simulating"
        )
    largest = float(np.abs(v).max())
    if largest > geometry.MAX_COORDINATE:
        raise SimulationInputError(
            f"a mesh coordinate is {largest:.3g} m from the origin (limit {geometry.MAX_COORDINATE:.0e} m); "
            "apply scale / check units (the simulation works in metres)"
        )
    return v


def as_triangles(faces: npt.ArrayLike, n_vertices: int) -> IntArray:
    """Validate triangle indices and drop triangles that repeat a vertex index.

    Parameters
    ----------
    faces : array_like of integers, shape (m, 3), indices into a vertex array of length ``n_vertices``.
    n_vertices : number of vertices the indices refer to.

    Returns
    -------
    int64 array, shape (k, 3), k <= m: the triangles with three distinct indices, in input order.
    (Zero-area triangles with distinct indices are dropped later, where vertex positions are known.)

    Raises
    ------
    SimulationInputError
        Empty, wrong shape, non-integer values, indices < 0 or >= ``n_vertices``, or no valid triangle.
    """
    try:
        raw = np.asarray(faces)
    except (TypeError, ValueError) as exc:
        raise SimulationInputError(
            f"mesh faces must be an integer (m, 3) array of vertex indices ({exc})"
        ) from None
    if raw.size == 0:
        raise SimulationInputError(
            "the mesh has no faces; it needs triangles (a point cloud can be granular instead)"
        )
    if raw.ndim != 2 or raw.shape[1] != 3:
        raise SimulationInputError(
            f"mesh faces must have shape (m, 3), got {raw.shape}; "
            "triangulate the mesh (e.g. use loop triangles)"
        )
    if raw.dtype.kind in "fc":
        if not np.isfinite(raw).all() or np.any(raw != np.round(raw)):
            raise SimulationInputError("mesh face indices must be whole numbers")
    elif raw.dtype.kind not in "iu":
        raise SimulationInputError(f"mesh face indices must be integers, got dtype {raw.dtype}")
    f = np.ascontiguousarray(raw, dtype=np.int64)
    if f.min() < 0:
        raise SimulationInputError(f"mesh face index {int(f.min())} is negative; indices start at 0")
    if f.max() >= n_vertices:
        raise SimulationInputError(
            f"mesh face index {int(f.max())} is out of range for {n_vertices} vertices; "
            "faces and vertices come from different meshes"
        )
    # Repeated-index triangles have no area and no solid angle: dropping them changes nothing.
    keep = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 2] != f[:, 0])
    f = f[keep]
    if f.shape[0] == 0:
        raise SimulationInputError(
            "every face of the mesh is degenerate (repeats a vertex); the mesh has no area"
        )
    return f


def _as_points(points: npt.ArrayLike) -> FloatArray:
    """Query points as float64 (P, 3); P may be 0. Raises on NaN/inf."""
    try:
        p = np.ascontiguousarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise SimulationInputError(f"query points must be a numeric (P, 3) array ({exc})") from None
    if p.ndim == 1 and p.shape[0] == 3:
        p = p.reshape(1, 3)
    if p.ndim != 2 or p.shape[1] != 3:
        raise SimulationInputError(f"query points must have shape (P, 3), got {p.shape}")
    if not np.isfinite(p).all():
        raise SimulationInputError("query points contain NaN or infinite coordinates")
    return p


def _triangle_soup(vertices: npt.ArrayLike, faces: npt.ArrayLike) -> FloatArray:
    """Validated mesh as a triangle soup (k, 3, 3) [triangle, corner, xyz], zero-area triangles dropped."""
    v = as_vertices(vertices)
    f = as_triangles(faces, v.shape[0])
    tri = v[f]
    scale = float(np.ptp(v, axis=0).max())
    area2 = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    # Zero-area slivers have no solid angle and their edges are (for any sane mesh) shared with real
    # triangles; they would only make the region tests divide by zero.
    return np.ascontiguousarray(tri[_with_area(area2, scale)])


def _with_area(area2: FloatArray, scale: float) -> npt.NDArray[np.bool_]:
    """(k,) the triangles whose doubled area ``area2`` (k,) is not ~0 on a mesh ``scale`` metres across;
    raises if none is."""
    keep = area2 > 1e-14 * scale * scale
    if not keep.any():
        raise SimulationInputError(
            "every triangle of the mesh has zero area (all vertices on a line or a point); "
            "the mesh has no surface to simulate"
        )
    return keep


def _soup_is_closed(tri: FloatArray) -> bool:
    """``_is_closed`` for a triangle soup, welding corners with identical coordinates."""
    _, index = np.unique(tri.reshape(-1, 3), axis=0, return_inverse=True)
    return _is_closed(index.reshape(-1, 3).astype(np.int64))


def _is_closed(faces: IntArray) -> bool:
    """Every undirected edge used by exactly two triangles."""
    edges = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    key = edges[:, 0] * (int(edges.max()) + 1) + edges[:, 1]
    _, counts = np.unique(key, return_counts=True)
    return bool(np.all(counts == 2))


def _signed_volume(tri: FloatArray, reference: FloatArray) -> tuple[float, FloatArray]:
    """Signed enclosed volume (m^3) and volume centroid (3,) by tetrahedra to ``reference``.

    Exact for closed meshes; for open ones it depends on ``reference`` (use the surface centroid).
    """
    a = tri[:, 0] - reference
    b = tri[:, 1] - reference
    c = tri[:, 2] - reference
    vol6 = np.einsum("ij,ij->i", a, np.cross(b, c))
    total = float(vol6.sum()) / 6.0
    if total == 0.0:
        return 0.0, reference.copy()
    centroid = reference + (vol6[:, None] * (a + b + c)).sum(axis=0) / (4.0 * 6.0 * total)
    return total, centroid


def _outward(tri: FloatArray) -> FloatArray:
    """The soup with its triangles reversed if the mesh as a whole is inside-out (negative volume).

    Flipped normals are common in user meshes; the winding number of an inside-out closed mesh is -1
    inside, which the 0.5 threshold would read as "outside everywhere".
    """
    area = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    centre = (area[:, None] * tri.mean(axis=1)).sum(axis=0) / area.sum()
    volume, _ = _signed_volume(tri, centre)
    if volume < 0.0:
        return np.ascontiguousarray(tri[:, ::-1])
    return tri


def _flat_error() -> SimulationInputError:
    return SimulationInputError(
        "the mesh has no volume (it is flat); make it cloth instead, or give it thickness (Solidify modifier)"
    )


def _check_spacing(spacing: float) -> float:
    s = float(spacing)
    if not math.isfinite(s) or s <= 0.0:
        raise SimulationInputError(f"particle spacing must be a positive number of metres, got {spacing!r}")
    return s
