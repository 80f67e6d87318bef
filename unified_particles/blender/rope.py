# SPDX-License-Identifier: GPL-3.0-or-later
"""The Rope role: a curve (Bezier, poly, NURBS) or an edge-only mesh simulated as a rope (core ``add_rope``).

The source's evaluated geometry in world space (a curve's evaluated mesh: its splines at their resolution)
is read as one polyline, walked along its edges from an end; the core resamples it every particle
diameter. The result is shown and baked like grains (:mod:`.granular`): the source is hidden and a
``<source> Rope`` particle object holds one vertex per rope particle, drawn as touching spheres by its
Geometry Nodes, so it bakes to a point cache and replays without the add-on. Pins (Rope Pins: start, end,
both) follow the source's world matrix as it moves (keyframes, parents). Not a registered module.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..core import SimulationInputError
from . import mesh_io
from .mesh_io import FloatArray, IntArray

ROPE_PINS = {"NONE": None, "START": "start", "END": "end", "BOTH": "both"}


def can_be_rope(obj: bpy.types.Object) -> bool:
    """A curve, or a mesh with edges and no faces."""
    if obj.type == "CURVE":
        return True
    mesh = obj.data
    return (
        obj.type == "MESH" and isinstance(mesh, bpy.types.Mesh) and len(mesh.edges) > 0 and not mesh.polygons
    )


def chain_order(n: int, edges: IntArray, name: str) -> IntArray:
    """The vertex indices of the one chain the ``edges`` (E, 2) of ``n`` vertices make, from an end (a loop:
    from vertex 0); raises SimulationInputError for branches or separate pieces. Build time only."""
    if len(edges) == 0:
        raise SimulationInputError(
            f"{name!r} has no edges: a rope needs a curve or a mesh of connected edges"
        )
    used = np.unique(edges)
    degree = np.bincount(edges.ravel(), minlength=n)
    if degree.max() > 2:
        raise SimulationInputError(
            f"{name!r} branches (a vertex on 3 or more edges): make one strand per object"
        )
    ends = np.flatnonzero(degree == 1)
    neighbours: dict[int, list[int]] = {int(v): [] for v in used}
    for a, b in edges.tolist():  # a walk once per build, never in the step
        neighbours[a].append(b)
        neighbours[b].append(a)
    start = int(ends[0]) if len(ends) else int(used[0])
    order, previous, current = [start], -1, start
    while True:
        following = [v for v in neighbours[current] if v != previous]
        if not following or following[0] == start:
            break
        previous, current = current, following[0]
        order.append(current)
    if len(order) != len(used):
        raise SimulationInputError(f"{name!r} is in several pieces: make one strand per object")
    if not len(ends):
        order.append(start)  # a closed loop comes back to its start
    return np.asarray(order, dtype=np.int64)


def rope_points(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> FloatArray:
    """The source's evaluated polyline in world space, (K, 3) metres, in order along it."""
    obj_eval = obj.evaluated_get(depsgraph)
    mesh = obj_eval.to_mesh()
    try:
        n = len(mesh.vertices)
        co = np.empty(n * 3, dtype=np.float64)
        mesh.vertices.foreach_get("co", co)
        flat = np.empty(len(mesh.edges) * 2, dtype=np.int64)
        mesh.edges.foreach_get("vertices", flat)
        if len(mesh.polygons):
            raise SimulationInputError(f"{obj.name!r} has faces: a rope is a curve or a mesh of edges only")
    finally:
        obj_eval.to_mesh_clear()
    order = chain_order(n, flat.reshape(-1, 2), obj.name)
    matrix = mesh_io.matrix_to_numpy(obj_eval.matrix_world)
    points: FloatArray = mesh_io.transform_points(matrix, co.reshape(-1, 3)[order])
    return points
