"""Pins that follow their object's animation (issue 12, part 1: object motion; keyframes and parents)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import addon_module as module
from .conftest import run_blender_without_addon
from .helpers import matrix, run_op, small_scene, world_positions

FRAMES = 13

# A fresh Blender without the add-on: the world positions of the cloth's evaluated vertices per frame.
REPLAY = """
import sys, numpy as np, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
scene, out = bpy.context.scene, []
cloth = bpy.data.objects["Cape"]
for frame in range(1, int(sys.argv[3]) + 1):
    scene.frame_set(frame)
    dg = bpy.context.evaluated_depsgraph_get()
    ev = cloth.evaluated_get(dg)
    me = ev.to_mesh()
    co = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", co)
    m = np.array([list(r) for r in ev.matrix_world])
    out.append(co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3])
    ev.to_mesh_clear()
np.save(sys.argv[2], np.array(out))
print("DONE")
"""


def _cape(bpy: ModuleType, parent: bool) -> tuple[Any, Any, np.ndarray]:
    """A 1 m cloth hanging in the x-z plane, its top edge pinned, carried 2 m along x over the frames by
    its own keyframes or by a keyframed parent empty."""
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    scene = small_scene(bpy, radius=0.05, substeps=4, iterations=4)
    scene.frame_end = FRAMES
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=1.0, location=(0, 0, 2))
    cape = bpy.context.active_object
    cape.name = "Cape"
    cape.rotation_euler = (np.pi / 2, 0.0, 0.0)  # hangs in the x-z plane
    bpy.context.view_layer.update()
    z = world_positions(cape)[:, 2]
    pins = np.flatnonzero(np.isclose(z, z.max()))
    group = cape.vertex_groups.new(name="Pins")
    group.add([int(i) for i in pins], 1.0, "REPLACE")
    mover = cape
    if parent:
        bpy.ops.object.empty_add(location=(0.0, 0.0, 0.0))
        mover = bpy.context.active_object
        cape.parent = mover
    mover.keyframe_insert("location", frame=1)
    mover.location.x += 2.0
    mover.keyframe_insert("location", frame=FRAMES)
    scene.frame_set(1)
    run_op(bpy, "make_cloth", cape)
    cape.unified_particles.pin_group = "Pins"
    return scene, cape, pins


def _rest_local(cape: Any) -> np.ndarray:
    mesh = cape.data
    flat = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.attributes["position"].data.foreach_get("vector", flat)
    return flat.reshape(-1, 3).astype(np.float64)


def test_pins_follow_keyframes_and_parents_and_pull_the_cape_along(bpy_clean: ModuleType) -> None:
    """Each frame the pinned vertices are where the object's matrix of that frame puts their rest
    positions (float32 storage: 1e-5 m); the free part is pulled along (its mean x moves more than half
    the 2 m travel; without moving pins it stays behind at x = 0)."""
    bpy = bpy_clean
    for parent in (False, True):
        bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
        scene, cape, pins = _cape(bpy, parent)
        scene.frame_set(1)
        rest = _rest_local(cape)
        for frame in range(1, FRAMES + 1):
            scene.frame_set(frame)
            expected = rest[pins] @ matrix(cape)[:3, :3].T + matrix(cape)[:3, 3]
            np.testing.assert_allclose(world_positions(cape)[pins], expected, atol=1e-5, err_msg=f"{frame}")
        free = np.setdiff1d(np.arange(len(rest)), pins)
        assert world_positions(cape)[free, 0].mean() > 1.0, world_positions(cape)[free, 0].mean()
        assert scene.unified_particles.last_error == ""


def test_jumping_playing_and_the_bake_without_the_addon_agree(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    scene, cape, _ = _cape(bpy, parent=False)
    played = []
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        played.append(world_positions(cape))
    bpy.ops.unified_particles.reset()
    scene.frame_set(1)
    scene.frame_set(FRAMES)  # a jump: the frames between are evaluated for the pins
    np.testing.assert_allclose(world_positions(cape), played[-1], atol=1e-6)
    scene.frame_set(1)
    blend = tmp_path / "cape.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    np.testing.assert_allclose(_replay(blend, tmp_path), np.array(played), atol=2e-5)


def test_jumping_over_frames_of_an_animated_collider_gives_the_played_frame(bpy_clean: ModuleType) -> None:
    """The frames skipped by a jump are evaluated one by one; the last one must be read at the frame jumped
    to, not at the frame before it (the scene was last evaluated there)."""
    bpy = bpy_clean
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, -1.0))
    floor = bpy.context.active_object
    floor.keyframe_insert("location", frame=1)
    floor.location.z = 0.0
    floor.keyframe_insert("location", frame=FRAMES)
    run_op(bpy, "make_collider", floor)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=5, y_subdivisions=5, size=1.0, location=(0, 0, 0.3))
    cloth = bpy.context.active_object
    run_op(bpy, "make_cloth", cloth)
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
    played = world_positions(cloth)
    bpy.ops.unified_particles.reset()
    scene.frame_set(1)
    scene.frame_set(FRAMES)
    np.testing.assert_allclose(world_positions(cloth), played, atol=1e-6)


def _deformed_cape(bpy: ModuleType, driver: str) -> tuple[Any, Any, np.ndarray, np.ndarray, Any]:
    """A cape hanging in the x-z plane, its top edge pinned, slid 1 m along +x over the frames by a
    keyframed shape key or by an armature bone (with a Subdivision modifier after the armature, as
    artists have it). Returns the scene, the cape, the pinned vertices, their rest world positions and a
    function giving the current slide in metres (the key's value, or the bone's x)."""
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    scene = small_scene(bpy, radius=0.05, substeps=4, iterations=4)
    scene.frame_end = FRAMES
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=1.0, location=(0, 0, 2))
    cape = bpy.context.active_object
    cape.name = "Cape"
    cape.rotation_euler = (np.pi / 2, 0.0, 0.0)
    bpy.context.view_layer.update()
    rest = world_positions(cape)
    pins = np.flatnonzero(np.isclose(rest[:, 2], rest[:, 2].max()))
    cape.vertex_groups.new(name="Pins").add([int(i) for i in pins], 1.0, "REPLACE")
    if driver == "shape_key":
        cape.shape_key_add(name="Basis")
        slide = cape.shape_key_add(name="Slide")
        for point in slide.data:
            point.co.x += 1.0  # local x is world x
        slide.value = 0.0
        slide.keyframe_insert("value", frame=1)
        slide.value = 1.0
        slide.keyframe_insert("value", frame=FRAMES)

        def current() -> float:
            return float(slide.value)
    else:
        bpy.ops.object.armature_add(location=(0.0, 0.0, 0.0))
        rig = bpy.context.active_object
        bone = rig.pose.bones["Bone"]  # points along +z: its local x is world x
        bone.keyframe_insert("location", frame=1)
        bone.location.x = 1.0
        bone.keyframe_insert("location", frame=FRAMES)
        cape.vertex_groups.new(name="Bone").add(list(range(len(rest))), 1.0, "REPLACE")
        armature = cape.modifiers.new("Armature", "ARMATURE")
        armature.object = rig
        cape.modifiers.new("Subdivision", "SUBSURF").levels = 1

        def current() -> float:
            return float(bone.location.x)

    scene.frame_set(1)
    run_op(bpy, "make_cloth", cape)
    cape.unified_particles.pin_group = "Pins"
    return scene, cape, pins, rest[pins], current


@pytest.mark.parametrize("driver", ["shape_key", "armature"])
def test_pins_ride_on_shape_keys_and_armatures_and_the_result_lands_after_them(
    bpy_clean: ModuleType, tmp_path: Path, driver: str
) -> None:
    """Each frame the pinned vertices are where the deformers put them: their rest place slid along x by
    the key's value (or the bone's x) of that frame, to float32 precision. The simulated shape replaces
    the deformed one (the deformers do not move it a second time), the free part is pulled along without
    tearing the edges next to the pins, and
    the Point Cache bake replays the same evaluated mesh in a Blender without the add-on."""
    bpy = bpy_clean
    scene, cape, pins, pins_rest, slide = _deformed_cape(bpy, driver)
    assert cape.modifiers[-1 if driver == "shape_key" else 1].name == "Unified Particles Cloth"
    simulation = module("blender.simulation")
    edges = np.array([tuple(e.vertices) for e in cape.data.edges])
    shown, stretch = [], []
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        offset = np.array([slide(), 0.0, 0.0])
        cloth = simulation.find_simulation(scene).world.bodies[0]
        np.testing.assert_allclose(
            cloth.vertex_positions[pins], pins_rest + offset, atol=1e-5, err_msg=f"{frame}"
        )
        if driver == "shape_key":  # no generative modifier: the evaluated mesh is the simulated one
            np.testing.assert_allclose(
                world_positions_evaluated(bpy, cape), cloth.vertex_positions, atol=1e-5
            )
        shown.append(world_positions_evaluated(bpy, cape))
        p = cloth.vertex_positions
        if frame == 1:
            rest_length = np.linalg.norm(p[edges[:, 0]] - p[edges[:, 1]], axis=1)
        stretch.append((np.linalg.norm(p[edges[:, 0]] - p[edges[:, 1]], axis=1) / rest_length).max())
    assert scene.unified_particles.last_error == ""
    # Edges next to the pins are pulled, not torn: the tethers' 2 % give (stretch stiffness 1) plus the
    # few per cent the edge solve adds after them (docs/physics.md); measured 2.1 %.
    assert max(stretch) < 1.05, max(stretch)
    free = np.setdiff1d(np.arange(len(cloth.vertex_positions)), pins)
    assert cloth.vertex_positions[free, 0].mean() > 0.5
    # The bake: a Mesh Cache right after the result modifier, replayed without the add-on.
    scene.frame_set(1)
    blend = tmp_path / "deformed.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    names = [m.name for m in cape.modifiers]
    assert names.index("Unified Particles Bake") == names.index("Unified Particles Cloth") + 1
    bpy.ops.wm.save_mainfile()
    np.testing.assert_allclose(_replay(blend, tmp_path), np.array(shown), atol=2e-5)


def world_positions_evaluated(bpy: ModuleType, obj: Any) -> np.ndarray:
    """World positions of the evaluated (modifiers applied) mesh's vertices."""
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    flat = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", flat)
    ev.to_mesh_clear()
    m = matrix(obj)
    return flat.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def _replay(blend: Path, tmp_path: Path) -> np.ndarray:
    """World positions of the cape's evaluated vertices at every frame, in a Blender without the add-on."""
    out = tmp_path / "replay.npy"
    proc = run_blender_without_addon(REPLAY, str(blend), str(out), str(FRAMES))
    log = proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, log
    assert "DONE" in proc.stdout, log
    return np.asarray(np.load(out))


