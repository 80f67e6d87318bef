"""Breakable glue (``World.glue``, core/glue.py): it holds what its strength holds and breaks above it."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import RigidBody, SimulationInputError, World
from unified_particles.core.primitives import box_mesh

G = 9.81
R = 0.025
FPS = 24


def _cantilever(strength: float, nudge: float) -> tuple[RigidBody, float]:
    """A 0.4 x 0.2 x 0.2 m brick (2000 kg/m^3) glued by its 0.2 x 0.2 m end face to the side of a fixed
    (kinematic) block, one second. Returns the brick and the strength its glue needs."""
    w = World(radius=R, gravity=(0, 0, -G))
    anchor = w.add_rigid(*box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 1.0)))
    w.set_kinematic(anchor, True)
    brick = w.add_rigid(*box_mesh((0.4, 0.2, 0.2), (0.3 + nudge, 0.0, 1.0)), density=2000.0)
    (joint,) = w.glue(strength=strength)
    for _ in range(FPS):
        w.step(1 / FPS)
    # Statics: the seam (area A = 0.04 m^2, height h = 0.2 m) carries the weight m g and the moment
    # m g L about it (L = 0.2 m to the brick's centre); the glue's moment capacity is s A h / 6 (a glued
    # rectangle's edge fails first), so it holds for s above s* = 6 m g L / (A h) = 47.1 kPa.
    area, h, lever = 0.04, 0.2, 0.2
    assert joint.break_force == pytest.approx(strength * area)
    return brick, 6.0 * brick.mass * G * lever / (area * h)


@pytest.mark.parametrize("nudge", [0.0, 1e-4])
def test_glue_holds_a_cantilevered_brick_above_the_strength_its_moment_needs(nudge: float) -> None:
    brick, needed = _cantilever(1.25 * 47_088.0, nudge)
    assert needed == pytest.approx(47_088.0, rel=1e-3)
    assert np.allclose(brick.center, (0.3 + nudge, 0.0, 1.0), atol=1e-3)  # it did not move
    brick, _ = _cantilever(0.8 * 47_088.0, nudge)
    assert brick.center[2] < 0.0  # broke off and fell (4.9 m in a free-fall second)


def _tower_hit(speed: float) -> tuple[list[bool], RigidBody]:
    """Four glued 0.2 x 0.2 x 0.1 m bricks (2000 kg/m^3) stacked on the ground, glue 100 kPa; a 0.1 m
    block of 5000 kg/m^3 flies at the top brick at ``speed`` m/s. Half a second."""
    w = World(radius=R, gravity=(0, 0, -G))
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))
    bricks = [
        w.add_rigid(*box_mesh((0.2, 0.2, 0.1), (0, 0, 0.05 + 0.1 * k)), density=2000.0) for k in range(4)
    ]
    joints = w.glue(bricks, strength=1e5)
    assert len(joints) == 3  # only touching bricks are glued: three seams
    w.add_rigid(*box_mesh((0.1, 0.1, 0.1), (-0.3, 0, 0.35)), density=5000.0, initial_velocity=(speed, 0, 0))
    for _ in range(FPS // 2):
        w.step(1 / FPS)
    return [j.broken for j in joints], bricks[-1]


def test_glued_tower_survives_a_slow_hit_and_shatters_under_a_fast_one() -> None:
    # The seams' peak load, max(F / A, 6 M / (A h)), measured with unbreakable glue one small step at a
    # time (docs/physics.md): 30 kPa for a hit at 1 m/s, 350 kPa at 4 m/s (it grows about as v^1.8, the
    # contact stiffening with depth). A 100 kPa glue sits a factor 3.3 above the first and 3.5 below
    # the second, so it must hold the one and break under the other.
    broken, top = _tower_hit(1.0)
    assert not any(broken)
    assert abs(top.center[0]) < 0.01
    broken, top = _tower_hit(4.0)
    assert broken[0]  # the lowest seam, where the hit's moment on the column peaks, broke first
    assert top.center[0] > 0.02  # and the column above it was knocked over (4.4 cm in half a second)


def test_glue_only_joins_touching_rigid_bodies_and_checks_its_input() -> None:
    w = World(radius=R)
    a = w.add_rigid(*box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 0.0)))
    b = w.add_rigid(*box_mesh((0.2, 0.2, 0.2), (0.2, 0.0, 0.0)))  # face to face with a
    w.add_rigid(*box_mesh((0.2, 0.2, 0.2), (1.0, 0.0, 0.0)))  # far from both
    grains = w.add_granular(np.array([[0.0, 0.0, 0.2]]))
    joints = w.glue(strength=1e4)
    assert [(j.body_a, j.body_b, j.kind) for j in joints] == [(a, b, "FIXED")]
    with pytest.raises(SimulationInputError, match="glue strength"):
        w.glue(strength=0.0)
    with pytest.raises(SimulationInputError, match="one per body"):
        w.glue([a, b], strength=[1e4, 1e4, 1e4])
    # One strength per body: a seam holds with its weaker side; a body of strength 0 is not glued.
    (seam,) = w.glue([a, b], strength=[1e4, 3e4])
    assert seam.break_force == pytest.approx(1e4 * 0.2 * 0.2)
    assert w.glue([a, b], strength=[0.0, 3e4]) == []
    with pytest.raises(SimulationInputError, match="not a rigid body"):
        w.glue([a, grains], strength=1e4)  # type: ignore[list-item]
