"""Convert Blender Physics on scenes built the way files made for Blender's own physics are (issue 23).

A Blender cloth with a pin group of weights 1 and 0.83, Bullet rigid bodies (active with a mass in kg and
friction 5, passive ground, animated), a Collision object and a Wind field: Convert makes them our roles
with Blender's meanings, switches Blender's simulation off, and Ctrl+Z gives it back. Bullet runs
headless, so one test compares a converted body's rest position with Bullet's own in the same process.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import addon_module
from .helpers import (
    add_cube,
    add_plane,
    matrix,
    run_op,
    select_only,
    small_scene,
    view3d_override,
    world_positions,
)

FRAMES = 36


def rigid_body(bpy: ModuleType, obj: Any, kind: str = "ACTIVE", **settings: Any) -> None:
    """Physics tab > Rigid Body on ``obj`` (which joins the scene's rigid body world)."""
    select_only(bpy, obj)
    assert bpy.ops.rigidbody.object_add(type=kind) == {"FINISHED"}
    for name, value in settings.items():
        setattr(obj.rigid_body, name, value)


def pinned_cloth(bpy: ModuleType) -> Any:
    """A 1 m cloth of 9 x 9 quads at 2 m with Blender's Cloth: two corners pinned (weight 1), one at 0.83."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=9, y_subdivisions=9, size=1.0, location=(0.0, 0.0, 2.0))
    cloth = bpy.context.active_object
    cloth.name = "Curtain"
    group = cloth.vertex_groups.new(name="Pins")
    corners = sorted(range(len(cloth.data.vertices)), key=lambda i: tuple(cloth.data.vertices[i].co))
    group.add([corners[0], corners[-1]], 1.0, "REPLACE")
    group.add([corners[8]], 0.83, "REPLACE")
    mod = cloth.modifiers.new("Cloth", "CLOTH")
    mod.settings.mass = 0.3
    mod.settings.vertex_group_mass = "Pins"
    return cloth


def blender_scene(bpy: ModuleType) -> dict[str, Any]:
    """Objects set up for Blender's physics, as a user builds them in the Physics tab."""
    scene = small_scene(bpy, radius=0.05)
    scene.frame_end = FRAMES
    ground = add_plane(bpy, 8.0)
    ground.name = "Ground"
    rigid_body(bpy, ground, "PASSIVE", friction=0.5)
    domino = add_cube(bpy, 0.4, (1.0, 0.0, 0.2))
    domino.name = "Domino"
    rigid_body(bpy, domino, mass=1.0, friction=5.0, restitution=0.2)
    keyed = add_cube(bpy, 0.4, (-1.0, 0.0, 1.0))
    keyed.name = "Keyed"
    rigid_body(bpy, keyed, kinematic=True, mass=2.0)
    scene.rigidbody_world.effector_weights.all = 0.5
    keyed.keyframe_insert("rigid_body.kinematic", frame=1)  # a keyed ball: animated, then released
    keyed.rigid_body.kinematic = False
    keyed.keyframe_insert("rigid_body.kinematic", frame=12)
    scene.frame_set(1)
    keyed.rigid_body.collision_shape = "MESH"  # hollow in Bullet: our Fill Shell
    table = add_cube(bpy, 0.6, (0.0, 1.5, 0.3))
    table.name = "Table"
    select_only(bpy, table)
    assert bpy.ops.object.modifier_add(type="COLLISION") == {"FINISHED"}
    table.collision.cloth_friction = 20.0
    cloth = pinned_cloth(bpy)
    assert bpy.ops.object.effector_add(type="WIND", location=(0.0, -3.0, 1.0)) == {"FINISHED"}
    wind = bpy.context.active_object
    wind.name = "Wind"
    return {
        "scene": scene,
        "ground": ground,
        "domino": domino,
        "keyed": keyed,
        "table": table,
        "cloth": cloth,
    }


def convert(bpy: ModuleType, scope: str = "SCENE", *objects: Any) -> set[str]:
    select_only(bpy, *objects)
    with bpy.context.temp_override(**view3d_override(bpy)):
        result: set[str] = bpy.ops.unified_particles.convert_blender_physics(scope=scope)
    return result


def entry(scene: Any, name: str) -> Any:
    sim = addon_module("blender.runtime").SIMULATIONS[scene.name]
    return next(e for e in sim.entries if e.name == name)


def test_convert_maps_roles_masses_pins_and_friction_and_turns_blender_off(
    bpy_clean: ModuleType, capfd: Any
) -> None:
    bpy = bpy_clean
    o = blender_scene(bpy)
    scene = o["scene"]
    assert convert(bpy) == {"FINISHED"}
    s = {name: o[name].unified_particles for name in ("ground", "domino", "keyed", "table", "cloth")}
    assert s["ground"].role == "COLLIDER"
    assert s["table"].role == "COLLIDER"
    assert s["domino"].role == "RIGID"
    assert not s["domino"].animated
    assert s["keyed"].role == "RIGID"
    assert s["keyed"].animated
    # ... with Bullet's keys on Animated copied to ours, and Bullet's muted (so Bullet never takes it back).
    curves = addon_module("blender.transforms").fcurves(o["keyed"])
    ours = next(c for c in curves if c.data_path == "unified_particles.animated")
    assert [tuple(k.co) for k in ours.keyframe_points] == [(1.0, 1.0), (12.0, 0.0)]
    assert all(c.mute for c in curves if c.data_path == "rigid_body.kinematic")
    # Bullet's Mesh shape (hollow) -> Fill Shell; the domino's Convex Hull -> Solid.
    assert (s["keyed"].fill, s["domino"].fill) == ("SHELL", "SOLID")
    assert s["cloth"].role == "CLOTH"
    # Mass in kg: Bullet's Mass; the cloth's vertex mass x vertices (100 x 0.3 kg).
    assert len(o["cloth"].data.vertices) == 100
    assert (s["domino"].mass_mode, s["domino"].mass) == ("MASS", pytest.approx(1.0))
    assert s["cloth"].mass_mode == "MASS"
    assert s["cloth"].mass == pytest.approx(30.0, rel=1e-6)
    # Friction: Bullet's f -> f^2 (clamped at 10, as Bullet clamps); cloth on a Collision object: %/100.
    assert s["domino"].friction == pytest.approx(10.0)
    # The rigid body world's field weight All is read where Blender keeps it (not copied: applied once).
    assert s["domino"].field_weight == pytest.approx(1.0)
    assert addon_module("blender.fields").weights_of(o["domino"], scene)[0] == pytest.approx(0.5)
    assert s["ground"].friction == pytest.approx(0.25)
    assert s["table"].friction == pytest.approx(0.2)
    # The pin group with a weight below 1: soft pins (Pin Stiffness below 1), as Blender's goal springs.
    assert s["cloth"].pin_group == "Pins"
    assert 0.5 < s["cloth"].pin_stiffness < 1.0
    # Blender's cloth collision Distance (0.015 m by default): the cloth's own Thickness.
    assert (s["cloth"].size_mode, s["cloth"].particle_size) == ("VALUE", pytest.approx(0.015))
    # Blender's own simulation is off, its settings kept.
    assert not o["cloth"].modifiers["Cloth"].show_viewport
    assert not o["cloth"].modifiers["Cloth"].show_render
    assert o["domino"].rigid_body.kinematic
    assert o["domino"].rigid_body.mass == pytest.approx(1.0)
    assert addon_module("blender.simulation").blender_physics_warnings(scene) == []
    # The report: a summary with the cost, and the full list in the text block.
    text = bpy.data.texts["Unified Particles conversion"].as_string()
    assert "Converted 5 of 6 objects" in text
    assert "per frame on this computer" in text
    assert "Wind field: read every frame" in text
    assert "Soft Body" not in text
    assert "Shape Mesh (hollow in Bullet) -> Fill Shell" in text
    out = capfd.readouterr().out
    assert "Converted 5 of 6 objects" in out
    assert "particles" in out
    # Simulated masses within 1%: the domino 1 kg, the cloth 30 kg.
    scene.frame_set(2)
    assert entry(scene, "Domino").body.mass == pytest.approx(1.0, rel=0.01)
    world = addon_module("blender.runtime").SIMULATIONS[scene.name].world
    world.model.finalize()
    assert np.allclose(world.model.particle_radius[entry(scene, "Curtain").body.indices], 0.015)
    inverse = world.inverse_masses[entry(scene, "Curtain").body.indices]  # 0 at the two weight-1 pins
    held = inverse == 0.0
    assert held.sum() == 2
    # The other 98 vertices carry 30 kg less the two corners' lumped share (1/6 of a 1/81 cell each: 0.2%).
    assert np.sum(1.0 / inverse[~held]) == pytest.approx(30.0 * (1.0 - 2.0 / (6.0 * 81.0)), rel=0.01)


def test_undo_gives_blender_physics_back(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    o = blender_scene(bpy)
    names = {key: obj.name for key, obj in o.items() if key != "scene"}
    # The undo steps the UI pushes around an operator (headless, pushed by hand as in test_duplicates).
    with bpy.context.temp_override(**view3d_override(bpy)):
        bpy.ops.ed.undo_push(message="Blender physics set up")
    assert convert(bpy, "SCENE") == {"FINISHED"}
    with bpy.context.temp_override(**view3d_override(bpy)):
        bpy.ops.ed.undo_push(message="Convert Blender Physics")
    assert bpy.data.objects[names["domino"]].unified_particles.role == "RIGID"
    with bpy.context.temp_override(**view3d_override(bpy)):
        assert bpy.ops.ed.undo() == {"FINISHED"}
    domino, cloth = bpy.data.objects[names["domino"]], bpy.data.objects[names["cloth"]]
    assert domino.unified_particles.role == "NONE"
    assert not domino.rigid_body.kinematic
    assert cloth.unified_particles.role == "NONE"
    assert cloth.modifiers["Cloth"].show_viewport


def test_warning_while_blender_physics_is_on(bpy_clean: ModuleType, tmp_path: Any, capfd: Any) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    scene.frame_end = 3
    box = add_cube(bpy, 0.4, (0.0, 0.0, 1.0))
    rigid_body(bpy, box, mass=3.0)
    cloth = pinned_cloth(bpy)
    assert run_op(bpy, "make_rigid", box) == {"FINISHED"}
    assert run_op(bpy, "make_cloth", cloth) == {"FINISHED"}
    simulation = addon_module("blender.simulation")
    warnings = simulation.blender_physics_warnings(scene)
    assert len(warnings) == 2
    assert any(w.startswith(f"{box.name}: Blender's Bullet rigid body") for w in warnings)
    assert any(w.startswith("Curtain: Blender's Cloth modifier 'Cloth'") for w in warnings)
    scene.frame_set(2)
    status = simulation.status_lines(scene)
    assert all(w in status for w in warnings)
    # ... and the bake's report.
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "warned.blend"))
    capfd.readouterr()
    assert run_op(bpy, "bake") == {"FINISHED"}
    out = capfd.readouterr().out
    assert f"Warning: {box.name}: Blender's Bullet rigid body" in out
    assert run_op(bpy, "free_bake") == {"FINISHED"}
    # Converting only the box leaves the cloth's warning.
    assert convert(bpy, "SELECTED", box) == {"FINISHED"}
    assert [w.split(":")[0] for w in simulation.blender_physics_warnings(scene)] == ["Curtain"]


