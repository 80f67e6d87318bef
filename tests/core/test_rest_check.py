# SPDX-License-Identifier: GPL-3.0-or-later
"""A world at rest skips the rest of its frame (core/rest_check.py), with the very result of running it."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh
from unified_particles.core.rest_check import RestCheck

FRAMES = 10


def _resting_scene() -> World:
    """Two stacked boxes and one beside them dropped 2 cm, a small block of grains and a small cloth lying
    on the ground: with sleeping on, everything is still within a few frames."""
    w = World(radius=0.05, sleep_threshold=0.05)
    for center in ((0.0, 0.0, 0.17), (0.0, 0.0, 0.47), (0.6, 0.0, 0.17)):
        w.add_rigid(*box_mesh((0.3, 0.3, 0.3), center))
    g = np.arange(3) * 0.1
    grains = np.stack(np.meshgrid(g - 0.7, g, g + 0.05, indexing="ij"), -1).reshape(-1, 3)
    w.add_granular(grains)
    n = 6
    s = np.linspace(0.0, 0.5, n)
    xx, yy = np.meshgrid(s, s, indexing="ij")
    v = np.stack([xx.ravel() - 0.25, yy.ravel() + 0.5, np.full(n * n, 0.05)], 1)
    k = np.arange(n * n).reshape(n, n)
    a, b, c, d = k[:-1, :-1].ravel(), k[1:, :-1].ravel(), k[:-1, 1:].ravel(), k[1:, 1:].ravel()
    w.add_cloth(v, np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)]))
    w.add_collider_plane()
    return w


def _run(monkeypatch: pytest.MonkeyPatch, skip: bool) -> tuple[World, int]:
    """The scene after FRAMES frames, and how many small steps ran."""
    if not skip:  # every frame runs all its small steps
        original = RestCheck.frame_qualifies

        def never(self: RestCheck, solver: object) -> None:
            original(self, solver)
            self.qualifies = False

        monkeypatch.setattr(RestCheck, "frame_qualifies", never)
    w = _resting_scene()
    steps = 0
    small_step = w._small_step

    def counted(*args: object, **kwargs: object) -> None:
        nonlocal steps
        steps += 1
        small_step(*args, **kwargs)  # type: ignore[arg-type]

    w._small_step = counted  # type: ignore[method-assign]
    for _ in range(FRAMES):
        w.step(1.0 / 24.0)
    monkeypatch.undo()
    return w, steps


def test_a_resting_world_skips_its_frames_small_steps_with_the_same_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bit for bit the state of running every small step (a fixed point repeats exactly), and most
    small steps of the resting frames are skipped (16 per frame at the default 4 x 4)."""
    full, full_steps = _run(monkeypatch, skip=False)
    fast, fast_steps = _run(monkeypatch, skip=True)
    assert full_steps == 16 * FRAMES
    assert fast_steps < 0.5 * full_steps  # measured: 55 of 256 small steps over 16 frames
    assert np.array_equal(full.positions, fast.positions)
    assert np.array_equal(full.velocities, fast.velocities)
    assert np.array_equal(full.rigid_rotations, fast.rigid_rotations)
    assert not fast.velocities.any()  # at rest indeed


def test_a_moving_world_runs_every_small_step() -> None:
    """A falling box never starts a small step at rest: nothing is skipped."""
    w = World(radius=0.05, sleep_threshold=0.05)
    w.add_rigid(*box_mesh((0.3, 0.3, 0.3), (0.0, 0.0, 2.0)))
    w.add_collider_plane()
    for _ in range(3):
        w.step(1.0 / 24.0)
        assert not w._solver.rest.at_rest
