"""User workflows around the live simulation: errors, undo, transforms, animation, settings, files, UI."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from .conftest import PACKAGE, run_blender
from .helpers import (
    add_cube,
    add_plane,
    local_positions,
    matrix,
    remove_faces,
    run_op,
    select_only,
    small_scene,
    world_positions,
)


def simulation_module() -> Any:
    return sys.modules[f"{PACKAGE}.blender.simulation"]


def test_operator_errors_are_reports_not_tracebacks(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    small_scene(bpy)
    # Nothing selected: Blender turns the operator's error report into a RuntimeError for scripts.
    select_only(bpy)
    with pytest.raises(RuntimeError, match="Select one or more mesh objects") as info:
        run_op(bpy, "make_rigid")
    assert "Traceback" not in str(info.value)
    # A flat mesh has no volume to be rigid.
    plane = add_plane(bpy, size=2.0)
    with pytest.raises(RuntimeError, match="flat") as info:
        run_op(bpy, "make_rigid", plane)
    assert "Traceback" not in str(info.value)
    assert plane.unified_particles.role == "NONE"
    # A preset for another role.
    run_op(bpy, "make_cloth", plane)
    with pytest.raises(RuntimeError, match="role"):
        run_op(bpy, "apply_preset", plane, preset="STEEL")
    # Edit mode: the poll says why.
    select_only(bpy, plane)
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        with pytest.raises(RuntimeError, match="poll"):
            run_op(bpy, "make_collider", plane)
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")


def test_failing_simulation_is_reported_once_and_shown(bpy_clean: ModuleType, capfd: Any) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=(0, 0, 1))
    cloth = bpy.context.active_object
    run_op(bpy, "make_cloth", cloth)
    intact = cloth.data.copy()
    remove_faces(cloth)  # after Make Cloth: the build must refuse it
    for frame in range(1, 6):
        scene.frame_set(frame)
    err = capfd.readouterr().err
    assert err.count("has no faces") == 1, err
    assert "has no faces" in scene.unified_particles.last_error
    assert "Traceback" not in err
    # Fixing the problem and resetting makes it work again.
    cloth.data = intact
    bpy.ops.unified_particles.reset()
    scene.frame_set(1)
    scene.frame_set(2)
    assert scene.unified_particles.last_error == ""


def test_undo_after_make_rigid(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    small_scene(bpy)
    cube = add_cube(bpy, location=(0, 0, 2))
    name = cube.name
    scene = bpy.context.scene
    bpy.ops.ed.undo_push(message="Add cube")
    run_op(bpy, "make_rigid", cube)
    # Background Blender pushes no undo step after an operator (the UI does): push it as the UI would.
    bpy.ops.ed.undo_push(message="Make Rigid")
    assert "UNDO" in bpy.types.UNIFIED_PARTICLES_OT_make_rigid.bl_options
    scene.frame_set(1)
    scene.frame_set(4)
    assert matrix(bpy.data.objects[name])[2, 3] < 2.0
    bpy.ops.ed.undo()
    cube = bpy.data.objects[name]
    assert cube.unified_particles.role == "NONE"
    scene = bpy.context.scene
    scene.frame_set(5)  # the simulation notices the object is no longer rigid
    np.testing.assert_allclose(matrix(cube)[:3, 3], (0, 0, 2), atol=1e-6)
    bpy.ops.ed.redo()
    cube = bpy.data.objects[name]
    assert cube.unified_particles.role == "RIGID"
    scene = bpy.context.scene
    scene.frame_set(1)
    np.testing.assert_allclose(matrix(cube)[:3, 3], (0, 0, 2), atol=1e-6)
    scene.frame_set(4)
    assert matrix(cube)[2, 3] < 2.0


def test_rigid_honours_rotation_nonuniform_negative_scale_and_parent(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    bpy.ops.object.empty_add(location=(1.0, 0.0, 3.0), rotation=(0.0, 0.0, 0.5))
    parent = bpy.context.active_object
    parent.scale = (1.2, 1.2, 1.2)
    cube = add_cube(bpy, size=1.0, location=(0.5, 0.2, 0.0), rotation=(0.2, 0.4, 0.0))
    cube.scale = (1.5, 0.5, -0.8)
    cube.parent = parent
    bpy.context.view_layer.update()
    start_matrix = matrix(cube)
    start_world = world_positions(cube)
    run_op(bpy, "make_rigid", cube)
    scene.frame_set(1)
    np.testing.assert_allclose(matrix(cube), start_matrix, atol=1e-5)
    for frame in range(2, 7):
        scene.frame_set(frame)
    bpy.context.view_layer.update()
    now = world_positions(cube)
    # Rigid: every distance between vertices is kept (scale and mirroring were honoured).
    d0 = np.linalg.norm(start_world[:, None] - start_world[None], axis=2)
    d1 = np.linalg.norm(now[:, None] - now[None], axis=2)
    np.testing.assert_allclose(d1, d0, atol=1e-3)
    # Free fall for 5 frames: 0.5 g t^2 down, no sideways motion.
    drop = (start_world - now).mean(axis=0)
    t = 5 / scene.render.fps
    np.testing.assert_allclose(drop, (0.0, 0.0, 0.5 * 9.81 * t * t), atol=0.03)
    # Reset puts the child back exactly where it was.
    bpy.ops.unified_particles.reset()
    bpy.context.view_layer.update()
    np.testing.assert_allclose(matrix(cube), start_matrix, atol=1e-5)
    assert cube.parent == parent


def test_keyframed_collider_lifts_a_rigid_body(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    lift = add_cube(bpy, size=1.0, location=(0, 0, 0))
    lift.keyframe_insert("location", frame=1)
    lift.location.z = 1.0
    lift.keyframe_insert("location", frame=13)
    run_op(bpy, "make_collider", lift)
    assert lift.unified_particles.collider_shape == "MESH"
    box = add_cube(bpy, size=0.6, location=(0, 0, 0.8))
    run_op(bpy, "make_rigid", box)

    scene.frame_set(1)
    scene.frame_set(16)  # jump: frames 2..15 are simulated with the collider where it was at each
    jumped = matrix(box)
    assert jumped[2, 3] > 1.6, jumped[2, 3]
    assert scene.frame_current == 16
    np.testing.assert_allclose(matrix(lift)[2, 3], 1.0, atol=1e-6)

    scene.frame_set(1)
    scene.unified_particles.substeps += 1
    scene.unified_particles.substeps -= 1  # changed at the start frame: everything is re-simulated
    for frame in range(1, 17):
        scene.frame_set(frame)
    np.testing.assert_array_equal(matrix(box), jumped)


def test_keyframed_flat_plate_stays_a_moving_mesh_collider(bpy_clean: ModuleType) -> None:
    """A flat mesh that moves must not become a static infinite plane: it lifts what rests on it."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    ground = add_plane(bpy)
    run_op(bpy, "make_collider", ground)
    assert ground.unified_particles.collider_shape == "PLANE"  # static ground: infinite plane
    plate = add_plane(bpy, size=2.0, location=(0, 0, 0.3))
    plate.keyframe_insert("location", frame=1)
    plate.location.z = 1.3
    plate.keyframe_insert("location", frame=13)
    run_op(bpy, "make_collider", plate)
    assert plate.unified_particles.collider_shape == "MESH"
    box = add_cube(bpy, size=0.6, location=(0, 0, 0.8))
    run_op(bpy, "make_rigid", box)
    for frame in range(1, 17):
        scene.frame_set(frame)
    # The plate rose 1 m; the box rides on it: its centre about half its size above the plate.
    assert not scene.unified_particles.last_error, scene.unified_particles.last_error
    assert matrix(box)[2, 3] > 1.3 + 0.2, matrix(box)[2, 3]