def test_make_reports_cost_and_suggests_a_radius_when_slow(bpy_clean: ModuleType, capfd: Any) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    box = add_cube(bpy, 1.0, (0.0, 0.0, 1.0))
    assert run_op(bpy, "make_rigid", box) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Scene: 125 particles" in out
    assert "per frame on this computer" in out
    cost = addon_module("blender.cost")
    simulated = addon_module("blender.scene_reader").simulated_objects(scene)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    small = cost.estimate(scene, simulated, depsgraph)
    assert small.suggestion == ""
    assert small.solver_bytes == 125 * 1200
    # The same box at r = 5 mm: 1e6 particles, seconds per frame, and a radius that would be fast.
    scene.unified_particles.particle_radius = 0.005
    big = cost.estimate(scene, simulated, depsgraph)
    assert big.total == pytest.approx(1_000_000, rel=0.01)
    assert big.ms_per_frame > cost.SLOW_FRAME_MS
    assert "Particle Radius of" in big.suggestion
    faster = float(big.suggestion.split("Particle Radius of ")[1].split(" m")[0])
    scene.unified_particles.particle_radius = faster
    assert cost.estimate(scene, simulated, depsgraph).ms_per_frame == pytest.approx(
        cost.TARGET_FRAME_MS, rel=0.2
    )


