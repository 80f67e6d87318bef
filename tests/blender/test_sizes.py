"""Each object its own Particle Size (issue 22 item 5): Scene, Value and Auto, a cloth's Thickness, a
granular Size Spread; Make reports each object's particles; a bake of it replays without the add-on."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .conftest import addon_module, run_blender_without_addon
from .helpers import add_cube, add_plane, matrix, run_op, small_scene

FRAMES = 4

# Opens the baked file in a Blender without the add-on and prints what each frame shows.
REPLAY = textwrap.dedent(
    """
    import json, sys
    import bpy
    import numpy as np
    bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
    scene = bpy.context.scene
    out = {"matrix": [], "grains": []}
    for frame in range(1, int(sys.argv[2]) + 1):
        scene.frame_set(frame)
        out["matrix"].append([list(r) for r in bpy.data.objects["OwnSize"].matrix_world])
        source = bpy.data.objects["Sand Grains"]
        for m in source.modifiers:  # the point cache's positions, before the spheres' Geometry Nodes
            m.show_viewport = m.type != "NODES"
        grains = source.evaluated_get(bpy.context.evaluated_depsgraph_get())
        mesh = grains.to_mesh()
        flat = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.attributes["position"].data.foreach_get("vector", flat)
        out["grains"].append(flat.tolist())
        grains.to_mesh_clear()
    radius = bpy.data.objects["Sand Grains"].data.attributes["radius"]
    values = np.empty(len(radius.data), dtype=np.float32)
    radius.data.foreach_get("value", values)
    out["radius"] = values.tolist()
    print("RESULT " + json.dumps(out))
    """
)


def _sized_scene(bpy: ModuleType) -> dict[str, Any]:
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    ground = add_plane(bpy, size=8.0)
    run_op(bpy, "make_collider", ground)
    objs = {
        "scene": scene,
        "SceneSize": add_cube(bpy, 0.4, (0.0, 0.0, 0.5)),
        "OwnSize": add_cube(bpy, 0.4, (1.5, 0.0, 0.5)),
        "Slab": add_cube(bpy, 1.0, (0.0, 2.0, 0.5), scale=(1.0, 1.0, 0.3)),
        "Sand": add_cube(bpy, 0.4, (1.5, 2.0, 0.5)),
    }
    for name in ("SceneSize", "OwnSize", "Slab", "Sand"):
        objs[name].name = name
    objs["OwnSize"].unified_particles.size_mode = "VALUE"
    objs["OwnSize"].unified_particles.particle_size = 0.05
    objs["Slab"].unified_particles.size_mode = "AUTO"
    sand = objs["Sand"].unified_particles
    sand.size_mode, sand.particle_size, sand.size_spread = "VALUE", 0.03, 0.3
    return objs


def test_particle_size_value_auto_spread_and_the_make_report(bpy_clean: ModuleType, capfd: Any) -> None:
    bpy = bpy_clean
    objs = _sized_scene(bpy)
    scene = objs["scene"]
    assert run_op(bpy, "make_rigid", objs["SceneSize"], objs["OwnSize"], objs["Slab"]) == {"FINISHED"}
    out = capfd.readouterr().out
    # The scene's 10 cm: 2 x 2 x 2; its own 5 cm: 4 x 4 x 4; Auto on a 1 x 1 x 0.3 m slab: 0.3 m / 6 =
    # 5 cm, 3 particles across its thinnest side (10 x 10 x 3).
    assert "SceneSize: 8 particles of 10 cm" in out
    assert "OwnSize: 64 particles of 5 cm" in out
    assert "Slab: 300 particles of 5 cm" in out
    assert run_op(bpy, "make_granular", objs["Sand"]) == {"FINISHED"}
    grid = bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=1.0, location=(3, 0, 1))
    assert grid == {"FINISHED"}
    cloth = bpy.context.active_object
    cloth.unified_particles.size_mode = "VALUE"
    cloth.unified_particles.particle_size = 0.02  # its Thickness
    assert run_op(bpy, "make_cloth", cloth) == {"FINISHED"}
    scene.frame_set(2)
    world = addon_module("blender.runtime").SIMULATIONS[scene.name].world
    radii = {b.name: world.model.particle_radius[b.indices] for b in world.bodies}
    counts = {name: len(r) for name, r in radii.items()}
    assert counts["SceneSize"] == 8
    assert counts["OwnSize"] == 64
    assert counts["Slab"] == 300
    # Blender keeps its properties in float32: the radii to 1e-7.
    np.testing.assert_allclose(radii["SceneSize"], 0.1, rtol=1e-7)
    np.testing.assert_allclose(radii["OwnSize"], 0.05, rtol=1e-7)
    np.testing.assert_allclose(radii["Slab"], 0.05, rtol=1e-7)
    np.testing.assert_allclose(radii[cloth.name], 0.02, rtol=1e-7)
    sand = radii["Sand"]
    assert float(sand.min()) >= 0.03 * 0.7
    assert float(sand.max()) <= 0.03 * 1.3
    assert float(sand.std()) > 0.003  # spread, not one size
    # The grains' particle object draws each grain at its own radius.
    shown = objs["Sand"].unified_particles.particle_object.data.attributes["radius"]
    values = np.empty(len(shown.data), dtype=np.float32)
    shown.data.foreach_get("value", values)
    np.testing.assert_allclose(values, sand, rtol=1e-6)


def test_sized_bake_replays_without_the_addon(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    objs = _sized_scene(bpy)
    scene = objs["scene"]
    assert run_op(bpy, "make_rigid", objs["OwnSize"], objs["Slab"]) == {"FINISHED"}
    assert run_op(bpy, "make_granular", objs["Sand"]) == {"FINISHED"}
    grains = objs["Sand"].unified_particles.particle_object
    live: dict[str, list[Any]] = {"matrix": [], "grains": []}
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        live["matrix"].append([list(r) for r in objs["OwnSize"].matrix_world])
        flat = np.empty(len(grains.data.vertices) * 3, dtype=np.float32)
        grains.data.attributes["position"].data.foreach_get("vector", flat)  # the live simulation's
        live["grains"].append(flat.tolist())
    scene.frame_set(1)
    blend = tmp_path / "sizes.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    proc = run_blender_without_addon(REPLAY, str(blend), str(FRAMES))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    shown = json.loads(lines[-1][7:])
    np.testing.assert_allclose(np.array(shown["matrix"]), np.array(live["matrix"]), atol=2e-6)
    np.testing.assert_allclose(np.array(shown["grains"]), np.array(live["grains"]), atol=2e-6)
    assert not np.allclose(shown["grains"][0], shown["grains"][-1]), "the grains should fall"
    radius = np.array(shown["radius"])
    assert float(radius.std()) > 0.003  # each grain drawn at its own size without the add-on


def test_brick_wall_stands_at_the_default_settings(bpy_clean: ModuleType, capfd: Any) -> None:
    """Issue 22: a running-bond wall of 0.2 x 0.1 x 0.07 m bricks made rigid with every setting at its
    default (Particle Radius 5 cm, Particle Size Scene) stands under its own weight: each brick's radius
    is fitted to its 7 cm side (7 / 2.8 = 2.5 cm, ``core.sizes.rigid_radius``) and Make says so.

    Statics: nothing may move more than the resting contacts' overlap (tests/core/test_exact_shapes.py:
    40 g h^2 per contact, 4 rows here). Before: one layer of 5 cm spheres per brick, the rows 3 cm apart on
    the spheres, and the wall fell within 19 frames (the issue)."""
    bpy = bpy_clean
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 24
    ground = add_plane(bpy, size=4.0)
    run_op(bpy, "make_collider", ground)
    bricks = []
    for row in range(4):  # 2, 3, 2, 3 bricks: full bricks on even rows, halves at the ends of odd ones
        spans = [(0.0, 0.2), (0.2, 0.2)] if row % 2 == 0 else [(-0.05, 0.1), (0.1, 0.2), (0.25, 0.1)]
        for x, length in spans:
            bricks.append(add_cube(bpy, 1.0, (x, 0.0, 0.035 + 0.07 * row), scale=(length, 0.1, 0.07)))
            bricks[-1].name = f"Brick{len(bricks)}"
    assert run_op(bpy, "make_rigid", *bricks) == {"FINISHED"}
    assert "particles of 2.5 cm (fitted to its thinnest side)" in capfd.readouterr().out
    start = np.array([matrix(b)[:3, 3] for b in bricks])
    for frame in range(1, 25):
        scene.frame_set(frame)
    moved = np.linalg.norm(np.array([matrix(b)[:3, 3] for b in bricks]) - start, axis=1)
    h = 1.0 / (24 * 16)
    assert moved.max() <= 4 * 40.0 * 9.81 * h * h, moved
    up = [matrix(b)[2, 2] / np.linalg.norm(matrix(b)[:3, 2]) for b in bricks]  # the scale taken out
    assert min(up) >= np.cos(np.radians(0.5))
