"""Gallery scenes of issue 27 and 25 (registered in make_gallery.SCENES): ropes, glue and wind.

- ``rope_bridge``: a rope bridge (planks tied into two side ropes pinned to posts), crates falling onto it;
- ``glued_wall``: a wall of glued bricks (Glue Strength) that a steel ball shatters;
- ``flag``: a flag on a pole streaming and flapping in a gusty Wind field (1280 x 720).

Built with the add-on's operators as a user would; make_gallery bakes and renders them.
"""

from __future__ import annotations

import math
from typing import Any

import bpy
from make_demo import active, assign, material, new_file, run, stage, thickness


def _rope(name: str, start: tuple[float, float, float], end: tuple[float, float, float], hemp: Any) -> Any:
    """A straight poly curve from ``start`` to ``end`` (world metres), with the rope material."""
    curve = bpy.data.curves.new(name, "CURVE")
    curve.dimensions = "3D"
    spline = curve.splines.new("POLY")
    spline.points.add(1)
    spline.points[0].co = (*start, 1.0)
    spline.points[1].co = (*end, 1.0)
    obj = bpy.data.objects.new(name, curve)
    bpy.context.scene.collection.objects.link(obj)
    return assign(obj, hemp)


def rope_bridge() -> int:
    """A rope bridge: seven planks (rigid) tied into two side ropes pinned to the posts, two hand ropes
    above, three crates dropped onto the deck. Each side rope is a chain of short ropes from plank to plank
    (Tie Start / Tie End on the planks, Rope Pins at the posts). Returns the frame to render."""
    new_file(radius=0.02, frames=30, substeps=8, iterations=2)
    stage(camera=(2.2, -2.6, 1.6), target=(0.0, 0.0, 0.7), lens=40.0)
    wood = material("Posts", (0.3, 0.18, 0.09), 0.6)
    deck = material("Planks", (0.55, 0.36, 0.2), 0.7)
    hemp = material("Hemp", (0.62, 0.5, 0.3), 0.8)
    z, side, span = 0.85, 0.28, 1.0  # deck height, side ropes' y (a plank is 0.5 m wide), half span
    for x in (-1.1, 1.1):
        for y in (-side, side):
            bpy.ops.mesh.primitive_cube_add(size=1.0, location=(x, y, 0.6), scale=(0.1, 0.1, 1.2))
            run("make_collider", assign(active(), wood))
    planks = []
    xs = [-0.75 + 0.25 * k for k in range(7)]
    for k, x in enumerate(xs):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(x, 0.0, z), scale=(0.2, 0.5, 0.05))
        planks.append(assign(active(), deck))
        planks[-1].name = f"Plank{k}"
    run("make_rigid", *planks)
    run("apply_preset", *planks, preset="WOOD")
    ropes, ties = [], []
    for y in (-side, side):  # each side: post, plank, plank, ..., post; the joints 2r apart at a plank
        stops = [-span, *[x for x in xs for _ in (0, 1)], span]
        for k in range(len(xs) + 1):
            a = stops[2 * k] + (0.02 if k > 0 else 0.0)
            b = stops[2 * k + 1] - (0.02 if k < len(xs) else 0.0)
            ropes.append(_rope(f"Side{'LR'[y > 0]}{k}", (a, y, z), (b, y, z), hemp))
            ties.append((planks[k - 1] if k > 0 else None, planks[k] if k < len(xs) else None))
    hand = [_rope(f"Hand{'LR'[y > 0]}", (-span, y, 1.15), (span, y, 1.15), hemp) for y in (-side, side)]
    run("make_rope", *ropes, *hand)
    for obj, (start, end) in zip(ropes, ties, strict=True):
        s = obj.unified_particles
        s.rope_pins = "START" if start is None else "END" if end is None else "NONE"
        s.rope_tie_start, s.rope_tie_end = start, end
    for obj in hand:
        obj.unified_particles.rope_pins = "BOTH"
    crates = []
    for k, (x, z0) in enumerate(((-0.45, 1.25), (0.1, 1.6), (0.5, 1.35))):
        bpy.ops.mesh.primitive_cube_add(size=0.22, location=(x, 0.0, z0), rotation=(0.2 * k, 0.3, 0.1 * k))
        crates.append(assign(active(), material(f"Crate{k}", (0.75 - 0.08 * k, 0.52, 0.25), 0.55)))
    run("make_rigid", *crates)
    run("apply_preset", *crates, preset="WOOD")
    return 22  # the crates landed, the deck sagging under them