def test_converted_box_rests_where_bullet_puts_it(bpy_clean: ModuleType) -> None:
    """A 0.4 m box tilted 0.3 rad, its lowest edge 2 cm above a passive ground, tips over flat: Bullet's rest
    pose, then ours after Convert, in the same scene.

    Reference: tipping about its lowest edge without slipping, the centre ends 0.2 m up and
    0.2 - (0.2 cos 0.3 - 0.2 sin 0.3) = 0.068 m further along y (at y = -0.132). Measured (2026-11-27):
    Bullet -0.125, ours -0.149 (2.4 cm apart); with the tilt and x nudged by +-0.01: 1.2 and 1.8 cm.
    """
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05)
    scene.frame_end = 48
    ground = add_plane(bpy, 8.0)
    rigid_body(bpy, ground, "PASSIVE", friction=0.5)
    box = add_cube(bpy, 0.4, (0.3, -0.2, 0.27))
    box.rotation_euler = (0.3, 0.0, 0.0)
    rigid_body(bpy, box, mass=2.0, friction=0.5)
    scene.rigidbody_world.point_cache.frame_end = 48
    for frame in range(1, 49):
        scene.frame_set(frame)
    bullet = matrix(box)[:3, 3].copy()
    scene.frame_set(1)
    assert convert(bpy, "SCENE") == {"FINISHED"}
    for frame in range(1, 49):
        scene.frame_set(frame)
    ours = matrix(box)[:3, 3].copy()
    # Both rest flat on the ground, centre 0.2 m up, near where tipping over its edge puts it.
    assert bullet[2] == pytest.approx(0.2, abs=0.02)
    assert np.abs(ours - bullet).max() < 0.04, (ours, bullet)
    assert matrix(box)[2, 2] > np.cos(0.02)  # lies flat (its local z within 0.02 rad of up)


