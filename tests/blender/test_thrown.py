"""Thrown and animated bodies, as a user sets them up: Initial Velocity, and Animated keyframed on a rigid
body that follows its own keyframes, pushes another body, then flies on; baked, it replays without the add-on.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import run_blender_without_addon
from .helpers import add_cube, add_plane, matrix, run_op, small_scene, world_positions

G = 9.81
FPS = 24


def _small_steps(scene: Any) -> int:
    return int(scene.unified_particles.substeps) * int(scene.unified_particles.iterations)


def _linear_keys(bpy: ModuleType) -> None:
    # Set after read_homefile (which resets the preferences): linear keys, so the speed is constant.
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"


def _make_linear(obj: Any) -> None:
    """Every location key of ``obj`` linear (the preference above does not reach keyframe_insert in every
    version): constant speed between keys."""
    anim = obj.animation_data
    action = anim.action
    if hasattr(action, "fcurves"):  # Blender < 5.0
        curves = list(action.fcurves)
    else:
        curves = [
            c for layer in action.layers for s in layer.strips for c in s.channelbag(anim.action_slot).fcurves
        ]
    for curve in curves:
        if curve.data_path == "location":
            for key in curve.keyframe_points:
                key.interpolation = "LINEAR"
            curve.update()


def test_initial_velocity_throws_rigid_and_grains_along_the_parabola(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    box = add_cube(bpy, 0.4, (0.0, 0.0, 2.0))
    sand = add_cube(bpy, 0.4, (3.0, 0.0, 2.0))
    run_op(bpy, "make_rigid", box)
    run_op(bpy, "make_granular", sand)
    v_box, v_sand = (2.0, 1.0, 3.0), (-1.0, 0.0, 4.0)
    box.unified_particles.initial_velocity = v_box
    sand.unified_particles.initial_velocity = v_sand
    grains = sand.unified_particles.particle_object
    scene.frame_set(1)
    start_box = matrix(box)[:3, 3].copy()
    start_sand = world_positions(grains).mean(axis=0)
    h = 1.0 / FPS / _small_steps(scene)
    for frame in (7, 13):
        scene.frame_set(frame)
        t = (frame - 1) / FPS
        # x = x0 + v t; z = z0 + vz t - g t^2 / 2, less g h t / 2 from symplectic Euler (small step h).
        for got, x0, v in (
            (matrix(box)[:3, 3], start_box, v_box),
            (world_positions(grains).mean(axis=0), start_sand, v_sand),
        ):
            expected = x0 + np.array(v) * t + np.array([0.0, 0.0, -0.5 * G * t * t])
            np.testing.assert_allclose(got[:2], expected[:2], atol=1e-5)
            assert abs(got[2] - expected[2]) <= 0.5 * G * h * t + 1e-5, (frame, got, expected)


def _thrown_scene(bpy: ModuleType) -> dict[str, Any]:
    """A box keyframed from x = 0 to 0.9 m, 0.3 m up, over frames 1-10 (2.4 m/s), Animated on for 1-10,
    off from 11; a second box in its way at x = 1.6, on a ground plane."""
    _linear_keys(bpy)
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = 24
    ground = add_plane(bpy, size=20.0)
    run_op(bpy, "make_collider", ground)
    thrown = add_cube(bpy, 0.4, (0.0, 0.0, 0.3))
    thrown.name = "Thrown"
    target = add_cube(bpy, 0.4, (1.6, 0.0, 0.2))
    target.name = "Target"
    run_op(bpy, "make_rigid", thrown, target)
    thrown.keyframe_insert("location", frame=1)
    thrown.location.x = 0.9
    thrown.keyframe_insert("location", frame=10)
    _make_linear(thrown)
    settings = thrown.unified_particles
    settings.animated = True
    thrown.keyframe_insert("unified_particles.animated", frame=1)
    thrown.keyframe_insert("unified_particles.animated", frame=10)
    settings.animated = False
    thrown.keyframe_insert("unified_particles.animated", frame=11)
    scene.frame_set(1)
    return {"scene": scene, "thrown": thrown, "target": target}


def _keyed_x(frame: int) -> float:
    return 0.9 * (frame - 1) / 9.0


def test_animated_body_follows_its_keys_then_flies_on_with_their_velocity(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    objs = _thrown_scene(bpy)
    scene, thrown = objs["scene"], objs["thrown"]
    for frame in range(1, 11):
        scene.frame_set(frame)
        # Kinematic: exactly on its keys (no gravity, no fall), in the frame path's float32 matrices.
        np.testing.assert_allclose(matrix(thrown)[:3, 3], [_keyed_x(frame), 0.0, 0.3], atol=1e-5)
        assert thrown.unified_particles.animated
    h = 1.0 / FPS / _small_steps(scene)
    v = 0.1 * FPS  # the keys' speed, m/s
    for frame in (11, 12):  # before it reaches the other box
        scene.frame_set(frame)
        assert not thrown.unified_particles.animated
        t = (frame - 10) / FPS
        # Ballistic from the last key: x = 0.9 + v t, z = 0.3 - g t^2 / 2 (less g h t / 2, see above).
        x, _, z = matrix(thrown)[:3, 3]
        assert abs(x - (0.9 + v * t)) < 1e-4, (frame, x)
        assert abs(z - (0.3 - 0.5 * G * t * t)) <= 0.5 * G * h * t + 1e-4, (frame, z)


def test_animated_body_pushes_another_body(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    _linear_keys(bpy)
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    ground = add_plane(bpy, size=20.0)
    run_op(bpy, "make_collider", ground)
    pusher = add_cube(bpy, 0.4, (-1.0, 0.0, 0.2))
    box = add_cube(bpy, 0.4, (0.0, 0.0, 0.2))
    run_op(bpy, "make_rigid", pusher, box)
    pusher.unified_particles.animated = True  # on the whole time, not keyframed
    pusher.keyframe_insert("location", frame=1)
    pusher.location.x = 1.0
    pusher.keyframe_insert("location", frame=25)  # 2 m in one second
    _make_linear(pusher)
    scene.frame_set(1)
    for frame in range(2, 26):
        scene.frame_set(frame)
    # The pusher is on its keys; the box was shoved ahead of it, touching it (centres 0.4 m apart).
    np.testing.assert_allclose(matrix(pusher)[:3, 3], [1.0, 0.0, 0.2], atol=1e-5)
    gap = matrix(box)[0, 3] - matrix(pusher)[0, 3]
    assert 0.3 < gap < 0.6, gap
    assert abs(matrix(box)[2, 3] - 0.2) < 0.05


def test_animated_child_follows_its_moving_parent(bpy_clean: ModuleType) -> None:
    """A simulated child ignores its animated parent after the start frame, unless Animated is on: then it
    rides along (here a parent sliding 1 m along y over frames 1-11) and, let go, flies on at its speed."""
    bpy = bpy_clean
    _linear_keys(bpy)
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    bpy.ops.object.empty_add(location=(0.0, 0.0, 0.0))
    parent = bpy.context.active_object
    parent.keyframe_insert("location", frame=1)
    parent.location.y = 1.0
    parent.keyframe_insert("location", frame=11)
    _make_linear(parent)
    scene.frame_set(1)
    child = add_cube(bpy, 0.4, (0.0, 0.0, 1.0))
    child.parent = parent
    run_op(bpy, "make_rigid", child)
    child.unified_particles.animated = True
    child.keyframe_insert("unified_particles.animated", frame=1)
    child.unified_particles.animated = False
    child.keyframe_insert("unified_particles.animated", frame=12)
    scene.frame_set(1)
    for frame in range(2, 12):
        scene.frame_set(frame)
        np.testing.assert_allclose(matrix(child)[:3, 3], [0.0, (frame - 1) / 10, 1.0], atol=1e-5)
    scene.frame_set(14)  # released after frame 11: y goes on at 0.1 m per frame, and it falls
    _, y, z = matrix(child)[:3, 3]
    assert abs(y - 1.3) < 1e-4, y
    assert z < 1.0 - 0.5 * G * (2 / FPS) ** 2, z


def test_animated_body_follows_a_constraint(bpy_clean: ModuleType) -> None:
    """Animated with a Copy Location constraint to a keyframed empty: Blender's own evaluation places it."""
    bpy = bpy_clean
    _linear_keys(bpy)
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    bpy.ops.object.empty_add(location=(0.0, 0.0, 1.0))
    leader = bpy.context.active_object
    leader.keyframe_insert("location", frame=1)
    leader.location.z = 2.0
    leader.keyframe_insert("location", frame=11)
    _make_linear(leader)
    scene.frame_set(1)
    box = add_cube(bpy, 0.4, (0.0, 0.0, 1.0))
    constraint = box.constraints.new("COPY_LOCATION")
    constraint.target = leader
    run_op(bpy, "make_rigid", box)
    box.unified_particles.animated = True
    scene.frame_set(1)
    for frame in (2, 6, 11):
        scene.frame_set(frame)
        np.testing.assert_allclose(matrix(box)[:3, 3], [0.0, 0.0, 1.0 + (frame - 1) / 10], atol=1e-5)