def glued_wall() -> int:
    """A wall of 5 x 4 glued bricks hit by a steel ball. Returns the frame to render."""
    new_file(radius=0.025, frames=14, substeps=8, iterations=2)
    stage(camera=(3.0, -3.6, 1.5), target=(0.0, 0.4, 0.5), lens=42.0)
    w, h, d = 0.3, 0.2, 0.2
    bricks = []
    for row in range(5):
        for col in range(4):
            x = (col - 1.5 + 0.5 * (row % 2)) * w
            bpy.ops.mesh.primitive_cube_add(size=1.0, location=(x, 0.5, h / 2 + row * h), scale=(w, d, h))
            shade = (0.62 - 0.05 * ((row + col) % 3), 0.28 - 0.03 * (col % 2), 0.2)
            bricks.append(assign(active(), material(f"Brick{row}{col}", shade, 0.8)))
    run("make_rigid", *bricks)
    for brick in bricks:
        brick.unified_particles.glue_strength = 2e4  # Pa: holds the wall's weight, not a 5 m/s ball
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(0.05, -1.4, 0.55), segments=32, ring_count=16)
    ball = assign(active(), material("Steel", (0.8, 0.8, 0.82), 0.25))
    bpy.ops.object.shade_smooth()
    ball.data.materials[0].node_tree.nodes["Principled BSDF"].inputs["Metallic"].default_value = 1.0
    run("make_rigid", ball)
    run("apply_preset", ball, preset="STEEL")
    ball.unified_particles.initial_velocity = (0.0, 6.0, 0.8)
    return 14  # the ball through the wall, its glued pieces flying apart


def flag() -> int:
    """A 1.2 x 0.8 m flag pinned to a pole in a gusty Wind field blowing at about 5 m/s."""
    radius = 0.015
    new_file(radius=radius, frames=60, substeps=8, iterations=2)
    stage(camera=(0.9, -3.4, 1.9), target=(0.6, 0.0, 1.75), lens=40.0)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.025, depth=2.3, location=(0.0, 0.0, 1.15), vertices=24)
    pole = assign(active(), material("Pole", (0.75, 0.75, 0.78), 0.3))
    bpy.ops.object.shade_smooth()
    run("make_collider", pole)
    columns = math.ceil(1.2 / (1.6 * radius))
    rows = math.ceil(0.8 / (1.6 * radius))
    bpy.ops.mesh.primitive_grid_add(
        x_subdivisions=columns,
        y_subdivisions=rows,
        size=1.0,
        location=(0.64, 0.0, 1.85),
        rotation=(math.pi / 2, 0, 0),
    )
    cloth = active()
    cloth.scale = (1.2, 0.8, 1.0)
    bpy.ops.object.transform_apply(location=False, rotation=True, scale=True)
    cloth.name = "Flag"
    mat = material("Flag", (0.1, 0.25, 0.7), 0.8)
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    wave = nodes.new("ShaderNodeTexWave")  # stripes, so the folds read
    wave.inputs["Scale"].default_value = 1.5
    ramp = nodes.new("ShaderNodeValToRGB")
    ramp.color_ramp.interpolation = "CONSTANT"
    ramp.color_ramp.elements[0].color = (0.9, 0.9, 0.88, 1.0)
    ramp.color_ramp.elements[1].position = 0.5
    ramp.color_ramp.elements[1].color = (0.1, 0.25, 0.7, 1.0)
    links.new(wave.outputs["Fac"], ramp.inputs["Fac"])
    links.new(ramp.outputs["Color"], nodes["Principled BSDF"].inputs["Base Color"])
    assign(cloth, mat)
    left = [v.index for v in cloth.data.vertices if (cloth.matrix_world @ v.co).x < 0.04 + 1e-4]
    cloth.vertex_groups.new(name="Pins").add(left, 1.0, "REPLACE")
    run("make_cloth", cloth)
    run("apply_preset", cloth, preset="COTTON")
    cloth.unified_particles.pin_group = "Pins"
    thickness(cloth, 0.004)
    # Wind along +X: a Wind field's Z axis, turned. Air speed U with 1/2 rho C_d U^2 = 0.02 E, E = strength
    # / frame rate (core/wind_air.py): 5 m/s is E = 900 N, strength 21600 at 24 fps; noise makes gusts.
    bpy.ops.object.effector_add(type="WIND", location=(-1.0, 0.0, 1.6), rotation=(0.0, math.pi / 2, 0.0))
    wind = active()
    wind.field.strength = 21600.0
    wind.field.noise = 8000.0
    wind.field.flow = 0.0
    return 60


flag.still_size = (1280, 720)  # type: ignore[attr-defined]
