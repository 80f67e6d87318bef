"""Tearing cloth (``World.add_cloth(tear_strain=...)``, core/tearing.py): edges break above the strain,
the mesh splits, mass and momentum are kept, the tear mask says where."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World

FPS = 24
TEAR = 0.1  # tear strain of the strips: edges break at 10% stretch


def _strip(nx: int = 21, length: float = 1.0, width: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """A strip along x of one row of quads (two triangles each), ``nx`` vertices per side."""
    xs, ys = np.meshgrid(np.linspace(0.0, length, nx), np.linspace(0.0, width, 2), indexing="ij")
    v = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1)
    idx = np.arange(xs.size).reshape(xs.shape)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    return v, np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def _pull(strain: float, tear_mask: np.ndarray | None = None, jitter: float = 0.0, seed: int = 7) -> object:
    """The strip clamped at both ends (its end vertices pinned), the ends drawn apart symmetrically to
    ``strain`` of its length over 1 s and held 0.5 s, without gravity and air: a stretchy knit (edge
    compliance 0.01 m/N, bending pairs 10 m/N: they would carry the pull in-plane)."""
    v, f = _strip()
    v = v + jitter * np.random.default_rng(seed).standard_normal(v.shape) * [1.0, 1.0, 0.0]
    world = World(radius=0.01, gravity=(0.0, 0.0, 0.0))
    left, right = np.flatnonzero(v[:, 0] < 0.01), np.flatnonzero(v[:, 0] > 0.99)
    pins = np.concatenate([left, right])
    cloth = world.add_cloth(
        v, f, mass=0.05, pinned=pins, stretch_compliance=1e-2, bend_compliance=10.0, air_viscosity=0.0,
        tear_strain=TEAR, tear_mask=tear_mask,
    )  # fmt: skip
    side = np.where(np.isin(pins, right), 0.5, -0.5)[:, None] * [1.0, 0.0, 0.0]
    for frame in range(1, int(1.5 * FPS) + 1):
        cloth.set_pin_targets(v[pins] + side * strain * min(frame / FPS, 1.0))  # type: ignore[attr-defined]
        world.step(1 / FPS)
    return cloth


def test_a_strip_tears_above_the_tear_strain_and_not_below() -> None:
    """A bar clamped at both ends and drawn out by dL is strained uniformly, eps = dL / L (Hooke; the
    strip test of ISO 13934-1). The membrane strain the tear test reads (fan-averaged, core/tearing.py) is
    0.85-0.9 eps along this strip and up to 1.19 eps at its clamped ends (uneven: one solver sweep per
    small step; from 1.07 to 1.19 with the vertices moved 10-100 um), so at 0.8 times the tear strain it
    reads at most 0.95 of it and holds, and at 1.25 times it reads over 1.3 of it and tears. Torn, the
    strip splits: spares take over corners and the two ends' pieces are no longer joined."""
    whole = _pull(0.8 * TEAR)
    assert whole.torn_edges == 0  # type: ignore[attr-defined]
    assert whole.tear.used == 0  # type: ignore[attr-defined]
    torn = _pull(1.25 * TEAR)
    assert torn.torn_edges > 0  # type: ignore[attr-defined]
    tear = torn.tear  # type: ignore[attr-defined]
    assert tear.used > 0  # spares took over the corners of the parts
    # Parted: the corners' particles fall into pieces; the left pins' piece and the right pins' are two.
    pos = torn.render_positions  # type: ignore[attr-defined]
    assert pos.shape == (len(tear.corner_vertex), 3)
    assert np.all(np.isfinite(pos))
    assert _pieces(tear) >= 2


def _pieces(tear: object) -> int:
    """Number of pieces of a torn cloth: triangles joined by a shared particle are one piece."""
    tri = tear.corner_particle.reshape(-1, 3)  # type: ignore[attr-defined]
    label = np.arange(tri.max() + 1)
    while True:  # label propagation over the triangles' particles
        low = label[tri].min(axis=1)
        new = label.copy()
        np.minimum.at(new, tri.ravel(), np.repeat(low, 3))
        if np.array_equal(new, label):
            return len(np.unique(label[tri[:, 0]]))
        label = new


@pytest.mark.parametrize("seed", [1])
def test_the_strip_holds_below_the_tear_strain_when_perturbed(seed: int) -> None:
    """The same strip with every vertex moved up to ~20 um: 0.8 times the tear strain still holds."""
    assert _pull(0.8 * TEAR, jitter=1e-5, seed=seed).torn_edges == 0  # type: ignore[attr-defined]


