"""Flat colliders are where the mesh is (issue 23, item 4).

A ground made with Make Collider, whatever its transform (negative scale on one or three axes, an origin
1.24 m away from its vertices, rotated 30 degrees, parented to a scaled empty), holds a rigid box and a
granular pile on its visible surface, on the side they start on. Before the fix the flat mesh became an
infinite plane through the object origin along the normal matrix's Z: a negative scale turned it to face
down (everything fell through), an offset origin put it 1.24 m away from the visible ground.

Where things come to rest: a body falls 0.5 m (t = sqrt(2 * 0.5 / 9.81) = 0.32 s) and settles within the
next half second; after 1.25 s (30 frames at 24 fps) the lowest particle centre of each body sits one
particle radius r above the visible surface (particles touch it with their surface), and the box's lowest
mesh vertex on the surface within r (its particles are sampled inside the mesh). Any fall-through or
a misplaced plane is metres off, so a tolerance of r is wide and holds on any CPU.
"""

from __future__ import annotations

import importlib
import math
import time
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import PACKAGE
from .helpers import add_cube, add_plane, matrix, run_op, small_scene, world_positions

R = 0.1
FRAMES = 30
DROP = 0.5  # m between the surface and the bodies' lowest points at the start


def _ground(bpy: ModuleType, case: str) -> tuple[Any, np.ndarray, np.ndarray, tuple[float, float, float]]:
    """The ground of each case, its visible surface (a point on it, its upward unit normal) and the
    rotation that puts a box square on it."""
    from mathutils import Matrix

    if case == "parented_scaled_empty":
        bpy.ops.object.empty_add(location=(0.3, -0.2, 0.1))
        empty = bpy.context.active_object
        empty.scale = (2.0, 1.5, -1.0)  # a negative scale inherited from the parent
        empty.rotation_euler = (0.0, 0.0, 0.4)
        ground = add_plane(bpy, size=4.0)
        ground.parent = empty  # placed relative to the empty as it is now (identity parent inverse)
        bpy.context.view_layer.update()
        return ground, np.array([0.3, -0.2, 0.1]), np.array([0.0, 0.0, 1.0]), (0.0, 0.0, 0.4)
    ground = add_plane(bpy, size=2.0 if case != "origin_offset" else 6.0)
    if case == "negative_z":  # the ground: its plane faced down, everything fell to z = -200 m
        ground.scale = (5.625, 5.625, -5.625)
    elif case == "negative_x":
        ground.scale = (-5.625, 5.625, 5.625)
    elif case == "negative_three_axes":
        ground.scale = (-5.625, -5.625, -5.625)
    elif case == "origin_offset":
        ground.data.transform(Matrix.Translation((0.0, 0.0, -1.24)))  # vertices 1.24 m below the origin
        ground.location = (0.0, 0.0, 1.24)  # the visible ground at z = 0
    elif case == "rotated_30":
        ground.scale = (5.0, 5.0, 5.0)
        ground.rotation_euler = (math.radians(30.0), 0.0, 0.0)
        bpy.context.view_layer.update()
        tilt = math.radians(30.0)
        return ground, np.zeros(3), np.array([0.0, -math.sin(tilt), math.cos(tilt)]), (tilt, 0.0, 0.0)
    bpy.context.view_layer.update()
    return ground, np.zeros(3), np.array([0.0, 0.0, 1.0]), (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    "case",
    [
        "negative_z",
        "negative_x",
        "negative_three_axes",
        "origin_offset",
        "rotated_30",
        "parented_scaled_empty",
    ],
)
def test_flat_ground_holds_bodies_on_its_visible_surface(bpy_clean: ModuleType, case: str) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R, substeps=4, iterations=4)
    ground, point, up, square = _ground(bpy, case)
    ground.unified_particles.friction = 1.0  # the tilted case: bodies stay near where they land
    assert run_op(bpy, "make_collider", ground) == {"FINISHED"}
    # Bodies above the visible surface, a box and a pile side by side (0.6 m apart along the surface).
    side = np.cross(up, [1.0, 0.0, 0.0])
    side /= np.linalg.norm(side)
    box_at = point + up * (DROP + 0.2) - 0.4 * side
    box = add_cube(bpy, 0.4, tuple(box_at))
    box.rotation_euler = square
    assert run_op(bpy, "make_rigid", box) == {"FINISHED"}
    pile = add_cube(bpy, 0.4, tuple(point + up * (DROP + 0.2) + 0.4 * side))
    assert run_op(bpy, "make_granular", pile) == {"FINISHED"}
    grains = pile.unified_particles.particle_object

    started = time.perf_counter()
    scene.frame_set(2)
    first = time.perf_counter() - started
    for frame in range(3, FRAMES + 1):
        scene.frame_set(frame)
    assert not scene.unified_particles.last_error, scene.unified_particles.last_error

    height = lambda p: (p - point) @ up  # noqa: E731  signed height above the visible surface
    box_low = height(world_positions(box)).min()
    grain_low = height(world_positions(grains)).min()
    assert abs(box_low) <= R, (case, box_low)
    assert abs(grain_low - R) <= R, (case, grain_low)
    # Resting, not falling through or bouncing: the box's centre is half its size above the surface.
    assert abs(height(matrix(box)[:3, 3]) - 0.2) <= R, (case, matrix(box)[:3, 3])
    # The first frame builds the colliders and steps: a second at most on any machine (58 s before).
    assert first < 5.0, (case, first)
    # The grounds reach beyond where the bodies go (11 m, 6 m, 8 m wide), so each is an infinite plane,
    # except the parented one (a parent may move it: Make Collider keeps a mesh).
    world = importlib.import_module(f"{PACKAGE}.blender.simulation").find_simulation(scene).world
    planes = [p.name for p in world.planes]
    assert planes == ([] if case == "parented_scaled_empty" else [ground.name]), (case, planes)


