# SPDX-License-Identifier: GPL-3.0-or-later
"""The mesh of a tearing cloth (Tear Strain above 0): triangles with their own vertices.

The core simulates the cloth welded and draws it unwelded (core/tearing.py: every triangle corner follows a
particle, and a tear changes which). So that the object shows the pieces part, and its bake (shape keys,
point cache, Alembic: one position per vertex) replays them without the add-on, the object's mesh is
triangulated and split along every edge before the simulation reads it (:func:`unweld`, once: the mesh
stays so; UVs, materials and vertex groups carry over). The reader welds it back by position for the core
(:func:`welded`), and write-back puts each render vertex where its corner's particle is.
"""

from __future__ import annotations

from typing import Any

import bmesh
import bpy
import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def is_unwelded(mesh: bpy.types.Mesh) -> bool:
    """Only triangles, each with three vertices of its own."""
    n = len(mesh.polygons)
    if n == 0 or len(mesh.loops) != 3 * n or len(mesh.vertices) != 3 * n:
        return False
    used = np.empty(3 * n, dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", used)
    return bool(np.array_equal(np.sort(used), np.arange(3 * n)))


def unweld(obj: bpy.types.Object) -> bool:
    """Triangulate ``obj``'s mesh and give every triangle its own vertices; True if it changed."""
    mesh = obj.data
    assert isinstance(mesh, bpy.types.Mesh)
    if is_unwelded(mesh):
        return False
    bm = bmesh.new()
    try:
        bm.from_mesh(mesh)
        bmesh.ops.triangulate(bm, faces=bm.faces[:])
        bmesh.ops.split_edges(bm, edges=bm.edges[:])
        bm.to_mesh(mesh)
    finally:
        bm.free()
    mesh.update()
    return True


def welded(local: FloatArray) -> tuple[IntArray, IntArray]:
    """The welded cloth of an unwelded mesh: (welded vertex of each mesh vertex (V_mesh,), a mesh vertex of
    each welded vertex (V,)). ``local`` (V_mesh, 3) are the mesh's positions; coincident vertices (the split
    copies) become one."""
    _, first, inverse = np.unique(local, axis=0, return_index=True, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).ravel(), np.asarray(first, dtype=np.int64)


def cloth_positions(entry: Any) -> FloatArray:
    """A cloth entry's (``scene_reader.Entry``) world positions per mesh vertex, metres: a tearing cloth's
    render vertices each where its corner's particle is (the mesh is unwelded: one vertex per corner),
    else its vertices."""
    if entry.corners is None:
        return np.asarray(entry.body.vertex_positions, dtype=np.float64)
    out = np.empty((len(entry.corners), 3))
    out[entry.corners] = entry.body.render_positions
    return out
