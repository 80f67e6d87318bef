# SPDX-License-Identifier: GPL-3.0-or-later
"""Grain fills: a jittered face-centred cubic packing inside a mesh."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .. import geometry
from ..errors import SimulationInputError
from .grids import _grid_distance, _grid_winding
from .mesh import _outward, _triangle_soup
from .sampling import _check_solid, _principal_box, sample_interior

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


#: Edge of the face-centred cubic cell of a grain fill, in grain diameters: 4 grains per cell of edge
#: 4^(1/3) * 2r is one grain per (2r)^3, the volume each grain's mass stands for (World.add_granular), so a
#: fill weighs density * volume. Its nearest neighbours are 4^(1/3) / sqrt(2) * 2r = 2.245 r apart.
GRAIN_FILL_CELL_DIAMETERS = 4.0 ** (1.0 / 3.0)
#: Largest random displacement of a filled grain, radii: half the 0.245 r gap between FCC neighbours
#: (minus a margin), so no two grains start overlapping.
GRAIN_FILL_JITTER_RADII = 0.12
#: Seed of the fill's jitter: the same mesh and radius always give the same grains.
GRAIN_FILL_SEED = 14
# The four simple cubic sublattices of a face-centred cubic lattice, in half cell edges.
_FCC_OFFSETS = ((0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0))


def fill_mesh_with_grains(
    vertices: npt.ArrayLike, faces: npt.ArrayLike, radius: float, radius_spread: float = 0.0
) -> FloatArray:
    """Grain centres (P, 3), metres, filling a mesh with a jittered face-centred cubic packing.

    A loose packing real grains could have, rather than the simple cubic lattice of :func:`sample_interior`
    (grains stacked in vertical columns stay balanced in the solver for ever; a dropped block of them never
    slumps). The lattice is face-centred cubic (each grain rests in the pocket of the ones below it) at
    one grain per (2r)^3 (:data:`GRAIN_FILL_CELL_DIAMETERS`), aligned with the mesh's principal axes like
    :func:`sample_interior`, every grain displaced by a random vector of length at most
    :data:`GRAIN_FILL_JITTER_RADII` r (a seeded generator: deterministic). Every grain lies wholly inside
    the mesh (its centre at least r deep) and no two overlap (centres at least 2r apart). The count is at
    most about :func:`estimate_interior_count` at spacing 2r (the volume over (2r)^3): the grains fill
    the volume inset by r, so a fill a few grains across holds fewer (a cube 6 grains wide: ~80%).
    A mesh too thin for a whole grain gets the grains of :func:`sample_interior` (one layer on its
    mid-plane, or one grain at its centroid).

    ``radius_spread`` (in [0, 1)): grains of radius ``radius`` times a factor in [1 - spread, 1 + spread]
    (``World.add_granular(radius_spread=...)``) are filled at the largest, r (1 + spread), so none starts
    overlapping another or the mesh (fewer grains: (1 + spread)^-3 as many).

    Raises SimulationInputError for a bad radius or mesh, or a fill grid beyond the limits.
    """
    spread = float(radius_spread)
    if not (math.isfinite(spread) and 0.0 <= spread < 1.0):
        raise SimulationInputError(f"radius_spread must be in [0, 1), got {radius_spread!r}")
    r = float(radius) * (1.0 + spread)
    if not math.isfinite(r) or r <= 0.0:
        raise SimulationInputError(f"grain radius must be a positive number of metres, got {radius!r}")
    tri = _outward(_triangle_soup(vertices, faces))
    centre, axes, local, lo, hi = _principal_box(tri)
    extent = hi - lo
    _check_solid(extent)
    half = 0.5 * GRAIN_FILL_CELL_DIAMETERS * 2.0 * r  # FCC nodes: every other node of this grid
    # Outermost nodes a radius inside the bounding box (whole grains), the grid centred on it.
    counts = np.maximum(np.floor(np.maximum(extent - 2.0 * r, 0.0) / half + 1e-6) + 1.0, 1.0)
    origin = 0.5 * (lo + hi) - 0.5 * (counts - 1.0) * half
    limit = geometry.MAX_SAMPLE_GRID_NODES
    if float(np.prod(counts)) > 8.0 * limit:  # 4 sublattices of 1/8 each: 4x one
        raise SimulationInputError(
            f"filling this mesh with grains of radius {r:.3g} m needs {int(np.prod(counts)) // 2:,} "
            f"candidate grains (limit {4 * limit:,}); use a larger particle radius or a smaller mesh"
        )
    found_points = []
    found_depth = []
    for offset in _FCC_OFFSETS:
        off = np.array(offset, dtype=np.float64)
        shape_f = np.floor((counts - off + 1.0) / 2.0)
        if float(shape_f.min()) < 1.0:
            continue
        shape = (int(shape_f[0]), int(shape_f[1]), int(shape_f[2]))
        sub_origin = origin + half * off
        cell = 2.0 * half
        # Exact distances out to just over one cell: the winding-number fill relies on them.
        dist, _ = _grid_distance(local, sub_origin, cell, shape, band=1.01 * cell)
        inside = (_grid_winding(local, sub_origin, cell, dist) >= 0.5) & (dist >= r * (1.0 - 1e-9))
        idx = np.nonzero(inside)
        found_points.append(sub_origin + cell * np.stack(idx, axis=1).astype(np.float64))
        found_depth.append(dist[idx])
    points = np.concatenate(found_points) if found_points else np.zeros((0, 3))
    if len(points) == 0:
        return sample_interior(vertices, faces, 2.0 * r).points
    depth = np.concatenate(found_depth)
    # Jitter uniform in a ball of radius GRAIN_FILL_JITTER_RADII * r, shortened where a grain is less than
    # that deeper than r: a distance field is 1-Lipschitz, so a grain moved by at most (depth - r) stays
    # at least r deep (``depth`` is exact within the band, where the cap matters).
    rng = np.random.default_rng(GRAIN_FILL_SEED)
    direction = rng.standard_normal((len(points), 3))
    direction /= np.maximum(np.linalg.norm(direction, axis=1), 1e-12)[:, None]
    length = GRAIN_FILL_JITTER_RADII * r * np.cbrt(rng.random(len(points)))
    length = np.minimum(length, np.maximum(depth - r, 0.0))
    points = points + direction * length[:, None]
    out: FloatArray = points @ axes.T + centre
    return out
