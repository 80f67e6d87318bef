"""Gallery scenes of issue 26 (registered in make_gallery.SCENES): soft bodies and balloons.

- ``jelly_stairs``: three Jelly cubes (Soft Body, Jelly preset) thrown down a flight of stone stairs;
- ``jelly_loop``: the same shot as a short looping animated WebP (``loop_frames``);
- ``balloons``: three balloons (Cloth, Balloon preset: Pressure on) squashed under a wooden crate.

Built with the add-on's operators as a user would; make_gallery bakes and renders them.
"""

from __future__ import annotations

from typing import Any

import bpy
from make_demo import active, assign, material, new_file, run, see_through, stage

STEPS = 4  # stairs: STEPS boxes 0.4 m deep and 0.2 m higher each, rising towards -x
JELLY_FRAMES = 48


def _jelly_material(name: str, color: tuple[float, float, float]) -> Any:
    """A glossy, partly see-through gelatine: transmission with a little subsurface glow."""
    return see_through(name, color, 0.12, 0.75, 1.35)


def jelly_stairs() -> int:
    """Three Jelly cubes thrown down four stone steps; they squash, wobble and tumble. Returns the frame."""
    new_file(radius=0.015, frames=JELLY_FRAMES, substeps=8, iterations=2)
    stage(camera=(0.5, -2.4, 1.25), target=(-0.7, 0.0, 0.4), lens=42.0)
    stone = material("Stone", (0.36, 0.34, 0.32), 0.85)
    steps = []
    for k in range(STEPS):
        height = 0.2 * (STEPS - k)
        x = -0.4 * (STEPS - k) + 0.2
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(x, 0.0, 0.5 * height), scale=(0.4, 1.4, height))
        steps.append(assign(active(), stone))
    run("make_collider", *steps)
    jellies = []
    colours = ((0.8, 0.05, 0.1), (0.15, 0.7, 0.1), (0.95, 0.45, 0.02))
    for k, colour in enumerate(colours):
        location = (-1.45 + 0.12 * k, -0.4 + 0.4 * k, 0.2 * STEPS + 0.2 + 0.25 * k)
        bpy.ops.mesh.primitive_cube_add(size=0.25, location=location, rotation=(0.15 * k, 0.25, 0.3 * k))
        jelly = active()
        jelly.name = f"Jelly{k}"
        # A rounded-edged, finely divided render mesh (Bevel and Subdivision applied): the skin follows the
        # clusters at any resolution.
        bevel = jelly.modifiers.new("Edges", "BEVEL")
        bevel.width, bevel.segments = 0.025, 2
        bpy.ops.object.modifier_apply(modifier="Edges")
        jelly.modifiers.new("Fine", "SUBSURF").levels = 2
        bpy.ops.object.modifier_apply(modifier="Fine")
        bpy.ops.object.shade_smooth()
        jellies.append(assign(jelly, _jelly_material(f"Jelly{k}", colour)))
    run("make_soft", *jellies)
    run("apply_preset", *jellies, preset="SOFT_JELLY")
    for k, jelly in enumerate(jellies):
        jelly.unified_particles.initial_velocity = (1.2 + 0.2 * k, 0.0, 0.0)
    return 24  # the first ones landing on the steps, squashed, the last still in the air


def jelly_loop() -> int:
    """``jelly_stairs`` as an animated loop (make_gallery renders ``loop_frames``)."""
    jelly_stairs()
    return JELLY_FRAMES


jelly_loop.loop_frames = range(1, JELLY_FRAMES + 1, 3)  # type: ignore[attr-defined]


def balloons() -> int:
    """Four balloons side by side on the ground, a wide wooden crate dropped onto them: they squash, bulge
    sideways and hold it up. Returns the frame."""
    new_file(radius=0.02, frames=36, substeps=8, iterations=2)
    stage(camera=(1.7, -2.1, 1.1), target=(0.0, 0.0, 0.3), lens=40.0)
    shells = []
    colours = ((0.85, 0.08, 0.08), (0.95, 0.75, 0.05), (0.1, 0.3, 0.85), (0.15, 0.65, 0.2))
    for k, colour in enumerate(colours):
        x, y = (-0.21, 0.21, -0.21, 0.21)[k], (-0.21, -0.21, 0.21, 0.21)[k]
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=0.2, location=(x, y, 0.21))
        balloon = assign(active(), material(f"Balloon{k}", colour, 0.25))
        balloon.name = f"Balloon{k}"
        bpy.ops.object.shade_smooth()
        shells.append(balloon)
    run("make_cloth", *shells)
    run("apply_preset", *shells, preset="BALLOON")
    for balloon in shells:
        balloon.modifiers.new("Smooth", "SUBSURF").levels = 1
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 0.6), scale=(0.8, 0.8, 0.25))
    crate = assign(active(), material("Crate", (0.8, 0.55, 0.25), 0.55))
    crate.name = "Crate"
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    run("make_rigid", crate)
    run("apply_preset", crate, preset="WOOD")
    return 30  # the crate resting on the squashed balloons
