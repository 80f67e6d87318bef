# SPDX-License-Identifier: GPL-3.0-or-later
"""NumPy <-> Blender mesh data through the fast ``foreach_get``/``foreach_set`` paths.

All arrays handed to Blender are flat, contiguous float32 (or int32) buffers; nothing loops over
vertices in Python except reading vertex-group weights (done once per build).
"""

from __future__ import annotations

from typing import Any, cast

import bpy
import numpy as np
from mathutils import Matrix
from numpy.typing import NDArray

from .rna import as_type

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Name of the point attribute that keeps a mesh's original (rest) vertex positions while the simulation
# writes into the mesh, so Reset and Clear can restore them (also after reopening the file).
REST_ATTRIBUTE = "unified_particles_rest"


def matrix_to_numpy(matrix: Any) -> FloatArray:
    """(4, 4) float64 copy of a ``mathutils.Matrix``."""
    return np.array([list(row) for row in matrix], dtype=np.float64).reshape(4, 4)


def numpy_to_matrix(array: FloatArray) -> Any:
    """``mathutils.Matrix`` of a (4, 4) array."""
    return Matrix([[float(v) for v in row] for row in np.asarray(array).reshape(4, 4)])


def transform_points(matrix: FloatArray, points: FloatArray) -> FloatArray:
    """Apply a 4x4 affine matrix to (N, 3) points."""
    m = np.asarray(matrix, dtype=np.float64)
    return np.asarray(points, dtype=np.float64) @ m[:3, :3].T + m[:3, 3]


def _position_attribute(mesh: bpy.types.Mesh) -> bpy.types.FloatVectorAttribute:
    return as_type(mesh.attributes["position"], bpy.types.FloatVectorAttribute)


def read_positions(mesh: bpy.types.Mesh) -> FloatArray:
    """(V, 3) vertex positions of ``mesh`` in its object's local space."""
    n = len(mesh.vertices)
    flat = np.empty(n * 3, dtype=np.float32)
    if n:
        _position_attribute(mesh).data.foreach_get("vector", flat)
    return flat.reshape(n, 3).astype(np.float64)


def write_positions(mesh: bpy.types.Mesh, positions: FloatArray) -> None:
    """Write (V, 3) local-space positions into ``mesh`` (fast attribute path) and tag it for redraw."""
    flat = np.ascontiguousarray(np.asarray(positions, dtype=np.float32).reshape(-1))
    if flat.size != len(mesh.vertices) * 3:
        raise ValueError(
            f"mesh {mesh.name!r} has {len(mesh.vertices)} vertices, got {flat.size // 3} positions"
        )
    if flat.size:
        _position_attribute(mesh).data.foreach_set("vector", flat)
    mesh.update()


def read_float_vector_attribute(mesh: bpy.types.Mesh, name: str) -> FloatArray | None:
    """(V, 3) values of a FLOAT_VECTOR point attribute, or None if missing or of another shape."""
    attr = mesh.attributes.get(name)
    n = len(mesh.vertices)
    if not isinstance(attr, bpy.types.FloatVectorAttribute) or attr.domain != "POINT" or len(attr.data) != n:
        return None
    flat = np.empty(n * 3, dtype=np.float32)
    if n:
        attr.data.foreach_get("vector", flat)
    return flat.reshape(n, 3).astype(np.float64)


def write_float_vector_attribute(mesh: bpy.types.Mesh, name: str, values: FloatArray) -> None:
    """Create or overwrite a FLOAT_VECTOR point attribute."""
    attr = mesh.attributes.get(name)
    if attr is not None and (attr.domain != "POINT" or attr.data_type != "FLOAT_VECTOR"):
        mesh.attributes.remove(attr)
        attr = None
    if attr is None:
        attr = mesh.attributes.new(name, "FLOAT_VECTOR", "POINT")
    attr = as_type(attr, bpy.types.FloatVectorAttribute)
    flat = np.ascontiguousarray(np.asarray(values, dtype=np.float32).reshape(-1))
    if flat.size:
        attr.data.foreach_set("vector", flat)


def remove_attribute(mesh: bpy.types.Mesh, name: str) -> None:
    attr = mesh.attributes.get(name)
    if attr is not None:
        mesh.attributes.remove(attr)


def mesh_triangles(mesh: bpy.types.Mesh) -> IntArray:
    """(T, 3) vertex indices of the mesh's triangulated faces (``loop_triangles``)."""
    mesh.calc_loop_triangles()
    n = len(mesh.loop_triangles)
    flat = np.empty(n * 3, dtype=np.int32)
    if n:
        mesh.loop_triangles.foreach_get("vertices", flat)
    return flat.reshape(n, 3).astype(np.int64)


def evaluated_mesh_arrays(
    obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph
) -> tuple[FloatArray, IntArray]:
    """Local-space vertices (V, 3) and triangles (T, 3) of ``obj`` with its modifiers applied."""
    obj_eval = obj.evaluated_get(depsgraph)
    mesh = obj_eval.to_mesh()
    try:
        return read_positions(mesh), mesh_triangles(mesh)
    finally:
        obj_eval.to_mesh_clear()


