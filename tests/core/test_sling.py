"""A box in a cloth sling: a closed system, so it may lose energy but never gain any (issue 24, item 5).

The sling is a strip of light cloth (0.1 kg) whose two ends are pinned along one horizontal line (the
pivot, x axis at z = 1 m); it runs down to a 1.5 kg box 0.4 m below, under it and back up, so box and
straps form a triangle that swings about the pivot. Released from rest, the only forces are gravity
and the pins, which do no work: the energy E = sum m (v^2 / 2 + g z) of every free particle can only
drop (contacts and constraint projections of PBD dissipate).

Before the fix (cloth_contacts.py) at the default budget, the box resting in the sling bounced ever
higher and was thrown out within 3 s (it ended 6.8 m below; swinging, 4.1 m): the held cloth pass
handed the jitter of the light cloth vertices under the heavy box to it as velocity, and the stretch
solve undid 10/11 of its friction. Until session 11 the swing died within a period and the resting box
wandered 5 cm: the held pass stopped each particle in the world frame, and the slop fed the strap's jitter
into the box; it now stops a rigid body as a whole and lets it rest without slop on inextensible cloth
(cloth_contacts.py; docs/physics.md, *The sling's swing*).
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


def _taut_strap(r: float, by: float, bz: float, top: float) -> np.ndarray:
    """The strap's centre line in the y-z plane (P, 2), taut: from one pin round the box to the other.

    The box's particles sit on a grid 2r apart, r inside its faces, and the cloth rests 2r from their
    centres, so the strap wraps the particle centres' rectangle grown by 2r (rounded corners of radius
    2r), running straight from the pins to it: the convex hull of the pins and that rounded rectangle.
    A strap laid with square corners r outside the faces has 2r (2 - pi / 2) of slack at each corner:
    the box fell 2.5 cm into it and swung from the landing.
    """
    a = np.linspace(0.0, 2.0 * np.pi, 64, endpoint=False)
    ring = 2.0 * r * np.stack([np.cos(a), np.sin(a)], axis=1)
    cy, cz = by / 2 - r, (top - r, top - bz + r)
    centres = [(sy * cy, z) for sy in (-1.0, 1.0) for z in cz]
    pts = np.concatenate([ring + c for c in centres] + [np.array([[-r, PIVOT_Z], [r, PIVOT_Z]])])
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]
    hull: list[np.ndarray] = []  # Andrew's monotone chain, counter-clockwise: lower part, then upper
    for chain in (pts, pts[::-1]):
        part: list[np.ndarray] = []
        for p in chain:
            while len(part) >= 2 and _turn(part[-2], part[-1], p) <= 0.0:
                part.pop()
            part.append(p)
        hull += part[:-1]
    ring_path = np.array(hull)
    first = int(np.flatnonzero((ring_path[:, 0] == -r) & (ring_path[:, 1] == PIVOT_Z))[0])
    ring_path = np.roll(ring_path, -first, axis=0)  # from the left pin down, round, up to the right one
    return ring_path[: int(np.flatnonzero(ring_path[:, 0] == r)[0]) + 1]


def _turn(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """z of (a - o) x (b - o): > 0 for a counter-clockwise turn."""
    return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))


def _sling(theta_deg: float, nudge: float = 0.0) -> tuple[World, np.ndarray]:
    """The sling turned by ``theta_deg`` about the pivot; returns the world and the box's indices."""
    r, spacing, width = 0.02, 0.03, 0.2
    bx, by, bz = 0.16, 0.16, 0.12
    top = PIVOT_Z - 0.4
    w = World(radius=r)
    path = _resample(_taut_strap(r, by, bz, top), spacing)
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
    """(highest energy above the start, J; m g l of the box, J; box centre path (F + 1, 3) from the
    start; box mass)."""
    w, idx = _sling(theta_deg, nudge)
    m = 1.0 / w.inverse_masses[idx]
    e0, worst = _energy(w), -np.inf
    path = [m @ w.positions[idx] / m.sum()]  # as built, then at every frame's end
    for _ in range(int(seconds * FPS)):
        w.step(1 / FPS)
        worst = max(worst, _energy(w) - e0)
        path.append(m @ w.positions[idx] / m.sum())
    centre = np.array(path)
    return worst, float(m.sum() * G * (PIVOT_Z - centre[0, 2])), centre, float(m.sum())


