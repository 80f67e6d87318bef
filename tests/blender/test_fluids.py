"""Fluids in Blender (issue 13): the Fluid, Inflow and Outflow roles (blender/fluids.py), driven as a user
would, their bake replayed without the add-on, and their errors as reports."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import addon_module as module
from .conftest import run_blender_without_addon
from .helpers import add_cube, local_positions, run_op, small_scene, world_positions
from .test_duplicates import delete, duplicate

R = 0.05  # particle radius (m); the fluid lattice spacing is 2R
SPACING = 2 * R


def fluid_body(bpy: ModuleType, scene: Any, name: str) -> Any:
    sim = module("blender.simulation").find_simulation(scene)
    assert sim is not None
    assert sim.world is not None
    return next(b for b in sim.world.bodies if b.name == name)


def live_positions(bpy: ModuleType, scene: Any, name: str) -> np.ndarray:
    body = fluid_body(bpy, scene, name)
    return np.asarray(body.positions)[body.active]


def open_tank(bpy: ModuleType, size: float = 1.0, wall: float = 0.1) -> Any:
    """A collider: a box of inner side ``size`` standing on z = 0, without its top face; a Solidify
    modifier gives the walls ``wall`` of thickness outwards, so the inside stays size x size."""
    import bmesh

    bpy.ops.mesh.primitive_cube_add(size=size, location=(0.0, 0.0, size / 2))
    tank = bpy.context.active_object
    tank.name = "Tank"
    bm = bmesh.new()
    bm.from_mesh(tank.data)
    top = [f for f in bm.faces if f.calc_center_median().z > size / 2 - 1e-6]
    bmesh.ops.delete(bm, geom=top, context="FACES_ONLY")
    bm.to_mesh(tank.data)
    bm.free()
    solidify = tank.modifiers.new("Walls", "SOLIDIFY")
    solidify.thickness = wall
    solidify.offset = 1.0  # along the outward normals: the walls grow outwards
    run_op(bpy, "make_collider", tank)
    return tank


def test_make_fluid_fills_the_box_and_settles_level_in_a_tank(bpy_clean: ModuleType) -> None:
    """A 0.6 x 0.6 x 0.4 m block of water in a 0.8 m square tank. The fill is the rest-density lattice:
    6 x 6 x 4 = 144 particles. The water spreads over the floor to a level h = V / A with
    V = 144 (2R)^3 = 0.144 m^3 and A = 0.64 m^2, so h = 0.225 m: fluid at rest fills z in [0, h], so the
    particle centres have mean z = h / 2 = 0.1125 m. The tolerance, 0.3 R = 15 mm (13 %), allows the
    few per cent the solver compresses water under its own weight and the half-layer the lattice
    rounding leaves at the walls and the surface (one layer of 2R is 0.1 m of 0.225). Level and calm: after
    1.5 s the highest particle is less than 2R above the top layer's expected centre height h - R (the
    waves of the collapse have died down) and no particle moves faster than 1 m/s (the collapse starts
    at sqrt(2 g 0.4 m) = 2.8 m/s; how calm water at rest gets is the core's test, tests/core/test_fluid.py).
    No particle leaves the tank."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    frames = 37  # 1.5 s at 24 fps
    scene.frame_end = frames
    open_tank(bpy, size=0.8)
    water = add_cube(bpy, size=1.0, location=(0.0, 0.0, 0.25))
    water.scale = (0.6, 0.6, 0.4)
    water.name = "Water"
    assert run_op(bpy, "make_fluid", water) == {"FINISHED"}
    particles = water.unified_particles.particle_object
    assert particles is not None
    assert particles.name == "Water Fluid"
    assert water.hide_render  # the particle object takes its place
    assert not water.visible_get()
    assert "Liquid Surface" in particles.modifiers
    assert water.unified_particles.density == 1000.0  # the Water preset
    assert len(particles.data.vertices) == 144
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
    assert scene.unified_particles.last_error == ""
    x = live_positions(bpy, scene, "Water")
    assert len(x) == 144
    inner = 0.4 - R + 1e-3  # centres stay one radius inside the walls
    assert np.all(np.abs(x[:, :2]) <= inner), np.abs(x[:, :2]).max()
    assert np.all(x[:, 2] >= R - 1e-3), x[:, 2].min()
    h = 144 * SPACING**3 / 0.64
    assert abs(float(x[:, 2].mean()) - h / 2) < 0.3 * R, x[:, 2].mean()
    assert float(x[:, 2].max()) < h - R + SPACING, x[:, 2].max()
    body = fluid_body(bpy, scene, "Water")
    world = module("blender.simulation").find_simulation(scene).world
    speed = np.linalg.norm(np.asarray(world.velocities)[body.indices], axis=1)
    assert speed.max() < 1.0, speed.max()
    # What the viewport shows is the simulation's particles (the particle object is at the identity), at
    # Yu and Turk's smoothed centres with Smooth Surface (on by default since issue 25).
    shown = module("blender.fluids").shown_points(x, np.ones(len(x), bool), R, True)
    assert np.allclose(np.sort(world_positions(particles)[:, 2]), np.sort(shown[:, 2]), atol=1e-5)


def _animated_tap(bpy: ModuleType, scene: Any, start: int, end: int, speed: float) -> Any:
    """A 0.2 m cube inflow at (0, 0, 2) moving 1 m along +x between frames 1 and 11 (linear keys)."""
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    tap = add_cube(bpy, size=0.2, location=(0.0, 0.0, 2.0))
    tap.name = "Tap"
    tap.keyframe_insert("location", frame=1)
    tap.location.x = 1.0
    tap.keyframe_insert("location", frame=11)
    scene.frame_set(1)
    assert run_op(bpy, "make_inflow", tap) == {"FINISHED"}
    settings = tap.unified_particles
    settings.flow_start, settings.flow_end, settings.flow_velocity = start, end, speed
    return tap


def test_inflow_emits_the_expected_count_per_frame_and_follows_its_animation(bpy_clean: ModuleType) -> None:
    """A 0.2 m cube inflow pours along its local -Z at v = 1.2 m/s between frames 3 and 9. Its volume
    holds 2 x 2 columns at spacing 2R, so each layer is 4 particles. The flow has travelled
    D(n) = (n - 3 + 1) v dt by the end of frame n, and layers leave 2R apart: L(n) = ceil(D(n) / 2R)
    layers by then (v dt / 2R = 0.5: one layer every other frame). Zero gravity: a layer emitted in frame
    n leaves the tap where it is at frame n with the tap's own velocity added (issue 25 item 9: 1 m in
    10 frames, eased in and out; before, it kept the tap's x and moved only along -z), so at the end of
    that frame it is ahead of the tap in x by what the tap moved over the frame. The particle count is
    fixed from the start (every slot reserved) and nothing is live at the start frame."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    scene.use_gravity = False
    scene.frame_end = 12
    start, end, speed = 3, 9, 1.2
    tap = _animated_tap(bpy, scene, start, end, speed)
    assert not tap.hide_get()
    assert tap.hide_render
    assert tap.display_type == "WIRE"
    particles = tap.unified_particles.particle_object
    dt = 1.0 / 24.0

    def layers(n: int) -> int:
        n = min(n, end) - start + 1
        return 0 if n <= 0 else math.ceil(n * speed * dt / SPACING - 1e-9)

    capacity = 4 * layers(end)
    scene.frame_set(1)
    seen = 0
    tap_before = float(tap.matrix_world.translation.x)
    for frame in range(1, 13):
        scene.frame_set(frame)
        assert scene.unified_particles.last_error == ""
        body = fluid_body(bpy, scene, "Tap")
        assert body.capacity == capacity
        assert len(particles.data.vertices) == capacity
        active = body.active
        assert int(active.sum()) == 4 * layers(frame), frame
        new = np.flatnonzero(active)[seen:]
        if new.size:  # this frame's layers: below the tap where it is now, carried on by its motion
            x = np.asarray(body.positions)[new]
            tap_x = float(tap.matrix_world.translation.x)
            carried = tap_x - tap_before  # u dt: the tap's motion over the frame (its keys ease in)
            assert carried > 0.5 * R  # it does move
            assert abs(float(x[:, 0].mean()) - (tap_x + carried)) < 0.25 * R, (frame, x[:, 0].mean(), tap_x)
            assert np.all(x[:, 2] < 2.1 + 1e-6)
            assert np.all(x[:, 2] > 2.0 - 0.1 - speed * dt - 1e-6)
        seen = int(active.sum())
        tap_before = float(tap.matrix_world.translation.x)
        shown = local_positions(particles)
        parked = shown[:, 2] < module("blender.liquid_surface").INACTIVE_BELOW_Z
        assert int(parked.sum()) == capacity - seen  # not yet poured: parked where the surface drops them
    assert seen == capacity  # and nothing after the end frame
    # Reset: back to the start, nothing poured.
    assert run_op(bpy, "reset") == {"FINISHED"}
    below = module("blender.liquid_surface").INACTIVE_BELOW_Z
    assert np.all(local_positions(particles)[:, 2] < below)
    # Clear: the inflow's liquid goes and it looks as before.
    assert run_op(bpy, "clear", tap) == {"FINISHED"}
    assert tap.display_type == "TEXTURED"
    assert not tap.hide_render
    assert "Tap Fluid" not in bpy.data.objects


def test_keyframed_flow_velocity_sets_each_frame_s_pour(bpy_clean: ModuleType) -> None:
    """Issue 25: the pour kept the start frame's Flow Velocity (fresh liquid left at 0.7 m/s while the
    panel showed 3.0). A still 0.2 m cube tap (2 x 2 columns) pours from frame 2 to 12 with Flow Velocity
    keyed 0.6 m/s at frame 2 and 3.0 m/s at frame 12 (linear): frame n pours at v_n = 0.6 + 0.24 (n - 2),
    the flow has travelled D(n) = sum of v_f dt over frames 2..n, and L(n) = ceil(D(n) / 2R) layers are
    reserved by then. Zero gravity: the liquid's mean velocity is the mean of its particles' speeds. Stepping
    frames does not restart the simulation (the keys, not the value now, are in the change detector)."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    scene.use_gravity = False
    scene.frame_end = 12
    tap = add_cube(bpy, size=0.2, location=(0.0, 0.0, 2.0))
    tap.name = "Tap"
    scene.frame_set(1)
    assert run_op(bpy, "make_inflow", tap) == {"FINISHED"}
    settings = tap.unified_particles
    settings.flow_start, settings.flow_end = 2, 12
    settings.flow_velocity = 0.6
    tap.keyframe_insert("unified_particles.flow_velocity", frame=2)
    settings.flow_velocity = 3.0
    tap.keyframe_insert("unified_particles.flow_velocity", frame=12)
    for curve in module("blender.fluids").flow_velocity_curves(tap):
        for key in curve.keyframe_points:
            key.interpolation = "LINEAR"  # the preference alone left these Bezier
    dt = 1.0 / 24.0
    speeds = {n: 0.6 + 0.24 * (n - 2) for n in range(2, 13)}

    def layers(n: int) -> int:
        d = sum(speeds[f] for f in range(2, n + 1)) * dt
        return math.ceil(d / SPACING - 1e-9) if d > 0 else 0

    worlds = set()
    seen, momentum = 0, 0.0
    for frame in range(1, 13):
        scene.frame_set(frame)
        assert scene.unified_particles.last_error == ""
        worlds.add(id(module("blender.simulation").find_simulation(scene).world))
        body = fluid_body(bpy, scene, "Tap")
        assert body.capacity == 4 * layers(12)
        active = body.active
        live = int(active.sum())
        # At most L(n) layers: a faster layer catches up with the slower one ahead (momentum-exact pushes),
        # and a nozzle point that a slowed particle still covers is skipped that frame.
        assert live <= 4 * layers(frame), frame
        if live > seen:
            # Each particle leaves at its frame's speed and the pushes conserve momentum, so in zero
            # gravity the liquid's mean velocity is the mean of the speeds its particles left at (to 2 mm/s:
            # the keys are float32 and vorticity confinement is not momentum-exact; the start frame's
            # 0.6 m/s kept for the whole pour would be off by 0.24 m/s and more).
            momentum += (live - seen) * speeds[frame]
            v = float(np.asarray(body.velocities)[active][:, 2].mean())
            assert abs(v + momentum / live) < 2e-3, (frame, v, momentum / live)
        seen = live
    # Measured: 24 of the 36 reserved (the rest skipped behind slowed particles); the start frame's speed
    # kept for the whole pour would have poured 12 in all.
    assert seen > 4 * math.ceil(11 * 0.6 * dt / SPACING)
    assert len(worlds) == 1  # built once: stepping through the keys is not a change of the settings


