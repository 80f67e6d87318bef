# SPDX-License-Identifier: GPL-3.0-or-later
"""Rigid bodies sleep by islands (``rigid_sleep_threshold``, core/sleep.py): a body accelerating from rest
is never held, a resting column sleeps where it rests and ends its frames early, a body landing on a
sleeping one wakes it, and a snapshot resumes the counters bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh
from unified_particles.core.sleep import RIGID_SLEEP_SECONDS, sleep_steps

G = 9.81
FPS = 24
SIDE = 0.5
THRESHOLD = 0.05  # m/s


def _column(sleep: float, boxes: int = 3) -> World:
    """``boxes`` 0.5 m boxes stacked 1 mm apart on the ground (3 particles across)."""
    w = World(radius=SIDE / 6, rigid_sleep_threshold=sleep)
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))
    for k in range(boxes):
        w.add_rigid(*box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, SIDE / 2 + k * (SIDE + 1e-3) + 1e-3)))
    return w


def _count_small_steps(w: World) -> list[int]:
    """A counter of the small steps the world runs from now on (wraps the solver's)."""
    solver = w._solver  # the test counts the small steps World.step runs
    count = [0]
    inner = solver.small_step

    def counted(*args: object, **kwargs: object) -> None:
        count[0] += 1
        inner(*args, **kwargs)  # type: ignore[arg-type]

    solver.small_step = counted  # type: ignore[method-assign]
    return count


def test_a_box_sliding_from_rest_down_an_incline_never_sleeps() -> None:
    # Coulomb: on a slope of 35 degrees with mu = 0.5 a block slides from rest with
    # a = g (sin theta - mu cos theta) = 1.61 m/s^2 > THRESHOLD / RIGID_SLEEP_SECONDS = 0.1 m/s^2, so it
    # passes the threshold after 0.03 s, long before it could sleep, and s(t) = a t^2 / 2. Tolerance as
    # test_analytic's incline: 3% (the contact settles in the first small steps).
    theta, mu, seconds = np.radians(35.0), 0.5, 1.0
    rot = np.array([[1, 0, 0], [0, np.cos(theta), -np.sin(theta)], [0, np.sin(theta), np.cos(theta)]])
    w = World(radius=SIDE / 6, rigid_sleep_threshold=THRESHOLD)
    w.add_collider_plane(point=(0, 0, 0), normal=rot @ [0.0, 0.0, 1.0], friction=mu)
    v, f = box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, SIDE / 2 + 1e-3))
    body = w.add_rigid(v @ rot.T, f, friction=mu)
    start = body.center.copy()
    for _ in range(int(seconds * FPS)):
        w.step(1.0 / FPS)
    slid = float((body.center - start) @ (rot @ [0.0, -1.0, 0.0]))
    expected = 0.5 * G * (np.sin(theta) - mu * np.cos(theta)) * seconds**2
    assert slid == pytest.approx(expected, rel=0.03)
    assert w.state().rigid_still_steps[0] == 0.0  # moving: never counted as still


def test_a_resting_column_sleeps_where_it_rests_and_skips_its_frames() -> None:
    # Three boxes placed 1 mm apart fall onto each other within 0.02 s (sqrt(2 * 1 mm / g)), rest, and
    # after RIGID_SLEEP_SECONDS still they sleep. Box k rests at (k + 1/2) box heights, less the steady
    # overlap of its k + 1 contacts below (test_stacks: at most 40 g h^2 per contact, h the small step;
    # 2.7 mm at the default budget; measured 0.08 / 0.22 / 0.29 mm, the same with the boxes placed up to
    # 0.1 mm off, against 2.7 / 5.3 / 8.0 mm): sleep holds it there, where the
    # same column without sleeping keeps settling deeper by its creep (0.23 / 0.63 / 0.80 mm here).
    seconds = 0.25 + RIGID_SLEEP_SECONDS + 0.25
    frames = round(seconds * FPS)
    asleep = _column(THRESHOLD)
    for _ in range(frames):
        asleep.step(1.0 / FPS)
    h = 1.0 / (FPS * asleep.settings.substeps * asleep.settings.iterations)
    sink = SIDE / 2 + SIDE * np.arange(3) - np.array([b.center[2] for b in asleep.bodies])
    assert np.all(sink > 0.0), sink
    assert np.all(sink < (np.arange(3) + 1) * 40.0 * G * h * h), sink
    assert np.all(asleep.state().rigid_still_steps == sleep_steps(h))
    assert not asleep.velocities.any()  # every body held: zero velocities exactly
    # A world asleep ends each frame after two small steps (rest_check), of 16. The first, the frame's
    # stabilization pass, may still take back some of the steady overlap (micrometres: less than the
    # 40 g h^2 of one contact); nothing moves otherwise.
    count = _count_small_steps(asleep)
    before = asleep.positions.copy()
    asleep.step(1.0 / FPS)
    assert count[0] <= 3
    assert np.abs(asleep.positions - before).max() < 40.0 * G * h * h
    assert not asleep.velocities.any()