@pytest.mark.slow
@pytest.mark.parametrize("nudge", [0.0, 1e-4])
def test_a_box_resting_in_a_sling_gains_no_energy_and_stays_in_it(nudge: float) -> None:
    """At rest in the sling, default budget, 10 s: energy never above the start, the box stays in the sling.

    The strap is built taut round the box (``_taut_strap``). Measured (0 / 1e-4 m nudges): the energy
    only drops; wander from where it was built 3.4 / 6.3 / 4.2 and 3.8 / 8.4 / 4.2 mm in x / y / z over
    10 s (session 10: 57 / 49 / 14 and 55 / 57 / 13; the issue asks under 1 cm in 3 s:
    ``test_a_box_resting_in_a_sling_stays_within_a_centimetre``). Before session 10 the strap was laid
    with square corners r outside the box's faces, 2r (2 - pi / 2) of slack at each corner: the box fell
    2.5 cm into it and swung from the landing (38-69 mm in 3 s); thrown out before session 6.
    """
    gain, mgl, centre, _ = _run(0.0, 10.0, nudge)
    # The start is the highest energy it may have; 1e-3 m g l covers the rounding of sums of ~400 terms.
    assert gain < 1e-3 * mgl, f"energy rose {gain:.4f} J above the start (m g l = {mgl:.2f} J)"
    wander = np.abs(centre - centre[0]).max(axis=0)
    assert wander.max() < 0.1, f"the box wandered {wander.round(3)} m from where it rested"
    assert centre[-1, 2] > PIVOT_Z - 0.6, "the box left the sling"


@pytest.mark.slow
def test_a_box_resting_in_a_sling_stays_within_a_centimetre() -> None:
    """Issue 24, item 5: resting in the sling, default budget, the box stays within 1 cm of where it was
    built for 3 s. Measured: 3.4 / 5.3 / 4.2 mm (x / y / z; session 10: 32 / 49 / 13 mm); 0.7 / 0.2 /
    1.8 mm at 16 substeps. The body stopped whole and resting at 2r on the inextensible strap
    (cloth_contacts.py; docs/physics.md, *The sling's swing*)."""
    _, _, centre, _ = _run(0.0, 3.0, 0.0)
    wander = np.abs(centre - centre[0]).max(axis=0)
    assert wander.max() < 0.01, f"the box wandered {wander.round(4)} m in 3 s from where it was built"


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


def _pendulum_period(theta_deg: float) -> float:
    """The physical pendulum's period about the pivot (the x axis at z = PIVOT_Z), s:

    T = 2 pi sqrt(I / (M g l)) (1 + theta0^2 / 16) (the amplitude term: Landau and Lifshitz, Mechanics,
    Sec. 28), I = sum m d^2 of every free particle about the axis, M their mass, l their centre of mass's
    distance from it, in the sling as built (1.37-1.38 s at 20 degrees)."""
    w, _ = _sling(0.0)
    free = w.inverse_masses > 0.0
    m = 1.0 / w.inverse_masses[free]
    yz = w.positions[free][:, 1:] - np.array([0.0, PIVOT_Z])
    inertia = float(m @ np.einsum("ij,ij->i", yz, yz))
    moment = float(np.linalg.norm(m @ yz))  # M l
    return 2.0 * np.pi * np.sqrt(inertia / (moment * G)) * (1.0 + np.radians(theta_deg) ** 2 / 16.0)


@pytest.mark.slow
def test_a_box_swinging_in_a_sling_keeps_the_pendulums_period() -> None:
    """Released at 20 degrees, default budget: the box swings through the bottom to the far side, with
    the period of the physical pendulum (``_pendulum_period``).

    Tolerances: the period within 5 % (the mean of the first three half periods, from the zero crossings
    of the box's angle about the pivot: at 16 substeps 0.654, 0.671, 0.648 s, 4.6 % short, before session
    11 0.670, 0.674, 0.666 s); PBD's contacts dissipate, so only a lower bound on the far side: past -12
    degrees (60 % of the amplitude; 16 substeps: -15.6 degrees, before session 11 -17.6). Measured at the
    default budget: -15.6, 13.0, -10.3 degrees, half periods 0.662, 0.664, 0.649 s (-4.5 %). Before
    session 11: -12.5 degrees at 0.79 s, back to +1.8, then it hung near -3 degrees (the held pass
    stopped each particle of the box against its own motion, so the strap's wall ahead took speed off it
    and the wall behind gave none back); docs/physics.md, *The sling's swing*.
    """
    _, _, centre, _ = _run(20.0, 2.5, 0.0)
    angle = np.degrees(np.arctan2(centre[:, 1], PIVOT_Z - centre[:, 2]))
    assert angle.min() < -12.0, f"the box reached only {angle.min():.1f} degrees on the far side"
    k = np.flatnonzero(np.sign(angle[:-1]) * np.sign(angle[1:]) < 0)[:4]
    assert len(k) == 4, f"the box crossed the bottom {len(k)} times in 2.5 s, not 4"
    crossing = (k + angle[k] / (angle[k] - angle[k + 1])) / FPS  # linear between frames
    half = float(np.diff(crossing).mean())
    reference = _pendulum_period(20.0) / 2.0
    assert abs(half / reference - 1.0) < 0.05, f"half period {half:.3f} s against {reference:.3f} s"