def test_setting_change_invalidates_from_the_current_frame(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    ground = add_plane(bpy)
    run_op(bpy, "make_collider", ground)
    cube = add_cube(bpy, size=0.8, location=(0, 0, 1.0))
    run_op(bpy, "make_rigid", cube)
    seen = {}
    for frame in range(1, 11):
        scene.frame_set(frame)
        seen[frame] = matrix(cube)
    sim = simulation_module().get_simulation(scene)
    assert sorted(sim.cache) == list(range(1, 11))

    scene.frame_set(6)
    cube.unified_particles.density = 3000.0  # the update callback drops frames 6 and later
    scene.frame_set(3)
    assert sorted(sim.cache) == list(range(1, 6))
    np.testing.assert_array_equal(matrix(cube), seen[3])
    scene.frame_set(10)
    assert sorted(sim.cache) == list(range(1, 11))

    # Memory cap: frames in between are dropped, and re-simulated identically when shown.
    sim.trim_cache(sim.memory_bytes // 3, keep_frame=10)
    kept = sorted(sim.cache)
    assert 1 in kept
    assert 10 in kept
    assert len(kept) < 10
    again = {}
    for frame in (4, 5, 8):
        scene.frame_set(frame)
        again[frame] = matrix(cube)
    scene.frame_set(10)
    ten = matrix(cube)
    sim.trim_cache(0, keep_frame=10)
    scene.frame_set(4)
    np.testing.assert_array_equal(matrix(cube), again[4])
    scene.frame_set(10)
    np.testing.assert_array_equal(matrix(cube), ten)


def test_presets_set_values(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    small_scene(bpy)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=3, y_subdivisions=3, size=1.0)
    cloth = bpy.context.active_object
    run_op(bpy, "make_cloth", cloth)
    assert run_op(bpy, "apply_preset", cloth, preset="DENIM") == {"FINISHED"}
    s = cloth.unified_particles
    assert s.area_density == pytest.approx(0.4)
    assert s.bend_stiffness == pytest.approx(0.55)
    cube = add_cube(bpy, location=(3, 0, 0))
    run_op(bpy, "make_rigid", cube)
    run_op(bpy, "apply_preset", cube, preset="STEEL")
    assert cube.unified_particles.density == pytest.approx(7850.0)
    # Granular: the source is hidden, so the user selects the grains; settings live on the source.
    sand = add_cube(bpy, size=0.4, location=(-3, 0, 0))
    run_op(bpy, "make_granular", sand)
    grains = sand.unified_particles.particle_object
    assert run_op(bpy, "apply_preset", grains, preset="SNOW") == {"FINISHED"}
    assert sand.unified_particles.density == pytest.approx(300.0)
    assert sand.unified_particles.cohesion == pytest.approx(0.4)
    assert bpy.context.scene.render.use_lock_interface, "live simulation renders with a locked interface"


SAVE_CHECK = """
import json, sys
import bpy
import addon_utils
addon_utils.enable({package!r}, default_set=True)
bpy.ops.wm.open_mainfile(filepath={path!r})
scene = bpy.context.scene
cube, cloth = bpy.data.objects["Cube"], bpy.data.objects["Grid"]
def loc(o):
    return [float(v) for v in o.matrix_world.translation]
out = dict(
    radius=scene.unified_particles.particle_radius,
    substeps=scene.unified_particles.substeps,
    roles=[cube.unified_particles.role, cloth.unified_particles.role],
    friction=cube.unified_particles.friction,
    preset_density=cloth.unified_particles.area_density,
    frame=scene.frame_current,
    saved_z=loc(cube)[2],
    has_rest=cube.unified_particles.has_rest,
    rest_attribute="unified_particles_rest" in cloth.data.attributes,
)
scene.frame_set(1)
out["start"] = loc(cube)
for f in range(2, 31):
    scene.frame_set(f)
out["end_z"] = loc(cube)[2]
out["error"] = scene.unified_particles.last_error
print("RESULT" + json.dumps(out))
"""


def test_saved_and_reopened_file_keeps_settings_and_simulates(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.12, substeps=3)
    ground = add_plane(bpy)
    run_op(bpy, "make_collider", ground)
    cube = add_cube(bpy, size=1.0, location=(0, 0, 2.0))
    run_op(bpy, "make_rigid", cube)
    cube.unified_particles.friction = 0.77
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=(3, 0, 2))
    cloth = bpy.context.active_object
    run_op(bpy, "make_cloth", cloth)
    run_op(bpy, "apply_preset", cloth, preset="LEATHER")
    for frame in range(1, 7):
        scene.frame_set(frame)
    saved_z = matrix(cube)[2, 3]
    assert saved_z < 1.9
    path = tmp_path / "saved.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)

    proc = run_blender(textwrap.dedent(SAVE_CHECK.format(package=PACKAGE, path=str(path))))
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT")), None)
    assert line is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = json.loads(line[len("RESULT") :])
    assert out["radius"] == pytest.approx(0.12)
    assert out["substeps"] == 3
    assert out["roles"] == ["RIGID", "CLOTH"]
    assert out["friction"] == pytest.approx(0.77)
    assert out["preset_density"] == pytest.approx(0.8)
    assert out["frame"] == 6
    assert out["saved_z"] == pytest.approx(saved_z, abs=1e-5)
    assert out["has_rest"]
    assert out["rest_attribute"]
    np.testing.assert_allclose(out["start"], (0.0, 0.0, 2.0), atol=1e-5)  # back to its rest pose
    assert abs(out["end_z"] - 0.5) < 0.15, out  # and it simulates again: fell onto the ground
    assert out["error"] == ""
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]


