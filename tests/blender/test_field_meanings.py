"""Force fields with Blender's meanings (issue 23, item 3): side by side with Blender's own rigid body.

In each test two identical cubes start at the same place with gravity off: one is a Blender rigid body
(Bullet, run headless by the frame changes), the other ours (Make Rigid); the two engines do not see
each other. The Blender cube gets our cube's mass and no damping, so the same field must move both the
same way. Blender's rigid body world evaluates every effector at the body's centre and applies the sum
as one central force (``rigidbody.cc``: ``BKE_effectors_apply`` then ``RB_body_apply_central_force``);
the forces per type are ``do_physical_effector`` in ``effect.cc``:

* Wind: ``F = strength * falloff * z_axis`` (not an air speed), minus ``flow * falloff * v``.
* Force (PLANE shape): ``F = strength * falloff`` away from the field's XY plane.
* Vortex (PLANE shape, "new vortex"): ``F = s (z x r) + s^2 z x (z x r) - v``, r from the field's origin.
* Drag: ``F = -falloff (min(linear_drag, 2) |v| + min(quadratic_drag, 2)) v`` (Blender's "Linear"
  multiplies |v|^2), here with a Force pushing: the cube tends to the speed where they balance.
* Turbulence is Blender's Perlin noise, ours value noise: both push by at most ``strength`` newtons
  per axis, but along different directions (docs/physics.md, "Force fields": approximated).

Blender evaluates these fields with ``vel_to_sec`` = the frame rate (``pd_point_from_loc``), and
``do_physical_effector`` divides the force by it: a Force of 2 pushes a 1 kg body at 2/24 m/s^2 at 24 fps
(Flow and the new Vortex's -v are not divided; Drag's Linear term is multiplied by it). Our fields get the
same ``vel_to_sec`` from the scene.

Both integrate the same ODE with different steps (Bullet: 10 substeps per frame, semi-implicit; ours: 2 x
2 small steps, the velocity terms implicit): their paths differ by O(h); 4 % of the distance moved (and
1 mm) holds on any CPU. Before this fix Wind strength 10 (Flow 1, Blender's default) was an air speed of
10 m/s acting through aerodynamic drag: a 1 kg cube moved 3.03 m in 1 s where Blender's moves 0.154 m.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import PACKAGE
from .helpers import add_cube, matrix, run_op, small_scene

FPS = 24
SIZE = 0.4
DENSITY = 1.0 / SIZE**3  # about 1 kg


def _setup(bpy: ModuleType, frames: int) -> tuple[Any, Any, Any]:
    """Our rigid cube and Blender's, same place, same mass, no gravity or damping."""
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.use_gravity = False
    scene.render.fps = FPS
    scene.frame_end = frames + 1
    ours = add_cube(bpy, SIZE, (0.0, 0.0, 1.0))
    ours.unified_particles.density = DENSITY
    assert run_op(bpy, "make_rigid", ours) == {"FINISHED"}
    scene.frame_set(1)
    sim = sys.modules[f"{PACKAGE}.blender.runtime"].SIMULATIONS[scene.name]
    mass = float(next(e for e in sim.entries if e.name == ours.name).body.mass)
    theirs = add_cube(bpy, SIZE, (0.0, 0.0, 1.0))
    bpy.ops.rigidbody.world_add()
    bpy.context.view_layer.objects.active = theirs
    theirs.select_set(True)
    assert bpy.ops.rigidbody.object_add() == {"FINISHED"}
    body = theirs.rigid_body
    body.mass = mass
    body.linear_damping = 0.0
    body.angular_damping = 0.0
    body.use_deactivation = False
    world = scene.rigidbody_world
    world.point_cache.frame_start = 1
    world.point_cache.frame_end = frames + 1
    return scene, ours, theirs


def _field(bpy: ModuleType, kind: str, location: Any, rotation: Any = (0.0, 0.0, 0.0)) -> Any:
    assert bpy.ops.object.effector_add(type=kind, location=location, rotation=rotation) == {"FINISHED"}
    return bpy.context.active_object.field


def _run(scene: Any, ours: Any, theirs: Any, frames: int) -> tuple[np.ndarray, np.ndarray]:
    start_ours, start_theirs = matrix(ours)[:3, 3].copy(), matrix(theirs)[:3, 3].copy()
    for frame in range(1, frames + 2):
        scene.frame_set(frame)
    assert not scene.unified_particles.last_error, scene.unified_particles.last_error
    return matrix(ours)[:3, 3] - start_ours, matrix(theirs)[:3, 3] - start_theirs