def test_small_table_lets_a_cloth_drape_over_its_edge(bpy_clean: ModuleType) -> None:
    """A 1 m table top (a static flat mesh: Make Collider picks Infinite Plane) under a 1.6 m cloth, its
    origin 1.24 m above its vertices: the cloth rests on the visible top and hangs over the edges. An
    infinite plane would hold the cloth flat (and, through the origin, 1.24 m too high), so the table
    is a mesh collider: the cloth's footprint grown by its size reaches past the table's edge."""
    from mathutils import Matrix

    bpy = bpy_clean
    scene = small_scene(bpy, radius=R, substeps=4, iterations=4)
    table = add_plane(bpy, size=1.0)
    table.data.transform(Matrix.Translation((0.0, 0.0, -1.24)))
    table.location = (0.0, 0.0, 2.24)  # the top at z = 1
    bpy.context.view_layer.update()
    assert run_op(bpy, "make_collider", table) == {"FINISHED"}
    assert table.unified_particles.collider_shape == "PLANE"
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=9, y_subdivisions=9, size=1.6, location=(0.0, 0.0, 1.3))
    cloth = bpy.context.active_object
    assert run_op(bpy, "make_cloth", cloth) == {"FINISHED"}
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
    assert not scene.unified_particles.last_error, scene.unified_particles.last_error
    x = world_positions(cloth)
    middle = np.abs(x[:, :2]).max(axis=1) < 0.3
    # The middle rests on the top: a particle radius above it (within a radius).
    assert abs(x[middle, 2].mean() - (1.0 + R)) <= R, x[middle, 2].mean()
    # The corners hang: the 0.3 m overhang falls below the top (flat on a plane: at 1 + r).
    assert x[:, 2].min() < 1.0 - 0.15, x[:, 2].min()
    world = importlib.import_module(f"{PACKAGE}.blender.simulation").find_simulation(scene).world
    assert [m.name for m in world.meshes] == [table.name]
    assert not world.planes
