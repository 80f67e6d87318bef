# SPDX-License-Identifier: GPL-3.0-or-later
"""Each object's particle size (issue 22): the scene's Particle Radius, the object's own Particle Size (a
cloth's Thickness), or Auto, fitted to the object (``core.sizes.fitted_radius``: its thinnest dimension
gets ``AUTO_PARTICLES_ACROSS`` particles; a cloth: half its mean edge length, so the spheres of
neighbouring vertices touch). A granular object's Size Spread draws its grains' radii (``core.sizes``).

The scene reader, the cost report and the Make operators ask :func:`object_radius`. Imports ``mesh_io``,
``rna`` and the core.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from ..core.sizes import AUTO_PARTICLES_ACROSS, fitted_radius
from . import mesh_io
from .rna import object_settings

SIZE_MODES = [
    (
        "SCENE",
        "Scene",
        "The scene's Particle Radius (a rigid body thinner than 2.35 of them: its thinnest side / 2.8, so "
        "two layers of particles touch both its faces)",
    ),
    ("VALUE", "Value", "This object's own Particle Size (a cloth: its Thickness)"),
    (
        "AUTO",
        "Auto",
        f"Fitted to the object: {AUTO_PARTICLES_ACROSS} particles across its thinnest dimension (the "
        "shortest side of its oriented bounding box); a cloth: half its mean edge length, so neighbouring "
        "vertices touch",
    ),
]


def has_own_size(obj: bpy.types.Object) -> bool:
    """Whether ``obj``'s particles differ from the scene's (its own size, or a granular size spread)."""
    s = object_settings(obj)
    return str(s.size_mode) != "SCENE" or (str(s.role) == "GRANULAR" and float(s.size_spread) > 0.0)


def size_key(obj: bpy.types.Object) -> dict[str, Any]:
    """The size settings of ``obj`` (for the change detectors; only asked when :func:`has_own_size`)."""
    s = object_settings(obj)
    return {
        "size_mode": str(s.size_mode),
        "particle_size": float(s.particle_size),
        "size_spread": float(s.size_spread),
    }


def object_radius(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> float | None:
    """``obj``'s own particle radius, metres, or None for the scene's.

    Raises:
        SimulationInputError: Auto on a flat mesh (core ``fitted_radius``).
    """
    s = object_settings(obj)
    mode = str(s.size_mode)
    if mode == "VALUE":
        return float(s.particle_size)
    if mode != "AUTO" or obj.type != "MESH":
        return None
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    vertices = mesh_io.transform_points(mesh_io.matrix_to_numpy(obj.matrix_world), local)
    if str(s.role) == "CLOTH":
        tri = vertices[np.asarray(tris, dtype=np.int64).reshape(-1, 3)]
        edges = np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2)
        return 0.5 * float(edges.mean()) if edges.size else None
    return fitted_radius(vertices)
