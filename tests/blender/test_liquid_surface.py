"""The liquid surface (blender/liquid_surface.py): a plain Geometry Nodes group on a fluid's point object.

The point objects here are made by hand (a vertex-only mesh, as the Fluid role writes one), so these
tests check the surface alone: its shape against the block of particles it wraps, the Spheres
choice, parked (inactive) particles, a Cycles render, and a saved file rendering without the add-on.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .conftest import addon_module, run_blender_without_addon

R = 0.05  # particle radius (m)
SIDE = 8  # particles per side of the block


def liquid() -> Any:
    return addon_module("blender.liquid_surface")


def point_object(bpy: ModuleType, points: np.ndarray, name: str = "Fluid Particles") -> Any:
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(points))
    mesh.vertices.foreach_set("co", np.asarray(points, dtype=np.float32).reshape(-1))
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def block(offset: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """SIDE^3 particle centres two radii apart: fluid at rest density filling a cube of side 2 R SIDE."""
    g = (np.arange(SIDE) + 0.5) * 2 * R
    return np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) + np.asarray(offset)


def evaluated_mesh(bpy: ModuleType, obj: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Vertices, triangles and the number of edges not shared by exactly two faces."""
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", tris)
    loop_edges = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("edge_index", loop_edges)
    faces_per_edge = np.bincount(loop_edges, minlength=len(mesh.edges))
    open_edges = int(np.count_nonzero(faces_per_edge != 2))
    ev.to_mesh_clear()
    return co.reshape(-1, 3).astype(np.float64), tris.reshape(-1, 3), open_edges


