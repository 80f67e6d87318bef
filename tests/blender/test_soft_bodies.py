"""Soft bodies and balloons as a user makes them: the sidebar's Soft Body button and presets (Jelly; Clay
with a Pin Group), a cloth with Pressure, the live simulation, a bake, and the file replayed by a Blender
without the add-on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

from .helpers import add_cube, add_plane, run_op, small_scene
from .test_bake import REOPEN_SCRIPT, evaluated_local

FRAMES = 8


def _volume(v: np.ndarray, f: np.ndarray) -> float:
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def test_soft_body_and_balloon_from_the_sidebar_bake_and_replay_without_the_addon(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05, substeps=2, iterations=4)
    scene.frame_end = FRAMES
    ground = add_plane(bpy, size=6.0)
    assert run_op(bpy, "make_collider", ground) == {"FINISHED"}
    jelly = add_cube(bpy, 0.6, (0.0, 0.0, 0.5))
    bpy.ops.object.modifier_add(type="SUBSURF")  # a smooth render mesh over a coarse fill
    bpy.ops.object.modifier_apply(modifier=jelly.modifiers[0].name)
    assert run_op(bpy, "make_soft", jelly) == {"FINISHED"}
    assert jelly.unified_particles.role == "SOFT"
    assert run_op(bpy, "apply_preset", jelly, preset="SOFT_JELLY") == {"FINISHED"}
    assert jelly.unified_particles.soft_stiffness == 20.0
    # A Clay beam held at one end by its Pin Group: the pins stay, the rest sags (and, plastic, keeps it).
    clay = add_cube(bpy, 1.0, (-1.3, 0.0, 1.2))
    clay.scale = (0.6, 0.3, 0.3)
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    held = [v.index for v in clay.data.vertices if v.co.x < 0.0]
    clay.vertex_groups.new(name="Hold").add(held, 1.0, "REPLACE")
    assert run_op(bpy, "make_soft", clay) == {"FINISHED"}
    assert run_op(bpy, "apply_preset", clay, preset="SOFT_CLAY") == {"FINISHED"}
    assert clay.unified_particles.plastic_yield > 0.0
    clay.unified_particles.pin_group = "Hold"
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.3, location=(1.2, 0.0, 0.5))
    balloon = bpy.context.active_object
    assert run_op(bpy, "make_cloth", balloon) == {"FINISHED"}
    assert run_op(bpy, "apply_preset", balloon, preset="BALLOON") == {"FINISHED"}
    assert balloon.unified_particles.use_pressure
    # Deflate it over the shot: Inflation keyframed 1 -> 0.6.
    balloon.unified_particles.inflation = 1.0
    balloon.keyframe_insert("unified_particles.inflation", frame=1)
    balloon.unified_particles.inflation = 0.6
    balloon.keyframe_insert("unified_particles.inflation", frame=FRAMES)
    faces = np.array([list(p.vertices) for p in balloon.data.polygons])
    v0 = _volume(np.array([list(v.co) for v in balloon.data.vertices]), faces)
    names = {"jelly": jelly.name, "balloon": balloon.name, "clay": clay.name}
    # A camera and a light so the reopened file renders a frame.
    bpy.ops.object.camera_add(location=(5.0, -5.0, 3.0), rotation=(1.1, 0.0, 0.8))
    scene.camera = bpy.context.active_object
    bpy.ops.object.light_add(type="SUN", location=(0.0, 0.0, 5.0))
    scene.frame_set(1)

    live: dict[str, list[np.ndarray]] = {k: [] for k in names}
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        for key, name in names.items():
            live[key].append(evaluated_local(bpy, bpy.data.objects[name]))
    assert not scene.unified_particles.last_error, scene.unified_particles.last_error
    assert not np.array_equal(live["jelly"][0], live["jelly"][-1]), "the jelly should fall"
    # The Clay's pinned end stays where it was built (its particles exactly; the skinned render vertices
    # there within a fiftieth of the 5 cm particle radius: measured 0.1 mm); its free end hangs from it,
    # sagging a little (measured 0.8 mm after 8 frames) where unpinned it would have fallen 0.5 m.
    np.testing.assert_allclose(live["clay"][-1][held], live["clay"][0][held], atol=1e-3)
    free = [v.index for v in clay.data.vertices if v.co.x > 0.0]
    drop = live["clay"][0][free, 2].mean() - live["clay"][-1][free, 2].mean()
    assert 0.0002 < drop < 0.05, drop
    # The balloon deflated with its keyframed Inflation (0.6 at the last frame; one frame behind at most).
    ratio = _volume(live["balloon"][-1].astype(np.float64), faces) / v0
    assert 0.55 < ratio < 0.7, ratio

    blend = tmp_path / "soft.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert jelly.modifiers[-1].type == "MESH_CACHE"  # a soft body bakes to a point cache, as cloth
    expected = tmp_path / "expected.npz"
    np.savez(
        expected,
        names=np.array(json.dumps(names)),
        frames=np.array(FRAMES),
        **{k: np.array(v) for k, v in live.items()},
    )
    bpy.ops.wm.save_mainfile()

    env = dict(os.environ)
    fresh = tempfile.mkdtemp(prefix="up-no-addon-")
    env["BLENDER_USER_RESOURCES"] = fresh
    env["XDG_CACHE_HOME"] = os.path.join(fresh, "cache")
    proc = subprocess.run(
        [sys.executable, "-c", REOPEN_SCRIPT, str(blend), str(expected), str(tmp_path / "frame.png")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    log = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, log
    assert lines, log
    assert json.loads(lines[-1][7:]) == {"mismatches": []}


def test_blenders_soft_body_converts_to_ours(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    small_scene(bpy, radius=0.05)
    cube = add_cube(bpy, 0.6, (0.0, 0.0, 1.0))
    group = cube.vertex_groups.new(name="Goal")
    group.add([0, 1], 1.0, "REPLACE")
    bpy.ops.object.modifier_add(type="SOFT_BODY")
    sb = cube.soft_body
    sb.use_goal, sb.vertex_group_goal = True, "Goal"
    sb.use_edges, sb.pull, sb.push, sb.plastic = True, 0.5, 0.5, 20
    sb.mass = 0.5
    assert run_op(bpy, "convert_blender_physics", cube) == {"FINISHED"}
    s = cube.unified_particles
    assert s.role == "SOFT"
    assert s.pin_group == "Goal"
    assert s.mass_mode == "MASS"
    assert abs(s.mass - 0.5 * len(cube.data.vertices)) < 1e-6
    assert abs(s.soft_stiffness - 31.0) < 1e-6  # 2 + 58 x 0.5 Hz
    assert s.plastic_yield > 0.0
    mod = next(m for m in cube.modifiers if m.type == "SOFT_BODY")
    assert not mod.show_viewport  # Blender's no longer moves it
    assert not mod.show_render
