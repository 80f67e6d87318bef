"""Glue Strength from the sidebar: a brick glued to the side of an Animated block holds above the strength its
weight needs and falls below it (core/glue.py holds the statics)."""

from __future__ import annotations

from types import ModuleType

import pytest

from .helpers import add_cube, run_op, small_scene

FRAMES = 12


@pytest.mark.parametrize(("strength", "holds"), [(6e4, True), (3.5e4, False)])
def test_glue_strength_holds_a_cantilevered_brick_above_its_need(
    bpy_clean: ModuleType, strength: float, holds: bool
) -> None:
    # A 0.4 x 0.2 x 0.2 m brick (2000 kg/m^3) glued by its end face to a fixed block: the seam (0.2 x
    # 0.2 m) needs 6 m g L / (A h) = 47.1 kPa (tests/core/test_glue.py); 6e4 holds it, 3.5e4 does not.
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.025, substeps=4, iterations=4)
    anchor = add_cube(bpy, 0.2, (0.0, 0.0, 1.0))
    brick = add_cube(bpy, 1.0, (0.3, 0.0, 1.0))
    brick.scale = (0.4, 0.2, 0.2)
    run_op(bpy, "make_rigid", anchor, brick)
    anchor.unified_particles.animated = True  # held where it is, as Bullet's Animated
    brick.unified_particles.density = 2000.0
    for obj in (anchor, brick):
        obj.unified_particles.glue_strength = strength
    for frame in range(2, FRAMES + 1):
        scene.frame_set(frame)
    z = brick.matrix_world.translation.z
    if holds:
        assert abs(z - 1.0) < 2e-3
    else:
        assert z < 0.5  # broke off and fell (about 1.1 m in half a second)