def test_bullet_friction_squared_slides_a_box_down_a_ramp_as_bullet_does(bpy_clean: ModuleType) -> None:
    """Friction 0.45 on a box and on a 15 degree ramp: Bullet's contact friction is their product, 0.2025,
    below tan 15 deg = 0.268, so the box slides; Convert's f^2 gives our mean 0.2025 too (the identity
    would give 0.45 and the box would stick).

    Reference: a block sliding down an incline, a = g (sin 15 - mu cos 15) = 0.620 m/s^2, so it slides
    a t^2 / 2 = 0.310 m in the first second. Bullet's own run is in the same test.
    """
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05)
    scene.render.fps = 24
    scene.frame_end = 25
    angle = np.radians(15.0)
    ramp = add_plane(bpy, 20.0)
    ramp.rotation_euler = (0.0, angle, 0.0)  # descends towards +x
    rigid_body(bpy, ramp, "PASSIVE", friction=0.45)
    normal = np.array([np.sin(angle), 0.0, np.cos(angle)])
    box = add_cube(bpy, 0.4, tuple(0.201 * normal))  # 1 mm above the ramp
    box.rotation_euler = (0.0, angle, 0.0)
    rigid_body(bpy, box, mass=1.0, friction=0.45)
    scene.rigidbody_world.point_cache.frame_end = 25
    downhill = np.array([np.cos(angle), 0.0, -np.sin(angle)])
    start = matrix(box)[:3, 3].copy()

    def slid() -> float:
        for frame in range(1, 26):
            scene.frame_set(frame)
        return float((matrix(box)[:3, 3] - start) @ downhill)

    bullet = slid()
    scene.frame_set(1)
    assert convert(bpy, "SCENE") == {"FINISHED"}
    assert box.unified_particles.friction == pytest.approx(0.2025)
    ours = slid()
    expected = 0.5 * 9.81 * (np.sin(angle) - 0.2025 * np.cos(angle)) * 1.0**2
    # Measured (2026-11-27): ours 0.307 m, Bullet 0.307 m; started 3 mm up and 1 cm aside: 0.308 and 0.299.
    # Tolerance 3%: the 1 mm drop and the landing (~1%), semi-implicit Euler a t h / 2 per small step (0.3%).
    assert ours == pytest.approx(expected, rel=0.03)
    assert abs(ours - bullet) < 0.02


