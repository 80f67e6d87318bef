"""Grains stick by their friction and slide by their own kinetic friction (issue 24, item 9)."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.contacts import particle_contacts

G = 9.81
R = 0.05


def _grain_on_incline(degrees: float, **material: float) -> tuple[World, np.ndarray]:
    """A grain resting on a plane (friction 0.7) tilted by ``degrees``; returns the world and downhill."""
    theta = np.radians(degrees)
    rot = np.array([[1, 0, 0], [0, np.cos(theta), -np.sin(theta)], [0, np.sin(theta), np.cos(theta)]])
    w = World(radius=R)
    w.add_collider_plane(point=(0, 0, 0), normal=rot @ [0.0, 0.0, 1.0], friction=0.7)
    w.add_granular([rot @ [0.0, 0.0, R]], **material)
    return w, rot @ [0.0, -1.0, 0.0]


def test_grain_sticks_by_its_friction_and_slides_by_its_kinetic_friction() -> None:
    # Coulomb with mu_s != mu_k: a grain on a slope of angle theta sticks while tan(theta) <= mu_s and
    # otherwise slides with a = g (sin(theta) - mu_k cos(theta)), s(t) = a t^2 / 2 from rest. The
    # contact's mu_s is the mean of the grain's and the plane's friction (0.7: sticks below 35.0 degrees);
    # its mu_k that times the grain's kinetic / static ratio, 0.21 / 0.7 (grains slide where real ones
    # roll, contacts._friction). Friction acts per small step on the depth gravity presses in, g h^2,
    # so the deceleration is exact; the first small steps settle the contact: 3% of the distance, as in
    # test_analytic.test_coulomb_friction_on_incline.
    material = {"friction": 0.7, "kinetic_friction": 0.21}
    seconds = 1.0
    for degrees in (20.0, 33.0):  # below atan(0.7): full static friction holds it
        w, downhill = _grain_on_incline(degrees, **material)
        start = w.positions[0].copy()
        for _ in range(24):
            w.step(1.0 / 24.0)
        assert abs((w.positions[0] - start) @ downhill) < 2e-3, degrees
    for degrees, mu_k in ((40.0, 0.21), (40.0, 0.7)):  # 0.7: kinetic_friction None, the old sliding
        w, downhill = _grain_on_incline(degrees, friction=0.7, kinetic_friction=mu_k)
        start = w.positions[0].copy()
        for _ in range(24):
            w.step(1.0 / 24.0)
        theta = np.radians(degrees)
        expected = 0.5 * G * (np.sin(theta) - mu_k * np.cos(theta)) * seconds**2
        slid = (w.positions[0] - start) @ downhill
        assert slid == pytest.approx(expected, rel=0.03), (degrees, mu_k, slid, expected)


def test_kinetic_friction_defaults_to_friction_and_never_exceeds_it() -> None:
    w = World(radius=R)
    w.add_granular([[0.0, 0.0, R]], friction=0.6)
    w.add_granular([[1.0, 0.0, R]], friction=0.6, kinetic_friction=0.6)
    w.step(1.0 / 24.0)
    assert w.model.grain_kinetic is None  # old scripts: nothing changes
    with pytest.raises(SimulationInputError, match="kinetic_friction"):
        w.add_granular([[2.0, 0.0, R]], friction=0.5, kinetic_friction=0.6)


def test_kinetic_friction_acts_between_grains_only() -> None:
    # Pairs (0, 1) grain-grain and (2, 3) grain-other, both sliding by 0.2 r tangentially at a depth of
    # 0.1 r: mu_s = 0.7 (0.07 r < 0.2 r: sliding), so the grains' pair loses mu_k d = 0.021 r of it and the
    # mixed pair mu d = 0.07 r, as without kinetic friction.
    x_pred = np.array([[0.0, 0, 0], [1.9 * R, 0, 0], [5.0, 0, 0], [5.0 + 1.9 * R, 0, 0]])
    x_prev = x_pred - [[0.0, 0.2 * R, 0], [0, 0, 0], [0.0, 0.2 * R, 0], [0, 0, 0]]
    i, j = np.array([0, 2]), np.array([1, 3])
    w = np.ones(4)
    friction = np.full(4, 0.7)
    grain = np.array([True, True, True, False])
    kinetic = (np.full(4, 0.21), grain)
    idx, delta, _ = particle_contacts(x_pred, x_prev, i, j, w, R, np.inf, friction, kinetic=kinetic)
    # The i sides' y corrections (j sides equal and opposite): half of the removed displacement each.
    removed = -2.0 * delta[1, :2]
    np.testing.assert_allclose(removed / R, [0.021, 0.07], rtol=1e-6)
    np.testing.assert_array_equal(idx[:2], [0, 2])