def test_outflow_removes_the_fluid_inside_it(bpy_clean: ModuleType) -> None:
    """A 0.4 m cube of water falls into a 1 m outflow box below it: the particles entering the outflow are
    removed at the end of each frame, so the live count drops to zero, and the removed ones are parked
    where the liquid surface deletes them (its evaluated mesh is empty at the end)."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    scene.frame_end = 20
    water = add_cube(bpy, size=0.4, location=(0.0, 0.0, 1.3))
    water.name = "Water"
    drain = add_cube(bpy, size=1.0, location=(0.0, 0.0, 0.5))
    drain.name = "Drain"
    assert run_op(bpy, "make_fluid", water) == {"FINISHED"}
    assert run_op(bpy, "make_outflow", drain) == {"FINISHED"}
    assert drain.display_type == "WIRE"
    assert drain.hide_render
    counts = []
    for frame in range(1, 21):
        scene.frame_set(frame)
        counts.append(int(fluid_body(bpy, scene, "Water").active.sum()))
    assert counts[0] == 64, counts
    assert counts[-1] == 0, counts
    assert all(b <= a for a, b in itertools.pairwise(counts)), counts
    particles = water.unified_particles.particle_object
    assert np.all(local_positions(particles)[:, 2] < module("blender.liquid_surface").INACTIVE_BELOW_Z)
    ev = particles.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    assert len(mesh.vertices) == 0
    ev.to_mesh_clear()
    # Clear gives the outflow back its look.
    assert run_op(bpy, "clear", drain) == {"FINISHED"}
    assert drain.display_type == "TEXTURED"
    assert not drain.hide_render


def test_a_light_cube_floats_on_the_water(bpy_clean: ModuleType) -> None:
    """Two-way coupling: a 0.3 m cube of density 400 kg/m^3 dropped onto 0.3 m of water in a 0.6 m square
    tank (6 x 6 x 3 particles: V = 108 (2R)^3 = 0.108 m^3 over A = 0.36 m^2). Archimedes: it floats with a
    fraction 400 / 1000 of its height submerged, d = 0.12 m, so its centre rests 0.15 - d = 0.03 m above the
    water level, which the cube raises by d 0.09 m^2 / A = 0.03 m to h = 0.33 m: centre at 0.36 m. The
    fluid resolves levels to about one particle diameter, so the tolerance is 2R. Sunk, it would rest on
    the floor with its centre at 0.15 m. Measured 2026-11-24: 0.358 m."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    frames = 36  # 1.5 s: measured, it has settled after about 1.2 s
    scene.frame_end = frames
    open_tank(bpy, size=0.6)
    water = add_cube(bpy, size=1.0, location=(0.0, 0.0, 0.15))
    water.scale = (0.6, 0.6, 0.3)
    water.name = "Water"
    cube = add_cube(bpy, size=0.3, location=(0.0, 0.0, 0.5))
    cube.name = "Crate"
    assert run_op(bpy, "make_fluid", water) == {"FINISHED"}
    assert run_op(bpy, "make_rigid", cube) == {"FINISHED"}
    cube.unified_particles.density = 400.0
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
    assert scene.unified_particles.last_error == ""
    assert len(live_positions(bpy, scene, "Water")) == 108
    z = float(cube.matrix_world.translation.z)
    assert abs(z - 0.36) < 2 * R, z