class _Recorder:
    """Stands in for ``UILayout``: records calls and checks property and operator names exist."""

    def __init__(self, bpy: ModuleType, log: list[str]) -> None:
        self._bpy, self._log = bpy, log

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self._log.append(name)
            return _Recorder(self._bpy, self._log)

        return call

    def prop(self, data: Any, prop: str, **kwargs: Any) -> None:
        assert prop in data.bl_rna.properties, f"{data} has no property {prop}"
        self._log.append(f"prop:{prop}")

    def prop_search(self, data: Any, prop: str, search_data: Any, search_prop: str, **kwargs: Any) -> None:
        assert prop in data.bl_rna.properties
        assert search_prop in search_data.bl_rna.properties
        self._log.append(f"prop:{prop}")

    def operator(self, idname: str, **kwargs: Any) -> Any:
        category, name = idname.split(".")
        assert hasattr(self._bpy.types, f"{category.upper()}_OT_{name}"), idname
        self._log.append(f"op:{idname}")
        return SimpleNamespace()


def test_panels_draw_every_setting(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy)
    panels = sys.modules[f"{PACKAGE}.blender.panels"]
    cube = add_cube(bpy)
    drawn: list[str] = []
    for role in ("NONE", "RIGID", "CLOTH", "GRANULAR", "COLLIDER"):
        cube.unified_particles.role = role
        for cls in panels.classes:
            assert cls.bl_space_type == "VIEW_3D"
            assert cls.bl_region_type == "UI"
            assert cls.bl_category == "Unified Particles"
            log: list[str] = []
            context = SimpleNamespace(scene=scene, object=cube)
            cls.draw(SimpleNamespace(layout=_Recorder(bpy, log)), context)
            drawn += log
    props = {d.split(":", 1)[1] for d in drawn if d.startswith("prop:")}
    for name in (
        "particle_radius",
        "substeps",
        "iterations",
        "cache_directory",
        "cache_memory_limit",
        "damping",
    ):
        assert name in props
    for name in ("density", "area_density", "friction", "stretch_stiffness", "pin_group", "cohesion", "role"):
        assert name in props
    assert "op:unified_particles.apply_preset" in drawn
    assert "op:unified_particles.make_granular" in drawn
    # The Cache and Bake panel holds the bake buttons and each role's bake output, once.
    assert drawn.count("op:unified_particles.bake") == 5  # one per role drawn
    assert {"cloth_output", "rigid_output"} <= props
    assert {p.bl_parent_id for p in panels.classes if hasattr(p, "bl_parent_id")} >= {
        "UNIFIED_PARTICLES_PT_main"
    }


