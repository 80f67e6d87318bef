# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangle-mesh geometry for the particle solver: validation, inside tests, distances, sampling.

Everything here is pure NumPy (no bpy), vectorized, and chunked so that the working set of one call stays
bounded (roughly ``triangles._CHUNK_BYTES``) whatever the mesh and query sizes. Units are metres; shapes
are given in each docstring. Meshes are triangle soups ``vertices (n, 3)`` + ``faces (m, 3)``; open and
non-manifold meshes are accepted wherever that makes sense, because the inside test is the generalized
winding number.

One module per concern, lowest first: ``mesh`` (input checks, closedness, volume), ``triangles``
(point-triangle kernels), ``winding``, ``closest``, ``grids`` (distance and winding number on grids),
``sampling`` (interior samples on a grid), ``rigid_fill`` (rigid bodies' particles, touching the mesh),
``grains`` (grain fills), ``fill_limits`` and ``sdf``
(``SDFVolume``). The exact and deforming surfaces only colliders use live in ``colliders/``.

References
----------
* A. Jacobson, L. Kavan, O. Sorkine-Hornung, "Robust Inside-Outside Segmentation using Generalized Winding
  Numbers", SIGGRAPH 2013: ``w(p) = sum_t Omega_t(p) / 4 pi``; ``w >= 1/2`` is "inside", also for open meshes.
* A. van Oosterom, J. Strackee, "The Solid Angle of a Plane Triangle", IEEE TBME 1983: the solid angle of one
  triangle as a single ``atan2``.
* G. Barill et al., "Fast Winding Numbers for Soups and Clouds", SIGGRAPH 2018: far clusters of triangles are
  replaced by their dipole (area-vector) term, used here to sign distance grids quickly.
* C. Ericson, "Real-Time Collision Detection", 2005, section 5.1.5: closest point on a triangle by Voronoi
  region tests, vectorized in ``triangles``.
* M. Macklin et al., "Unified Particle Physics for Real-Time Applications", SIGGRAPH 2014, section 5.1:
  rigid particles store the signed distance and its gradient of the body's mesh.
"""

from __future__ import annotations

from .closest import closest_points_on_mesh, signed_distance
from .fill_limits import FillMeasure, estimate_interior_count, fill_measure, smallest_fill_radius
from .grains import (
    GRAIN_FILL_CELL_DIAMETERS,
    GRAIN_FILL_JITTER_RADII,
    GRAIN_FILL_SEED,
    fill_mesh_with_grains,
)
from .mesh import as_triangles, as_vertices
from .rigid_fill import fitted_axis, sample_rigid, shell_of
from .sampling import MAX_TIED_FACES, TIE_TOLERANCE_SPACINGS, InteriorSamples, sample_interior
from .sdf import SDFVolume
from .winding import winding_number

# The package's limits. Its modules read them from here when called (``MAX_SAMPLE_GRID_NODES``),
# so a script or test that lowers one here lowers it for every check (World.check_fill, sample_interior,
# the grain fill and the radius the messages suggest alike).

#: Largest accepted |coordinate| in metres. Anything beyond is almost always a unit or scale mistake.
MAX_COORDINATE = 1.0e6
#: Most cells per axis of an :class:`SDFVolume`; the cell size is raised to respect it.
SDF_MAX_CELLS = 128
#: Most grid nodes :func:`sample_interior` will evaluate (about 200 bytes each at peak, so ~600 MB).
MAX_SAMPLE_GRID_NODES = 3_000_000

__all__ = [
    "GRAIN_FILL_CELL_DIAMETERS",
    "GRAIN_FILL_JITTER_RADII",
    "GRAIN_FILL_SEED",
    "MAX_COORDINATE",
    "MAX_SAMPLE_GRID_NODES",
    "MAX_TIED_FACES",
    "SDF_MAX_CELLS",
    "TIE_TOLERANCE_SPACINGS",
    "FillMeasure",
    "InteriorSamples",
    "SDFVolume",
    "as_triangles",
    "as_vertices",
    "closest_points_on_mesh",
    "estimate_interior_count",
    "fill_measure",
    "fill_mesh_with_grains",
    "fitted_axis",
    "sample_interior",
    "sample_rigid",
    "shell_of",
    "signed_distance",
    "smallest_fill_radius",
    "winding_number",
]
