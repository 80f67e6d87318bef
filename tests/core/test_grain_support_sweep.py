"""The grain support pass's shortcuts change its cost, never its result (core/grain_support.py)."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World, fill_mesh_with_grains, grain_support
from unified_particles.core.grain_support import support_grains
from unified_particles.core.primitives import box_mesh, grid_points

R = 0.05


def _last_call(points: np.ndarray, frames: int, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The arguments of the grain support pass's last call when ``points`` (grains, friction 0.5) have
    fallen onto the ground (friction 0.5) for ``frames`` frames."""
    calls: list[list[object]] = []
    real = grain_support.support_grains

    def record(*args: object, **kw: object) -> bool:
        calls.append([np.copy(a) if isinstance(a, np.ndarray) else a for a in args[:8]])
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(grain_support, "support_grains", record)
    w = World(radius=R)
    w.add_collider_plane(friction=0.5)
    w.add_granular(points, friction=0.5)
    for _ in range(frames):
        w.step(1.0 / 24.0)
    monkeypatch.undo()
    return calls[-1]


def _both(args: list[object]) -> tuple[np.ndarray, np.ndarray, bool]:
    """support_grains on ``args`` with and without the rest guess: (x* with, x* without, whether the
    guess held)."""
    x, x_pred, *rest = args
    assert isinstance(x, np.ndarray)
    assert isinstance(x_pred, np.ndarray)
    tried, swept = x_pred.copy(), x_pred.copy()
    held = support_grains(x, tried, *rest, try_rest=True)  # type: ignore[arg-type]
    support_grains(x, swept, *rest, try_rest=False)  # type: ignore[arg-type]
    return tried, swept, held


def test_rest_guess_gives_the_sweep_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Columns of grains at rest (a block on a lattice, as S3 and S4, after landing): the guess (every
    # grain where it started) holds in one pass (measured under NumPy 1.26 and 2.5), the result is
    # the layered sweep's exactly, and the pass did act (each grain had stepped g h^2 into the one below).
    args = _last_call(grid_points((4, 4, 6), 2.2 * R, (0.0, 0.0, 1.2 * R)), 8, monkeypatch)
    tried, swept, held = _both(args)
    assert held
    np.testing.assert_array_equal(tried, swept)
    assert not np.array_equal(swept, args[1])
    # A random packing (the jittered FCC fill) settling: grains rest in pockets and keep the sliding
    # part of their step, so the guess fails in a low layer and the sweep does the rest: same result.
    v, f = box_mesh((0.4, 0.4, 0.6), (0.0, 0.0, 0.3))
    args = _last_call(fill_mesh_with_grains(v, f, R), 6, monkeypatch)
    tried, swept, held = _both(args)
    assert not held
    np.testing.assert_array_equal(tried, swept)
    assert not np.array_equal(swept, args[1])


def test_when_the_rest_guess_is_tried_does_not_change_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # SupportSweep tries the guess only after a step where it held, or once a frame; a snapshot does
    # not keep that state, so a run must not depend on it: a pile that lands, partly settles in columns
    # and partly slumps, stepped with the guess never tried, is bit for bit the default run.
    def run(never: bool) -> np.ndarray:
        w = World(radius=R)
        w.add_collider_plane(friction=0.5)
        pts = grid_points((5, 5, 6), 2.2 * R, (0.0, 0.0, 1.5 * R))
        pts[::7] += 0.1 * R  # some grains off the lattice: part of the pile slumps
        w.add_granular(pts, friction=0.5)
        if never:
            w._solver.grain_support.rest_held = False
        for _ in range(12):
            w.step(1.0 / 24.0)
        return np.array(w.positions)

    default = run(False)
    monkeypatch.setattr(grain_support, "REST_RETRY_STEPS", 10**9)  # never retried
    np.testing.assert_array_equal(run(True), default)
