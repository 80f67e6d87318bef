"""Pins that move with their animation (``Cloth.set_pin_targets``, ``World.set_pin_targets``)."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.primitives import grid_mesh
from unified_particles.core.state import Snapshot

FPS = 24


def _cape(**world_kw: float) -> tuple[World, object, np.ndarray, np.ndarray]:
    """A 0.6 m square cloth hanging in the x-z plane, pinned along its top edge."""
    world = World(radius=0.02, **world_kw)
    v, f = grid_mesh(size=0.6, vertices_per_side=9, center=(0.0, 0.0, 0.0))
    v = v[:, [0, 2, 1]] + [0.0, 0.0, 1.0]  # grid in x-y turned into x-z: hangs from z = 1.3
    pins = np.flatnonzero(np.isclose(v[:, 2], v[:, 2].max()))
    # In a vacuum: a cape dragged through still air is not the still cape translated (core/air.py).
    cloth = world.add_cloth(v, f, mass=0.1, pinned=pins, air_viscosity=0.0)
    return world, cloth, v, pins


def test_pins_reach_their_targets_exactly_each_frame() -> None:
    world, cloth, v, pins = _cape()
    for frame in range(1, 13):
        target = v[pins] + [0.1 * frame, 0.0, 0.05 * frame]
        cloth.set_pin_targets(target)  # type: ignore[attr-defined]
        world.step(1 / FPS)
        np.testing.assert_array_equal(cloth.vertex_positions[pins], target)  # type: ignore[attr-defined]
    # Without new targets the pins stay where they were last put.
    world.step(1 / FPS)
    np.testing.assert_array_equal(cloth.vertex_positions[pins], target)  # type: ignore[attr-defined]


def test_cloth_dragged_at_constant_velocity_is_the_still_cloth_translated() -> None:
    """Galilean invariance: pins moving at a constant u, with every particle starting at velocity u, give
    the still-pinned run shifted by u t (x(t) = x_still(t) + u t). The constraints only see differences of
    positions, so the two runs differ by round-off only: |x| ~ 1 m, 96 small steps, eps 2.2e-16 ->
    well under 1e-9 m."""
    u = np.array([1.5, -0.5, 0.0])
    still, still_cloth, v, pins = _cape()
    moving, moving_cloth, _, _ = _cape()
    free = np.setdiff1d(np.arange(len(v)), pins)
    # Both capes are pushed across their plane (0.5 m/s) so the still one swings: a cape hanging at rest
    # barely moves now that its stretch converges (it sagged 0.2 mm), and a run that does not move would
    # compare nothing.
    push = np.zeros((len(v), 3))
    push[free, 1] = 0.5
    still.velocities = push
    moving.velocities = np.tile(u, (moving.particle_count, 1)) + push
    frames = 24
    swing = 0.0
    for frame in range(1, frames + 1):
        still.step(1 / FPS)
        moving_cloth.set_pin_targets(v[pins] + u * frame / FPS)  # type: ignore[attr-defined]
        moving.step(1 / FPS)
        swing = max(swing, float(np.abs(still_cloth.vertex_positions[free, 1]).max()))  # type: ignore[attr-defined]
    t = frames / FPS
    expected = still_cloth.vertex_positions[free] + u * t  # type: ignore[attr-defined]
    np.testing.assert_allclose(moving_cloth.vertex_positions[free], expected, atol=1e-9)  # type: ignore[attr-defined]
    assert swing > 0.05, f"the still cape must swing ({swing:.4f} m)"


def test_moving_pins_drag_the_cloth_along_within_its_tethers() -> None:
    """Pins carried 1 m along x in 1 s, then held: 2 s later the cape hangs under them again (its free
    vertices' mean x within 5 cm of the pins' mean x) and no vertex is farther from the pin line than the
    cape's length times (1 + tether give 0.1) plus one particle radius of solver slack."""
    world, cloth, v, pins = _cape()
    for frame in range(1, 3 * FPS + 1):
        shift = min(frame / FPS, 1.0)
        cloth.set_pin_targets(v[pins] + [shift, 0.0, 0.0])  # type: ignore[attr-defined]
        world.step(1 / FPS)
    p = cloth.vertex_positions  # type: ignore[attr-defined]
    free = np.setdiff1d(np.arange(len(v)), pins)
    assert abs(p[free, 0].mean() - p[pins, 0].mean()) < 0.05, p[free, 0].mean()
    top = p[pins, 2].max()
    assert (top - p[:, 2]).max() <= 0.6 * 1.1 + 0.02


def test_same_pin_motion_gives_bit_identical_results_and_snapshots_resume() -> None:
    def run(split: bool) -> np.ndarray:
        world, cloth, v, pins = _cape()
        snap = None
        for frame in range(1, 13):
            if split and frame == 7:
                snap = world.state()
                world, cloth, v, pins = _cape()
                world.set_state(snap)
            cloth.set_pin_targets(v[pins] + [0.05 * frame, 0.0, 0.0])  # type: ignore[attr-defined]
            world.step(1 / FPS)
        return np.asarray(world.positions).copy()

    np.testing.assert_array_equal(run(False), run(False))
    np.testing.assert_array_equal(run(False), run(True))


