"""Deforming colliders (issue 12, part 2): a collider whose evaluated mesh changes (shape keys, armature,
deform modifiers) is read again every frame; what rests on it is carried, what is in its way is pushed."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .conftest import addon_module as module
from .conftest import run_blender_without_addon
from .helpers import matrix, run_op, small_scene

RISE_START, RISE_END, FRAMES = 5, 17, 22
RISE = 0.5  # metres the shape key raises the platform's top
R = 0.05

# A fresh Blender without the add-on: the box's world matrix per frame.
REPLAY = """
import sys, numpy as np, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
scene, out = bpy.context.scene, []
box = bpy.data.objects["Box"]
for frame in range(1, int(sys.argv[3]) + 1):
    scene.frame_set(frame)
    ev = box.evaluated_get(bpy.context.evaluated_depsgraph_get())
    out.append(np.array([list(r) for r in ev.matrix_world]))
np.save(sys.argv[2], np.array(out))
print("DONE")
"""


def _platform_scene(bpy: ModuleType) -> tuple[Any, Any, Any]:  # scene, platform, box
    """A 2 m cube collider with its top at z = 0 whose shape key "Rise" lifts the top face by RISE between
    frames RISE_START and RISE_END (linear), and a 0.4 m rigid box resting on it."""
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    scene = small_scene(bpy, radius=R, substeps=4, iterations=4)
    scene.frame_end = FRAMES
    bpy.ops.mesh.primitive_cube_add(size=2.0, location=(0.0, 0.0, -1.0))
    platform = bpy.context.active_object
    platform.name = "Platform"
    platform.shape_key_add(name="Basis")
    rise = platform.shape_key_add(name="Rise")
    for point in rise.data:
        if point.co.z > 0.0:
            point.co.z += RISE
    rise.value = 0.0
    rise.keyframe_insert("value", frame=RISE_START)
    rise.value = 1.0
    rise.keyframe_insert("value", frame=RISE_END)
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(0.0, 0.0, 0.2))
    box = bpy.context.active_object
    box.name = "Box"
    scene.frame_set(1)
    run_op(bpy, "make_collider", platform)
    run_op(bpy, "make_rigid", box)
    return scene, platform, box


def test_shape_key_platform_lifts_a_box_and_the_bake_replays_it(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    """The box rests on the platform, then rises with it by the shape key's RISE (the box's height above
    the top face stays what it was at rest, within a radius' tenth), and the baked motion plays back the
    same in a Blender without the add-on. Without re-reading the mesh the box would stay at rest."""
    bpy = bpy_clean
    scene, _, box = _platform_scene(bpy)
    played = []
    heights = {}
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        played.append(matrix(box))
        heights[frame] = matrix(box)[2, 3]
    assert scene.unified_particles.last_error == ""
    sim = module("blender.simulation").find_simulation(scene)
    collider = next(b for b in sim.world.meshes if b.name == "Platform")
    assert collider.deforming
    # Rising at RISE / 12 frames = 1 m/s: the box rides on it (the top is at RISE after RISE_END).
    lifted = heights[FRAMES] - heights[RISE_START]
    assert abs(lifted - RISE) < 0.1 * R, (heights[RISE_START], heights[FRAMES])
    # Jumping back and replaying from the frame cache gives the same frames.
    scene.frame_set(RISE_START + 2)
    np.testing.assert_allclose(matrix(box), played[RISE_START + 1], atol=1e-6)
    # Bake, replay without the add-on.
    scene.frame_set(1)
    blend = tmp_path / "platform.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    np.testing.assert_allclose(_replay(blend, tmp_path), np.array(played), atol=2e-5)


def test_static_modifiers_keep_the_fast_path(bpy_clean: ModuleType) -> None:
    """A Solidified plane that does not change stays a rigid collider (its mesh is read, found equal)."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R, substeps=2, iterations=2)
    bpy.ops.mesh.primitive_plane_add(size=4.0, location=(0.0, 0.0, 0.0))
    floor = bpy.context.active_object
    floor.name = "Floor"
    floor.modifiers.new("Solidify", "SOLIDIFY").thickness = 0.2
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(0.0, 0.0, 0.5))
    box = bpy.context.active_object
    run_op(bpy, "make_collider", floor)
    run_op(bpy, "make_rigid", box)
    for frame in range(1, 13):
        scene.frame_set(frame)
    sim = module("blender.simulation").find_simulation(scene)
    collider = next(b for b in sim.world.meshes if b.name == "Floor")
    assert not collider.deforming
    assert matrix(box)[2, 3] > 0.0  # resting on the floor's top (Solidify goes down by default)
    assert scene.unified_particles.last_error == ""


def test_armature_driven_collider_pushes_grains(bpy_clean: ModuleType) -> None:
    """A 0.6 m cube collider moved 1.2 m along +x by an armature bone (the object itself stays still)
    sweeps through a block of grains on a ground plane: every grain ends ahead of its leading face or
    beside it, none inside it."""
    bpy = bpy_clean
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    scene = small_scene(bpy, radius=R, substeps=4, iterations=4)
    frames = 16
    scene.frame_end = frames
    bpy.ops.mesh.primitive_plane_add(size=6.0, location=(0.0, 0.0, 0.0))
    ground = bpy.context.active_object
    bpy.ops.mesh.primitive_cube_add(size=0.6, location=(-0.6, 0.0, 0.3))
    pusher = bpy.context.active_object
    pusher.name = "Pusher"
    bpy.ops.object.armature_add(location=(0.0, 0.0, 0.0))
    rig = bpy.context.active_object
    bone = rig.pose.bones["Bone"]  # points along +z: its local x is world x
    bone.keyframe_insert("location", frame=1)
    bone.location.x = 1.2
    bone.keyframe_insert("location", frame=frames - 4)
    pusher.vertex_groups.new(name="Bone").add(list(range(8)), 1.0, "REPLACE")
    pusher.modifiers.new("Armature", "ARMATURE").object = rig
    bpy.ops.mesh.primitive_cube_add(size=0.3, location=(0.2, 0.0, 0.2))
    sand = bpy.context.active_object
    scene.frame_set(1)
    run_op(bpy, "make_collider", ground)
    ground.unified_particles.collider_shape = "PLANE"
    run_op(bpy, "make_collider", pusher)
    run_op(bpy, "make_granular", sand)
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
    assert scene.unified_particles.last_error == ""
    sim = module("blender.simulation").find_simulation(scene)
    world = sim.world
    collider = next(b for b in world.meshes if b.name == "Pusher")
    assert collider.deforming
    grains = next(b for b in world.bodies if b.name == sand.name)
    x = world.positions[grains.indices]
    face = -0.6 + 1.2 + 0.3  # the pusher's leading face, x = 0.9
    inside = (np.abs(x[:, 1]) < 0.3) & (x[:, 2] < 0.6) & (x[:, 0] > face - 0.6) & (x[:, 0] < face)
    assert not inside.any(), x[inside]
    assert x[:, 0].mean() > face  # pushed: the block started at x = 0.2, behind x = 0.9


def _replay(blend: Path, tmp_path: Path) -> np.ndarray:
    out = tmp_path / "replay.npy"
    proc = run_blender_without_addon(REPLAY, str(blend), str(out), str(FRAMES))
    log = proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, log
    assert "DONE" in proc.stdout, log
    return np.asarray(np.load(out))
