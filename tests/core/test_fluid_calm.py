# SPDX-License-Identifier: GPL-3.0-or-later
"""The calm surface of still water (core/fluid_calm.py, issue 25 item 2): a tank left alone becomes still,
and a force field's push on the liquid is not calmed."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import fluid_calm

from .test_fluid import FPS, _column, _small_step


@pytest.mark.slow
def test_a_wide_tank_left_alone_becomes_still_and_keeps_its_volume() -> None:
    # Issue 25, item 2: a tank 0.8 x 0.8 x 0.6 m (16 x 16 x 12 = 3,072 particles, r = 2.5 cm) left alone.
    # Hydrostatic rest is zero velocity everywhere; the solver's rest noise scale is g h (gravity added,
    # then taken back, per small step h: 0.026 m/s at 24 fps and 16 small steps). The interior sleeps
    # (fluid.SLEEP_GH); the free surface, below rest density, never does and kept the slosh of the
    # settling fill. Fastest particle over the half second after 3 s, the unperturbed fill and three fills
    # perturbed by 1e-9 m (docs/physics.md, "Calm surface"): 0.057, 0.030, 0.020, 0.024 m/s before; with
    # the surface calmed (fluid_calm.py) 0.020, 0.014, 0.027, 0.021 (0.77, 0.55, 1.05, 0.83 g h). Bound:
    # 1.5 g h (0.038 m/s), well under the render-still 0.05. Level (volume): mean height D / 2
    # within 1 per cent, as the deep tank (measured 0.81-0.86 per cent low; before 0.80-0.87).
    depth = 0.6
    world, fluid = _column(0.4, depth)
    assert fluid.count == 16 * 16 * 12
    for _ in range(3 * FPS):
        world.step(1.0 / FPS)
    fastest = 0.0
    for _ in range(FPS // 2):
        world.step(1.0 / FPS)
        fastest = max(fastest, float(np.linalg.norm(world.velocities, axis=1).max()))
    gh = 9.81 * _small_step(world)
    assert fastest < 1.5 * gh
    assert abs(fluid.positions[:, 2].mean() - depth / 2) < 0.01 * depth / 2


def _still_tank_under(field: bool, monkeypatch: pytest.MonkeyPatch, fraction: float) -> np.ndarray:
    """Positions (N, 3) of a 0.2 m square tank of water 0.2 m deep after 1 s, under a turbulence field
    reaching all of it or none, with the calm's fraction ``fraction``."""
    monkeypatch.setattr(fluid_calm, "CALM_FRACTION", fraction)
    world, _ = _column(0.1, 0.2)
    if field:
        world.add_force_field("TURBULENCE", strength=0.02, size=0.3, seed=3)
    for _ in range(FPS):
        world.step(1.0 / FPS)
    return world.positions.copy()


def test_the_calm_leaves_a_force_fields_push_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # The calm damps the motion the liquid makes on its own (the settling of its fill), not what pushes it
    # from outside: a particle a force field pushed in a small step is not calmed in it. With a weak
    # turbulence over all of a small still tank, every fluid particle is pushed in every small step, so
    # the run is bit-identical to one without the calm (CALM_FRACTION 0); without the field the calm acts
    # in this tank (the positions after 1 s differ), so the field's exemption is what keeps it out.
    calm, none = _still_tank_under(True, monkeypatch, 0.2), _still_tank_under(True, monkeypatch, 0.0)
    np.testing.assert_array_equal(calm, none)
    assert not np.array_equal(
        _still_tank_under(False, monkeypatch, 0.2), _still_tank_under(False, monkeypatch, 0.0)
    )