BAKE_REPLAY = """
import sys, numpy as np, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
scene = bpy.context.scene
assert "unified_particles" not in bpy.context.preferences.addons
obj = bpy.data.objects[sys.argv[3]]
surface = obj.modifiers["Liquid Surface"]
out, shown = [], []
for frame in range(1, int(sys.argv[4]) + 1):
    scene.frame_set(frame)
    graph = bpy.context.evaluated_depsgraph_get()
    # What the liquid surface keeps: the points of its point clouds (the Spheres surface).
    shown.append(sum(len(i.object.data.attributes["position"].data) for i in graph.object_instances
                     if i.is_instance and i.object.type == "POINTCLOUD" and i.parent.original == obj))
    surface.show_viewport = False  # the cached points themselves
    graph = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(graph)
    mesh = ev.to_mesh()
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    ev.to_mesh_clear()
    out.append(co.reshape(-1, 3))
    surface.show_viewport = True
np.save(sys.argv[2], np.array(out))
np.save(sys.argv[2].replace(".npy", "_shown.npy"), np.array(shown))
# Motion blur: the farthest point drawn at subframes (the Mesh Cache blends the two frames' samples).
far = []
for frame in range(1, int(sys.argv[4])):
    for sub in (0.5, 0.75):
        scene.frame_set(frame, subframe=sub)
        graph = bpy.context.evaluated_depsgraph_get()
        worst = 0.0
        for i in graph.object_instances:
            if i.is_instance and i.object.type == "POINTCLOUD" and i.parent.original == obj:
                data = i.object.data.attributes["position"].data
                co = np.empty(len(data) * 3, dtype=np.float32)
                data.foreach_get("vector", co)
                worst = max(worst, float(np.abs(co).max())) if len(co) else worst
        far.append(worst)
np.save(sys.argv[2].replace(".npy", "_blur.npy"), np.array(far))
print("DONE")
"""