def test_cloth_pins_and_modifiers(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=1.0, location=(0, 0, 1))
    cloth = bpy.context.active_object
    rest = local_positions(cloth)
    pinned = np.flatnonzero(rest[:, 1] > 0.49)  # one edge
    group = cloth.vertex_groups.new(name="Pins")
    group.add([int(i) for i in pinned], 1.0, "REPLACE")
    cloth.modifiers.new("Smooth", "SUBSURF")
    run_op(bpy, "make_cloth", cloth)
    cloth.unified_particles.pin_group = "Pins"
    for frame in range(1, 9):
        scene.frame_set(frame)
    now = local_positions(cloth)
    np.testing.assert_allclose(now[pinned], rest[pinned], atol=1e-6)
    free = np.setdiff1d(np.arange(len(rest)), pinned)
    assert (now[free, 2] < rest[free, 2] - 0.05).all()
    # The subdivision modifier works on the simulated cloth.
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = cloth.evaluated_get(depsgraph).to_mesh()
    assert len(evaluated.vertices) > len(rest)
    cloth.evaluated_get(depsgraph).to_mesh_clear()
    # Clear restores the original mesh and removes the rest copy.
    run_op(bpy, "clear", cloth)
    np.testing.assert_allclose(local_positions(cloth), rest, atol=1e-6)
    assert "unified_particles_rest" not in cloth.data.attributes