def test_pin_stiffness_below_one_makes_soft_pins_that_follow_the_object(bpy_clean: ModuleType) -> None:
    """Pin Stiffness 0.5, every vertex in the Pin Group at weight 1: each hangs on a spring of
    f = 0.5 Hz x 100^0.5 = 5 Hz (materials.soft_pin_frequency) and carries only itself, so it sags
    g / (2 pi f)^2 = 9.9 mm (times exp(-d h) with damping d, see tests/core/test_moving_pins.py), to the
    settling left after 2 s of damping 6/s: 0.2 mm. Then the object is carried 1 m along x by keys, and a
    second later the sheet hangs under its anchors again."""
    bpy = bpy_clean
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    scene = small_scene(bpy, radius=0.05)
    scene.unified_particles.damping = 6.0
    scene.frame_end = 120
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=0.5, location=(0, 0, 1))
    sheet = bpy.context.active_object
    sheet.vertex_groups.new(name="Pins").add(list(range(len(sheet.data.vertices))), 1.0, "REPLACE")
    sheet.keyframe_insert("location", frame=48)
    sheet.location.x = 1.0
    sheet.keyframe_insert("location", frame=72)
    scene.frame_set(1)
    rest = world_positions(sheet)
    run_op(bpy, "make_cloth", sheet)
    sheet.unified_particles.pin_group = "Pins"
    sheet.unified_particles.pin_stiffness = 0.5
    for frame in range(1, 49):
        scene.frame_set(frame)
    assert scene.unified_particles.last_error == ""
    h = 1.0 / (24 * 16)
    sag = np.exp(-6.0 * h) * 9.81 / (2.0 * np.pi * 5.0) ** 2
    np.testing.assert_allclose(rest[:, 2] - world_positions(sheet)[:, 2], sag, atol=2e-4)
    for frame in range(49, 97):
        scene.frame_set(frame)
    np.testing.assert_allclose(world_positions(sheet)[:, 0], rest[:, 0] + 1.0, atol=2e-3)
    # Stiffness 1 holds them exactly (hard pins), as before.
    sheet.unified_particles.pin_stiffness = 1.0
    scene.frame_set(1)
    scene.frame_set(24)
    np.testing.assert_allclose(world_positions(sheet), rest, atol=1e-6)
