"""A box in a cloth sling: a closed system, so it may lose energy but never gain any (issue 24, item 5).

The sling is a strip of light cloth (0.1 kg) whose two ends are pinned along one horizontal line (the
pivot, x axis at z = 1 m); it runs down to a 1.5 kg box 0.4 m below, under it and back up, so box and
straps form a triangle that swings about the pivot. Released from rest, the only forces are gravity
and the pins, which do no work: the energy E = sum m (v^2 / 2 + g z) of every free particle can only
drop (contacts and constraint projections of PBD dissipate).

Before the fix (cloth_contacts.py) at the default budget, the box resting in the sling bounced ever
higher and was thrown out within 3 s (it ended 6.8 m below; swinging, 4.1 m): the held cloth pass
handed the jitter of the light cloth vertices under the heavy box to it as velocity, and the stretch
solve undid 10/11 of its friction.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh

G = 9.81
PIVOT_Z = 1.0
FPS = 24


def _resample(poly: np.ndarray, spacing: float) -> np.ndarray:
    """Points along a polyline (P, 2) at about ``spacing``, ends kept."""
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(poly, axis=0), axis=1))])
    t = np.linspace(0.0, s[-1], int(np.ceil(s[-1] / spacing)) + 1)
    return np.stack([np.interp(t, s, poly[:, 0]), np.interp(t, s, poly[:, 1])], axis=1)


def _sling(theta_deg: float, nudge: float = 0.0) -> tuple[World, np.ndarray]:
    """The sling turned by ``theta_deg`` about the pivot; returns the world and the box's indices."""
    r, spacing, width = 0.02, 0.03, 0.2
    bx, by, bz = 0.16, 0.16, 0.12
    top = PIVOT_Z - 0.4
    w = World(radius=r)
    # The strap's centre line in the y-z plane: pivot, round the box at r from its faces, pivot.
    yl, yr, zb = -by / 2 - r, by / 2 + r, top - bz - r
    corners = [[-r, PIVOT_Z], [yl, top], [yl, zb], [yr, zb], [yr, top], [r, PIVOT_Z]]
    path = _resample(np.array(corners), spacing)
    nx = round(width / spacing) + 1
    xs = np.linspace(-width / 2, width / 2, nx)
    v = np.stack([np.tile(xs, len(path)), np.repeat(path[:, 0], nx), np.repeat(path[:, 1], nx)], axis=1)
    grid = np.arange(len(v)).reshape(len(path), nx)
    a, b, c, d = grid[:-1, :-1], grid[:-1, 1:], grid[1:, 1:], grid[1:, :-1]
    f = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    bv, bf = box_mesh((bx, by, bz), center=(0.0, 0.0, top - bz / 2))
    th = np.radians(theta_deg)
    turn = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(th), -np.sin(th)], [0.0, np.sin(th), np.cos(th)]])
    pivot = np.array([0.0, 0.0, PIVOT_Z])
    w.add_cloth((v - pivot) @ turn.T + pivot, f, mass=0.1, pinned=np.concatenate([grid[0], grid[-1]]))
    box = w.add_rigid((bv - pivot) @ turn.T + pivot, bf, density=500.0)
    if nudge:
        free = w.inverse_masses > 0.0
        w.positions[free] += np.random.default_rng(7).normal(0.0, nudge, (int(free.sum()), 3))
    return w, box.indices


def _energy(w: World) -> float:
    free = w.inverse_masses > 0.0
    m = 1.0 / w.inverse_masses[free]
    v, z = w.velocities[free], w.positions[free, 2]
    return float((m * (0.5 * np.einsum("ij,ij->i", v, v) + G * z)).sum())


def _run(theta_deg: float, seconds: float, nudge: float) -> tuple[float, float, np.ndarray, float]:
    """(highest energy above the start, J; m g l of the box, J; box centre path (F, 3); box mass)."""
    w, idx = _sling(theta_deg, nudge)
    m = 1.0 / w.inverse_masses[idx]
    e0, worst = _energy(w), -np.inf
    path = []
    for _ in range(int(seconds * FPS)):
        w.step(1 / FPS)
        worst = max(worst, _energy(w) - e0)
        path.append(m @ w.positions[idx] / m.sum())
    centre = np.array(path)
    return worst, float(m.sum() * G * (PIVOT_Z - centre[0, 2])), centre, float(m.sum())