def test_rendering_an_unbaked_simulation_steps_it(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.15)
    cube = add_cube(bpy, size=0.6, location=(0, 0, 2.0))
    run_op(bpy, "make_rigid", cube)
    assert scene.render.use_lock_interface  # set by the Make operators: safe with a render thread
    scene.render.engine = "CYCLES"
    scene.cycles.samples = 1
    scene.cycles.device = "CPU"
    scene.render.resolution_x = scene.render.resolution_y = 16
    scene.frame_start, scene.frame_end = 1, 4
    scene.render.filepath = str(tmp_path / "frame_")
    scene.render.image_settings.file_format = "PNG"
    bpy.ops.object.camera_add(location=(0, -8, 1.5), rotation=(1.5, 0, 0))
    scene.camera = bpy.context.active_object
    scene.frame_set(1)
    bpy.ops.render.render(animation=True)
    assert len(list(tmp_path.glob("frame_*.png"))) == 4
    assert scene.unified_particles.last_error == ""
    assert simulation_module().get_simulation(scene).cached_range == (1, 4)
    scene.frame_set(4)  # the frames the render simulated are cached
    assert matrix(cube)[2, 3] < 2.0


def test_editing_objects_at_the_start_frame_changes_where_they_start(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    cube = add_cube(bpy, size=0.6, location=(0, 0, 2.0))
    run_op(bpy, "make_rigid", cube)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=(3, 0, 2))
    cloth = bpy.context.active_object
    run_op(bpy, "make_cloth", cloth)
    for frame in range(1, 6):
        scene.frame_set(frame)
    scene.frame_set(1)
    np.testing.assert_allclose(matrix(cube)[:3, 3], (0, 0, 2), atol=1e-6)
    cube.location.x = 1.0  # the user moves the cube and lifts a vertex at the start frame
    edited = local_positions(cloth)
    edited[0, 2] += 0.3
    cloth.data.attributes["position"].data.foreach_set("vector", edited.astype(np.float32).ravel())
    cloth.data.update()
    scene.frame_set(2)
    assert abs(matrix(cube)[0, 3] - 1.0) < 1e-6
    scene.frame_set(1)
    np.testing.assert_allclose(matrix(cube)[:3, 3], (1, 0, 2), atol=1e-6)
    np.testing.assert_allclose(local_positions(cloth), edited, atol=1e-6)
    # Moving it at a later frame does not change its start: the simulation wins.
    scene.frame_set(4)
    cube.location.x = 5.0
    scene.frame_set(5)
    assert abs(matrix(cube)[0, 3] - 1.0) < 1e-6


