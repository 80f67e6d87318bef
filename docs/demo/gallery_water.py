"""Gallery scenes of liquids (issue 25): water poured into a glass, and a splash with whitewater.

Registered in ``SCENES`` of make_gallery.py; each function builds the scene with the add-on's operators
as a user would and returns the frame to render. Both use Smooth Surface (the default) and render at
``still_size`` (1280 x 720, read by make_gallery.py).

    UP_EXTENSION_ZIP=dist/unified_particles-0.1.0.zip .venv/bin/python docs/demo/make_gallery.py --only glass
"""

from __future__ import annotations

from typing import Any

import bpy
from make_demo import active, assign, material, new_file, run, stage

SIZE = (1280, 720)


def _water(name: str = "Water") -> Any:
    water = material(name, (0.8, 0.92, 0.98), 0.02)
    bsdf = water.node_tree.nodes["Principled BSDF"]
    transmission = "Transmission Weight" if "Transmission Weight" in bsdf.inputs else "Transmission"
    bsdf.inputs[transmission].default_value = 1.0
    bsdf.inputs["IOR"].default_value = 1.33
    return water


def _open_cylinder(radius: float, depth: float, wall: float, z: float) -> Any:
    """A cylinder of inner ``radius`` standing at height ``z`` without its top face, walls ``wall`` thick
    outwards (Solidify): a glass or a beaker."""
    import bmesh

    bpy.ops.mesh.primitive_cylinder_add(
        vertices=48, radius=radius, depth=depth, location=(0, 0, z + depth / 2)
    )
    obj = active()
    bm = bmesh.new()
    bm.from_mesh(obj.data)
    bmesh.ops.delete(
        bm, geom=[f for f in bm.faces if f.calc_center_median().z > depth / 2 - 1e-6], context="FACES_ONLY"
    )
    bm.to_mesh(obj.data)
    bm.free()
    solidify = obj.modifiers.new("Walls", "SOLIDIFY")
    solidify.thickness, solidify.offset = wall, 1.0
    for polygon in obj.data.polygons:
        polygon.use_smooth = True
    return obj


def glass() -> int:
    """Water poured from a tap into a drinking glass on a table (r = 3 mm): frame 40."""
    new_file(radius=0.003, frames=40)
    stage(camera=(0.34, -0.42, 0.26), target=(0.0, 0.0, 0.07), lens=55.0)
    bpy.context.scene.objects["Ground"].data.materials[0].node_tree.nodes["Principled BSDF"].inputs[
        "Base Color"
    ].default_value = (0.45, 0.3, 0.2, 1.0)  # a wooden table top
    cup = _open_cylinder(0.035, 0.11, 0.003, 0.0)
    cup.name = "Glass"
    clear = material("Glass", (0.95, 0.97, 1.0), 0.0)
    bsdf = clear.node_tree.nodes["Principled BSDF"]
    transmission = "Transmission Weight" if "Transmission Weight" in bsdf.inputs else "Transmission"
    bsdf.inputs[transmission].default_value = 1.0
    bsdf.inputs["IOR"].default_value = 1.5
    assign(cup, clear)
    run("make_collider", cup)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.008, depth=0.012, location=(0.006, 0.0, 0.2))
    tap = assign(active(), _water())
    tap.name = "Tap"
    tap.unified_particles.flow_velocity = 1.0  # m/s, straight down
    tap.unified_particles.surface_smoothing = 4
    run("make_inflow", tap)
    return 40


def splash() -> int:
    """A block of water dropped into a pool in a tank (r = 2.5 cm), with whitewater: frame 16."""
    new_file(radius=0.025, frames=16)
    stage(camera=(1.0, -1.15, 1.25), target=(0.0, 0.0, 0.12), lens=32.0)
    half, height, wall = 0.4, 0.22, 0.04
    stone = material("Stone", (0.5, 0.48, 0.45), 0.8)
    walls = []
    for x, y, sx, sy in (
        (0.0, -half - wall / 2, 2 * (half + wall), wall),
        (0.0, half + wall / 2, 2 * (half + wall), wall),
        (-half - wall / 2, 0.0, wall, 2 * half),
        (half + wall / 2, 0.0, wall, 2 * half),
    ):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(x, y, height / 2))
        walls.append(assign(active(), stone))
        walls[-1].scale = (sx, sy, height)
        bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    run("make_collider", *walls)
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.0, 0.0, 0.001))
    assign(active(), material("Tiles", (0.08, 0.16, 0.2), 0.6)).scale = (2 * half, 2 * half, 1.0)
    liquids = []
    for name, size, location in (
        ("Pool", (2 * half - 0.01, 2 * half - 0.01, 0.15), (0.0, 0.0, 0.075)),
        ("Drop", (0.24, 0.24, 0.24), (0.1, 0.05, 0.5)),
    ):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=location)
        obj = assign(active(), _water())
        obj.name = name
        obj.scale = size
        bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
        obj.unified_particles.whitewater = True
        liquids.append(obj)
    run("make_fluid", *liquids)
    return 16


glass.still_size = SIZE  # type: ignore[attr-defined]
splash.still_size = SIZE  # type: ignore[attr-defined]
