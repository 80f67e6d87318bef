"""Granular material: piles, friction, cohesion, the fill helper."""

from __future__ import annotations

import math

import numpy as np
import pytest

from unified_particles.core import World, fill_mesh_with_grains
from unified_particles.core.primitives import box_mesh, grid_points

R = 0.05


def _pile(friction: float) -> tuple[float, float]:
    """Drop a 6 x 6 x 8 column of grains on a plane for 3 s and return the pile's height (98th percentile
    of the grains' heights, m) and the fastest grain's speed over its last 2 s (m/s)."""
    w = World(radius=R)
    w.add_collider_plane(friction=friction)
    pts = grid_points((6, 6, 8), 2.0 * R * 1.02, (0.0, 0.0, R + 0.01))
    pts += np.random.default_rng(1).normal(0.0, 0.003, pts.shape)  # break the symmetry
    g = w.add_granular(pts, friction=friction)
    fastest = 0.0
    for frame in range(72):
        w.step(1.0 / 24.0)
        if frame >= 24:
            fastest = max(fastest, float(np.linalg.norm(w.velocities, axis=1).max()))
    x = w.positions[g.indices]
    return float(np.percentile(x[:, 2], 98)), fastest


@pytest.mark.slow
def test_pile_is_taller_with_more_friction() -> None:
    slippery, _ = _pile(0.0)
    rough, _ = _pile(1.0)
    # Frictionless grains spread into a single layer (top at ~r); with mu = 1 the pile keeps
    # several layers. (Position-level friction is averaged over a grain's ~6 contacts, so piles
    # stay lower than the 45 degree Coulomb angle of repose would allow: a known limitation.)
    assert slippery < 1.5 * R, "frictionless grains spread out to one layer"
    assert rough > slippery + 3 * R
    assert rough > 4 * slippery


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="issue 24: grains the support pass holds sit on frictionless slopes and slip off "
    "(physics.md, 'Open: grains slipping off a settling pile')",
)
def test_a_rough_pile_settles() -> None:
    # A pile of grains at mu = 1 on a rough plane comes to rest: after its first second no grain
    # moves faster than 0.5 m/s (a grain falling one radius from rest reaches sqrt(2 g r) = 0.99 m/s,
    # so a grain slower than half that is not falling off anything). This was the height test's own
    # check at the 3 s frame alone; it passed there on one machine and failed on another (0.67 m/s):
    # over frames 25-72 the fastest grain reaches 2.4 m/s (NumPy 1.26) and 2.8 m/s (2.5) here, a
    # different grain every few frames, each in free fall after sliding off a perch the frictionless
    # support push held it on (session 10).
    _, fastest = _pile(1.0)
    assert fastest < 0.5


def test_grains_do_not_overlap_or_sink_into_ground_once_settled() -> None:
    w = World(radius=R)
    w.add_collider_plane()
    g = w.add_granular(grid_points((5, 5, 5), 2.0 * R, (0.0, 0.0, R + 0.2)), friction=0.5)
    for _ in range(48):
        w.step(1.0 / 24.0)
    x = w.positions[g.indices]
    d = np.linalg.norm(x[:, None] - x[None], axis=2)
    np.fill_diagonal(d, np.inf)
    assert d.min() > 2 * R * 0.97
    assert x[:, 2].min() > R * 0.97


def test_cohesion_holds_a_column_together() -> None:
    def spread(cohesion: float) -> float:
        w = World(radius=R)
        w.add_collider_plane()
        g = w.add_granular(grid_points((3, 3, 6), 2.0 * R, (0.0, 0.0, R)), friction=0.2, cohesion=cohesion)
        w.velocities[g.indices] = np.random.default_rng(2).normal(0.0, 0.05, (54, 3))
        for _ in range(48):
            w.step(1.0 / 24.0)
        return float(np.ptp(w.positions[g.indices][:, 0]))

    assert spread(0.8) < spread(0.0) - 2 * R


def test_fill_mesh_with_grains_fills_a_box() -> None:
    v, f = box_mesh((0.4, 0.4, 0.4), (0.0, 0.0, 0.5))
    pts = fill_mesh_with_grains(v, f, R)
    # A face-centred cubic lattice of half-cell h = 4^(1/3) r (one grain per (2r)^3), its outer nodes at
    # least r inside: floor((0.4 - 2r) / h) + 1 = 4 nodes per axis, every other one of the 4^3 an FCC node.
    # (The simple cubic lattice had 0.4 / (2r) = 4 per axis, all 64 of them, every grain touching 6
    # others.)
    per_axis = math.floor((0.4 - 2 * R) / (R * 4.0 ** (1.0 / 3.0))) + 1
    assert per_axis == 4
    assert len(pts) == per_axis**3 // 2
    # Wholly inside the box (centres r from its faces), jittered by at most 0.12 r.
    assert np.all(np.abs(pts[:, :2]) <= 0.2 - R + 1e-12)
    assert np.all(np.abs(pts[:, 2] - 0.5) <= 0.2 - R + 1e-12)
    w = World(radius=R)
    g = w.add_granular(pts, density=1600.0)
    np.testing.assert_allclose(1.0 / w.inverse_masses[g.indices], 1600.0 * (2 * R) ** 3)


def test_falling_block_of_grains_does_not_gain_energy() -> None:
    # A block dropped 5 cm collapses into a pile; no grain may be thrown above the block's top
    # (energy conservation bounds any grain's rise; a solver blow-up throws them metres high).
    w = World(radius=R)
    w.add_collider_plane()
    pts = grid_points((8, 8, 8), 2.05 * R, (0.0, 0.0, R + 0.05))
    pts += np.random.default_rng(0).normal(0.0, 0.002, pts.shape)
    g = w.add_granular(pts, friction=0.6)
    top = pts[:, 2].max()
    highest = top
    for _ in range(36):
        w.step(1.0 / 24.0)
        highest = max(highest, w.positions[g.indices][:, 2].max())
    assert highest < top + 2 * R
