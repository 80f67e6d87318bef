"""Small helpers for driving Blender as a user would in the tests."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np


def select_only(bpy: ModuleType, *objects: Any) -> None:
    """Select exactly ``objects``; the first becomes active."""
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for obj in objects:
        obj.select_set(True)
    if objects:
        bpy.context.view_layer.objects.active = objects[0]


def view3d_override(bpy: ModuleType) -> dict[str, Any]:
    """Context members of a 3D View, as when clicking the sidebar buttons."""
    window = bpy.context.window_manager.windows[0]
    screen = window.screen
    area = next((a for a in screen.areas if a.type == "VIEW_3D"), None)
    if area is None:  # the empty factory file may open with another editor: make one a 3D View
        area = screen.areas[0]
        area.type = "VIEW_3D"
    region = next(r for r in area.regions if r.type == "WINDOW")
    return {"window": window, "screen": screen, "area": area, "region": region}


def run_op(bpy: ModuleType, name: str, *objects: Any, **props: Any) -> set[str]:
    """Select ``objects`` and run ``bpy.ops.unified_particles.<name>`` from a 3D View context."""
    select_only(bpy, *objects)
    with bpy.context.temp_override(**view3d_override(bpy)):
        result: set[str] = getattr(bpy.ops.unified_particles, name)(**props)
    return result


def add_cube(
    bpy: ModuleType, size: float = 1.0, location: tuple[float, float, float] = (0, 0, 0), **kw: Any
) -> Any:
    bpy.ops.mesh.primitive_cube_add(size=size, location=location, **kw)
    return bpy.context.active_object


def add_plane(bpy: ModuleType, size: float = 10.0, location: tuple[float, float, float] = (0, 0, 0)) -> Any:
    bpy.ops.mesh.primitive_plane_add(size=size, location=location)
    return bpy.context.active_object


def matrix(obj: Any) -> np.ndarray:
    return np.array([list(row) for row in obj.matrix_world], dtype=np.float64)


def local_positions(obj: Any) -> np.ndarray:
    mesh = obj.data
    flat = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.attributes["position"].data.foreach_get("vector", flat)
    return flat.reshape(-1, 3).astype(np.float64)


def world_positions(obj: Any) -> np.ndarray:
    m = matrix(obj)
    return local_positions(obj) @ m[:3, :3].T + m[:3, 3]


def small_scene(bpy: ModuleType, radius: float = 0.1, substeps: int = 4, iterations: int = 4) -> Any:
    scene = bpy.context.scene
    settings = scene.unified_particles
    settings.particle_radius = radius
    settings.substeps = substeps
    settings.iterations = iterations
    scene.frame_start = 1
    scene.frame_end = 250
    scene.frame_set(1)
    return scene


def remove_faces(obj: Any) -> None:
    """Delete every face of ``obj``'s mesh, keeping its vertices (a cloth that can no longer be built)."""
    import bmesh

    bm = bmesh.new()
    bm.from_mesh(obj.data)
    bmesh.ops.delete(bm, geom=list(bm.faces), context="FACES_ONLY")
    bm.to_mesh(obj.data)
    bm.free()
    obj.data.update()
