"""Balloons (core/balloon.py): a closed cloth held at its inflation ratio times its rest volume."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.primitives import box_mesh, grid_mesh, uv_sphere_mesh


def _volume(v: np.ndarray, f: np.ndarray) -> float:
    """Enclosed volume, m^3 (divergence theorem)."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def _pressed(inflation: float, stretch_compliance: float, load: float) -> tuple[float, float]:
    """A 15 cm balloon on the floor under a box of ``load`` kg, after 1.5 s: (volume / rest volume,
    height of the balloon, m)."""
    w = World(radius=0.008)
    w.add_collider_plane()
    v, f = uv_sphere_mesh(0.075, (0.0, 0.0, 0.08), segments=24, rings=12)
    balloon = w.add_cloth(v, f, mass=0.02, inflation=inflation, stretch_compliance=stretch_compliance)
    bv, bf = box_mesh((0.2, 0.2, 0.04), (0.0, 0.0, 0.18))
    w.add_rigid(bv, bf, mass=load)
    for _ in range(36):
        w.step(1.0 / 24.0)
    x = balloon.vertex_positions
    return _volume(x, f) / _volume(v, f), float(x[:, 2].max() - x[:, 2].min())


@pytest.mark.slow
def test_a_pressed_balloon_keeps_its_volume_times_the_inflation() -> None:
    # The pressure constraint's target: V = k V0 under the box's weight (a 2 kg box on a 20 g balloon).
    # One projection per small step; measured 0.798 and 0.993 for k = 0.8 and 1.0 (the inextensible skin's
    # stretch solve has the last word), 10.4 and 12.1 cm tall.
    for k in (0.8, 1.0):
        ratio, height = _pressed(k, 0.0, 2.0)
        assert abs(ratio / k - 1.0) < 0.02, (k, ratio)
        assert height < 0.15  # pressed: a sphere of that volume would be taller


@pytest.mark.slow
def test_a_loaded_balloon_squashes_less_at_higher_pressure() -> None:
    # A stretchable skin (1e-3 m/N) inflated further is tauter: under the same 1 kg box it stands taller
    # (measured 12.1 cm at k = 1 and 14.2 cm at k = 1.3, where it holds 1.253 of its volume: the skin's
    # stretch constraints, solved last, give back 3.6%).
    soft = _pressed(1.0, 1e-3, 1.0)[1]
    hard = _pressed(1.3, 1e-3, 1.0)[1]
    assert hard > soft + 0.005, (soft, hard)


def test_inflation_can_change_between_steps() -> None:
    w = World(radius=0.008, gravity=(0.0, 0.0, 0.0))
    v, f = uv_sphere_mesh(0.075, segments=16, rings=8)
    balloon = w.add_cloth(v, f, mass=0.02, inflation=1.0)
    assert balloon.inflation == 1.0
    balloon.inflation = 0.5  # deflating over a shot (World.set_inflation)
    for _ in range(12):
        w.step(1.0 / 24.0)
    assert _volume(balloon.vertex_positions, f) / _volume(v, f) == pytest.approx(0.5, abs=0.01)
    snap = w.state()
    assert snap.balloon_inflation.tolist() == [0.5]


def test_an_open_mesh_cannot_be_a_balloon() -> None:
    w = World(radius=0.01)
    v, f = grid_mesh(0.2, 5)
    with pytest.raises(SimulationInputError, match="closed mesh"):
        w.add_cloth(v, f, inflation=1.0)
    with pytest.raises(SimulationInputError, match="not a balloon"):
        w.set_inflation(w.add_cloth(v, f), 1.0)
