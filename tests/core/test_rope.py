"""Ropes (``World.add_rope``, core/rope.py) against the catenary and the pendulum, and their invariants."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from unified_particles.core import Rope, SimulationInputError, World
from unified_particles.core.primitives import box_mesh

G = 9.81
FPS = 24


def _bisect(f: Callable[[float], float], lo: float, hi: float) -> float:
    flo = f(lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if (f(mid) > 0.0) == (flo > 0.0):
            lo, flo = mid, f(mid)
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _hung_rope(substeps: int, nudge: float, r: float = 0.025) -> tuple[Rope, float, float, float]:
    """A 1.3 m chain (no bending stiffness) of particles of radius ``r`` hung from pins 1 m apart, drawn as
    a V, left 3 s to settle (damping 2/s). Returns the rope, its link length, the catenary's parameter a
    and its sag."""
    span, length = 1.0, 1.3
    w = World(radius=r, gravity=(0, 0, -G), substeps=substeps, damping=2.0)
    depth = np.sqrt((length / 2) ** 2 - (span / 2) ** 2)
    pts = np.array([[-span / 2, 0.0, 1.0], [nudge, 0.0, 1.0 - depth], [span / 2, 0.0, 1.0]])
    rope = w.add_rope(pts, pinned="both", bend_compliance=None)
    for _ in range(3 * FPS):
        w.step(1 / FPS)
    # Catenary z = a cosh(x / a) + c through both pins: 2 a sinh(S / 2a) = L, sag = a (cosh(S / 2a) - 1).
    a = _bisect(lambda a: 2 * a * np.sinh(span / (2 * a)) - length, 0.05, 100.0)
    return rope, rope.link_length, a, a * (np.cosh(span / (2 * a)) - 1.0)


@pytest.mark.parametrize(("substeps", "links"), [(4, 0.5), (8, 0.15)])
@pytest.mark.parametrize("nudge", [0.0, 3e-4])
def test_hung_rope_sags_as_the_catenary_of_its_length_and_span(
    substeps: int, links: float, nudge: float
) -> None:
    # Reference: the inextensible chain of length L = 1.3 m between pins S = 1 m apart is the catenary
    # above (a = 0.3805 m, sag 0.3688 m). The chain of 26 links is that curve sampled at its particles
    # (the discrete chain's shape differs by O(d^2 / a) = 0.007 m). The coloured Gauss-Seidel sweep alone
    # left 1.2% stretch at 4 substeps (sag 0.011 m deeper, 0.22 links), 0.3% at 8 (0.07 links): tolerances
    # 0.5 and 0.15 link lengths. The direct chain solve after it (core/chain_solve.py) leaves 0.00%: sag
    # 0.3696 m at both budgets (0.03 links).
    rope, link, a, sag = _hung_rope(substeps, nudge)
    x = rope.positions
    assert abs((1.0 - x[:, 2].min()) - sag) < links * link
    curve = 1.0 - sag + a * (np.cosh(x[:, 0] / a) - 1.0)  # the whole shape, not only its lowest point
    assert np.abs(x[:, 2] - curve).max() < links * link
    assert abs(x[:, 1]).max() < 1e-9  # it stays in its plane
    stretched = np.linalg.norm(np.diff(x, axis=0), axis=1).sum() / rope.length - 1.0
    assert stretched < (0.02 if substeps == 4 else 0.006)


@pytest.mark.parametrize("nudge", [0.0, 3e-4])
def test_long_chain_hangs_at_its_length_at_the_default_budget(nudge: float) -> None:
    # The same chain at r = 1 cm: 65 links. The sweep alone carried its weight to the pins a few links
    # per small step and left it 4.1% long (sag 0.397 m); the direct tridiagonal solve after the sweep
    # (core/chain_solve.py) holds the whole length each small step. Measured: stretch 0.00%, sag 0.3693
    # m against the catenary's 0.3688 (the discrete chain's O(d^2 / a) = 1 mm). Tolerances: 0.5%
    # stretch (the brief's bound 1%, halved), the shape within 0.15 links as at 8 substeps above.
    rope, link, a, sag = _hung_rope(4, nudge, r=0.01)
    x = rope.positions
    assert len(x) == 66
    stretched = np.linalg.norm(np.diff(x, axis=0), axis=1).sum() / rope.length - 1.0
    assert abs(stretched) < 0.005
    assert abs((1.0 - x[:, 2].min()) - sag) < 0.15 * link
    curve = 1.0 - sag + a * (np.cosh(x[:, 0] / a) - 1.0)
    assert np.abs(x[:, 2] - curve).max() < 0.15 * link


@pytest.mark.slow
@pytest.mark.parametrize("nudge", [2e-4])
def test_weight_on_a_rope_swings_with_the_pendulum_period_of_its_length(nudge: float) -> None:
    # A dense 0.1 m cube (8 kg) tied to the end of a 1 m rope of 1% its mass, pinned at the top, let go
    # 5 degrees out. Reference: the simple pendulum T = 2 pi sqrt(l / g), l from the pin to the cube's
    # centre (averaged over the swings). Corrections, all below 0.1%: the rope's own mass (I += m L^2 / 3,
    # torque += m g L / 2: -0.08%), the cube's inertia about its centre (k^2 / l^2 / 2 = 0.05%), the finite
    # amplitude (theta^2 / 16 = 0.05%). Tolerance 0.5%.
    r, theta = 0.025, np.radians(5.0)
    w = World(radius=r, gravity=(0, 0, -G))
    pin = np.array([0.0, 0.0, 2.0])
    u = np.array([np.sin(theta), 0.0, -np.cos(theta)])
    end = pin + u * 1.0
    v, f = box_mesh((0.1, 0.1, 0.1), end + u * (0.05 + r) + (nudge, 0.0, 0.0))
    box = w.add_rigid(v, f, density=8000.0)
    rope = w.add_rope(np.array([pin, end]), pinned="start", mass=0.01 * box.mass, attach=[(-1, box)])
    t, xs, ls = [], [], []
    for _ in range(int(5.5 * FPS)):  # two and a half periods
        w.step(1 / FPS)
        t.append(w.time)
        xs.append(box.center[0])
        ls.append(np.linalg.norm(box.center - pin))
    x, ts = np.array(xs), np.array(t)
    k = np.flatnonzero(np.sign(x[:-1]) != np.sign(x[1:]))  # through the vertical, either way
    crossings = ts[k] + (0.0 - x[k]) / (x[k + 1] - x[k]) * (ts[k + 1] - ts[k])
    periods = crossings[2:] - crossings[:-2]
    reference = 2.0 * np.pi * np.sqrt(np.mean(ls) / G)
    assert len(periods) >= 2
    assert np.all(np.abs(periods / reference - 1.0) < 0.005), (periods, reference)
    # The rope held the 100x heavier weight: stretched at most by the tethers' give (1%) plus the tie.
    assert np.mean(ls) < 1.0 * 1.01 + 0.05 + 0.05 * np.sqrt(3) + 0.01
    assert rope.attached
    assert box.mass > 50 * rope.mass


@pytest.mark.parametrize("nudge", [0.0, 3e-4])
def test_crate_dragged_by_its_rope_slides_at_the_pin_speed_with_coulomb_tension(nudge: float) -> None:
    # A 4 kg crate (0.2 m) on the ground (mu 0.5) tied at the middle of a side to a slack 0.05 kg rope
    # whose far end is dragged away at 0.5 m/s for 2 s. Reference: once taut, the crate follows the pin at
    # 0.5 m/s and the rope holds it against Coulomb friction, T = mu m g = 19.62 N. The tie acts on the
    # crate's pose with its whole mass (core/rope_ties.py); the old tie moved one particle of it after
    # shape matching and flung the crate 1.17 m in 0.5 s. Measured: speed 0.500 m/s from 0.3 s on, peak
    # 0.52 m/s as it goes taut; T = 20.1 N at 4 and 8 substeps, 20.05 N at 16 (the contact solve's
    # friction, +2.2%; the rope's own weight at the tie adds 0.01%). Tolerances: 5% on T, 2% on the speed,
    # 10% on the peak.
    r, mu, a, m, speed = 0.025, 0.5, 0.2, 4.0, 0.5
    w = World(radius=r, gravity=(0, 0, -G))
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1), friction=mu)
    v, f = box_mesh((a, a, a), (nudge, 0.0, a / 2))
    box = w.add_rigid(v, f, mass=m, friction=mu)
    start = np.array([a / 2 + r, 0.0, a / 2])
    pts = start + np.array([[0.0, 0.0, 0.0], [0.35, 0.15, 0.0], [0.7, 0.0, 0.0]])  # slack: 0.76 m over 0.7
    rope = w.add_rope(pts, pinned="end", mass=0.05, attach=[(0, box)], friction=mu)
    pin = rope.positions[-1].copy()
    x, tension = [], []
    for k in range(2 * FPS):
        rope.set_pin_targets([pin + np.array([speed * (k + 1) / FPS, 0.0, 0.0])])
        w.step(1 / FPS)
        x.append(box.center)
        tension.append(rope.tie_forces[0])
    u = np.linalg.norm(np.diff(np.array(x), axis=0), axis=1) * FPS
    assert u.max() < 1.1 * speed  # no fling
    assert np.all(np.abs(u[FPS // 2 :] / speed - 1.0) < 0.02)
    assert abs(np.mean(tension[FPS:]) / (mu * m * G) - 1.0) < 0.05
    assert abs(box.center[2] - a / 2) < 0.1 * r  # it slides flat, neither tipped nor lifted


@pytest.mark.parametrize("nudge", [0.0, 3e-4])
def test_a_bar_hung_from_two_tied_ropes_shares_its_weight_by_the_lever_rule(nudge: float) -> None:
    # A 2 kg bar hung level from two vertical ropes pinned above and tied 0.25 m either side of x = 0, its
    # centre nudged to x = nudge. Statics (the lever rule): the right tie holds m g (0.25 + nudge) / 0.5,
    # the left m g (0.25 - nudge) / 0.5; the ropes' own weight goes to their pins. A body tied twice has
    # its ties in two colours of the tie solve (core/rope_ties.py); each colour's rope particles used to
    # be weighted with every tie's inverse mass, a broadcast error, so such a scene did not run at all.
    # Measured after 1 s: within 0.003% of the lever rule, the bar level to 1e-6 m. Tolerance 0.5%.
    m = 2.0
    w = World(radius=0.025, gravity=(0, 0, -G))
    bar = w.add_rigid(*box_mesh((0.6, 0.1, 0.1), (nudge, 0.0, 0.5)), mass=m)
    ropes = [
        w.add_rope(np.array([[x, 0.0, 0.575], [x, 0.0, 1.0]]), pinned="end", mass=0.02, attach=[(0, bar)])
        for x in (-0.25, 0.25)
    ]
    for _ in range(FPS):
        w.step(1 / FPS)
    left, right = (float(rope.tie_forces[0]) for rope in ropes)
    assert left == pytest.approx(m * G * (0.25 - nudge) / 0.5, rel=0.005)
    assert right == pytest.approx(m * G * (0.25 + nudge) / 0.5, rel=0.005)
    # Hanging where it was tied: the ropes (0.425 m) stretch at most by their tethers' 1% give (measured:
    # 4.3 mm), plus 0.1 r.
    assert abs(bar.center[2] - 0.5) < 0.01 * 0.425 + 0.1 * 0.025


def test_rope_falls_onto_the_ground_and_rests_one_radius_above_it() -> None:
    r = 0.02
    w = World(radius=r, gravity=(0, 0, -G))
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))
    rope = w.add_rope(np.array([[0.0, 0.0, 0.3], [1.0, 0.0, 0.5]]))
    for _ in range(2 * FPS):
        w.step(1 / FPS)
    z = rope.positions[:, 2]
    assert np.all(np.abs(z - r) < 0.1 * r)  # every particle rests on the ground (contact at r)
    assert np.abs(rope.velocities).max() < 0.05


@pytest.mark.parametrize("r", [0.005, 0.04])
def test_a_rope_of_its_own_radius_rests_that_radius_above_the_ground(r: float) -> None:
    """Per-body sizes (core/sizes.py): a rope thinner or thicker than the world's 2 cm particles is sampled at
    its own diameter and touches the ground at its own radius (contact at r, within 0.1 r as above)."""
    w = World(radius=0.02, gravity=(0, 0, -G))
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))
    pts = np.array([[0.0, 0.0, 0.3], [0.5, 0.0, 0.4]])
    rope = w.add_rope(pts, radius=r)
    length = float(np.linalg.norm(pts[1] - pts[0]))  # a whole number of links, the nearest to 2r each
    assert rope.link_length == pytest.approx(length / round(length / (2 * r)))
    for _ in range(2 * FPS):
        w.step(1 / FPS)
    assert np.all(np.abs(rope.positions[:, 2] - r) < 0.1 * r)


def test_rope_collides_with_itself_but_not_with_its_neighbours() -> None:
    r = 0.02
    w = World(radius=r, gravity=(0, 0, 0))
    # A hairpin: the two legs 1.5 r apart overlap; neighbours along the chain touch at 2r.
    pts = np.array([[0.0, 0.0, 0.0], [0.4, 0.0, 0.0], [0.4, 0.03, 0.0], [0.0, 0.03, 0.0]])
    rope = w.add_rope(pts, bend_compliance=None)
    # Every link rests at the arc-length step (the turn's link starts as a shorter chord, 0.03 m against
    # 0.0395: it is the rope's length that counts, not the drawing's corners).
    rest = rope.link_length
    w.step(1 / FPS)
    x = rope.positions
    n = len(x)
    d = np.linalg.norm(x[:, None] - x[None], axis=2)
    far = np.abs(np.arange(n)[:, None] - np.arange(n)[None]) > 2
    assert d[far].min() > 1.8 * r  # the legs were pushed apart
    links = np.linalg.norm(np.diff(x, axis=0), axis=1)
    assert np.allclose(links, rest, rtol=0.02)  # and the links kept their length


def test_rope_pins_follow_their_targets_and_drag_the_rope() -> None:
    w = World(radius=0.02, gravity=(0, 0, -G))
    rope = w.add_rope(np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.5]]), pinned=[0])
    for k in range(12):
        rope.set_pin_targets(np.array([[0.05 * (k + 1), 0.0, 1.0]]))
        w.step(1 / FPS)
    x = rope.positions
    assert np.allclose(x[0], (0.6, 0.0, 1.0))
    assert x[-1, 0] > 0.1  # the hanging end came along


def test_rope_resamples_its_polyline_at_one_diameter() -> None:
    w = World(radius=0.01)
    pts = np.array([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.3, 0.4, 0.0]])  # 0.7 m along two legs
    rope = w.add_rope(pts, pinned=[0, -1], mass=0.35)
    x = rope.positions
    assert len(x) == 36
    assert rope.link_length == pytest.approx(0.02)
    assert np.allclose(x[0], pts[0])
    assert np.allclose(x[-1], pts[-1])
    assert list(rope.pinned) == [0, 35]
    assert rope.mass == pytest.approx(0.35 * 34 / 36)
    assert np.all(w.inverse_masses[rope.indices[[0, -1]]] == 0.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"points": [[0, 0, 0]]}, "K >= 2"),
        ({"points": [[0, 0, 0], [0, 0, 0]]}, "coincide"),
        ({"points": [[0, 0, 0], [np.nan, 0, 0]]}, "finite"),
        ({"radius": -0.02}, "radius"),
        ({"pinned": "middle"}, "'start', 'end', 'both'"),
        ({"pinned": [99]}, "rope particle indices"),
        ({"mass": -1.0}, "rope mass"),
        ({"attach": [(0, "box")]}, "not a rigid body"),
    ],
)
def test_bad_rope_input_raises_a_clear_error(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    w = World(radius=0.01)
    args = {"points": [[0, 0, 0], [1, 0, 0]], **kwargs}
    with pytest.raises(SimulationInputError, match=message):
        w.add_rope(**args)