def test_a_box_landing_on_a_sleeping_column_wakes_it_and_rests_on_top() -> None:
    # A fourth box, added 0.2 m above the sleeping column, lands on it at sqrt(2 g 0.2) = 2 m/s. The top
    # box must wake (its still count restarts: a sleeping box would be an immovable floor) and the new
    # box come to rest on it, its centre at 3.5 box heights within the steady overlap of 4 contacts
    # (test_stacks: 40 g h^2 per contact, 2.7 mm at the default budget; measured 1.2 mm against 13.6).
    w = _column(THRESHOLD)
    frames = round((0.25 + RIGID_SLEEP_SECONDS + 0.1) * FPS)
    for _ in range(frames):
        w.step(1.0 / FPS)
    h = 1.0 / (FPS * w.settings.substeps * w.settings.iterations)
    assert np.all(w.state().rigid_still_steps == sleep_steps(h))  # the column sleeps
    top = w.add_rigid(*box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, 3.5 * SIDE + 0.2)))
    woken = False
    for _ in range(FPS):  # 1 s: it lands after 0.2 s
        w.step(1.0 / FPS)
        woken |= w.state().rigid_still_steps[2] == 0.0
    assert woken
    sink = 3.5 * SIDE - top.center[2]
    assert -0.003 < sink < 4 * 40.0 * G * h * h + 0.003, f"sink {sink * 1000:.1f} mm"


def test_a_snapshot_resumes_the_sleep_counters_bit_for_bit() -> None:
    # Snapshot while the counters run (the column still, not yet asleep), then both worlds go on until
    # the column sleeps: the same positions bit for bit.
    straight = _column(THRESHOLD, boxes=2)
    for _ in range(12):
        straight.step(1.0 / FPS)
    snap = straight.state()
    assert snap.rigid_still_steps.min() > 0.0
    assert snap.rigid_still_steps.max() < sleep_steps(1.0 / 384)
    resumed = _column(THRESHOLD, boxes=2)
    resumed.set_state(snap)
    for _ in range(12):
        straight.step(1.0 / FPS)
        resumed.step(1.0 / FPS)
    assert np.array_equal(straight.positions, resumed.positions)
    assert np.array_equal(straight.state().rigid_still_steps, resumed.state().rigid_still_steps)


def test_a_box_asleep_on_a_platform_is_carried_when_the_platform_starts_moving() -> None:
    # test_colliders' moving platform, with the box asleep first (0.5 s still after 0.5 s of settling).
    # Static friction then carries it at the platform's speed u, u t over 1 s (5 % for the friction's
    # start-up slip, as there). Without the wake rule (a moving collider wakes what it touches) the
    # platform's friction gave the box mu g h = 0.02 m/s per small step, under the threshold: held, 0 m.
    from unified_particles.core.colliders import MeshCollider

    w = World(radius=SIDE / 6, rigid_sleep_threshold=THRESHOLD)
    col = w.add_collider_mesh(*box_mesh((6.0, 2.0, 0.2), (0.0, 0.0, -0.1)), friction=0.8)
    assert isinstance(col, MeshCollider)
    box = w.add_rigid(*box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, SIDE / 2)), friction=0.8)
    for _ in range(FPS):
        w.step(1.0 / FPS)
    h = 1.0 / (FPS * w.settings.substeps * w.settings.iterations)
    assert w.state().rigid_still_steps[0] == sleep_steps(h)  # asleep
    x0, u = box.center.copy(), 0.5
    for k in range(1, FPS + 1):
        m = np.eye(4)
        m[0, 3] = u * k / FPS
        col.set_transform(m)
        w.step(1.0 / FPS)
    assert box.center[0] - x0[0] == pytest.approx(u * 1.0, rel=0.05)
    assert box.center[2] == pytest.approx(SIDE / 2, abs=5e-3)