REPLAY = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import bpy, addon_utils
    blend, frames = sys.argv[1], int(sys.argv[2])
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
    assert not any("unified_particles" in a.module for a in bpy.context.preferences.addons)
    assert not hasattr(bpy.types.Object, "unified_particles")
    out = {}
    for frame in range(1, frames + 1):
        bpy.context.scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        shown = {}
        for name in ("Thrown", "Target"):
            ev = bpy.data.objects[name].evaluated_get(depsgraph)
            mesh = ev.to_mesh()
            co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
            mesh.vertices.foreach_get("co", co)
            m = np.array([list(r) for r in ev.matrix_world])
            shown[name] = (co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]).tolist()
            ev.to_mesh_clear()
        out[frame] = shown
    print("RESULT " + json.dumps(out))
    """
)


@pytest.mark.parametrize("output", ["KEYFRAMES", "PC2"])
def test_bake_replays_the_animated_shot_without_the_addon(
    bpy_clean: ModuleType, tmp_path: Path, output: str
) -> None:
    bpy = bpy_clean
    objs = _thrown_scene(bpy)
    scene, thrown, target = objs["scene"], objs["thrown"], objs["target"]
    for obj in (thrown, target):
        obj.unified_particles_bake.rigid_output = output
    frames = int(scene.frame_end)
    live = {}
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
        live[frame] = {o.name: world_positions(o) for o in (thrown, target)}
    assert live[frames]["Target"][:, 0].mean() > 1.7, "the thrown box hit the other one"
    scene.frame_set(1)
    user_action = thrown.animation_data.action.name
    blend = tmp_path / "thrown.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    state = scene.unified_particles_bake
    assert state.baked
    assert not state.outdated
    if output == "KEYFRAMES":
        assert thrown.animation_data.action.name != user_action  # the baked keys play in its place
    else:
        assert thrown.animation_data.action.name == user_action  # its keys place it, the cache moves it
    bpy.ops.wm.save_mainfile()

    replayed = _run_replay(blend, frames)
    for frame in range(1, frames + 1):
        for name in ("Thrown", "Target"):
            # Keys and point caches are float32: the same motion to float32 precision.
            np.testing.assert_allclose(
                np.array(replayed[str(frame)][name]), live[frame][name], atol=5e-6, err_msg=f"{name} {frame}"
            )

    # Changing a thrown or animated setting marks the bake Outdated.
    thrown.unified_particles.initial_velocity = (0.0, 1.0, 0.0)
    assert state.outdated
    thrown.unified_particles.initial_velocity = (0.0, 0.0, 0.0)
    assert not state.outdated
    if output == "PC2":  # its own action is in place: key Animated on again at frame 15
        thrown.unified_particles.animated = True
        thrown.keyframe_insert("unified_particles.animated", frame=15)
        assert state.outdated
        thrown.keyframe_delete("unified_particles.animated", frame=15)
        assert not state.outdated
    # Free Bake gives the object its keys back, and the live simulation follows them again.
    assert run_op(bpy, "free_bake") == {"FINISHED"}
    assert thrown.animation_data.action.name == user_action
    scene.frame_set(5)
    np.testing.assert_allclose(matrix(thrown)[:3, 3], [_keyed_x(5), 0.0, 0.3], atol=1e-5)


def _run_replay(blend: Path, frames: int) -> dict[str, Any]:
    proc = run_blender_without_addon(
        REPLAY.replace("sys.argv[1], int(sys.argv[2])", f"{str(blend)!r}, {frames}")
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    log = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, log
    assert lines, log
    result: dict[str, Any] = json.loads(lines[-1][7:])
    return result