def _same_path(moved_ours: np.ndarray, moved_theirs: np.ndarray) -> None:
    print(f"moved: ours {np.round(moved_ours, 4)}, Blender's {np.round(moved_theirs, 4)}")  # the docs table
    distance = float(np.linalg.norm(moved_theirs))
    assert distance > 0.05, moved_theirs  # the field moved Blender's cube
    assert np.linalg.norm(moved_ours - moved_theirs) <= 0.04 * distance + 1e-3, (moved_ours, moved_theirs)


CASES = {
    # kind: (settings, location, rotation, frames)
    "WIND": ({"strength": 10.0}, (-2.0, 0.0, 1.0), (0.0, np.pi / 2, 0.0), 24),  # blows along +X
    "WIND_FLOW": ({"strength": 3.0, "flow": 2.0}, (-2.0, 0.0, 1.0), (0.0, np.pi / 2, 0.0), 48),
    "FORCE": ({"strength": 48.0, "shape": "PLANE"}, (0.0, 0.0, -1.0), (0.0, 0.0, 0.0), 24),
    "FORCE_POINT": (
        {"strength": -100.0, "falloff_power": 1.0},  # pulls towards a point 1.5 m away, 1/(1+d) falloff
        (1.5, 0.0, 1.0),
        (0.0, 0.0, 0.0),
        24,
    ),
    "VORTEX": ({"strength": 5.0}, (0.0, -1.0, 1.0), (0.0, 0.0, 0.0), 24),
}


@pytest.mark.parametrize("case", list(CASES))
def test_field_moves_our_body_as_blenders_rigid_body(bpy_clean: ModuleType, case: str) -> None:
    bpy = bpy_clean
    settings, location, rotation, frames = CASES[case]
    scene, ours, theirs = _setup(bpy, frames)
    field = _field(bpy, case.split("_")[0], location, rotation)
    for name, value in settings.items():
        setattr(field, name, value)
    moved_ours, moved_theirs = _run(scene, ours, theirs, frames)
    _same_path(moved_ours, moved_theirs)


@pytest.mark.parametrize(("linear", "quadratic"), [(0.0, 2.0), (1.0, 0.0), (5.0, 0.0)])
def test_drag_balances_a_force_at_blenders_speed(
    bpy_clean: ModuleType, linear: float, quadratic: float
) -> None:
    """A Force of strength 1 along +Z against Blender's Drag: the cube tends to the speed where
    (fps linear |v| + quadratic) v = 1 / fps (both settings capped at 2; fps = 24)."""
    bpy = bpy_clean
    frames = 48
    scene, ours, theirs = _setup(bpy, frames)
    push = _field(bpy, "FORCE", (0.0, 0.0, -1.0))
    push.shape = "PLANE"
    push.strength = 24.0  # 1 N at 24 fps
    drag = _field(bpy, "DRAG", (0.0, 0.0, 0.0))
    drag.linear_drag = linear
    drag.quadratic_drag = quadratic
    moved_ours, moved_theirs = _run(scene, ours, theirs, frames)
    _same_path(moved_ours, moved_theirs)


@pytest.mark.parametrize("case", ["FORCE", "DRAG"])
def test_fields_at_speed_2_push_as_blenders_rigid_body(bpy_clean: ModuleType, case: str) -> None:
    """Speed 2 (the rigid body world's ``time_scale``; our scene's Speed, which Convert maps from it): each
    frame simulates 2 / fps seconds in both engines. Blender still evaluates the fields with
    ``vel_to_sec`` = fps (``pd_point_from_loc`` reads the frame rate only) and applies the force over the
    whole longer step, so a Force moves the cube (Speed t)^2 F / (2 M) by frame t fps, four times as far as
    at Speed 1, and Drag's Linear term is still multiplied by fps. Before this test the Speed was not
    checked with fields (``blender/fields.py`` reads the frame rate without it, as Blender does)."""
    bpy = bpy_clean
    frames = 24
    scene, ours, theirs = _setup(bpy, frames)
    scene.unified_particles.time_scale = 2.0
    scene.rigidbody_world.time_scale = 2.0
    push = _field(bpy, "FORCE", (0.0, 0.0, -1.0))
    push.shape = "PLANE"
    push.strength = 24.0  # 1 N at 24 fps
    if case == "DRAG":
        _field(bpy, "DRAG", (0.0, 0.0, 0.0)).linear_drag = 1.0
    moved_ours, moved_theirs = _run(scene, ours, theirs, frames)
    _same_path(moved_ours, moved_theirs)
    if case == "FORCE":  # x = F (Speed t)^2 / (2 M): 2 s of simulated time in 24 frames at Speed 2
        mass = theirs.rigid_body.mass
        assert float(moved_theirs[2]) == pytest.approx(1.0 * 2.0**2 / (2.0 * mass), rel=0.05)


