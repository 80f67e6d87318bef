"""Live simulation driven as a user would: make objects, change frames, look at the objects."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from .helpers import add_cube, add_plane, local_positions, matrix, run_op, small_scene, world_positions


def test_cube_falls_and_rests_on_collider_plane(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    ground = add_plane(bpy, size=10.0)
    assert run_op(bpy, "make_collider", ground) == {"FINISHED"}
    assert ground.unified_particles.collider_shape == "PLANE"
    cube = add_cube(bpy, size=1.0, location=(0.3, -0.2, 1.5))
    mesh_before = local_positions(cube)
    assert run_op(bpy, "make_rigid", cube) == {"FINISHED"}
    assert cube.unified_particles.role == "RIGID"

    scene.frame_set(1)
    np.testing.assert_allclose(matrix(cube)[:3, 3], (0.3, -0.2, 1.5), atol=1e-6)
    heights = []
    for frame in range(2, 37):
        scene.frame_set(frame)
        heights.append(matrix(cube)[2, 3])
    assert heights[5] < 1.45, "the cube should fall"
    # At rest the centre is half the size above the ground; particles make the surface accurate to ~r.
    assert abs(heights[-1] - 0.5) < 0.1, heights[-6:]
    assert abs(heights[-1] - heights[-4]) < 0.02, "the cube should have come to rest"
    rot = matrix(cube)[:3, :3]
    np.testing.assert_allclose(rot, np.eye(3), atol=0.05)
    np.testing.assert_array_equal(local_positions(cube), mesh_before)  # rigid: mesh untouched
    assert scene.unified_particles.last_error == ""


def test_scrubbing_back_shows_the_cached_frame_exactly(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.15)
    ground = add_plane(bpy)
    run_op(bpy, "make_collider", ground)
    cube = add_cube(bpy, size=0.9, location=(0, 0, 1.0), rotation=(0.3, 0.2, 0.1))
    run_op(bpy, "make_rigid", cube)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=1.0, location=(0, 0, 2.0))
    cloth = bpy.context.active_object
    run_op(bpy, "make_cloth", cloth)

    seen = {}
    for frame in range(1, 9):
        scene.frame_set(frame)
        seen[frame] = (matrix(cube), local_positions(cloth))
    for frame in (5, 2, 8, 1, 6):
        scene.frame_set(frame)
        np.testing.assert_array_equal(matrix(cube), seen[frame][0])
        np.testing.assert_array_equal(local_positions(cloth), seen[frame][1])

    # Jumping forward past the cache simulates the missing frames: same as stepping one by one.
    scene.frame_set(12)
    jumped = (matrix(cube), local_positions(cloth))
    scene.frame_set(1)
    settings = scene.unified_particles
    settings.substeps += 1  # a change at the start frame drops the whole cache ...
    settings.substeps -= 1  # ... and this one brings the settings back
    for frame in range(1, 13):
        scene.frame_set(frame)
    np.testing.assert_array_equal(matrix(cube), jumped[0])
    np.testing.assert_array_equal(local_positions(cloth), jumped[1])


def test_cloth_drapes_over_collider_sphere(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.03, substeps=4, iterations=4)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(0, 0, 0.5), segments=24, ring_count=12)
    sphere = bpy.context.active_object
    run_op(bpy, "make_collider", sphere)
    assert sphere.unified_particles.collider_shape == "MESH"
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=16, y_subdivisions=16, size=1.6, location=(0, 0, 1.2))
    cloth = bpy.context.active_object
    rest = local_positions(cloth)
    run_op(bpy, "make_cloth", cloth)

    centre = np.array([0.0, 0.0, 0.5])
    for frame in range(1, 25):
        scene.frame_set(frame)
        distance = np.linalg.norm(world_positions(cloth) - centre, axis=1)
        # Never inside the sphere (polygonal sphere and SDF cells allow a little).
        assert distance.min() > 0.5 - 0.03, (frame, distance.min())
    p = world_positions(cloth)
    middle = p[np.argmin(np.linalg.norm(rest[:, :2], axis=1))]
    assert 0.95 < middle[2] < 1.15, middle  # rests on top of the sphere
    assert p[:, 2].min() < middle[2] - 0.25, "the free edges should hang down"
    assert scene.unified_particles.last_error == ""

    # Reset puts the original vertex positions back.
    bpy.ops.unified_particles.reset()
    np.testing.assert_allclose(local_positions(cloth), rest, atol=1e-6)


def test_grains_fall_and_pile(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05)
    ground = add_plane(bpy)
    run_op(bpy, "make_collider", ground)
    material = bpy.data.materials.new("Sand")
    # Tilted, so the grain lattice lands on a corner and collapses into a pile.
    box = add_cube(bpy, size=0.6, location=(0, 0, 0.9), rotation=(0.6, 0.5, 0.0))
    box.data.materials.append(material)
    assert run_op(bpy, "make_granular", box) == {"FINISHED"}
    grains = box.unified_particles.particle_object
    assert grains is not None
    assert box.hide_get(), "the source mesh is hidden, not deleted"
    assert box.hide_render
    assert box.name in bpy.data.objects
    assert len(grains.data.polygons) == 0
    assert len(grains.data.vertices) > 100
    assert "radius" in grains.data.attributes
    modifier = next(m for m in grains.modifiers if m.type == "NODES")
    materials = [
        n.inputs["Material"].default_value
        for n in modifier.node_group.nodes
        if n.bl_idname.endswith("SetMaterial")
    ]
    assert materials == [material]

    start = world_positions(grains)
    for frame in range(1, 41):
        scene.frame_set(frame)
    end = world_positions(grains)
    assert end[:, 2].min() > 0.05 * 0.5, "grains stay above the ground"
    assert end[:, 2].mean() < start[:, 2].mean() - 0.4, "grains fall"
    spread = np.ptp(end[:, :2], axis=0)
    assert np.all(spread > np.ptp(start[:, :2], axis=0)), "the pile spreads out"
    assert end[:, 2].max() < start[:, 2].max() - 0.4
    assert scene.unified_particles.last_error == ""

    # Reset puts the grains back where they started.
    bpy.ops.unified_particles.reset()
    np.testing.assert_allclose(world_positions(grains), start, atol=1e-6)

    # Clear (the hidden source cannot be selected: select the grains) restores the source.
    assert run_op(bpy, "clear", grains) == {"FINISHED"}
    assert not box.hide_get()
    assert not box.hide_render
    assert box.unified_particles.role == "NONE"
    assert box.unified_particles.particle_object is None
    assert not any(o.name.endswith("Grains") for o in bpy.data.objects)


def test_axis_aligned_block_of_grains_settles(bpy_clean: ModuleType) -> None:
    """A default cube turned to sand and dropped on the ground must not gain energy (a solver regression)."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05)
    ground = add_plane(bpy)
    run_op(bpy, "make_collider", ground)
    box = add_cube(bpy, size=0.6, location=(0, 0, 0.8))
    run_op(bpy, "make_granular", box)
    grains = box.unified_particles.particle_object
    for frame in range(1, 31):
        scene.frame_set(frame)
    z = world_positions(grains)[:, 2]
    assert z.min() > 0.025
    assert z.max() < 1.1, "no grain should fly higher than where the block started"
