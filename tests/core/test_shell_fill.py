# SPDX-License-Identifier: GPL-3.0-or-later
"""Hollow bodies filled as a shell (issue 23, item 6; ``geometry.shell_of``, ``World.add_rigid(shell=)``).

A body filled solid has particles everywhere inside its mesh, so a ball placed inside a box overlaps the
box's particles and, symmetric, stays stuck in them (the start-overlap cap of core/depenetration.py keeps
it from being thrown but cannot find it a way out). Filled as a shell (Blender's "Mesh" shape, hollow in
Bullet) only one layer under the surface is kept: the ball falls onto the box's inner floor and rests.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.geometry import fill_measure, sample_rigid, shell_of
from unified_particles.core.primitives import box_mesh, uv_sphere_mesh

R = 0.05
FPS = 24
G = 9.81
H = 1.0 / (FPS * 16)  # the small step of the default 4 substeps x 4 iterations
CONTACT = 40.0 * G * H * H  # one resting contact's steady overlap, at most (test_stacks.py)
SIDE = 0.6  # 6 particle diameters: the fitted grid is 2r apart, the walls exactly 2r thick
LIFT = 0.01  # the box starts this far above the ground


def gap(a: Any, b: Any) -> float:
    """Smallest distance between a particle of a and one of b, metres."""
    d = a.positions[:, None, :] - b.positions[None, :, :]
    return float(np.sqrt((d * d).sum(axis=2)).min())


def ball_in_box(shell: bool, nudge: float = 0.0) -> tuple[World, Any, Any]:
    """A 0.6 m box (500 kg/m^3) 1 cm above the ground, a 0.1 m ball at its middle, slightly off-centre."""
    w = World(radius=R)
    w.add_collider_plane()
    v, f = box_mesh((SIDE,) * 3, (0.0, 0.0, SIDE / 2 + LIFT))
    box = w.add_rigid(v, f, density=500.0, shell=shell)
    sv, sf = uv_sphere_mesh(0.1, (nudge, 0.02, SIDE / 2 + LIFT))
    ball = w.add_rigid(sv, sf, density=500.0)
    return w, box, ball


def test_shell_box_weighs_its_walls() -> None:
    """Side 0.6 m = 6 diameters: the outer layer is 152 of 216 particles, and the walls (2r thick) are
    0.6^3 - 0.4^3 = 0.152 m^3, so the shell weighs 500 * 0.152 = 76 kg (solid: 108 kg)."""
    w = World(radius=R)
    v, f = box_mesh((SIDE,) * 3)
    shell = w.add_rigid(v, f, density=500.0, shell=True)
    solid = w.add_rigid(v + 2.0, f, density=500.0)
    assert (len(shell.indices), len(solid.indices)) == (152, 216)
    assert shell.mass == pytest.approx(500.0 * (SIDE**3 - (SIDE - 4 * R) ** 3), rel=1e-12)
    assert solid.mass == pytest.approx(500.0 * SIDE**3, rel=1e-12)
    # Only the surface layer: every centre is r inside a face.
    local = np.abs(shell.positions - shell.positions.mean(axis=0))
    np.testing.assert_allclose(local.max(axis=1), SIDE / 2 - R, atol=1e-9)
    # Make's estimate of the count (blender/cost.py) is exact for a box.
    measure = fill_measure(v, f)
    assert (measure.shell_count(2 * R), measure.rigid_count(2 * R)) == (152, 216)
    # A given mass wins over density.
    assert w.add_rigid(v - 2.0, f, mass=3.0, shell=True).mass == pytest.approx(3.0)


def test_thin_body_is_all_wall() -> None:
    """A plank thinner than two layers keeps every particle as a shell (nothing inside to hollow)."""
    v, f = box_mesh((0.6, 0.6, 0.15))
    s = sample_rigid(v, f, R)
    kept, share = shell_of(s, R)
    assert share == 1.0
    assert len(kept.points) == len(s.points)


@pytest.mark.parametrize("nudge", [0.0, 3e-4])
def test_ball_in_shell_box_rests_inside_and_is_not_thrown(nudge: float) -> None:
    w, box, ball = ball_in_box(True, nudge)
    z0 = ball.center[2]
    top = 0.0
    for _ in range(FPS):
        w.step(1.0 / FPS)
        top = max(top, float(np.linalg.norm(ball.velocities.mean(axis=0))))
    # The box rests on its bottom face as a solid box does (test_exact_shapes.py).
    assert abs(box.center[2] - SIDE / 2) <= CONTACT
    # The ball is inside the walls: its centres at least sqrt(2) r inside the walls' layer of centres (r
    # inside the faces; sqrt(2) r: a sphere resting in the pocket of four touching spheres 2r apart, the
    # deepest a sphere nests in a layer), up to a contact's overlap.
    rel = np.abs(ball.positions - box.center)
    assert rel.max() <= SIDE / 2 - R - math.sqrt(2.0) * R + CONTACT, rel.max()
    assert gap(ball, box) >= 2 * R - CONTACT
    # Not thrown: its centre no faster than a free fall through the height it lost (energy: v^2 = 2 g dz)
    # plus one small step's gravity (1.33 m/s against a bound of 1.67 m/s; its points spin up to 1.95 m/s
    # as it lands off-centre on the layer's dimples).
    drop = z0 - ball.center[2]
    assert drop > 0.1
    assert top <= math.sqrt(2.0 * G * drop) + G * H, (top, drop)
    assert np.linalg.norm(ball.velocities, axis=1).max() < 0.05  # at rest


def test_ball_in_solid_box_stays_stuck_in_its_particles() -> None:
    """The same ball in a solid box overlaps the box's particles and cannot fall (why shells exist); the
    start-overlap cap keeps it from being thrown."""
    w, box, ball = ball_in_box(False)
    assert gap(ball, box) < R
    for _ in range(FPS // 2):
        w.step(1.0 / FPS)
    assert gap(ball, box) < R
    assert abs(ball.center[2] - (SIDE / 2 + LIFT)) < 0.05
    assert np.linalg.norm(ball.velocities, axis=1).max() <= w.settings.max_depenetration_speed * (1 + 1e-9)
