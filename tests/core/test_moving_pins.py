"""Pins that move with their animation (``Cloth.set_pin_targets``, ``World.set_pin_targets``)."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.primitives import grid_mesh

FPS = 24


def _cape(**world_kw: float) -> tuple[World, object, np.ndarray, np.ndarray]:
    """A 0.6 m square cloth hanging in the x-z plane, pinned along its top edge."""
    world = World(radius=0.02, **world_kw)
    v, f = grid_mesh(size=0.6, vertices_per_side=9, center=(0.0, 0.0, 0.0))
    v = v[:, [0, 2, 1]] + [0.0, 0.0, 1.0]  # grid in x-y turned into x-z: hangs from z = 1.3
    pins = np.flatnonzero(np.isclose(v[:, 2], v[:, 2].max()))
    cloth = world.add_cloth(v, f, mass=0.1, pinned=pins)
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
    moving.velocities = np.tile(u, (moving.particle_count, 1))
    frames = 24
    for frame in range(1, frames + 1):
        still.step(1 / FPS)
        moving_cloth.set_pin_targets(v[pins] + u * frame / FPS)  # type: ignore[attr-defined]
        moving.step(1 / FPS)
    t = frames / FPS
    free = np.setdiff1d(np.arange(len(v)), pins)
    expected = still_cloth.vertex_positions[free] + u * t  # type: ignore[attr-defined]
    np.testing.assert_allclose(moving_cloth.vertex_positions[free], expected, atol=1e-9)  # type: ignore[attr-defined]
    assert still_cloth.vertex_positions[free][:, 2].min() < v[:, 2].min() - 1e-3  # type: ignore[attr-defined]


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
        ("pins", np.zeros((2, 3)), r"one per pinned particle"),
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
