"""Thrown and animated bodies: initial velocities and kinematic rigid bodies with a target pose."""

from __future__ import annotations

import io

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.primitives import box_mesh, grid_mesh
from unified_particles.core.state import Snapshot

G = 9.81
DT = 1.0 / 24.0


def _h(w: World) -> float:
    return DT / (w.substeps * w.iterations)


def _rot_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _about(rotation: np.ndarray, center: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """4x4: rotate about ``center`` (build frame), then move the centre by ``shift``."""
    m = np.eye(4)
    m[:3, :3] = rotation
    m[:3, 3] = center + shift - rotation @ center
    return m


def test_thrown_grain_follows_the_ballistic_parabola() -> None:
    # x = x0 + vx t, z = z0 + vz t - g t^2 / 2. Symplectic Euler with small step h adds exactly
    # -g h t / 2 to z (tests/core/test_analytic.py), nothing to x.
    w = World(radius=0.05)
    x0, v0 = np.array([0.0, 1.0, 2.0]), np.array([3.0, -1.0, 4.0])
    w.add_granular([x0], initial_velocity=v0)
    np.testing.assert_array_equal(w.velocities[0], v0)
    for _ in range(24):
        w.step(DT)
    t, h = 1.0, _h(w)
    expected = x0 + v0 * t + np.array([0.0, 0.0, -0.5 * G * t * t])
    np.testing.assert_allclose(w.positions[0, :2], expected[:2], atol=1e-12)
    assert abs(w.positions[0, 2] - expected[2]) <= 0.5 * G * h * t + 1e-9
    np.testing.assert_allclose(w.velocities[0], v0 + np.array([0.0, 0.0, -G * t]), atol=1e-9)


def test_thrown_spinning_box_follows_the_parabola_and_keeps_its_spin() -> None:
    # Centre of mass: the parabola as for a grain. Spin about the vertical through the centre: the
    # angle grows as omega t. Shape matching turns each small step's straight (chord) displacement
    # back onto the arc, losing a fraction (omega h)^2 / 2 of the spin per small step at most.
    w = World(radius=0.05)
    c0, v0, omega = np.array([0.0, 0.0, 3.0]), np.array([2.0, 1.0, 5.0]), 2.0
    box = w.add_rigid(
        *box_mesh((0.4, 0.6, 0.2), center=c0), initial_velocity=v0, angular_velocity=(0.0, 0.0, omega)
    )
    np.testing.assert_allclose(box.velocities.mean(axis=0), v0, atol=1e-12)
    for _ in range(24):
        box_center_before = box.center
        w.step(DT)
    t, h = 1.0, _h(w)
    expected = c0 + v0 * t + np.array([0.0, 0.0, -0.5 * G * t * t])
    np.testing.assert_allclose(box.center[:2], expected[:2], atol=1e-9)
    assert abs(box.center[2] - expected[2]) <= 0.5 * G * h * t + 1e-9
    np.testing.assert_allclose(
        box.center - box_center_before, (v0 + np.array([0.0, 0.0, -G * (t - DT / 2)])) * DT, atol=0.01
    )
    angle = np.arctan2(box.rotation[1, 0], box.rotation[0, 0])
    loss = (t / h) * (omega * h) ** 2 / 2.0
    assert omega * t * (1.0 - loss) - 1e-9 <= angle <= omega * t + 1e-9


def test_cloth_initial_velocity_moves_free_vertices_not_pins() -> None:
    w = World(radius=0.02, gravity=(0.0, 0.0, 0.0))
    v, f = grid_mesh(size=1.0, vertices_per_side=6, center=(0.0, 0.0, 1.0))
    cloth = w.add_cloth(v, f, mass=0.2, pinned=[0], initial_velocity=(0.0, 0.0, 2.0))
    assert np.all(cloth.velocities[0] == 0.0)
    assert np.all(cloth.velocities[1:, 2] == 2.0)
    unpinned = World(radius=0.02, gravity=(0.0, 0.0, 0.0))
    free = unpinned.add_cloth(v, f, mass=0.2, initial_velocity=(0.0, 0.0, 2.0), air_viscosity=0.0)
    for _ in range(12):
        unpinned.step(DT)
    # No forces (a vacuum: air would slow it): the whole cloth flies up at 2 m/s without deforming.
    np.testing.assert_allclose(free.vertex_positions, v + np.array([0.0, 0.0, 1.0]), atol=1e-9)


def _pusher_scene() -> tuple[World, object, object]:
    w = World(radius=0.05)
    w.add_collider_plane()
    pusher = w.add_rigid(*box_mesh((0.4, 0.4, 0.4), center=(-1.0, 0.0, 0.2)), density=500.0)
    free = w.add_rigid(*box_mesh((0.4, 0.4, 0.4), center=(0.5, 0.0, 0.2)), density=500.0)
    return w, pusher, free


@pytest.mark.slow
def test_kinematic_box_at_constant_speed_pushes_a_free_box() -> None:
    w, pusher, free = _pusher_scene()
    for _ in range(6):
        w.step(DT)
    pusher.kinematic = True
    start = pusher.transform
    speed = 1.0  # m/s along +x
    for frame in range(1, 61):
        target = start.copy()
        target[0, 3] += speed * frame * DT
        pusher.set_target(target)
        w.step(DT)
        # It is exactly where it was told to be (infinite mass: the free box does not slow it down).
        np.testing.assert_allclose(pusher.transform, target, rtol=0.0, atol=1e-12)
        np.testing.assert_allclose(
            pusher.velocities, np.tile([speed, 0.0, 0.0], (len(pusher.indices), 1)), atol=1e-9
        )
    # Contact at 2r: the free box's near face is the pusher's far face, 0.4 m apart in centres.
    gap = free.center[0] - pusher.center[0]
    assert 0.4 - 0.05 <= gap <= 0.4 + 0.05
    assert free.center[0] > 1.5  # pushed 1+ m from where it stood
    assert abs(free.center[2] - 0.2) < 0.02  # slid along the ground, not lifted over


@pytest.mark.slow
def test_kinematic_platform_lifts_and_carries_grains() -> None:
    r = 0.03
    w = World(radius=r)
    platform = w.add_rigid(*box_mesh((0.8, 0.8, 0.2), center=(0.0, 0.0, 0.0)), density=500.0, friction=1.0)
    top = platform.positions[:, 2].max() + 2 * r  # a grain resting on the top particle layer
    xs = np.arange(-0.2, 0.21, 2 * r)
    grains = w.add_granular([(x, y, top + 0.002) for x in xs for y in xs], friction=1.0)
    platform.kinematic = True  # held in place against gravity with nothing under it
    for _ in range(12):
        w.step(DT)
    np.testing.assert_array_equal(platform.transform, np.eye(4))
    rest = grains.positions
    assert np.all(np.abs(rest[:, 2] - top) < 0.5 * r)  # resting on it (between its particles)
    # Rise at 0.5 m/s while moving sideways at 0.25 m/s for one second: the grains ride along.
    for frame in range(1, 25):
        t = frame * DT
        platform.set_target(_about(np.eye(3), np.zeros(3), np.array([0.25 * t, 0.0, 0.5 * t])))
        w.step(DT)
    moved = grains.positions - rest
    np.testing.assert_allclose(np.median(moved, axis=0), [0.25, 0.0, 0.5], atol=0.2 * r + 0.01)
    assert np.all(moved[:, 2] > 0.5 - 2 * r)  # every grain lifted with it


@pytest.mark.slow
def test_switched_off_a_kinematic_body_keeps_the_velocity_of_its_animation() -> None:
    w = World(radius=0.05, gravity=(0.0, 0.0, 0.0))
    c0 = np.array([0.0, 0.0, 1.0])
    box = w.add_rigid(*box_mesh((0.4, 0.6, 0.2), center=c0))
    box.kinematic = True
    v, omega = np.array([0.5, 0.0, 0.25]), 3.0
    for frame in range(1, 25):
        t = frame * DT
        box.set_target(_about(_rot_z(omega * t), c0, v * t))
        w.step(DT)
    np.testing.assert_allclose(box.center, c0 + v, atol=1e-12)
    box.kinematic = False
    center, rotation = box.center, box.rotation
    for _ in range(24):
        w.step(DT)
    # Straight on at v; spinning on at omega less the shape-matching loss (see the thrown box test).
    np.testing.assert_allclose(box.center - center, v, atol=1e-9)
    turn = box.rotation @ rotation.T
    angle = np.arctan2(turn[1, 0], turn[0, 0]) % (2 * np.pi)
    h = _h(w)
    loss = (1.0 / h) * (omega * h) ** 2 / 2.0
    assert omega * (1.0 - loss) - 1e-9 <= angle <= omega + 1e-9


def test_kinematic_body_ignores_gravity_colliders_and_holds_its_pose_without_a_target() -> None:
    w = World(radius=0.05)
    w.add_collider_plane()
    box = w.add_rigid(*box_mesh((0.4, 0.4, 0.4), center=(0.0, 0.0, 0.1)))  # half in the ground
    box.kinematic = True
    for _ in range(6):
        w.step(DT)
    np.testing.assert_array_equal(box.transform, np.eye(4))
    np.testing.assert_array_equal(box.velocities, np.zeros((len(box.indices), 3)))
    # Turned on while falling: it stops where it is, target = its pose after the last step.
    w2 = World(radius=0.05)
    falling = w2.add_rigid(*box_mesh((0.4, 0.4, 0.4), center=(0.0, 0.0, 1.0)))
    for _ in range(3):
        w2.step(DT)
    held = falling.transform
    np.testing.assert_array_equal(falling.target, held)
    falling.kinematic = True
    w2.step(DT)
    np.testing.assert_array_equal(falling.transform, held)


@pytest.mark.slow
def test_kinematic_state_round_trips_bit_identically() -> None:
    w, pusher, free = _pusher_scene()
    grains = w.add_granular([(0.5, 0.0, 0.6), (0.5, 0.0, 0.72)])
    pusher.kinematic = True

    def run(frames: range) -> list[np.ndarray]:
        out = []
        for frame in frames:
            pusher.set_target(
                _about(_rot_z(0.5 * frame * DT), np.array([-1.0, 0.0, 0.2]), np.array([frame * DT, 0, 0]))
            )
            if frame == 20:
                pusher.kinematic = False
            w.step(DT)
            out.append(w.positions.copy())
        return out

    run(range(1, 11))
    snap = w.state()
    assert snap.rigid_kinematic.tolist() == [1.0, 0.0]
    first = run(range(11, 31))
    buffer = io.BytesIO()
    np.savez(buffer, **snap.to_arrays())
    buffer.seek(0)
    w.set_state(dict(np.load(buffer)))
    assert w.rigid_kinematic.tolist() == [True, False]
    second = run(range(11, 31))
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    assert free.center[0] > 0.5
    assert len(grains.indices) == 2


def test_snapshot_from_before_kinematic_bodies_still_loads() -> None:
    w, _, _ = _pusher_scene()
    w.step(DT)
    arrays = w.state().to_arrays()
    old = {k: v for k, v in arrays.items() if k not in ("rigid_kinematic", "rigid_target")}
    snap = Snapshot.from_arrays(old)
    assert snap.rigid_kinematic.tolist() == [0.0, 0.0]
    w.set_state(snap)
    w.step(DT)  # steps on as dynamic bodies


def test_bad_kinematic_and_velocity_input_raises_input_errors() -> None:
    w, pusher, _ = _pusher_scene()
    with pytest.raises(SimulationInputError, match="initial_velocity"):
        w.add_granular([(0.0, 0.0, 1.0)], initial_velocity=(1.0, np.nan, 0.0))
    with pytest.raises(SimulationInputError, match="angular_velocity"):
        w.add_rigid(*box_mesh((0.2, 0.2, 0.2)), angular_velocity=(1.0, 2.0))
    with pytest.raises(SimulationInputError, match="target"):
        pusher.set_target(np.zeros((3, 3)))
    with pytest.raises(SimulationInputError, match="no rigid body"):
        w.set_kinematic(5, True)
    other = World(radius=0.05)
    other.add_rigid(*box_mesh((0.2, 0.2, 0.2)))
    with pytest.raises(SimulationInputError, match="another World"):
        other.set_kinematic(pusher, True)
    # A scaled target keeps only its rotation (a rigid body cannot scale).
    scaled = np.diag([2.0, 2.0, 2.0, 1.0])
    pusher.set_target(scaled)
    np.testing.assert_allclose(pusher.target, np.eye(4), atol=1e-12)