def test_fluid_bake_replays_without_the_addon(bpy_clean: ModuleType, tmp_path: Path) -> None:
    """An inflow pouring into an outflow: baked to a point cache, the file replays in a Blender without
    the add-on with the same positions as the live simulation (float32), and the liquid surface shows
    exactly the live particles (not yet poured and drained ones are parked and deleted), also at
    subframes (motion blur), where it draws no particle on its way from the park into the pour."""
    bpy = bpy_clean
    frames = 14
    scene = small_scene(bpy, radius=R)
    scene.frame_end = frames
    tap = _animated_tap(bpy, scene, 2, 10, 2.4)
    # Below the tap's path and ahead of it: the pour carries the tap's motion (up to 3.4 m/s along x).
    drain = add_cube(bpy, size=2.0, location=(1.0, 0.0, 0.5))
    drain.name = "Drain"
    assert run_op(bpy, "make_outflow", drain) == {"FINISHED"}
    tap.unified_particles.fluid_surface = "SPHERES"
    particles = tap.unified_particles.particle_object
    live, counts = [], []
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
        live.append(local_positions(particles))
        counts.append(int(fluid_body(bpy, scene, "Tap").active.sum()))
    assert scene.unified_particles.last_error == ""
    assert max(counts) > 0
    assert counts[-1] < max(counts)
    blend = tmp_path / "fluid.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert particles.unified_particles_bake.baked_output == "PC2"
    bpy.ops.wm.save_mainfile()
    out = tmp_path / "replay.npy"
    proc = run_blender_without_addon(BAKE_REPLAY, str(blend), str(out), particles.name, str(frames))
    log = proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, log
    assert "DONE" in proc.stdout, log
    replay = np.load(out)
    assert replay.shape == (frames, *live[0].shape)
    assert np.allclose(replay, np.array(live), atol=1e-5), np.abs(replay - np.array(live)).max()
    assert np.load(tmp_path / "replay_shown.npy").tolist() == counts
    # Motion blur (issue 25 item 9): between two frames, a slot poured or drained in that frame is blended
    # between its park and the pour; it must stay deleted, not be drawn on the way (with the park at
    # 200 km, points 50 km below the scene were drawn from half-way through such a frame).
    far = np.load(tmp_path / "replay_blur.npy")
    assert far.max() < 10.0, far  # metres from the particle object's origin: the scene is 4 m across
    # A liquid setting changed since: the bake is Outdated.
    assert not scene.unified_particles_bake.outdated
    tap.unified_particles.viscosity = 0.3
    assert scene.unified_particles_bake.outdated


