"""Neighbour candidates refreshed particle by particle (``Solver._candidates``).

When only some particles moved beyond half the margin (a pile settling while grains still rain onto it),
only their reference positions are renewed and only their pairs searched again. The list must stay what
a full search over the reference positions gives, in the same order, so that a snapshot (which keeps only
the reference positions) continues the run bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core import solver as solver_module
from unified_particles.core.primitives import grid_points

R = 0.05


def _raining_pile() -> World:
    """A resting layer of grains with a sparse column of grains falling onto it."""
    w = World(radius=R)
    w.add_collider_plane()
    floor = grid_points((16, 16, 2), 2.0 * R, (0.0, 0.0, R))
    w.add_granular(floor, friction=0.5)
    rain = grid_points((3, 3, 6), 4.0 * R, (0.1, 0.1, 0.6))
    w.add_granular(rain, friction=0.5, initial_velocity=(0.0, 0.0, -3.0))
    return w


@pytest.fixture
def refreshes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many particles each refresh renewed (spied, not changed)."""
    seen: list[int] = []
    monkeypatch.setattr(solver_module, "INCREMENTAL_MIN_PARTICLES", 0)  # a small scene, to stay quick
    original = solver_module.Solver._refresh_candidates

    def spy(self: solver_module.Solver, nb: solver_module.CandidatePairs, far: np.ndarray) -> object:
        seen.append(len(far))
        return original(self, nb, far)

    monkeypatch.setattr(solver_module.Solver, "_refresh_candidates", spy)
    return seen


def test_refreshed_list_equals_a_full_search_over_the_references(refreshes: list[int]) -> None:
    w = _raining_pile()
    solver = w._solver
    for _ in range(12):
        w.step(1.0 / 24.0)
        nb = solver.candidates
        i, j = solver.build_candidates(nb.reference)
        # Same pairs in the same order: every per-pair sum is then the same as after a full search.
        assert np.array_equal(nb.i, i)
        assert np.array_equal(nb.j, j)
    n = len(w.positions)
    assert refreshes, "the falling grains must have been refreshed without a full search"
    assert max(refreshes) < solver_module.INCREMENTAL_MAX_FRACTION * n


def test_a_snapshot_taken_between_refreshes_continues_bit_for_bit(refreshes: list[int]) -> None:
    w = _raining_pile()
    for _ in range(6):
        w.step(1.0 / 24.0)
    snap = w.state()
    assert refreshes, "the snapshot must be taken after refreshes, with mixed reference positions"
    for _ in range(6):
        w.step(1.0 / 24.0)
    straight = np.asarray(w.positions).copy()

    again = _raining_pile()
    again.set_state(snap)
    for _ in range(6):
        again.step(1.0 / 24.0)
    assert np.array_equal(np.asarray(again.positions), straight)
