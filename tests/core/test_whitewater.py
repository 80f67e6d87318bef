# SPDX-License-Identifier: GPL-3.0-or-later
"""Whitewater (core/whitewater.py, Ihmsen et al. 2012): nothing from calm water, spray from a splash,
counts conserved and replayed from a snapshot, spray and bubbles against their equations of motion."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World, fill_mesh_with_fluid
from unified_particles.core.primitives import box_mesh
from unified_particles.core.whitewater import BUBBLE, FOAM, SPRAY, Whitewater

R = 0.03
G = np.array([0.0, 0.0, -9.81])


def _lattice(nx: int, ny: int, nz: int) -> np.ndarray:
    """Liquid at rest: the rest lattice of spacing 2R filling [0, 2R n) per axis."""
    axes = [(np.arange(n) + 0.5) * 2 * R for n in (nx, ny, nz)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)


def test_calm_water_makes_nothing() -> None:
    """A tank at rest, then with the residual motion of a settling tank (random velocities up to
    0.45 m/s, under the 0.5 m/s of the kinetic threshold 0.125 J/kg): no diffuse particle in 2 s."""
    x = _lattice(12, 12, 4)
    ww = Whitewater(R, capacity=1000, seed=3)
    rng = np.random.default_rng(0)
    for k in range(48):
        v = np.zeros_like(x) if k < 24 else rng.normal(size=x.shape)
        if k >= 24:
            v *= 0.45 * rng.random((len(x), 1)) / np.linalg.norm(v, axis=1, keepdims=True)
        ww.step(x + (rng.normal(0.0, 0.05 * R, x.shape) if k >= 24 else 0.0), v, 1 / 24)
    assert ww.generated == 0
    assert not ww.alive.any()


def _splash(frames: int, seed: int = 1, nudge: float = 0.0) -> tuple[Whitewater, list[int], list[int]]:
    """A 0.3 m cube of water (125 particles) dropped from 0.45 m (bottom) onto the ground: it lands
    after sqrt(2 x 0.45 / g) = 0.30 s (frame 7 at 24 fps) at 3 m/s."""
    world = World(R, substeps=2, iterations=4)
    world.add_collider_plane((0, 0, 0), (0, 0, 1), friction=0.5)
    v, f = box_mesh((0.3, 0.3, 0.3), (0, 0, 0.6))
    points = fill_mesh_with_fluid(v, f, R) + nudge * np.random.default_rng(7).normal(size=(125, 3))
    fluid = world.add_fluid(points)
    ww = Whitewater(R, capacity=3000, seed=seed, floor_z=-0.1)
    alive, spray = [], []
    for _ in range(frames):
        world.step(1 / 24)
        ww.step(fluid.positions, fluid.velocities, 1 / 24)
        assert int(ww.alive.sum()) == ww.generated - ww.removed  # counts conserved every frame
        alive.append(int(ww.alive.sum()))
        spray.append(ww.counts()["spray"])
    return ww, alive, spray


@pytest.mark.parametrize("nudge", [0.0, 1e-5])
def test_a_splash_throws_spray_and_counts_are_conserved(nudge: float) -> None:
    """The cube lands at frame 7; within the next 4 frames its flattening sheet throws spray: measured
    147 spray particles at frame 8 (nudges of 10-100 um of the start: 124-147). Asserted: 30 or more, and
    foam forms on the spreading puddle. Every frame: live = generated - removed, and only live slots
    have a kind."""
    ww, alive, spray = _splash(12, nudge=nudge)
    assert max(spray[7:12]) >= 30, spray
    assert ww.counts()["foam"] > 0
    assert ww.generated > max(alive[:6])  # most of it after the impact
    assert np.all(np.isfinite(ww.positions[ww.alive]))


def test_snapshot_replays_the_same_whitewater() -> None:
    """state() / set_state() (generator included) resumes bit for bit, and the same seed gives the same
    particles."""
    x = _lattice(6, 6, 4)
    rng = np.random.default_rng(2)
    steps = [(x + rng.normal(0, 0.3 * R, x.shape), rng.normal(0, 2.0, x.shape)) for _ in range(6)]
    a, b = Whitewater(R, capacity=2000, seed=9), Whitewater(R, capacity=2000, seed=9)
    for xs, vs in steps[:3]:
        a.step(xs, vs, 1 / 24)
        b.step(xs, vs, 1 / 24)
    saved = a.state()
    for xs, vs in steps[3:]:
        a.step(xs, vs, 1 / 24)
    assert a.generated > 0
    b.set_state(saved)
    for xs, vs in steps[3:]:
        b.step(xs, vs, 1 / 24)
    assert a.generated == b.generated
    assert a.removed == b.removed
    assert np.array_equal(a.kind, b.kind)
    assert np.array_equal(a.positions, b.positions)


def test_spray_flies_ballistically() -> None:
    """A spray particle far from any liquid: semi-implicit Euler under gravity. After n steps of dt,
    x = x0 + v0 t + g dt^2 n (n + 1) / 2 exactly (against the parabola, an error g dt t / 2 = 20 mm here
    at t = 0.5 s, dt = 1/120 s)."""
    ww = Whitewater(R, capacity=4, seed=0)
    ww.kind[0], ww.positions[0], ww.velocities[0] = SPRAY, (0.0, 0.0, 1.0), (1.0, 0.0, 2.0)
    far = np.array([[10.0, 10.0, 0.0], [10.0, 10.0, 0.06]])
    dt, n = 1 / 120, 60
    for _ in range(n):
        ww.step(far, np.zeros_like(far), dt)
    expected = np.array([0.0, 0.0, 1.0]) + np.array([1.0, 0.0, 2.0]) * n * dt + G * dt * dt * n * (n + 1) / 2
    np.testing.assert_allclose(ww.positions[0], expected, atol=1e-9)
    assert ww.kind[0] == SPRAY
    assert ww.generated == 0


@pytest.mark.slow
def test_a_bubble_rises_at_its_terminal_speed_and_becomes_foam() -> None:
    """A bubble deep in still water: each step v <- (1 - k_d) v + k_b g dt, so it rises at
    v* = k_b g dt / k_d = 0.8175 m/s (k_b = 2, k_d = 0.5, dt = 1/48 s), to 1e-3 after 10 steps (the gap
    halves each step), until near the surface it turns to foam."""
    x = _lattice(10, 10, 20)
    ww = Whitewater(R, capacity=4, seed=0)
    ww.kind[0], ww.positions[0] = BUBBLE, (0.3, 0.3, 0.2)
    dt = 1 / 48
    zs = []
    for _ in range(20):
        ww.step(x, np.zeros_like(x), dt)
        zs.append(ww.positions[0, 2])
    terminal = 2.0 * 9.81 * dt / 0.5
    assert abs((zs[15] - zs[14]) / dt - terminal) < 1e-3 * terminal
    top = 20 * 2 * R
    for _ in range(60):
        ww.step(x, np.zeros_like(x), dt)
        if ww.kind[0] != BUBBLE:
            break
    assert ww.kind[0] == FOAM
    assert top - 4 * R < ww.positions[0, 2] < top + 2 * R  # at the surface (within a step of 17 mm)


def test_bad_input_raises() -> None:
    with pytest.raises(SimulationInputError):
        Whitewater(-1.0)
    ww = Whitewater(R, capacity=4)
    with pytest.raises(SimulationInputError):
        ww.step(np.zeros((3, 3)), np.zeros((2, 3)), 0.1)
    with pytest.raises(SimulationInputError):
        ww.step(np.zeros((3, 3)), np.zeros((3, 3)), 0.0)
