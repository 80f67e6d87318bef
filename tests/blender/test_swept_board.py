"""A keyframed board swept through a grain bed (issue 24, item 8), set up with the sidebar operators.

Reference: a board of infinite mass pushes every grain in its path ahead of it (none left behind, none
passing through it). This board (a keyframed mesh collider, 4 cm thick, through 172 grains of r = 2 cm,
the default budget) left 19 and 17 grains behind or inside it at 8 and 20 m/s (docs/physics.md, Hits and
sweeps), before the frame-start stabilization met colliders in their pose at the step's start and grains
deep in a moving collider were held out of it at each small step's end (core/struck.py)"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

from .conftest import addon_module as module
from .helpers import run_op, small_scene

R = 0.02
THICK, WIDE, TALL = 0.04, 0.8, 0.34  # the board, m: from 2 cm below the ground to 32 cm above it


@pytest.mark.parametrize("speed", [8.0, 20.0])
def test_keyframed_board_pushes_every_grain_ahead(bpy_clean: ModuleType, speed: float) -> None:
    bpy = bpy_clean
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    scene = small_scene(bpy, radius=R)  # the default budget, 4 substeps x 4 iterations
    fps = scene.render.fps / scene.render.fps_base
    start = -0.5
    frames = int(np.ceil((0.8 - start) / speed * fps)) + 1  # until the board is past the bed
    scene.frame_end = frames
    bpy.ops.mesh.primitive_plane_add(size=4.0, location=(0.0, 0.0, 0.0))
    ground = bpy.context.active_object
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(start, 0.0, 0.5 * TALL - 0.02))
    board = bpy.context.active_object
    board.name = "Board"
    board.scale = (THICK, WIDE, TALL)
    board.keyframe_insert("location", frame=1)
    board.location.x = start + speed * (frames - 1) / fps
    board.keyframe_insert("location", frame=frames)
    bpy.ops.mesh.primitive_cube_add(size=0.24, location=(0.1, 0.0, 0.125))
    sand = bpy.context.active_object
    scene.frame_set(1)
    run_op(bpy, "make_collider", ground)
    ground.unified_particles.collider_shape = "PLANE"
    run_op(bpy, "make_collider", board)
    run_op(bpy, "make_granular", sand)
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
    assert scene.unified_particles.last_error == ""
    world = module("blender.simulation").find_simulation(scene).world
    grains = next(b for b in world.bodies if b.name == sand.name)
    x = world.positions[grains.indices]
    assert len(x) > 100
    face = board.location.x + 0.5 * THICK  # the leading face at the last frame
    # Behind the face (less a radius) and within the board's width and height: left behind or inside.
    behind = (x[:, 0] < face + R * 0.9) & (np.abs(x[:, 1]) < 0.5 * WIDE) & (x[:, 2] < TALL - 0.02)
    assert not behind.any(), (int(behind.sum()), len(x))