def test_duplicated_fluid_gets_its_own_source_and_liquid(bpy_clean: ModuleType) -> None:
    """Shift+D on the liquid the user sees duplicates the fluid: the copy gets its own hidden source and
    its own particle object, and each falls where its object is."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    scene.frame_end = 4
    water = add_cube(bpy, size=0.4, location=(0.0, 0.0, 1.0))
    water.name = "Water"
    assert run_op(bpy, "make_fluid", water) == {"FINISHED"}
    liquid = water.unified_particles.particle_object
    new = duplicate(bpy, liquid, offset=(3.0, 0.0, 0.0))
    copy = next(o for o in new if o.unified_particles.source_object is not None)
    source = copy.unified_particles.source_object
    assert source != water
    assert source.unified_particles.role == "FLUID"
    assert source.unified_particles.particle_object == copy
    assert copy.data != liquid.data
    assert not source.visible_get()
    for frame in range(1, 5):
        scene.frame_set(frame)
    assert scene.unified_particles.last_error == ""
    assert abs(world_positions(liquid)[:, 0].mean()) < 0.1
    assert abs(world_positions(copy)[:, 0].mean() - 3.0) < 0.1


def test_deleting_an_inflow_keeps_what_it_poured(
    bpy_clean: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25: deleting an inflow removed everything it had poured, from every frame, silently (Undo
    brought it back). Now a moving tap deleted in the 3D View at frame 5 keeps its liquid: frames up to 5
    are re-simulated as they were (the same particles at the same places, 1e-6 m: the tap, outside the
    scene, still moves by its keys), it pours no more after, and the message says so in liquid's words
    (they spoke of "granular objects"). Deleting the liquid then removes both. A tap deleted before it
    poured anything takes its (empty) liquid with it, as before."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    scene.frame_end = 8
    tap = _animated_tap(bpy, scene, 2, 8, 2.4)  # one layer of 2 x 2 particles per frame
    liquid = tap.unified_particles.particle_object
    liquid_name = liquid.name
    for frame in range(1, 6):
        scene.frame_set(frame)
    poured = live_positions(bpy, scene, "Tap")
    assert len(poured) == 4 * 4  # frames 2-5
    capsys.readouterr()
    delete(bpy, tap)
    scene.frame_set(5)  # the scene repair runs (if the delete's depsgraph update has not run it)
    err = capsys.readouterr().err
    assert f"'Tap' deleted: the liquid it poured until frame 5 stays in '{liquid_name}'" in err, err
    assert "granular" not in err
    assert "Tap" not in scene.objects
    assert liquid_name in scene.objects
    scene.frame_set(1)
    for frame in range(2, 6):
        scene.frame_set(frame)
    assert scene.unified_particles.last_error == ""
    assert np.abs(live_positions(bpy, scene, "Tap") - poured).max() < 1e-6
    for frame in range(6, 9):
        scene.frame_set(frame)
        assert len(live_positions(bpy, scene, "Tap")) == len(poured)  # no more pour
    shown = local_positions(liquid)
    assert int((shown[:, 2] > module("blender.liquid_surface").INACTIVE_BELOW_Z).sum()) == len(poured)
    # Deleting the liquid removes it and the kept inflow.
    delete(bpy, liquid)
    scene.frame_set(1)
    assert liquid_name not in bpy.data.objects
    assert "Tap" not in bpy.data.objects
    # Deleted before its first pour: nothing to keep.
    other = add_cube(bpy, size=0.2, location=(0.0, 0.0, 1.0))
    other.name = "Late tap"
    assert run_op(bpy, "make_inflow", other) == {"FINISHED"}
    other.unified_particles.flow_start = 4
    other_liquid = other.unified_particles.particle_object.name
    scene.frame_set(2)
    capsys.readouterr()
    delete(bpy, other)
    scene.frame_set(3)
    err = capsys.readouterr().err
    assert f"'{other_liquid}' removed: its liquid's source object was deleted" in err, err
    assert other_liquid not in bpy.data.objects


def test_fluid_settings_change_detection(bpy_clean: ModuleType) -> None:
    """Every fluid and inflow setting that changes the motion is in the change detector (a live
    re-simulation, an Outdated bake); the surface settings only change how it renders."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    scene.frame_end = 12
    water = add_cube(bpy, size=0.2, location=(0.0, 0.0, 1.0))
    tap = add_cube(bpy, size=0.2, location=(1.0, 0.0, 1.0))
    run_op(bpy, "make_fluid", water)
    run_op(bpy, "make_inflow", tap)
    reader = module("blender.scene_reader")
    changes: dict[str, Any] = {
        "density": 1420.0,
        "viscosity": 0.4,
        "fluid_cohesion": 0.3,
        "adhesion": 0.2,
        "vorticity": 0.5,
    }
    inflow_changes: dict[str, Any] = {
        "flow_velocity": 3.0,
        "flow_axis": "POS_X",
        "flow_start": 4,
        "flow_end": 8,
    }
    for obj, values in ((water, changes), (tap, {**changes, **inflow_changes})):
        for name, value in values.items():
            before = reader.settings_signature(scene)
            old = getattr(obj.unified_particles, name)
            setattr(obj.unified_particles, name, value)
            assert reader.settings_signature(scene) != before, name
            setattr(obj.unified_particles, name, old)
    before = reader.settings_signature(scene), reader.structure_signature(scene)
    water.unified_particles.fluid_surface = "SPHERES"
    water.unified_particles.surface_resolution = 8.0
    water.unified_particles.surface_smoothing = 1
    assert (reader.settings_signature(scene), reader.structure_signature(scene)) == before
    # The inflow's reserved slots follow the scene's end frame.
    structure = reader.structure_signature(scene)
    scene.frame_end = 11
    assert reader.structure_signature(scene) != structure
    # Presets: Honey on the inflow sets the core's values.
    run_op(bpy, "apply_preset", tap, preset="HONEY")
    honey = module("core").FLUID_PRESETS["HONEY"]
    assert tap.unified_particles.density == pytest.approx(honey["density"])
    assert tap.unified_particles.viscosity == pytest.approx(honey["viscosity"])
    assert tap.unified_particles.fluid_cohesion == pytest.approx(honey["cohesion"])


