# SPDX-License-Identifier: GPL-3.0-or-later
"""Rigid bodies sleep by islands (``rigid_sleep_threshold``, core/sleep.py): a body accelerating from rest
is never held, a resting column sleeps where it rests and ends its frames early, a body landing on a
sleeping one wakes it, and a snapshot resumes the counters bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import RigidBody, World
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


def _box_on_slope(theta: float, mu: float) -> tuple[World, RigidBody, np.ndarray]:
    """A box resting 1 mm above a plane tilted by ``theta`` (rad) about x, both of friction ``mu``; the
    world, the box and the tilt's rotation."""
    rot = np.array([[1, 0, 0], [0, np.cos(theta), -np.sin(theta)], [0, np.sin(theta), np.cos(theta)]])
    w = World(radius=SIDE / 6, rigid_sleep_threshold=THRESHOLD)
    w.add_collider_plane(point=(0, 0, 0), normal=rot @ [0.0, 0.0, 1.0], friction=mu)
    v, f = box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, SIDE / 2 + 1e-3))
    return w, w.add_rigid(v @ rot.T, f, friction=mu), rot


def test_a_box_sliding_from_rest_down_an_incline_never_sleeps() -> None:
    # Coulomb: on a slope of 35 degrees with mu = 0.5 a block slides from rest with
    # a = g (sin theta - mu cos theta) = 1.61 m/s^2 > THRESHOLD / RIGID_SLEEP_SECONDS = 0.1 m/s^2, so it
    # passes the threshold after 0.03 s, long before it could sleep, and s(t) = a t^2 / 2. Tolerance as
    # test_analytic's incline: 3% (the contact settles in the first small steps).
    theta, mu, seconds = np.radians(35.0), 0.5, 1.0
    w, body, rot = _box_on_slope(theta, mu)
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
    below = w.bodies[2]
    z_below = float(below.center[2])
    top = w.add_rigid(*box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, 3.5 * SIDE + 0.2)))
    woken, moved, gap = False, 0.0, np.inf
    for _ in range(FPS):  # 1 s: it lands after 0.2 s
        w.step(1.0 / FPS)
        woken |= w.state().rigid_still_steps[2] == 0.0
        moved = max(moved, abs(float(below.center[2]) - z_below))
        gap = min(gap, float(top.center[2] - below.center[2]))
    assert woken
    # The box below gives way (measured 7 mm: a sleeping box would not move at all) and the dropped box
    # never passes into it: their centres stay a box height apart, less at most the overlap of one
    # contact hit at 2 m/s (one small step's travel, 2 m/s h = 5 mm; measured 2 mm).
    assert moved > 1e-3
    assert gap > SIDE - 2.0 * G**0.5 * 0.2**0.5 * h, f"gap {gap * 1000:.1f} mm"
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


def _energy(w: World) -> float:
    """Kinetic plus potential energy of every particle, J (the ground at z = 0)."""
    m = 1.0 / w._solver.model.particle_inv_mass  # every particle here is dynamic
    v = w.velocities
    return float(m @ (G * w.positions[:, 2] + 0.5 * np.einsum("ij,ij->i", v, v)))


def test_a_sleeping_column_stays_put_for_ten_seconds() -> None:
    # Once asleep, nothing acts on the column: it must not move at all and its energy never rise
    # (before, the frame's stabilization pass pushed the sleeping boxes out of their steady overlap, a
    # little every frame: 0.8 mm up over 10 s, potential energy +0.2 J a frame, sleep.sleeping_rows).
    # The bound is a thousandth of the steady overlap of one contact (40 g h^2, test_stacks); measured 0
    # and energy changes of exactly 0 from the frame it sleeps on.
    w = _column(THRESHOLD)
    h = 1.0 / (FPS * w.settings.substeps * w.settings.iterations)
    asleep_at = None
    for frame in range(10 * FPS):
        w.step(1.0 / FPS)
        if asleep_at is None and np.all(w.state().rigid_still_steps == sleep_steps(h)):
            asleep_at, x0, energy = frame, w.positions.copy(), _energy(w)
        elif asleep_at is not None:
            assert np.abs(w.positions - x0).max() < 0.04 * G * h * h, frame
            now = _energy(w)
            assert now <= energy + 1e-9, (frame, now - energy)
            energy = now
    assert asleep_at is not None
    assert asleep_at < round((0.25 + RIGID_SLEEP_SECONDS) * FPS)


