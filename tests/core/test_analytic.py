"""Analytic references: free fall, resting contact, Coulomb friction on an incline, restitution."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh

G = 9.81


def _n_small_steps(w: World) -> int:
    return w.substeps * w.iterations


def test_free_fall_matches_symplectic_euler_exactly() -> None:
    # Symplectic Euler with step h: v_k = -g h k, z_k = z0 - g h^2 k (k + 1) / 2
    # = z0 - g t^2 / 2 - g h t / 2 at t = k h. So the error against g t^2 / 2 is exactly g h t / 2,
    # i.e. defaults add no damping, and it vanishes as h -> 0.
    w = World(radius=0.05)
    w.add_granular([[0.0, 0.0, 10.0]])
    frames, dt = 24, 1.0 / 24.0
    for _ in range(frames):
        w.step(dt)
    t = frames * dt
    h = dt / _n_small_steps(w)
    z = w.positions[0, 2]
    assert z == pytest.approx(10.0 - 0.5 * G * t**2 - 0.5 * G * h * t, abs=1e-9)
    assert abs(z - (10.0 - 0.5 * G * t**2)) <= 0.5 * G * h * t + 1e-9
    np.testing.assert_allclose(w.velocities[0], [0.0, 0.0, -G * t], atol=1e-9)


def test_free_fall_error_shrinks_with_step_size() -> None:
    errors = []
    for substeps in (2, 8):
        w = World(radius=0.05, substeps=substeps, iterations=1)
        w.add_granular([[0.0, 0.0, 0.0]])
        for _ in range(12):
            w.step(1.0 / 24.0)
        errors.append(abs(w.positions[0, 2] + 0.5 * G * 0.5**2))
    assert errors[1] == pytest.approx(errors[0] / 4.0, rel=1e-6)  # first order in h


def test_particle_comes_to_rest_on_plane_at_its_radius() -> None:
    r = 0.05
    w = World(radius=r)
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))
    w.add_granular([[0.3, -0.2, 0.5]])
    for _ in range(48):
        w.step(1.0 / 24.0)
    # One small step of gravity, g h^2, is the largest overlap a resting contact can show.
    h = 1.0 / 24.0 / _n_small_steps(w)
    assert w.positions[0, 2] == pytest.approx(r, abs=G * h * h + 1e-12)
    np.testing.assert_allclose(w.positions[0, :2], [0.3, -0.2], atol=1e-12)
    assert np.linalg.norm(w.velocities[0]) < 1e-6


def _incline_world(degrees: float, mu: float, rigid: bool) -> tuple[World, np.ndarray, np.ndarray]:
    theta = np.radians(degrees)
    rot = np.array([[1, 0, 0], [0, np.cos(theta), -np.sin(theta)], [0, np.sin(theta), np.cos(theta)]])
    normal = rot @ [0.0, 0.0, 1.0]
    downhill = rot @ [0.0, -1.0, 0.0]
    w = World(radius=0.5 / 6)
    w.add_collider_plane(point=(0, 0, 0), normal=normal, friction=mu)
    if rigid:
        v, f = box_mesh((0.5, 0.5, 0.5), (0.0, 0.0, 0.25 + 1e-3))
        body = w.add_rigid(v @ rot.T, f, friction=mu)
    else:
        body = w.add_granular([rot @ [0.0, 0.0, 0.5 / 6]], friction=mu)
    return w, body.indices, downhill


@pytest.mark.parametrize("rigid", [True, False], ids=["box", "grain"])
def test_coulomb_friction_on_incline(rigid: bool) -> None:
    # Coulomb: a block on a slope of angle theta sticks if tan(theta) <= mu, else it slides with
    # a = g (sin(theta) - mu cos(theta)), so s(t) = a t^2 / 2 from rest.
    mu, seconds = 0.5, 1.5
    frames = int(seconds * 24)
    for degrees in (15.0, 24.0):  # below atan(0.5) = 26.6 degrees
        w, idx, downhill = _incline_world(degrees, mu, rigid)
        start = w.positions[idx].mean(axis=0)
        for _ in range(frames):
            w.step(1.0 / 24.0)
        slid = (w.positions[idx].mean(axis=0) - start) @ downhill
        assert abs(slid) < 5e-3, f"sticks at {degrees} deg: slid {slid:.4f} m"
    for degrees in (35.0, 45.0):
        w, idx, downhill = _incline_world(degrees, mu, rigid)
        start = w.positions[idx].mean(axis=0)
        for _ in range(frames):
            w.step(1.0 / 24.0)
        theta = np.radians(degrees)
        expected = 0.5 * G * (np.sin(theta) - mu * np.cos(theta)) * seconds**2
        slid = (w.positions[idx].mean(axis=0) - start) @ downhill
        # The contact settles during the first small steps; allow 3% of the distance.
        assert slid == pytest.approx(expected, rel=0.03), f"slides at {degrees} deg"


def test_restitution_bounce_height() -> None:
    # Drop from h0 onto a plane with restitution e: rebound height e^2 h0.
    r, h0, e = 0.05, 1.0, 0.5
    w = World(radius=r, restitution=e)
    w.add_collider_plane()
    w.add_granular([[0.0, 0.0, r + h0]])
    zs = []
    for _ in range(int(1.2 * 24)):
        w.step(1.0 / 24.0)
        zs.append(w.positions[0, 2])
    zs_after = np.array(zs[int(0.5 * 24) :])  # impact at t = 0.45 s
    peak = zs_after.max() - r
    # Frame sampling misses the apex by up to g (dt/2)^2 / 2.
    assert peak == pytest.approx(e * e * h0, abs=0.03)


def test_no_restitution_by_default() -> None:
    r = 0.05
    w = World(radius=r)
    w.add_collider_plane()
    w.add_granular([[0.0, 0.0, 1.0]])
    for _ in range(24):
        w.step(1.0 / 24.0)
    assert w.positions[0, 2] == pytest.approx(r, abs=1e-4)
    assert abs(w.velocities[0, 2]) < 1e-6


def test_damping_is_exponential_and_max_speed_clamps() -> None:
    # v(t) = v0 exp(-c t) exactly: each small step multiplies by exp(-c h).
    w = World(radius=0.05, gravity=(0, 0, 0), damping=2.0)
    w.add_granular([[0.0, 0.0, 0.0]])
    w.velocities[0] = [3.0, 0.0, 0.0]
    for _ in range(12):
        w.step(1.0 / 24.0)
    assert w.velocities[0, 0] == pytest.approx(3.0 * np.exp(-2.0 * 0.5), rel=1e-12)
    fast = World(radius=0.05, max_speed=2.0)
    fast.add_granular([[0.0, 0.0, 100.0]])
    for _ in range(24):
        fast.step(1.0 / 24.0)
    assert np.linalg.norm(fast.velocities[0]) == pytest.approx(2.0, rel=1e-12)


def test_sleep_threshold_freezes_slow_particles_only() -> None:
    # Two grains resting on the ground plane (centres at z = r), one sliding slowly and one fast.
    r = 0.05
    w = World(radius=r, sleep_threshold=0.1)
    w.add_collider_plane((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), friction=0.0)
    w.add_granular([[0.0, 0.0, r], [1.0, 0.0, r]], friction=0.0)
    w.velocities[0] = [0.05, 0.0, 0.0]
    w.velocities[1] = [0.5, 0.0, 0.0]
    w.step(1.0 / 24.0)
    np.testing.assert_array_equal(w.positions[0], [0.0, 0.0, r])  # slower than 0.1 m/s on the ground
    # Frictionless plane: the fast grain slides on at 0.5 m/s, x = 1 + v t.
    assert w.positions[1, 0] == pytest.approx(1.0 + 0.5 / 24.0)


def test_sleep_threshold_does_not_hold_bodies_starting_at_rest_in_the_air() -> None:
    # One small step of gravity gives only g h = 9.81 / 384 = 0.026 m/s, below the threshold: a speed
    # test alone would keep these hanging forever. Nothing touches them, so they fall freely:
    # z(t) = z0 - g t^2 / 2 up to the integrator's own error (symplectic Euler over 16 small steps,
    # g t h / 2 = 0.0053 m after one frame of 1/24 s).
    w = World(radius=0.05, sleep_threshold=0.1)
    grain = w.add_granular([[0.0, 0.0, 2.0]])
    box = w.add_rigid(*box_mesh((0.3, 0.3, 0.3), (1.0, 0.0, 2.0)))
    w.step(1.0 / 24.0)
    t = 1.0 / 24.0
    drop = 9.81 * t * t / 2.0
    assert w.positions[grain.indices[0], 2] == pytest.approx(2.0 - drop, abs=0.006)
    assert box.center[2] == pytest.approx(2.0 - drop, abs=0.006)
