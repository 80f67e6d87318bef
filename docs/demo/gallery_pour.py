"""Gallery scene: water poured into a drinking glass (issue 25).

Registered in ``SCENES`` of make_gallery.py as ``pour``; the function builds the scene with the add-on's
operators as a user would (Make Collider on the glass, Make Inflow on a small cylinder above it) and
returns the frame to render. The liquid is drawn by its Liquid Surface (a mesh, Smooth Surface on, as
in the fluid still) in a clear water material, inside a glass mesh with a glass material; rendered at
``still_size`` (1280 x 720, denoised) with ``still_samples`` (read by make_gallery.py).

    UP_EXTENSION_ZIP=dist/unified_particles-0.1.0.zip .venv/bin/python docs/demo/make_gallery.py --only pour
"""

from __future__ import annotations

from typing import Any

import bpy
from make_demo import active, assign, new_file, run, see_through, stage, water_material

SIZE = (1280, 720)
RADIUS = 0.003  # m: a glass 7 cm across is about 12 particles wide


def open_cylinder(radius: float, depth: float, wall: float, z: float) -> Any:
    """A cylinder of inner ``radius`` standing at height ``z`` without its top face, walls ``wall`` thick
    outwards (Solidify): a glass or a beaker."""
    import bmesh

    bpy.ops.mesh.primitive_cylinder_add(
        vertices=48, radius=radius, depth=depth, location=(0, 0, z + depth / 2)
    )
    obj = active()
    bm = bmesh.new()
    bm.from_mesh(obj.data)
    top = [f for f in bm.faces if f.calc_center_median().z > depth / 2 - 1e-6]
    bmesh.ops.delete(bm, geom=top, context="FACES_ONLY")
    bm.to_mesh(obj.data)
    bm.free()
    solidify = obj.modifiers.new("Walls", "SOLIDIFY")
    solidify.thickness, solidify.offset = wall, 1.0
    # Flat shaded: smooth normals bent across the rim and the base made the glass render dark and opaque.
    return obj


def glass_material() -> Any:
    """Clear glass: fully transmissive, IOR 1.5, smooth."""
    return see_through("Glass", (0.95, 0.97, 1.0), 0.0, 1.0, 1.5)


def pour() -> int:
    """Water poured from a tap into a drinking glass on a wooden table (r = 3 mm): frame 40."""
    new_file(radius=RADIUS, frames=40)
    stage(camera=(0.34, -0.42, 0.24), target=(0.0, 0.0, 0.075), lens=65.0)
    table = bpy.context.scene.objects["Ground"].data.materials[0]
    table.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = (0.45, 0.3, 0.2, 1.0)
    glass = assign(open_cylinder(0.035, 0.11, 0.003, 0.0), glass_material())
    glass.name = "Glass"
    run("make_collider", glass)
    # A tap 2 cm across, 6 cm above the rim: about 37 particles a frame, 300 ml by frame 40.
    bpy.ops.mesh.primitive_cylinder_add(radius=0.01, depth=0.012, location=(0.006, 0.0, 0.17))
    tap = assign(active(), water_material())
    tap.name = "Tap"
    tap.unified_particles.flow_velocity = 0.6  # m/s along the tap's local -Z: straight down
    tap.unified_particles.surface_smoothing = 4
    run("make_inflow", tap)
    return 40


pour.still_size = SIZE  # type: ignore[attr-defined]
pour.still_samples = 16  # type: ignore[attr-defined]  # glass and water, denoised: about 3 min of CPU