def test_fluid_errors_are_reports(bpy_clean: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad input is refused with a message naming the object, before anything changed (never a
    traceback): a flat mesh as fluid, inflow or outflow; a fluid or an inflow beyond the particle limits."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.0, 0.0, 1.0))
    plane = bpy.context.active_object
    for op in ("make_fluid", "make_inflow", "make_outflow"):
        with pytest.raises(RuntimeError, match="flat") as info:
            run_op(bpy, op, plane)
        assert "Traceback" not in str(info.value)
        assert "Plane" in str(info.value)
        assert plane.unified_particles.role == "NONE"
    monkeypatch.setattr(module("blender.fluids"), "MAX_FLUID_PARTICLES_PER_OBJECT", 100)
    big = add_cube(bpy, size=1.0, location=(0.0, 0.0, 3.0))
    with pytest.raises(RuntimeError, match="raise the particle radius") as info:
        run_op(bpy, "make_fluid", big)
    assert "Traceback" not in str(info.value)
    assert big.unified_particles.role == "NONE"
    with pytest.raises(RuntimeError, match="would emit") as info:
        run_op(bpy, "make_inflow", big)
    assert "Traceback" not in str(info.value)
    assert big.unified_particles.role == "NONE"
    assert big.display_type == "TEXTURED"
    assert big.unified_particles.particle_object is None
    scene.frame_set(2)


def test_inflow_speed_changed_before_baking_bakes_every_slot(bpy_clean: ModuleType, tmp_path: Path) -> None:
    """Raising an inflow's Flow Velocity after Make Inflow raises its capacity (slots reserved for the shot).
    A bake made straight away (no playback in between) writes the new count, and its particle object must
    keep that count so the point cache plays (it went back to the old count: "Vertex count mismatch")."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=R)
    scene.frame_end = 14
    tap = _animated_tap(bpy, scene, 2, 10, 1.0)
    particles = tap.unified_particles.particle_object
    before = len(particles.data.vertices)
    tap.unified_particles.flow_velocity = 3.0
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "pour.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    cache = next(m for m in particles.modifiers if m.type == "MESH_CACHE")
    # PC2 header: "POINTCACHE2\0", int32 version, int32 point count, ...
    header = Path(bpy.path.abspath(cache.filepath)).read_bytes()[:20]
    capacity = int(np.frombuffer(header[16:20], dtype="<i4")[0])
    assert capacity > before  # three times the speed: more layers over the same frames
    assert len(particles.data.vertices) == capacity
    scene.frame_set(8)
    evaluated = particles.evaluated_get(bpy.context.evaluated_depsgraph_get())
    assert len(evaluated.data.vertices) > 0  # the cache applies (a mismatch leaves the surface empty)
    assert scene.unified_particles.last_error == ""


def test_a_force_field_pushes_a_liquid_as_one_object(bpy_clean: ModuleType) -> None:
    """Issue 25 item 9: force fields act on liquids as on grains, the liquid one object: a PLANE Force
    field of strength F (the same at every height) pushes a Fluid of mass M with a = F / (M fps) (fields
    are evaluated with vel_to_sec = fps, as for Blender's rigid bodies), so its mean velocity after t is
    a t (semi-implicit Euler is exact in v; every pair term of the liquid conserves momentum). Field
    Weight 0 (now shown for liquids too) turns it off."""
    bpy = bpy_clean
    fps, frames = 24, 6
    scene = small_scene(bpy, radius=R)
    scene.use_gravity = False
    scene.render.fps = fps
    scene.frame_end = frames + 1
    cube = add_cube(bpy, size=0.2, location=(0.0, 0.0, 1.0))
    assert run_op(bpy, "make_fluid", cube) == {"FINISHED"}
    assert bpy.ops.object.effector_add(type="FORCE", location=(0.0, 0.0, -1.0)) == {"FINISHED"}
    field = bpy.context.active_object
    field.field.shape = "PLANE"
    field.field.strength = 2.0 * fps
    scene.frame_set(1)
    scene.frame_set(1 + frames)
    assert scene.unified_particles.last_error == ""
    body = fluid_body(bpy, scene, cube.name)
    mass = body.count * 1000.0 * SPACING**3  # Make Fluid gives Water, 1000 kg/m^3
    expected = 2.0 * fps / mass / fps * frames / fps
    v = np.asarray(body.velocities).mean(axis=0)
    assert v[2] == pytest.approx(expected, rel=1e-6)
    assert np.abs(v[:2]).max() < 1e-9
    scene.frame_set(1)
    cube.unified_particles.field_weight = 0.0
    scene.frame_set(1 + frames)
    body = fluid_body(bpy, scene, cube.name)
    assert np.abs(np.asarray(body.velocities).mean(axis=0)).max() < 1e-9  # (cohesion draws it together)