@pytest.mark.slow
@pytest.mark.parametrize("nudge", [0.0, 1e-4])
def test_a_box_resting_in_a_sling_gains_no_energy_and_stays_in_it(nudge: float) -> None:
    """At rest in the sling, default budget, 3 s: energy never above the start, the box stays in the sling.

    Measured (0 / 1e-4 m nudges): the energy only drops. The wander (38-45 mm) is mostly the settle: the
    box sinks 34 mm in z within 0.5 s as the one-sweep stretch solve lets the straps give up to the
    tethers' 10 %; horizontally it sways 1-2 cm in x and swings 2-2.4 cm in y, modes the settle's bounce
    excites on the unevenly stretched strap (not yet the few mm asked: docs/physics.md, "Trust: struck
    bodies, sprays and slings"). Before: thrown out. With the stretch converged (the coarse correction, on
    by default since session 7) the box settles 16 mm instead of 34-44 but swings 30-38 mm in y after the
    settle (wander 69 mm): the held contact pass's damping, not the stretch, is what is left. Session
    10 (rigid bodies stopped as a whole by the held pass, so the swing is no longer damped away): wander
    10 / 55 / 18 mm in x / y / z, the y part a pendulum sway of up to 6 degrees that the settle starts and
    the positional shifts of the held pass keep up (docs/physics.md, Cloth: not yet the 1 cm asked).
    """
    gain, mgl, centre, _ = _run(0.0, 3.0, nudge)
    # The start is the highest energy it may have; 1e-3 m g l covers the rounding of sums of ~400 terms.
    assert gain < 1e-3 * mgl, f"energy rose {gain:.4f} J above the start (m g l = {mgl:.2f} J)"
    wander = np.abs(centre - centre[0]).max(axis=0)
    assert wander.max() < 0.1, f"the box wandered {wander.round(3)} m from where it rested"
    assert centre[-1, 2] > PIVOT_Z - 0.6, "the box left the sling"


@pytest.mark.slow
def test_a_box_swinging_in_a_sling_gains_no_energy() -> None:
    """Released at 20 degrees, default budget, 10 s: the energy never rises above the start and the box
    keeps swinging in the sling (a physical pendulum about the pivot; see docs/physics.md, Cloth, for its
    period against 2 pi sqrt(I / (m g l)) at 16 substeps).

    Tolerance: symplectic Euler conserves a modified energy that differs from E by O(h omega) of the
    swing's energy M g l (1 - cos theta0) (Hairer, Lubich, Wanner, Geometric Numerical Integration,
    Ch. IX), h = 1 / (24 * 16) s, omega = sqrt(g / l); plus 1e-3 m g l for the rounding of the sums.
    Measured: the energy only drops (the settle, then the swing's damping)."""
    gain, mgl, centre, mass = _run(20.0, 10.0, 0.0)
    length = mgl / (mass * G)
    h, omega = 1.0 / (FPS * 16), np.sqrt(G / length)
    tol = h * omega * mgl * (1.0 - np.cos(np.radians(20.0))) + 1e-3 * mgl
    assert gain < tol, f"energy rose {gain:.4f} J above the start (m g l = {mgl:.2f} J)"
    angle = np.degrees(np.arctan2(centre[:, 1], PIVOT_Z - centre[:, 2]))
    assert np.abs(angle).max() < 21.0, f"swung out to {np.abs(angle).max():.1f} degrees from 20"
    assert centre[-1, 2] > PIVOT_Z - 0.6, "the box left the sling"


@pytest.mark.slow
def test_a_box_swinging_in_a_sling_reaches_the_far_side() -> None:
    """Released at 20 degrees, default budget: the box swings through the bottom to the far side.

    Reference: an undamped pendulum reaches -20 degrees at T/2 (T = 2 pi sqrt(I / (M g l)) (1 + theta0^2
    / 16) = 1.378 s, docs/physics.md); PBD's contacts dissipate, so only a lower bound is asked: past
    -8 degrees (40 % of the amplitude) within the first period. Measured: -11.3 degrees at 0.62 s. Before
    the held pass stopped rigid bodies as a whole (cloth_contacts.py) the box reached only -2.9 degrees
    and then hung near -4 degrees: the walls of the strap took its speed.
    """
    _, _, centre, _ = _run(20.0, 1.4, 0.0)
    angle = np.degrees(np.arctan2(centre[:, 1], PIVOT_Z - centre[:, 2]))
    assert angle.min() < -8.0, f"the box reached only {angle.min():.1f} degrees on the far side"
