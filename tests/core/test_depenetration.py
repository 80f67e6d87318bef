# SPDX-License-Identifier: GPL-3.0-or-later
"""Bodies that overlap at the start separate gently (issue 23, item 6; core/depenetration.py).

Two boxes built half inside each other (and a box nested in a bigger one) are pushed apart by the
contacts; PBD turns the corrections into velocity, so without a cap they fly apart at several m/s
(measured below). With ``max_depenetration_speed`` (PhysX's max depenetration velocity) no particle
leaves faster than the cap while the bodies still overlap, and once apart they move freely.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.primitives import box_mesh

R = 0.05
FPS = 24.0


def overlapping_boxes(cap: float, offset: float = 0.2) -> tuple[World, list]:
    """Two 0.4 m boxes, the second shifted by ``offset`` along X (half inside the first), no gravity."""
    w = World(radius=R, gravity=(0.0, 0.0, 0.0), max_depenetration_speed=cap)
    v, f = box_mesh((0.4, 0.4, 0.4))
    a = w.add_rigid(v, f, density=500.0)
    b = w.add_rigid(v + np.array([offset, 0.0, 0.0]), f, density=500.0)
    return w, [a, b]


def top_speed(w: World, frames: int) -> tuple[float, list[float]]:
    """The fastest particle over ``frames`` frames, and each frame's fastest."""
    speeds = []
    for _ in range(frames):
        w.step(1.0 / FPS)
        speeds.append(float(np.linalg.norm(w.velocities, axis=1).max()))
    return max(speeds), speeds


def gap(a: Any, b: Any) -> float:
    """Smallest distance between a particle of a and one of b, metres."""
    d = a.positions[:, None, :] - b.positions[None, :, :]
    return float(np.sqrt((d * d).sum(axis=2)).min())


def test_half_overlapping_boxes_leave_each_other_below_the_set_speed() -> None:
    fast, _ = top_speed(overlapping_boxes(np.inf)[0], 24)
    cap = 0.5
    w, (a, b) = overlapping_boxes(cap)
    apart_at = None
    for frame in range(48):
        w.step(1.0 / FPS)
        centres = [np.linalg.norm(body.velocities.mean(axis=0)) for body in (a, b)]
        # No body leaves faster than the cap (its centre; momentum is kept once it is free).
        assert max(centres) <= cap * (1.0 + 1e-9), (frame, centres)
        if gap(a, b) < 2.0 * R * 0.99:
            # While they overlap, no point of either is faster (the cap scales each body's velocities).
            assert np.linalg.norm(w.velocities, axis=1).max() <= cap * (1.0 + 1e-9), frame
        elif apart_at is None:
            apart_at = frame
    assert fast > 4.0 * cap, fast  # without the cap they fly apart (measured 2026-11-27: ~2.5 m/s)
    # 0.2 m of overlap at up to 2 x 0.5 m/s takes at least 0.2 s (5 frames); they are apart within 1 s.
    assert apart_at is not None
    assert 4 <= apart_at <= 24, apart_at
    # They leave each other along the overlap (a towards -X, b towards +X).
    va, vb = a.velocities.mean(axis=0), b.velocities.mean(axis=0)
    assert va[0] < 0.0 < vb[0]


def test_nested_box_is_separated_gently_and_figures_hold_under_nudges() -> None:
    # A 0.3 m box inside a 0.8 m one (solid fills: all of its particles overlap), nudged by a few
    # hundredths of a radius: the cap holds whatever the initial rounding. The small box is pushed out
    # through the big one's side within a second; once free, the big box tumbles (its points' speeds
    # change as it turns) but neither centre is faster than the cap.
    cap = 1.0
    for nudge in (0.0, 0.02 * R, -0.03 * R):
        w = World(radius=R, gravity=(0.0, 0.0, 0.0), max_depenetration_speed=cap)
        v, f = box_mesh((0.8, 0.8, 0.8))
        big = w.add_rigid(v, f, density=500.0)
        small, small_f = box_mesh((0.3, 0.3, 0.3))
        inner = w.add_rigid(small + np.array([0.05 + nudge, 0.02, -nudge]), small_f, density=500.0)
        for frame in range(24):
            w.step(1.0 / FPS)
            centres = [np.linalg.norm(body.velocities.mean(axis=0)) for body in (big, inner)]
            assert max(centres) <= cap * (1.0 + 1e-9), (nudge, frame, centres)
            if gap(big, inner) < 2.0 * R * 0.99:
                assert np.linalg.norm(w.velocities, axis=1).max() <= cap * (1.0 + 1e-9), (nudge, frame)


def test_touching_bodies_and_impacts_are_not_capped() -> None:
    # Boxes built side by side, one diameter apart (touching, not overlapping), one thrown at 6 m/s
    # at the other: the cap never applies, the impact keeps its speed.
    w = World(radius=R, gravity=(0.0, 0.0, 0.0), max_depenetration_speed=0.5)
    v, f = box_mesh((0.4, 0.4, 0.4))
    w.add_rigid(v, f, density=500.0, initial_velocity=(6.0, 0.0, 0.0))
    w.add_rigid(v + np.array([0.5, 0.0, 0.0]), f, density=500.0)
    top, _ = top_speed(w, 6)
    assert top > 3.0, top
    with pytest.raises(SimulationInputError):
        World(radius=R, max_depenetration_speed=0.0)
