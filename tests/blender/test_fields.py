"""Force field objects (Add > Force Field) acting on simulated objects, as a user sets them up.

Gravity is off so the field is the only force; a rigid cube of 8 particles keeps each test at a second
or two. Analytic references: a Force field of strength F pushes a body of mass M with a = F / (M fps)
(the whole body, as Blender's rigid body world does: it evaluates fields with vel_to_sec = fps, effect.cc
do_physical_effector divides the force by it), so after t seconds it moved a t^2 / 2 (semi-implicit
Euler adds a t h / 2 per small step h).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import PACKAGE, run_blender_without_addon
from .helpers import add_cube, matrix, run_op, small_scene

FPS = 24
FRAMES = 12


def runtime() -> ModuleType:
    return sys.modules[f"{PACKAGE}.blender.runtime"]


def scene_with_cube(bpy: ModuleType) -> tuple[Any, Any]:
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.use_gravity = False
    scene.render.fps = FPS
    scene.frame_end = FRAMES + 1
    cube = add_cube(bpy, 0.4, (0.0, 0.0, 1.0))
    assert run_op(bpy, "make_rigid", cube) == {"FINISHED"}
    return scene, cube


def add_field(
    bpy: ModuleType, kind: str, location: tuple[float, float, float], rotation=(0.0, 0.0, 0.0)
) -> Any:
    assert bpy.ops.object.effector_add(type=kind, location=location, rotation=rotation) == {"FINISHED"}
    return bpy.context.active_object


def body_mass(scene: Any, name: str) -> float:
    sim = runtime().SIMULATIONS[scene.name]
    entry = next(e for e in sim.entries if e.name == name)
    return float(entry.body.mass)


def centre_after(bpy: ModuleType, scene: Any, cube: Any, frame: int) -> np.ndarray:
    scene.frame_set(frame)
    return matrix(cube)[:3, 3].copy()


def test_force_field_pushes_a_rigid_body_by_f_over_m(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene, cube = scene_with_cube(bpy)
    # A PLANE-shaped Force field below the cube pushes along its Z axis (+Z), the same at every height.
    field = add_field(bpy, "FORCE", (0.0, 0.0, -1.0))
    field.field.shape = "PLANE"
    field.field.strength = 4.0 * FPS  # 4 N on a Blender rigid body at 24 fps
    start = centre_after(bpy, scene, cube, 1)
    end = centre_after(bpy, scene, cube, 1 + FRAMES)
    mass = body_mass(scene, cube.name)
    t, h = FRAMES / FPS, 1.0 / FPS / 4
    a = 4.0 * FPS / mass / FPS
    # x(t) = a t^2 / 2 (+ a t h / 2 from the semi-implicit steps); float32 matrices in Blender.
    assert end[2] - start[2] == pytest.approx(0.5 * a * t**2 + 0.5 * a * t * h, abs=1e-5)
    assert np.abs(end[:2] - start[:2]).max() < 1e-5
    # Strength is read every frame, and a change re-simulates: twice the strength, twice the path.
    field.field.strength = 8.0 * FPS
    end2 = centre_after(bpy, scene, cube, 1 + FRAMES)
    assert end2[2] - start[2] == pytest.approx(2.0 * (end[2] - start[2]), rel=1e-4)
    # field_weight 0: the field does not act on this object at all. (Like every object setting, a new
    # value re-simulates from the frame it is set at: set it at the start.)
    scene.frame_set(1)
    cube.unified_particles.field_weight = 0.0
    end3 = centre_after(bpy, scene, cube, 1 + FRAMES)
    np.testing.assert_allclose(end3, start, atol=1e-7)


def test_animated_field_is_read_at_every_frame(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene, cube = scene_with_cube(bpy)
    field = add_field(bpy, "FORCE", (0.0, 0.0, -1.0))
    field.field.shape = "PLANE"
    # Strength keyframed: 0 at frames 1 and 6, 8 N from frame 7 on (linear keys: 0 at every frame to 6).
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    for frame, strength in ((1, 0.0), (6, 0.0), (7, 8.0 * FPS)):
        field.field.strength = strength
        field.keyframe_insert("field.strength", frame=frame)
    start = centre_after(bpy, scene, cube, 1)
    # Jump straight to the last frame: the frames in between are evaluated one by one.
    end = centre_after(bpy, scene, cube, 1 + FRAMES)
    mass = body_mass(scene, cube.name)
    a, h = 8.0 * FPS / mass / FPS, 1.0 / FPS / 4
    pushed = (1 + FRAMES - 6) / FPS  # the steps to frames 7..13 feel the field
    assert end[2] - start[2] == pytest.approx(0.5 * a * pushed**2 + 0.5 * a * pushed * h, abs=1e-5)
    np.testing.assert_allclose(centre_after(bpy, scene, cube, 6), start, atol=1e-7)


def test_wind_pushes_a_body_with_blenders_force(bpy_clean: ModuleType) -> None:
    """Blender's Wind strength is a force along the field's Z axis (effect.cc, PFIELD_WIND:
    nor * strength * falloff, divided by vel_to_sec = fps), not an air speed: with Flow 0,
    a = S / (M fps), x = a t^2 / 2 (+ a t h / 2)."""
    bpy = bpy_clean
    scene, cube = scene_with_cube(bpy)
    # Wind's direction is its Z axis: rotated 90 degrees about Y it blows along +X.
    wind = add_field(bpy, "WIND", (-2.0, 0.0, 1.0), rotation=(0.0, np.pi / 2, 0.0))
    wind.field.strength = 10.0 * FPS
    wind.field.flow = 0.0  # Blender's Wind defaults to Flow 1 (a drag towards strength / flow)
    start = centre_after(bpy, scene, cube, 1)
    end = centre_after(bpy, scene, cube, 1 + FRAMES)
    moved = end - start
    t, h = FRAMES / FPS, 1.0 / FPS / 4
    a = 10.0 * FPS / body_mass(scene, cube.name) / FPS
    assert moved[0] == pytest.approx(0.5 * a * t**2 + 0.5 * a * t * h, abs=1e-5)
    assert np.abs(moved[1:]).max() < 1e-3 * moved[0]


def test_vortex_and_turbulence_move_grains(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.use_gravity = False
    grains = add_cube(bpy, 0.6, (1.5, 0.0, 0.0))
    assert run_op(bpy, "make_granular", grains) == {"FINISHED"}
    points = grains.unified_particles.particle_object
    vortex = add_field(bpy, "VORTEX", (0.0, 0.0, 0.0))
    vortex.field.shape = "POINT"
    vortex.field.strength = 20.0
    scene.frame_set(1)
    sim = runtime().SIMULATIONS[scene.name]
    x0 = sim.world.positions.copy()
    scene.frame_set(6)
    x1, v1 = sim.world.positions.copy(), sim.world.velocities.copy()
    assert points is not None
    # Counter-clockwise about the vortex's Z axis: angular momentum L_z = x v_y - y v_x > 0.
    assert np.all(x1[:, 0] * v1[:, 1] - x1[:, 1] * v1[:, 0] > 0.0)
    assert not np.array_equal(x0, x1)


BAKE_REPLAY = textwrap.dedent(
    """
    import json, sys
    import bpy
    blend, frames = sys.argv[1], int(sys.argv[2])
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
    assert not hasattr(bpy.types.Scene, "unified_particles")
    scene = bpy.context.scene
    out = []
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
        out.append([float(v) for v in bpy.data.objects["Cube"].matrix_world.translation])
    print("RESULT " + json.dumps(out))
    """
)


def test_bake_replays_field_driven_motion_without_the_addon(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    scene, cube = scene_with_cube(bpy)
    field = add_field(bpy, "FORCE", (0.0, 0.0, -1.0))
    field.field.shape = "PLANE"
    field.field.strength = 4.0 * FPS
    live = []
    for frame in range(1, FRAMES + 2):
        scene.frame_set(frame)
        live.append(matrix(cube)[:3, 3].copy())
    assert live[-1][2] - live[0][2] > 0.005  # a = F / (M fps) = 4 N / 64 kg
    blend = tmp_path / "fields.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert scene.unified_particles_bake.baked
    assert not scene.unified_particles_bake.outdated
    bpy.ops.wm.save_mainfile()
    # A changed field makes the bake Outdated.
    field.field.strength = 5.0 * FPS
    assert scene.unified_particles_bake.outdated
    field.field.strength = 4.0 * FPS
    assert not scene.unified_particles_bake.outdated

    proc = run_blender_without_addon(BAKE_REPLAY, str(blend), str(FRAMES + 1))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    replay = np.array(json.loads(lines[-1][7:]))
    np.testing.assert_allclose(replay, np.array(live), atol=2e-6)
