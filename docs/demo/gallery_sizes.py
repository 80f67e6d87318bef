"""Gallery still of issue 22: fine and coarse bodies in one scene (``make_gallery.py --only sizes``).

Fine sand (the scene's Particle Radius, 9 mm) poured over coarse rocks (Particle Size Value: 4.5 cm, 5x
the sand) and a crate (Particle Size Auto), and onto a cloth whose vertices are 10 cm apart, five and a half
sand grains' widths, which holds the sand by its triangles (particle-triangle contacts), not its vertices.
Built with the sidebar's operators and baked, as a user would; rendered at ``still_size`` (1280 x 720).

    UP_EXTENSION_ZIP=dist/unified_particles-0.1.0.zip .venv/bin/python docs/demo/make_gallery.py --only sizes
"""

from __future__ import annotations

import math
from typing import Any

import bpy
from make_demo import SAND_DARK, SAND_LIGHT, active, assign, grain_material, material, new_file, run, stage

SIZE = (1280, 720)
SAND_RADIUS = 0.009  # the scene's Particle Radius, m
ROCK_RADIUS = 0.045  # the rocks' own Particle Size (Value), m: 5x the sand
CLOTH_SPACING = 0.1  # the cloth's vertex spacing, m: 5.5 sand diameters


def _sand_block(name: str, location: tuple[float, float, float], size: tuple[float, float, float]) -> Any:
    """A box of sand grains at the scene's radius (Dry Sand), dropped from where it is built."""
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=location)
    sand = active()
    sand.name = name
    sand.scale = size
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    assign(sand, grain_material(name, SAND_DARK, SAND_LIGHT))
    run("make_granular", sand)
    run("apply_preset", sand, preset="DRY_SAND")
    return sand


def _rock(name: str, location: tuple[float, float, float], scale: tuple[float, float, float]) -> Any:
    """A rounded, flattened boulder: an icosphere, scaled and turned, shaded smooth."""
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=1.0, location=location)
    rock = active()
    rock.name = name
    rock.scale = scale
    rock.rotation_euler = (0.2, 0.35, 0.6 * len(name))
    bpy.ops.object.transform_apply(location=False, rotation=True, scale=True)
    bpy.ops.object.shade_smooth()
    return rock


def sizes() -> int:
    """Sand of 9 mm grains over 4.5 cm-particle rocks, an Auto-sized crate and a coarse cloth: frame 24."""
    new_file(radius=SAND_RADIUS, frames=24, substeps=8, iterations=2)
    stage(camera=(0.35, -2.3, 1.25), target=(0.0, 0.05, 0.22), lens=38.0)
    # Right: three rocks (their own size) and a crate (Auto: 3 particles across its 0.24 m side).
    stone = material("Stone", (0.32, 0.31, 0.3), 0.75)
    rocks = [
        assign(_rock("Rock", (0.38, 0.05, 0.13), (0.2, 0.17, 0.13)), stone),
        assign(_rock("Rock2", (0.62, -0.12, 0.1), (0.15, 0.13, 0.1)), stone),
        assign(_rock("Rock3", (0.58, 0.25, 0.09), (0.13, 0.12, 0.09)), stone),
    ]
    run("make_rigid", *rocks)
    for rock in rocks:  # granite: 2,600 kg/m^3 (no preset for stone)
        rock.unified_particles.density = 2600.0
        rock.unified_particles.friction = 0.6
        rock.unified_particles.size_mode = "VALUE"
        rock.unified_particles.particle_size = ROCK_RADIUS
    bpy.ops.mesh.primitive_cube_add(size=0.24, location=(0.85, 0.12, 0.121), rotation=(0.0, 0.0, 0.4))
    crate = assign(active(), material("Crate", (0.8, 0.55, 0.25), 0.55))
    crate.name = "Crate"
    run("make_rigid", crate)
    run("apply_preset", crate, preset="WOOD")
    crate.unified_particles.size_mode = "AUTO"
    # Left: a cloth 0.9 m square on two rails, pinned along them, vertices 10 cm apart.
    side = 0.9
    cuts = round(side / CLOTH_SPACING)
    bpy.ops.mesh.primitive_grid_add(
        x_subdivisions=cuts, y_subdivisions=cuts, size=side, location=(-0.55, 0.05, 0.42)
    )
    cloth = active()
    cloth.name = "Cloth"
    edge = [v.index for v in cloth.data.vertices if abs(abs(v.co.x) - side / 2) < 1e-6]
    cloth.vertex_groups.new(name="Rails").add(edge, 1.0, "REPLACE")
    assign(cloth, material("Canvas", (0.12, 0.25, 0.5), 0.85))
    run("make_cloth", cloth)
    run("apply_preset", cloth, preset="DENIM")
    cloth.unified_particles.pin_group = "Rails"
    cloth.unified_particles.size_mode = "VALUE"  # its Thickness: 5 mm, under a sand grain
    cloth.unified_particles.particle_size = 0.005
    solidify = cloth.modifiers.new("Thickness", "SOLIDIFY")
    solidify.thickness, solidify.offset = 0.006, 0.0
    for polygon in cloth.data.polygons:
        polygon.use_smooth = True
    wood = material("Wood", (0.45, 0.28, 0.14), 0.7)
    rails = []
    for x in (-0.55 - side / 2 - 0.03, -0.55 + side / 2 + 0.03):  # just outside the pinned edges
        bpy.ops.mesh.primitive_cylinder_add(
            radius=0.025, depth=side + 0.2, location=(x, 0.05, 0.42), rotation=(math.pi / 2, 0.0, 0.0)
        )
        rails.append(assign(active(), wood))
        bpy.ops.object.shade_smooth()
    for x in (-0.55 - side / 2 - 0.03, -0.55 + side / 2 + 0.03):
        for y in (0.05 - side / 2 - 0.05, 0.05 + side / 2 + 0.05):
            bpy.ops.mesh.primitive_cylinder_add(radius=0.02, depth=0.42, location=(x, y, 0.21))
            rails.append(assign(active(), wood))
    run("make_collider", *rails)
    # The sand: one block over the cloth, one over the rocks and the crate.
    _sand_block("Sand", (-0.55, 0.05, 0.72), (0.32, 0.32, 0.12))
    _sand_block("Sand2", (0.5, 0.05, 0.5), (0.36, 0.3, 0.1))
    return 24  # the sand landed: heaped on the rocks, run off their sides, held in the cloth's dip


sizes.still_size = SIZE  # type: ignore[attr-defined]