@pytest.mark.parametrize(
    ("indices", "positions", "match"),
    [
        ("free", np.zeros((1, 3)), "only pinned particles"),
        ("pins", np.zeros((2, 3)), r"one per pin"),
        ("pins", "nan", "NaN"),
        ("beyond", np.zeros((1, 3)), "must be in 0.."),
    ],
)
def test_bad_pin_targets_are_refused(indices: str, positions: object, match: str) -> None:
    world, cloth, v, pins = _cape()
    free = int(np.setdiff1d(np.arange(len(v)), pins)[0])
    idx = {"free": [free], "pins": cloth.indices[pins], "beyond": [10**6]}[indices]  # type: ignore[attr-defined]
    pos = np.full((len(idx), 3), np.nan) if isinstance(positions, str) else positions
    with pytest.raises(SimulationInputError, match=match):
        world.set_pin_targets(idx, pos)


# ------------------------------------------------------------------------------------------ soft pins
G = 9.81


def _soft_sheet(
    frequency: float, mass: float = 0.1, damping: float = 6.0
) -> tuple[World, object, np.ndarray]:
    """A 0.3 m sheet, every vertex soft-pinned where it starts, in gravity (damped so it settles)."""
    world = World(radius=0.02, damping=damping)
    v, f = grid_mesh(size=0.3, vertices_per_side=4, center=(0.0, 0.0, 1.0))
    cloth = world.add_cloth(v, f, mass=mass, soft_pins=np.arange(len(v)), soft_pin_frequency=frequency)
    return world, cloth, v


@pytest.mark.slow
@pytest.mark.parametrize(("frequency", "mass"), [(2.0, 0.1), (2.0, 5.0), (4.0, 0.1)])
def test_soft_pins_sag_by_g_over_omega_squared_whatever_the_mass(frequency: float, mass: float) -> None:
    """A vertex of mass m on a zero-length spring k = m (2 pi f)^2 sags by m g / k = g / (2 pi f)^2 (6.2 cm
    at 2 Hz, 1.6 cm at 4 Hz), the same for a light and a 50 x heavier sheet. XPBD with one iteration per
    small step reaches exactly the compliant equilibrium (alpha m g per step balances the h^2 g gravity
    moves it), except that velocity damping d scales gravity's step by exp(-d h):
    sag = exp(-d h) g / (2 pi f)^2. The tolerance is the settling left after 4 s at d = 6/s: under 1e-5 m."""
    world, cloth, v = _soft_sheet(frequency, mass)
    for _ in range(96):
        world.step(1 / FPS)
    sag = v[:, 2] - cloth.vertex_positions[:, 2]  # type: ignore[attr-defined]
    h = 1.0 / (FPS * world.substeps * world.iterations)
    np.testing.assert_allclose(sag, np.exp(-6.0 * h) * G / (2.0 * np.pi * frequency) ** 2, atol=1e-5)


@pytest.mark.slow
def test_soft_pin_anchors_carry_the_sheet_and_snapshots_resume() -> None:
    """Anchors moved 0.5 m along x over 1 s and held: 2 s later the sheet hangs under them again (its
    x within 1 mm of the anchors'); with a snapshot taken on the way, the resumed run is bit-identical."""

    def run(split: bool) -> np.ndarray:
        world, cloth, v = _soft_sheet(2.0)
        for frame in range(1, 3 * FPS + 1):
            if split and frame == 20:
                snap = world.state()
                world, cloth, v = _soft_sheet(2.0)
                world.set_state(Snapshot.from_arrays(snap.to_arrays()))
            if frame <= FPS:
                cloth.set_soft_pin_targets(v + np.array([0.5 * frame / FPS, 0.0, 0.0]))  # type: ignore[attr-defined]
            world.step(1 / FPS)
        return np.asarray(cloth.vertex_positions)  # type: ignore[attr-defined]

    end = run(False)
    _, _, v = _soft_sheet(2.0)
    np.testing.assert_allclose(end[:, 0], v[:, 0] + 0.5, atol=1e-3)
    np.testing.assert_array_equal(run(True), end)


def test_bad_soft_pins_are_refused() -> None:
    world = World(radius=0.02)
    v, f = grid_mesh(size=0.3, vertices_per_side=4, center=(0.0, 0.0, 1.0))
    with pytest.raises(SimulationInputError, match="both pinned and soft-pinned"):
        world.add_cloth(v, f, pinned=[0, 1], soft_pins=[1, 2])
    with pytest.raises(SimulationInputError, match="positive Hz"):
        world.add_cloth(v, f, soft_pins=[1, 2], soft_pin_frequency=0.0)
    cloth = world.add_cloth(v, f, pinned=[0], soft_pins=[1, 2])
    with pytest.raises(SimulationInputError, match="only soft-pinned particles"):
        world.set_soft_pin_targets(cloth.indices[[0]], np.zeros((1, 3)))
    with pytest.raises(SimulationInputError, match="one per pin"):
        cloth.set_soft_pin_targets(np.zeros((3, 3)))