def test_turbulence_pushes_both_within_its_strength(bpy_clean: ModuleType) -> None:
    """Different noise functions: only the bound is shared. Each axis' force is within +-strength / fps,
    so the cube moves at most strength t^2 / (2 M fps) per axis."""
    bpy = bpy_clean
    frames = 24
    scene, ours, theirs = _setup(bpy, frames)
    field = _field(bpy, "TURBULENCE", (0.3, 0.2, 0.7))
    field.strength = 2.0
    field.size = 0.5
    # Blender seeds a new effector from the clock ((seconds + 1) % 128, BKE_partdeflect_new), and the net
    # push of a noise over the cube depends on it: over seeds 0, 4, ..., 124 ours moved 1.5-18.5 mm (seed
    # 92: 1.49 mm, under the 2.2 mm floor below, the failure seen once under make test). Fixed: seed 1,
    # 14.6 mm (bound 43.8 mm).
    field.seed = 1
    moved_ours, moved_theirs = _run(scene, ours, theirs, frames)
    mass = theirs.rigid_body.mass
    bound = 2.0 / FPS * (frames / FPS) ** 2 / (2.0 * mass) * 1.05
    assert np.abs(moved_ours).max() <= bound, moved_ours
    assert np.abs(moved_theirs).max() <= bound, moved_theirs
    assert np.linalg.norm(moved_ours) > 0.05 * bound


def test_blenders_effector_weights_on_our_cloth(bpy_clean: ModuleType) -> None:
    """A sheet that still carries Blender's Cloth modifier (turned off in the viewport and render, as
    Convert leaves it): its effector weights say Wind 0 (the jelly of issue 23), so our simulation of
    it ignores the wind, and an effector collection holding only a Force field lets that one act."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05, substeps=2, iterations=2)
    scene.use_gravity = False
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=5, y_subdivisions=5, size=1.0, location=(0.0, 0.0, 1.0))
    sheet = bpy.context.active_object
    cloth = sheet.modifiers.new("Cloth", "CLOTH")
    cloth.show_viewport = False
    cloth.show_render = False
    assert run_op(bpy, "make_cloth", sheet) == {"FINISHED"}
    sheet.unified_particles.air_viscosity = 0.0  # a vacuum: the fields' pushes add up (air drag does not)
    wind = bpy.ops.object.effector_add(type="WIND", location=(0.0, 0.0, 0.0))
    assert wind == {"FINISHED"}
    wind_obj = bpy.context.active_object
    wind_obj.field.strength = 200.0  # 0.02 * 200 = 4 N per m^2 along +Z on a 1 m^2 sheet

    def rise() -> float:
        scene.frame_set(1)
        for frame in range(2, 14):
            scene.frame_set(frame)
        assert not scene.unified_particles.last_error, scene.unified_particles.last_error
        heights = np.array([v.co.z for v in sheet.data.vertices]) + sheet.matrix_world[2][3]
        return float(np.mean(heights) - 1.0)

    weights = cloth.settings.effector_weights
    blown = rise()
    # a = 0.02 S A / M over 0.5 s: x = a t^2 / 2 (the sheet's mass M from its Mass per Area).
    assert blown > 0.01, blown
    weights.wind = 0.0
    assert abs(rise()) < 1e-6
    weights.wind = 1.0
    bpy.ops.object.effector_add(type="FORCE", location=(0.0, 0.0, -1.0))
    force = bpy.context.active_object
    force.field.shape = "PLANE"
    force.field.strength = 200.0
    both = rise()
    only_force = bpy.data.collections.new("Only the force")
    only_force.objects.link(force)
    weights.collection = only_force
    assert rise() == pytest.approx(both - blown, rel=0.05)