def evaluated_positions(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> FloatArray:
    """Local-space vertices (V, 3) of ``obj`` with its modifiers applied."""
    obj_eval = obj.evaluated_get(depsgraph)
    mesh = obj_eval.to_mesh()
    try:
        return read_positions(mesh)
    finally:
        obj_eval.to_mesh_clear()


# Parent chains longer than this are treated as cycles (Blender refuses real ones; this bounds the walk).
MAX_PARENT_DEPTH = 64


def is_animated(obj: bpy.types.Object | None) -> bool:
    """Whether an object's transform may change over time (keyframes, drivers, NLA, constraints, on it or
    a parent)."""
    depth = 0
    while obj is not None and depth < MAX_PARENT_DEPTH:
        anim = obj.animation_data
        if anim is not None and (anim.action is not None or len(anim.drivers) or len(anim.nla_tracks)):
            return True
        if len(obj.constraints):
            return True
        obj = obj.parent
        depth += 1
    return False


def evaluated_matrix_world(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None) -> FloatArray:
    """World matrix after animation, parents and constraints of the current frame."""
    source = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    return matrix_to_numpy(source.matrix_world)


def oriented_triangles(matrix: FloatArray, triangles: IntArray) -> IntArray:
    """Triangles flipped if ``matrix`` mirrors (negative determinant), so normals stay outward."""
    if np.linalg.det(np.asarray(matrix)[:3, :3]) < 0.0:
        return np.ascontiguousarray(triangles[:, ::-1])
    return triangles


def surface_area(vertices: FloatArray, triangles: IntArray) -> float:
    """Total area of the triangles, m^2."""
    if len(triangles) == 0:
        return 0.0
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return float(0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum())


def thickness(vertices: FloatArray) -> float:
    """Smallest extent of the points along their principal axes (0 for a flat mesh), metres."""
    if len(vertices) < 4:
        return 0.0
    centered = vertices - vertices.mean(axis=0)
    _, _, axes = np.linalg.svd(centered, full_matrices=False)
    projected = centered @ axes.T
    return float(np.min(projected.max(axis=0) - projected.min(axis=0))) if projected.shape[1] == 3 else 0.0


def vertex_group_members(obj: bpy.types.Object, group_name: str, threshold: float = 0.5) -> IntArray:
    """Indices of the vertices of ``obj``'s mesh in vertex group ``group_name`` with weight > threshold."""
    group = obj.vertex_groups.get(group_name)
    if group is None:
        return np.zeros(0, dtype=np.int64)
    index = group.index
    members = [
        v.index for v in obj.data.vertices if any(g.group == index and g.weight > threshold for g in v.groups)
    ]
    return np.asarray(members, dtype=np.int64)


def vertex_group_weights(obj: bpy.types.Object, group_name: str) -> FloatArray:
    """(V,) weight of each vertex of ``obj``'s mesh in vertex group ``group_name`` (0 where not in it)."""
    mesh = as_type(obj.data, bpy.types.Mesh)
    weights = np.zeros(len(mesh.vertices))
    group = obj.vertex_groups.get(group_name)
    if group is None:
        return weights
    index = group.index
    for v in mesh.vertices:  # build time only (vertex groups have no foreach access)
        for g in v.groups:
            if g.group == index:
                weights[v.index] = g.weight
    return weights


def set_point_cloud(mesh: bpy.types.Mesh, points: FloatArray, radius: float | FloatArray) -> None:
    """Make ``mesh`` a vertex-only mesh with ``points`` (N, 3) and a float POINT attribute ``radius`` (one,
    or (N,) one per point, metres)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if len(mesh.vertices) != len(points) or len(mesh.polygons) or len(mesh.edges):
        mesh.clear_geometry()
        mesh.vertices.add(len(points))
    write_positions(mesh, points)
    attr = mesh.attributes.get("radius")
    if attr is not None and (attr.domain != "POINT" or attr.data_type != "FLOAT"):
        mesh.attributes.remove(attr)
        attr = None
    if attr is None:
        attr = mesh.attributes.new("radius", "FLOAT", "POINT")
    if len(points):
        as_type(attr, bpy.types.FloatAttribute).data.foreach_set(
            "value", np.broadcast_to(np.asarray(radius, dtype=np.float32), (len(points),)).copy()
        )
    mesh.update()


PointAttributes = dict[str, tuple[str, NDArray[np.float32]]]


def read_point_attributes(mesh: bpy.types.Mesh) -> PointAttributes:
    """Name -> (data type, flat float32 values) of the FLOAT and FLOAT_VECTOR point attributes
    (``position`` and internal ``.``-prefixed ones excluded)."""
    out: PointAttributes = {}
    n = len(mesh.vertices)
    for attr in mesh.attributes:
        if attr.name == "position" or attr.domain != "POINT" or attr.name.startswith("."):
            continue
        if attr.data_type == "FLOAT":
            values = np.empty(n, dtype=np.float32)
            as_type(attr, bpy.types.FloatAttribute).data.foreach_get("value", values)
        elif attr.data_type == "FLOAT_VECTOR":
            values = np.empty(n * 3, dtype=np.float32)
            as_type(attr, bpy.types.FloatVectorAttribute).data.foreach_get("vector", values)
        else:
            continue
        out[attr.name] = (attr.data_type, values)
    return out


def rebuild_point_mesh(mesh: bpy.types.Mesh, positions: FloatArray, attributes: PointAttributes) -> None:
    """Make ``mesh`` a vertex-only mesh at ``positions`` with the point ``attributes`` given."""
    mesh.clear_geometry()
    mesh.vertices.add(len(positions))
    for name, (data_type, values) in attributes.items():
        kind: Any = data_type  # "FLOAT" or "FLOAT_VECTOR" (read_point_attributes)
        attr = mesh.attributes.get(name) or mesh.attributes.new(name, kind, "POINT")
        # FLOAT or FLOAT_VECTOR when new; an existing attribute of that name is written as it is.
        cast("bpy.types.FloatAttribute | bpy.types.FloatVectorAttribute", attr).data.foreach_set(
            "value" if data_type == "FLOAT" else "vector", values
        )
    write_positions(mesh, positions)