def test_gravity_comes_from_the_scene(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.15)
    cube = add_cube(bpy, size=0.6, location=(0, 0, 2.0))
    run_op(bpy, "make_rigid", cube)
    scene.use_gravity = False
    for frame in range(1, 5):
        scene.frame_set(frame)
    np.testing.assert_allclose(matrix(cube)[:3, 3], (0, 0, 2), atol=1e-9)
    scene.frame_set(1)
    scene.use_gravity = True
    scene.gravity = (2.0, 0.0, 0.0)  # no update callback on these: noticed at the next frame change
    for frame in range(1, 5):
        scene.frame_set(frame)
    t = 3 / scene.render.fps
    np.testing.assert_allclose(matrix(cube)[:3, 3], (0.5 * 2.0 * t * t, 0, 2), atol=0.01)


def test_too_many_grains_is_refused_with_advice(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    small_scene(bpy, radius=0.001)
    box = add_cube(bpy, size=2.0)
    with pytest.raises(RuntimeError, match="raise the particle radius"):
        run_op(bpy, "make_granular", box)
    assert box.unified_particles.role == "NONE"
    assert not box.hide_get()
    assert len(bpy.data.objects) == 1


def test_frames_before_the_start_show_the_start_and_baked_scenes_are_left_alone(
    bpy_clean: ModuleType,
) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.15)
    scene.frame_start = 10
    cube = add_cube(bpy, size=0.6, location=(0, 0, 2.0))
    run_op(bpy, "make_rigid", cube)
    scene.frame_set(14)
    assert matrix(cube)[2, 3] < 2.0
    scene.frame_set(3)
    np.testing.assert_allclose(matrix(cube)[:3, 3], (0, 0, 2), atol=1e-6)
    scene.frame_set(14)
    moved = matrix(cube)
    scene.unified_particles.is_baked = True  # baked data animates itself: the handler does nothing
    scene.frame_set(10)
    np.testing.assert_array_equal(matrix(cube), moved)


def test_runner_api_resumes_from_an_adopted_state(bpy_clean: ModuleType) -> None:
    """The API the bake module uses: build, ensure_frame, write_back, adopt_state."""
    bpy = bpy_clean
    simulation = simulation_module()
    scene = small_scene(bpy, radius=0.15)
    cube = add_cube(bpy, size=0.6, location=(0, 0, 2.0), rotation=(0.2, 0.1, 0))
    run_op(bpy, "make_rigid", cube)
    sim = simulation.get_simulation(scene)
    with simulation.paused(scene):
        sim.build(scene, bpy.context.evaluated_depsgraph_get())
        state5 = sim.ensure_frame(scene, 5)
        sim.ensure_frame(scene, 8)
        sim.write_back(scene)
        at8 = matrix(cube)
        simulation.free_simulation(scene)
        fresh = simulation.get_simulation(scene)
        fresh.build(scene)
        fresh.adopt_state(5, state5)
        assert sorted(fresh.cache) == [5]
        fresh.ensure_frame(scene, 8)
        fresh.write_back(scene)
        np.testing.assert_array_equal(matrix(cube), at8)
        fresh.ensure_frame(scene, 2)  # before the adopted frame: simulated again from the start
        assert min(fresh.cache) == 1
    assert [e.kind for e in fresh.entries] == ["RIGID"]
    assert fresh.entries[0].target == cube.name
