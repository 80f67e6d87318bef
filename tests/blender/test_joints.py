"""Rigid body constraints as a real file sets them up: a rigid body world, Empties holding a Hinge and a
Motor constraint, Bullet's own result computed first in the same test; then the same objects made Rigid and
Collider with our operators (Bullet's world off), and ours compared with Bullet's."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from .conftest import addon_module
from .helpers import matrix, run_op, select_only, small_scene

FPS = 24


def _box(
    bpy: ModuleType, name: str, size: tuple[float, float, float], location: tuple[float, float, float]
) -> Any:
    """A box mesh object made from data (origin at its centre), as a modelled part of a rig."""
    hx, hy, hz = (0.5 * s for s in size)
    verts = [(x * hx, y * hy, z * hz) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    return obj


def _constraint(bpy: ModuleType, name: str, kind: str, a: Any, b: Any, location: Any, rotation: Any) -> Any:
    """An Empty holding a rigid body constraint between ``a`` and ``b`` (Physics > Rigid Body Constraint)."""
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location, empty.rotation_euler = location, rotation
    select_only(bpy, empty)
    bpy.ops.rigidbody.constraint_add(type=kind)
    c = empty.rigid_body_constraint
    c.object1, c.object2 = a, b
    return c


def _rig(bpy: ModuleType) -> dict[str, Any]:
    """A door hinged at one end (released horizontal: it swings down under gravity) and a plate wheel on a
    hinge driven by a motor, each held by a passive post; the hinges turn about world Y (the Empty's Z,
    Blender's hinge axis, turned onto Y), the motor drives the Motor Empty's X, turned onto Y."""
    scene = bpy.context.scene
    bpy.ops.rigidbody.world_add()
    post = _box(bpy, "Post", (0.1, 0.1, 0.1), (-0.3, 0.0, 1.0))  # apart from the moving parts
    door = _box(bpy, "Door", (0.6, 0.04, 0.04), (0.35, 0.0, 1.0))
    axle = _box(bpy, "Axle", (0.1, 0.1, 0.1), (1.5, 0.5, 1.0))
    wheel = _box(bpy, "Wheel", (0.32, 0.04, 0.32), (1.5, 0.0, 1.0))
    for obj, kind in ((post, "PASSIVE"), (door, "ACTIVE"), (axle, "PASSIVE"), (wheel, "ACTIVE")):
        select_only(bpy, obj)
        bpy.ops.rigidbody.object_add(type=kind)
    for obj in (door, wheel):  # no air drag, as ours (Blender's defaults are 0.04 and 0.1)
        obj.rigid_body.linear_damping = obj.rigid_body.angular_damping = 0.0
    _constraint(bpy, "Door Hinge", "HINGE", post, door, (0.0, 0.0, 1.0), (math.radians(90), 0.0, 0.0))
    _constraint(bpy, "Wheel Hinge", "HINGE", axle, wheel, (1.5, 0.0, 1.0), (math.radians(90), 0.0, 0.0))
    motor = _constraint(
        bpy, "Wheel Motor", "MOTOR", axle, wheel, (1.5, 0.0, 1.0), (0.0, 0.0, math.radians(90))
    )
    motor.use_motor_ang = True
    motor.motor_ang_target_velocity = 3.0  # rad/s
    motor.motor_ang_max_impulse = 1.0  # N m s per Bullet step: 240 N m at 24 fps and 10 substeps
    scene.frame_start, scene.frame_end = 1, 250
    return {"door": door, "wheel": wheel, "post": post, "axle": axle}


def _door_angle(obj: Any) -> float:
    """Degrees the door turned down from horizontal about +Y (its long axis is its local X)."""
    m = matrix(obj)
    return math.degrees(math.atan2(-m[2, 0], m[0, 0]))


def _spin(m0: np.ndarray, m1: np.ndarray) -> float:
    """rad/s about +Y between two world matrices one frame apart."""
    turn = m1[:3, :3] @ m0[:3, :3].T
    return math.atan2(turn[0, 2] - turn[2, 0], turn[0, 0] + turn[2, 2]) * FPS


def _run(
    bpy: ModuleType, rig: dict[str, Any], frames: list[int], evaluated: bool
) -> tuple[dict[int, float], list[float]]:
    scene = bpy.context.scene
    angles, spins, last = {}, [], None
    for f in range(scene.frame_start, max(frames) + 1):
        scene.frame_set(f)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        door = rig["door"].evaluated_get(depsgraph) if evaluated else rig["door"]
        wheel = matrix(rig["wheel"].evaluated_get(depsgraph) if evaluated else rig["wheel"])
        if f in frames:
            angles[f] = _door_angle(door)
        if last is not None and f > 6:
            spins.append(_spin(last, wheel))
        last = wheel
    return angles, spins


def test_hinged_door_swings_and_motor_wheel_spins_as_in_bullet(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    rig = _rig(bpy)
    frames = [4, 8, 12]
    bullet_angles, bullet_spins = _run(bpy, rig, frames, evaluated=True)
    # Bullet: the door falls from horizontal, the wheel turns at the motor's 3 rad/s, about -Y: Bullet's
    # motor turns object1 (the axle) at +3 rad/s about the Motor Empty's X (+Y) relative to object2.
    assert 5.0 < bullet_angles[4] < bullet_angles[8] < bullet_angles[12]
    np.testing.assert_allclose(bullet_spins, -3.0, rtol=1e-3)

    # The same file, simulated by us: Blender's rigid body world off, our roles on the same objects.
    scene = bpy.context.scene
    scene.frame_set(1)
    scene.rigidbody_world.enabled = False
    small_scene(bpy, radius=0.02)
    run_op(bpy, "make_rigid", rig["door"], rig["wheel"])
    run_op(bpy, "make_collider", rig["post"], rig["axle"])
    ours_angles, ours_spins = _run(bpy, rig, frames, evaluated=False)
    sim = addon_module("blender.simulation").find_simulation(scene)
    assert not sim.problems, sim.problems
    joints = sim.world.joints
    assert [j.kind for j in joints] == ["HINGE", "HINGE", "MOTOR"]  # by constraint object name
    assert not any(j.broken for j in joints)
    assert any(
        line.startswith("3 joints, 0 broken")
        for line in addon_module("blender.simulation").status_lines(scene)
    )
    # A rigid pendulum released horizontal: both solvers integrate the same rod (voxelised exactly at
    # r = 0.02); the door's angle agrees within a few degrees (Bullet steps 1/240 s, ours 1/384 s).
    for f in frames:
        assert abs(ours_angles[f] - bullet_angles[f]) < 3.0, (f, ours_angles, bullet_angles)
    print("door angles, Bullet:", bullet_angles, "ours:", ours_angles)
    np.testing.assert_allclose(ours_spins, -3.0, rtol=1e-3)  # the motor's target, same sign as Bullet's
    # The door stays on its hinge: its pivot end is where the Empty is.
    m = matrix(rig["door"])
    pivot = m[:3, :3] @ np.array([-0.35, 0.0, 0.0]) + m[:3, 3]
    np.testing.assert_allclose(pivot, [0.0, 0.0, 1.0], atol=2e-3)


def test_unmappable_constraint_is_reported_and_editing_one_rebuilds(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05)
    bpy.ops.rigidbody.world_add()
    a = _box(bpy, "A", (0.2, 0.2, 0.2), (0.0, 0.0, 1.0))
    b = _box(bpy, "B", (0.2, 0.2, 0.2), (1.0, 0.0, 1.0))
    lone = _constraint(bpy, "Lone", "FIXED", a, b, (0.5, 0.0, 1.0), (0.0, 0.0, 0.0))
    box = _box(bpy, "Box", (0.2, 0.2, 0.2), (3.0, 0.0, 1.0))
    run_op(bpy, "make_rigid", box)
    hold = _constraint(bpy, "Hold", "POINT", None, box, (3.0, 0.0, 1.1), (0.0, 0.0, 0.0))
    scene.frame_set(2)
    sim = addon_module("blender.simulation").find_simulation(scene)
    assert "Lone" in sim.problems  # joins A and B, neither ours: said so, nothing else fails
    assert "make one of them Rigid" in sim.problems["Lone"]
    assert len(sim.world.joints) == 1
    assert lone.object1 is a
    hold.use_breaking = True  # an edit of a constraint rebuilds the simulation with it
    hold.breaking_threshold = 1e-6
    scene.frame_set(3)
    sim = addon_module("blender.simulation").find_simulation(scene)
    assert sim.world.joints[0].broken  # 1e-6 N s per Bullet step: the box's weight breaks it
