# SPDX-License-Identifier: GPL-3.0-or-later
"""A coarse rock on fine sand (issue 22): a box of 5 cm particles dropped on a bed of 5 mm grains rests on
the bed (``rigid_support.support_bodies``), and grains poured on such a box rest on its face
(``corrections.apply_pair_jacobi``'s mass share), at the default solver budget."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh, grid_points

DT = 1.0 / 24.0
G = 9.81
RS, RB = 0.005, 0.05  # the grains' and the rock's particle radii, m: 10x apart
SIDE, DROP, LAYERS, N = 0.2, 0.3, 3, 24  # the box's side, its fall onto the bed, the bed's grains


def _energy(w: World, mass: np.ndarray) -> float:
    """Kinetic plus potential energy (floor at z = 0), J."""
    x, v = w.positions, w.velocities
    return float(np.sum(mass * (0.5 * np.einsum("ij,ij->i", v, v) + G * x[:, 2])))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_coarse_box_dropped_on_fine_sand_rests_on_it(seed: int) -> None:
    """A 0.2 m box of 5 cm particles falls 0.3 m onto a 3-layer bed of 5 mm grains (a 24 x 24 grid, each
    grain nudged by 1e-5 m): it must stop on the bed, not in it.

    Before: each grain under the box got ~1/150 of its push (count dilution) and the box ~1/1000 of it
    (its mass); the grains were held on the floor and the box went on through them at its full speed,
    2.4 m/s, to the floor (bottom at 0.000 m, the grains' top at 0.030 m, grains 25 mm inside it).

    Reference: a rigid box on a packed bed on a rigid floor stops on the bed; the bed's surface may only
    settle as the lattice's grains slide into its hollows (that compacts it by up to ~2 mm here). The
    tolerance on the rest height is half of one small step at the impact speed, v h / 2 with
    v = sqrt(2 g H) (3.2 mm): the box is stopped within the step it reaches the grains; measured: the
    grains under it reach at most 1 mm into it. Its speed at the end: below the speed gravity adds in
    two small steps, the solver's own rest speed (2 g h = 0.051 m/s; measured below 0.01 m/s).
    """
    w = World(radius=RS)
    w.add_collider_plane()
    pts = grid_points((N, N, LAYERS), 2.0 * RS, (-(N - 1) * RS, -(N - 1) * RS, RS))
    pts += 1e-5 * np.random.default_rng(seed).standard_normal(pts.shape)
    sand = w.add_granular(pts)
    top = 2.0 * RS * LAYERS
    v, f = box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, top + DROP + SIDE / 2.0))
    rock = w.add_rigid(v, f, radius=RB)
    mass = 1.0 / w.inverse_masses
    s = w.settings
    h = DT / (int(s.substeps) * int(s.iterations))
    tolerance = 0.5 * np.sqrt(2.0 * G * DROP) * h
    energy = [_energy(w, mass)]
    for _ in range(12):  # it lands in the 6th frame
        w.step(DT)
        energy.append(_energy(w, mass))
    x, vel = w.positions, w.velocities
    xr, xs = x[rock.indices], x[sand.indices]
    bottom = float(xr[:, 2].min() - RB)  # the box's lowest face
    centre = xr.mean(axis=0)
    half = 0.5 * (xr.max(axis=0) - xr.min(axis=0)) + RB
    under = np.all(np.abs(xs[:, :2] - centre[:2]) < half[:2], axis=1)
    assert under.sum() > 400, "the bed under the box lost its grains"
    grains_top = float(xs[under, 2].max() + RS)
    assert bottom > grains_top - tolerance, (bottom, grains_top, tolerance)
    assert bottom > top - 0.2 * top, bottom  # on the bed: compacting it by at most a fifth
    inside = np.all(np.abs(xs - centre) < half, axis=1)  # a grain's centre inside the box
    assert not inside.any(), f"{int(inside.sum())} grains inside the box"
    speed = float(np.linalg.norm(vel[rock.indices].mean(axis=0)))
    assert speed < 2.0 * G * h, speed
    # Energy never rises: at most one small step of the box's fall (M g * g h^2, 5 mJ) of rounding
    # between frames (measured: rises below 5e-5 J).
    rise = np.diff(energy)
    m_box = float(mass[rock.indices].sum())
    assert rise.max() < m_box * G * G * h * h, rise.max()


def test_grains_on_a_coarse_box_rest_on_its_face() -> None:
    """Two layers of 5 mm grains placed 1 mm above a resting 0.2 m box of 5 cm particles rest on its top
    face. Before the mass share (``corrections.apply_pair_jacobi``), each grain on the face got its
    push divided by the ~100 contacts of the box particle under it: they sank 5 mm into the face on
    average, the lowest 12.5 mm, and some fell through it within 12 frames.

    Reference: grains resting on a flat face. A grain with n contacts keeps an overlap of about
    n g h^2 at rest (one small step's fall per contact under Jacobi averaging); the tolerance allows
    n = 15 (1.0 mm); measured: 0.5 mm.
    """
    w = World(radius=RS)
    w.add_collider_plane()
    v, f = box_mesh((SIDE, SIDE, SIDE), (0.0, 0.0, SIDE / 2.0))
    rock = w.add_rigid(v, f, radius=RB)
    n = 16
    pts = grid_points((n, n, 2), 2.0 * RS, (-(n - 1) * RS, -(n - 1) * RS, SIDE + RS + 0.001))
    pts += 1e-5 * np.random.default_rng(1).standard_normal(pts.shape)
    sand = w.add_granular(pts)
    s = w.settings
    h = DT / (int(s.substeps) * int(s.iterations))
    deepest = 0.0
    for _ in range(8):
        w.step(DT)
        face = float(w.positions[rock.indices, 2].max() + RB)
        deepest = max(deepest, face - float(w.positions[sand.indices, 2].min() - RS))
    assert deepest < 15.0 * G * h * h, deepest


def test_a_coarse_box_sliding_on_fine_sand_stops_as_coulomb_says() -> None:
    """A 0.2 m box of 5 cm particles resting on two layers of 5 mm grains, pushed at 1 m/s along the bed.

    Reference: Coulomb friction, deceleration mu g with mu = 0.5 (the mean of both sides' default 0.5):
    it slides v^2 / (2 mu g) = 0.102 m. The support pass carries the box's weight, so it carries the
    friction too (``rigid_support.support_bodies``); before it did, the box slid on at 0.999 m/s.
    Tolerance: two small steps of the start speed (2 v h = 5.2 mm), the stop's discretisation being
    one; measured 0.1009 m.
    """
    w = World(radius=RS)
    w.add_collider_plane()
    n, m = 44, 24
    pts = grid_points((n, m, 2), 2.0 * RS, (-(n - 1) * RS, -(m - 1) * RS, RS))
    pts += 1e-5 * np.random.default_rng(1).standard_normal(pts.shape)
    w.add_granular(pts)
    v0, mu = 1.0, 0.5
    v, f = box_mesh((SIDE, SIDE, SIDE), (-0.1, 0.0, 4.0 * RS + SIDE / 2.0 + 0.0005))
    rock = w.add_rigid(v, f, radius=RB, initial_velocity=(v0, 0.0, 0.0), friction=mu)
    s = w.settings
    h = DT / (int(s.substeps) * int(s.iterations))
    start = float(w.positions[rock.indices, 0].mean())
    for _ in range(6):  # it stops in 0.2 s, the 5th frame
        w.step(DT)
    slid = float(w.positions[rock.indices, 0].mean()) - start
    assert abs(slid - v0 * v0 / (2.0 * mu * G)) < 2.0 * v0 * h, slid
    assert abs(float(w.velocities[rock.indices, 0].mean())) < 2.0 * G * h