def test_soft_pin_of_weight_083_gives_way_as_in_blender(bpy_clean: ModuleType) -> None:
    """The cloth's corner pinned at weight 0.83 is a soft pin in Blender (a goal spring of weight^4 x Pin
    Stiffness): it sags below its rest place while the weight-1 corners stay. After Convert it sags too, by
    a similar amount, and the weight-1 corners stay exactly."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.02)
    scene.frame_end = 49
    cloth = pinned_cloth(bpy)
    cloth.modifiers["Cloth"].point_cache.frame_end = 49
    group = cloth.vertex_groups["Pins"]
    weights = {v.index: g.weight for v in cloth.data.vertices for g in v.groups if g.group == group.index}
    soft = next(i for i, w in weights.items() if w < 1.0)
    hard = [i for i, w in weights.items() if w == 1.0]
    rest = world_positions(cloth)

    def drop() -> tuple[float, float]:
        for frame in range(1, 50):
            scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        mesh = cloth.evaluated_get(depsgraph).data
        now = np.array([cloth.matrix_world @ v.co for v in mesh.vertices])
        return float(rest[soft, 2] - now[soft, 2]), float(np.abs(rest[hard] - now[hard]).max())

    blender_soft, blender_hard = drop()
    scene.frame_set(1)
    assert convert(bpy, "SCENE") == {"FINISHED"}
    ours_soft, ours_hard = drop()
    # Measured (2026-11-27), 2 s: Blender's soft corner 12.6 mm down, ours 18.3 mm (at weight 0.86: 10.6 and
    # 18.1); the weight-1 corners stay put in both. Before Convert set Weight 1 Pins Hard and the matched
    # Pin Stiffness, the 0.83 corner was held rigidly (0 mm). Ours is matched in the goal spring's static sag
    # (convert._plan_pins), not in the cloth's stretch around it: within a factor of 2.
    assert blender_hard < 1e-4
    assert ours_hard < 1e-4
    assert 0.5 * blender_soft < ours_soft < 2.0 * blender_soft


def test_mass_in_kg_sets_a_bodys_total_mass(bpy_clean: ModuleType) -> None:
    """Mass From: Mass, by hand: a rigid body and a granular fill weigh exactly Mass (kg), whatever their
    volume; back to Density, they weigh density x particles x (2 r)^3 again."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1)
    box = add_cube(bpy, 0.8, (0.0, 0.0, 1.0))
    sand = add_cube(bpy, 0.8, (2.0, 0.0, 1.0))
    assert run_op(bpy, "make_rigid", box) == {"FINISHED"}
    assert run_op(bpy, "make_granular", sand) == {"FINISHED"}
    for obj, kg in ((box, 2.5), (sand, 40.0)):
        obj.unified_particles.mass_mode = "MASS"
        obj.unified_particles.mass = kg
    scene.frame_set(2)
    world = addon_module("blender.runtime").SIMULATIONS[scene.name].world
    assert entry(scene, box.name).body.mass == pytest.approx(2.5, rel=1e-6)
    grains = entry(scene, sand.name).body.indices
    assert np.sum(1.0 / world.inverse_masses[grains]) == pytest.approx(40.0, rel=1e-6)
    box.unified_particles.mass_mode = "DENSITY"
    scene.frame_set(1)
    scene.frame_set(2)
    body = entry(scene, box.name).body
    assert body.mass == pytest.approx(1000.0 * len(body.indices) * 0.2**3, rel=1e-6)


def test_rigid_body_world_speed_plays_the_converted_scene_that_much_faster(bpy_clean: ModuleType) -> None:
    """Blender's rigid body world Speed (time_scale) 2 becomes the scene's Speed: each frame simulates
    2 / fps seconds, so a box dropped from rest has fallen g (2 t)^2 / 2 after t seconds of animation,
    four times its fall at Speed 1.

    Reference: free fall, z0 - z = g T^2 / 2 with T = Speed x 6 frames / 24 fps. Tolerance: the solver's
    symplectic Euler falls g T^2 / 2 (1 + 1/n) in n = 96 small steps (1 %); 2 % allowed."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05)
    scene.frame_end = 12
    box = add_cube(bpy, 0.4, (0.0, 0.0, 5.0))
    rigid_body(bpy, box, mass=1.0, linear_damping=0.0, angular_damping=0.0)
    scene.rigidbody_world.time_scale = 2.0
    assert convert(bpy, "SCENE") == {"FINISHED"}
    settings = scene.unified_particles
    assert settings.time_scale == pytest.approx(2.0)
    drops = {}
    for speed in (2.0, 1.0):
        settings.time_scale = speed
        scene.frame_set(1)
        for frame in range(1, 8):
            scene.frame_set(frame)
        drops[speed] = 5.0 - matrix(box)[2, 3]
    for speed, drop in drops.items():
        expected = 0.5 * 9.81 * (speed * 6 / 24) ** 2
        assert drop == pytest.approx(expected, rel=0.02), (speed, drop, expected)