def test_mass_and_momentum_are_conserved_across_tears() -> None:
    """A free strip (no pins, gravity or air) whose halves fly apart at 3 m/s each plus a drift of
    (0.5, 0.2, 0) m/s: it tears, and every split gives the new particle the vertex's velocity and the mass
    of its corners, so the total mass and momentum P = sum m v stay M drift (the constraints conserve
    momentum too: equal and opposite impulses). Tolerance: round-off of ~1e4 additions of terms
    ~1e-3 kg m/s, far under 1e-9 kg m/s."""
    v, f = _strip()
    world = World(radius=0.01, gravity=(0.0, 0.0, 0.0))
    drift = np.array([0.5, 0.2, 0.0])
    # Isometric bending: its stencil weights sum to zero, so it conserves momentum (the legacy bending's
    # Jacobi averaging does not, torn or not).
    cloth = world.add_cloth(
        v, f, mass=0.05, stretch_compliance=1e-3, bending_rigidity=1e-5, air_viscosity=0.0, tear_strain=TEAR
    )
    n = cloth.n_vertices  # type: ignore[attr-defined]
    vel = world.velocities
    vel[:n] = drift + 3.0 * np.sign(v[:, :1] - 0.5) * [1.0, 0.0, 0.0]  # symmetric: P = M drift
    world.velocities = vel
    tear = cloth.tear  # type: ignore[attr-defined]

    def totals() -> tuple[float, np.ndarray]:
        idx, w = tear.masses()
        live = world.particle_active[idx] & (w > 0.0)
        m = 1.0 / w[live]
        return float(m.sum()), (m[:, None] * world.velocities[idx[live]]).sum(axis=0)

    mass0, p0 = totals()
    assert mass0 == pytest.approx(0.05, rel=1e-12)
    np.testing.assert_allclose(p0, 0.05 * drift, atol=1e-12)
    for _ in range(6):
        world.step(1 / FPS)
        mass, p = totals()
        assert mass == pytest.approx(mass0, rel=1e-12)
        np.testing.assert_allclose(p, p0, atol=1e-9)
    assert cloth.torn_edges > 0  # type: ignore[attr-defined]
    assert tear.used > 0


def test_the_tear_mask_restricts_where_it_tears() -> None:
    """With only the left third tearable, the strip pulled to 1.25 times the tear strain tears there and
    nowhere else (every broken edge has both ends in the mask)."""
    v, _ = _strip()
    mask = np.flatnonzero(v[:, 0] < 0.34)
    cloth = _pull(1.25 * TEAR, tear_mask=mask)
    tear = cloth.tear  # type: ignore[attr-defined]
    broken = tear.edges[~tear.edge_alive]
    assert len(broken) > 0
    assert np.all(np.isin(broken, mask))
    assert np.all(np.isin(tear.spare_vertex[: tear.used], mask))


def test_a_torn_cloth_resumes_from_a_snapshot_bit_identically() -> None:
    """Snapshots keep the broken edges and the split vertices: a run restored mid-tear steps on exactly."""
    v, f = _strip()
    world = World(radius=0.01, gravity=(0.0, 0.0, 0.0))
    cloth = world.add_cloth(v, f, mass=0.05, stretch_compliance=1e-3, air_viscosity=0.0, tear_strain=TEAR)
    vel = world.velocities
    vel[: len(v)] = np.where(v[:, :1] > 0.5, 3.0, -3.0) * [1.0, 0.0, 0.0]
    world.velocities = vel
    for _ in range(2):
        world.step(1 / FPS)
    snap = world.state()
    for _ in range(3):
        world.step(1 / FPS)
    expected = cloth.render_positions  # type: ignore[attr-defined]
    assert cloth.torn_edges > 0  # type: ignore[attr-defined]
    world.set_state(snap)
    for _ in range(3):
        world.step(1 / FPS)
    np.testing.assert_array_equal(cloth.render_positions, expected)  # type: ignore[attr-defined]


def test_bad_tear_settings_say_what_to_do() -> None:
    v, f = _strip(nx=5)
    world = World(radius=0.01)
    with pytest.raises(SimulationInputError, match="tear_strain"):
        world.add_cloth(v, f, tear_strain=0.0)
    with pytest.raises(SimulationInputError, match="needs a tear_strain"):
        world.add_cloth(v, f, tear_mask=[0, 1])
    with pytest.raises(SimulationInputError, match="balloon"):
        world.add_cloth(v, f, tear_strain=0.2, inflation=1.0)