def enclosed_volume(co: np.ndarray, tris: np.ndarray) -> float:
    """V = sum over triangles of a . (b x c) / 6 (divergence theorem; exact for a closed mesh)."""
    a, b, c = co[tris[:, 0]], co[tris[:, 1]], co[tris[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def point_clouds(bpy: ModuleType, obj: Any) -> list[int]:
    """Point counts of the point clouds ``obj`` renders (depsgraph instances, see BLENDER_NOTES)."""
    counts = []
    for inst in bpy.context.evaluated_depsgraph_get().object_instances:
        if inst.is_instance and inst.object.type == "POINTCLOUD" and inst.parent.original == obj:
            counts.append(len(inst.object.data.attributes["position"].data))
    return counts


def test_block_of_particles_becomes_a_closed_surface_of_its_volume(bpy_clean: ModuleType) -> None:
    """Particles two radii apart fill a cube of side L = 2 R SIDE (each owns a (2R)^3 cell), so the
    surface should wrap that cube: faces one radius outside the outer centres, volume L^3. What it loses:
    edges rounded with radius ~R, (1 - pi/4) R^2 x 12 L = 0.0054 m^3 of 0.512 (1 %), and the faces'
    lattice bumps (their mean is calibrated by DROP_FACTOR to lie at +R within 0.02 R at the default
    resolution and smoothing: 6 L^2 x 1 mm = 0.8 %). Measured: 0.999 L^3. Allowed: 3 %."""
    bpy = bpy_clean
    obj = point_object(bpy, block())
    water = bpy.data.materials.new("Water")
    modifier = liquid().ensure_liquid_surface(obj, water, radius=R)
    co, tris, open_edges = evaluated_mesh(bpy, obj)
    assert len(co) > 0
    assert len(tris) > 0
    assert open_edges == 0  # a closed, two-manifold surface
    voxel = 2 * R / liquid().DEFAULT_RESOLUTION
    side = 2 * R * SIDE
    np.testing.assert_allclose(co.min(axis=0), 0.0, atol=voxel)
    np.testing.assert_allclose(co.max(axis=0), side, atol=voxel)
    volume = enclosed_volume(co, tris)
    assert abs(volume / side**3 - 1.0) < 0.03, volume / side**3
    assert liquid().modifier_input(modifier, "Material") == water
    assert modifier.use_pin_to_last


def test_one_group_per_file_and_settings_update_the_modifier(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    first, second = point_object(bpy, block()), point_object(bpy, block((2, 0, 0)), "Other")
    mod = liquid().ensure_liquid_surface(first, None, radius=R)
    liquid().ensure_liquid_surface(second, None, radius=R)
    coarse = len(evaluated_mesh(bpy, first)[0])
    mod.name = "Renamed by the user"
    again = liquid().ensure_liquid_surface(first, None, resolution=8.0, smoothing=0, radius=R)
    assert again == mod
    assert len([m for m in first.modifiers if m.type == "NODES"]) == 1
    assert [g.name for g in bpy.data.node_groups] == [liquid().NODE_GROUP_NAME]
    assert liquid().modifier_input(mod, "Resolution") == 8.0
    assert liquid().modifier_input(mod, "Smoothing") == 0
    # Twice the resolution: about four times the surface vertices.
    assert len(evaluated_mesh(bpy, first)[0]) > 3 * coarse


def test_parked_particles_are_deleted_and_a_lone_drop_has_the_particle_radius(bpy_clean: ModuleType) -> None:
    """A fluid parks its free slots below INACTIVE_BELOW_Z: they must not draw. A single live particle
    is a drop of DROP_FACTOR radii (a ball of BLOB_FACTOR radii shrunk by BLOB_FACTOR - DROP_FACTOR)."""
    bpy = bpy_clean
    parked = [0.0, 0.0, liquid().INACTIVE_BELOW_Z * 1.5]
    obj = point_object(bpy, np.array([[1.0, 2.0, 3.0], parked, parked]))
    liquid().ensure_liquid_surface(obj, None, radius=R)
    co, _, open_edges = evaluated_mesh(bpy, obj)
    assert len(co) > 0
    assert open_edges == 0
    distance = np.linalg.norm(co - [1.0, 2.0, 3.0], axis=1)
    voxel = 2 * R / liquid().DEFAULT_RESOLUTION
    drop = liquid().DROP_FACTOR * R
    assert abs(distance.mean() - drop) < voxel / 2, distance.mean()
    assert distance.max() < drop + voxel
    # Spheres: one point per live particle, the parked ones gone.
    liquid().ensure_liquid_surface(obj, None, surface="SPHERES", radius=R)
    assert point_clouds(bpy, obj) == [1]
    # Only parked particles (a pure emitter before it starts): nothing to draw, no error.
    only_parked = point_object(bpy, np.array([parked]), "Empty Fluid")
    liquid().ensure_liquid_surface(only_parked, None, radius=R)
    assert len(evaluated_mesh(bpy, only_parked)[0]) == 0


def test_spheres_mode_gives_one_sphere_per_particle(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    obj = point_object(bpy, block())
    liquid().ensure_liquid_surface(obj, None, surface="SPHERES", radius=R)
    assert point_clouds(bpy, obj) == [SIDE**3]
    liquid().ensure_liquid_surface(obj, None, surface="MESH", radius=R)
    assert point_clouds(bpy, obj) == []
    assert len(evaluated_mesh(bpy, obj)[0]) > 0


RENDER = """
import sys, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
assert "unified_particles" not in bpy.context.preferences.addons.keys()
obj = bpy.data.objects["Fluid Particles"]
ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
print("VERTICES", len(ev.to_mesh().vertices))
ev.to_mesh_clear()
bpy.context.scene.render.filepath = sys.argv[2]
bpy.ops.render.render(write_still=True)
print("DONE")
"""


def _render_scene(bpy: ModuleType, obj: Any) -> None:
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 4
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = 64, 48
    scene.render.resolution_percentage = 100
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):
        settings.media_type = "IMAGE"
    settings.file_format = "PNG"
    bpy.ops.object.camera_add(location=(0.4, -1.6, 1.6), rotation=(np.radians(55), 0.0, 0.0))
    scene.camera = bpy.context.active_object
    bpy.ops.object.light_add(type="SUN", rotation=(np.radians(40), 0.0, np.radians(20)))
    world = bpy.data.worlds.new("World")
    world.color = (0.0, 0.0, 0.0)
    if world.node_tree is not None:  # 5.0+: worlds always use nodes
        world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.0
    scene.world = world  # black background: the surface is what lights up


def _lit_fraction(bpy: ModuleType, path: Path) -> float:
    image = bpy.data.images.load(str(path))
    pixels = np.array(image.pixels[:]).reshape(-1, 4)
    bpy.data.images.remove(image)
    return float(np.mean(pixels[:, :3].max(axis=1) > 0.05))


def test_renders_in_cycles_and_without_the_addon(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    obj = point_object(bpy, block())
    water = bpy.data.materials.new("Water")
    water.diffuse_color = (0.2, 0.5, 1.0, 1.0)
    liquid().ensure_liquid_surface(obj, water, radius=R)
    _render_scene(bpy, obj)
    still = tmp_path / "with_addon.png"
    bpy.context.scene.render.filepath = str(still)
    bpy.ops.render.render(write_still=True)
    lit = _lit_fraction(bpy, still)
    # The 0.8 m cube seen from 2.3 m with a 50 mm lens covers about half the frame (measured 0.46).
    assert 0.25 < lit < 0.7, lit
    blend = tmp_path / "liquid.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))

    without = tmp_path / "without_addon.png"
    proc = run_blender_without_addon(RENDER, str(blend), str(without))
    log = proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, log
    assert "DONE" in proc.stdout, log
    vertices = int(proc.stdout.split("VERTICES", 1)[1].split()[0])
    assert vertices > 0
    assert abs(_lit_fraction(bpy, without) - lit) < 0.02
