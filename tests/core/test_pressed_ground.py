"""Rigid bodies pressed onto an open mesh ground stay on it (issue 24 item 1, colliders that never leak).

Found on a public .blend made for Blender's rigid bodies (session 8): a 0.2 kg domino on a one-quad
ground under a 1 kg hollow icosphere (with a smaller one inside) dropped from 7.6 m. Blender keeps the
domino on the ground; ours was pressed in (lowest particle centre 0.050 -> 0.005 m at frame 13, -0.147
at 14) and fell through: the collider pass put the domino's bottom row back at one radius in every small
step and shape matching, averaging that push with the shell's on its top, moved it down again. Now the
colliders have the last word over rigid bodies (``colliders/body_hold.py``) and an open mesh keeps every
particle on its side over the whole small step (``colliders/sides.py``).

Reference: a collider has infinite mass, so a body resting on it is not in it: its lowest particle
centre stays at one radius r above the ground (Blender's own rigid bodies keep the domino there). The
tolerance is g h^2 (h the small step): how far gravity carries a body from rest in one small step, the
most any one step leaves uncorrected; the held contacts end within 1e-4 of their sinking
(``HOLD_WEIGHT``), well inside it.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import RigidBody, World
from unified_particles.core.primitives import box_mesh, uv_sphere_mesh

FPS = 24.0
G = 9.81


def _quad(half: float, flipped: bool) -> tuple[np.ndarray, np.ndarray]:
    """One quad (two triangles) at z = 0; normal +z, or -z when ``flipped`` (an open mesh is two-sided)."""
    v = np.array([[-half, -half, 0.0], [half, -half, 0.0], [half, half, 0.0], [-half, half, 0.0]])
    f = np.array([[0, 1, 2], [0, 2, 3]])
    return v, (f[:, ::-1].copy() if flipped else f)


def _lowest_over_small_steps(w: World, body: RigidBody, frames: int, dt: float) -> float:
    """The lowest particle centre of ``body`` at the end of any small step of ``frames`` frames, metres."""
    low = [np.inf]
    step = w._small_step

    def watched(*args: object, **kwargs: object) -> None:
        step(*args, **kwargs)  # type: ignore[arg-type]
        low[0] = min(low[0], float(body.positions[:, 2].min()))

    w._small_step = watched  # type: ignore[method-assign]
    for _ in range(frames):
        w.step(dt)
    return low[0]


def _tolerance(w: World, dt: float) -> float:
    """g h^2 for the world's small step h, metres (66 um at the default 4 x 4 at 24 fps)."""
    h = dt / (w.substeps * w.iterations)
    return G * h * h


@pytest.mark.parametrize(("ratio", "flipped"), [(5.0, True), (20.0, False)])
def test_box_pressed_by_a_heavier_body_stays_on_a_one_quad_ground(ratio: float, flipped: bool) -> None:
    # A 1 kg box 0.4 m on a side on one 4 m quad; a box 5 or 20 times heavier dropped 0.2 m onto it
    # lands at 2 m/s and rests on it. Without the hold the box was pressed 9 mm in under the 5 kg box on
    # the flipped quad (lowest centre 0.041 m at r = 0.05), 10.7 mm under the 20 kg one.
    r = 0.05
    w = World(radius=r)
    w.add_collider_mesh(*_quad(2.0, flipped))
    box = w.add_rigid(*box_mesh((0.4, 0.4, 0.4), (0.0, 0.0, 0.2)), mass=1.0)
    w.add_rigid(*box_mesh((0.6, 0.6, 0.3), (0.0, 0.0, 0.4 + 0.2 + 0.15)), mass=ratio)
    dt = 1.0 / FPS
    low = _lowest_over_small_steps(w, box, 9, dt)
    assert 0.0 < r - _tolerance(w, dt) <= low


def test_domino_under_a_nested_hollow_sphere_stays_on_a_one_quad_ground() -> None:
    # The .blend's three bodies from simple shapes: a 0.4 x 1 x 2 m domino of 0.2 kg standing on one
    # quad (7 m here, 16 m there), a hollow 2.36 m sphere of 1 kg with a hollow 1.65 m one of 1 kg inside
    # (UV spheres for the icospheres), centred 0.98 m from the domino and dropped from 7.6 m. To keep
    # the test small the spheres start 3 m lower at the speed that fall gives them (free fall: v =
    # sqrt(2 g 3 m) = 7.67 m/s, both alike) and their shells have their own radius, 0.2 m (the domino
    # keeps the .blend's r = 0.05 m): the shell lands on the domino's top edge in frame 2 and presses it
    # into the ground over frames 2-3. Without the hold its lowest centre went to 0.023 m (27 mm in;
    # the .blend's own scene: 0.005 m, then through the quad).
    r, fall = 0.05, 3.0
    w = World(radius=r)
    w.add_collider_mesh(*_quad(3.5, False))
    domino = w.add_rigid(*box_mesh((0.4, 1.0, 2.0), (-0.98, 0.0, 1.0)), mass=0.2, friction=0.25)
    v0 = (0.0, 0.0, -np.sqrt(2.0 * G * fall))
    for radius, z, segments in ((2.36, 7.61, 12), (1.65, 7.6, 8)):
        shell = uv_sphere_mesh(radius, (0.0, 0.0, z - fall), segments, segments // 2)
        w.add_rigid(*shell, mass=1.0, friction=0.25, shell=True, initial_velocity=v0, radius=0.2)
    dt = 1.0 / FPS
    low = _lowest_over_small_steps(w, domino, 4, dt)
    assert 0.0 < r - _tolerance(w, dt) <= low