@pytest.mark.parametrize("ratio", [1.1, 0.9])
def test_a_box_on_a_slope_sleeps_above_its_friction_angle_and_slides_below(ratio: float) -> None:
    # Coulomb on a 20 degree slope with mu = ratio * tan(theta): above tan(theta) static friction holds
    # the box (it settles in its first small steps, measured 0.5 mm, and sleeps after
    # RIGID_SLEEP_SECONDS); below, it slides from rest with a = g (sin theta - mu cos theta) = 0.34 m/s^2
    # > THRESHOLD / RIGID_SLEEP_SECONDS = 0.1 m/s^2, so it never sleeps and s = a t^2 / 2 (0.671 m in 2 s;
    # measured 0.672). Tolerance as the 35 degree incline above: 3 %.
    theta, seconds = np.radians(20.0), 2.0
    mu = ratio * np.tan(theta)
    w, body, rot = _box_on_slope(theta, mu)
    start = body.center.copy()
    h = 1.0 / (FPS * w.settings.substeps * w.settings.iterations)
    for _ in range(int(seconds * FPS)):
        w.step(1.0 / FPS)
        if ratio < 1.0:
            assert w.state().rigid_still_steps[0] < sleep_steps(h)  # never asleep
    slid = float((body.center - start) @ (rot @ [0.0, -1.0, 0.0]))
    if ratio > 1.0:
        assert w.state().rigid_still_steps[0] == sleep_steps(h)
        assert abs(slid) < 2e-3  # settling only (0.5 mm)
    else:
        expected = 0.5 * G * (np.sin(theta) - mu * np.cos(theta)) * seconds**2
        assert slid == pytest.approx(expected, rel=0.03)


def test_a_sleeping_box_hit_by_a_fast_grain_wakes() -> None:
    # A 125 kg box asleep on the ground, hit at 10 m/s by one grain (1600 kg/m^3 * (2r)^3 = 7.4 kg) flying
    # level at its centre's height. Momentum m u gives the box V between m u / (m + M) (a plastic hit)
    # and twice that (an elastic one), and ground friction (mu = 0.5) stops it after V^2 / (2 mu g):
    # between 3.2 and 12.7 cm (measured 3.7). A box that stayed asleep would not move.
    w = World(radius=SIDE / 6, rigid_sleep_threshold=THRESHOLD)
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))
    box = w.add_rigid(*box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, SIDE / 2 + 1e-3)))
    h = 1.0 / (FPS * w.settings.substeps * w.settings.iterations)
    for _ in range(FPS):
        w.step(1.0 / FPS)
    assert w.state().rigid_still_steps[0] == sleep_steps(h)  # asleep
    x0, u = box.center.copy(), 10.0
    w.add_granular([[-1.0, 0.0, SIDE / 2]], initial_velocity=(u, 0.0, 0.0))
    woken = False
    for _ in range(FPS):
        w.step(1.0 / FPS)
        woken |= w.state().rigid_still_steps[0] == 0.0
        # The grain never passes into the box: its centre stays a radius outside the box's face.
        assert w.positions[-1, 0] < box.center[0] - SIDE / 2 - 0.5 * SIDE / 6
    assert woken
    m, big_m, mu = 1600.0 * (SIDE / 3) ** 3, 1000.0 * SIDE**3, 0.5
    plastic = m * u / (m + big_m)
    slid = float(box.center[0] - x0[0])
    assert 0.9 * plastic**2 / (2 * mu * G) < slid < (2 * plastic) ** 2 / (2 * mu * G), slid
