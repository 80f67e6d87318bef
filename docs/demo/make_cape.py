"""`make docs-images`: a cape pinned to an armature, rendered into docs/images/cape.png.

A stand-in character (a rounded torso on a rig of one bone) walks forward and turns; a cape hangs from its
shoulders. The cape's top edge is weighted to the bone (Armature modifier) and pinned (Pin Group): the
pins ride on the bone, the cape swings behind and wraps the torso, which is a collider moving with the
bone. Built with the add-on's operators as a user would, baked to a point cache, rendered with Cycles.

    UP_EXTENSION_ZIP=dist/unified_particles-0.1.0.zip .venv/bin/python docs/demo/make_cape.py
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# Keep Blender's user configuration out of the user's home (must precede `import bpy`).
_USER_DIR = tempfile.mkdtemp(prefix="up-cape-user-")
os.environ.setdefault("BLENDER_USER_RESOURCES", _USER_DIR)
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(_USER_DIR, "cache"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bpy  # noqa: E402
from make_demo import (  # noqa: E402
    REPO,
    active,
    assign,
    configure_render,
    install_extension,
    material,
    render_still,
    run,
    say,
    view3d_context,
)

FRAMES = 40
RADIUS = 0.02


def build_scene() -> None:
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    scene.render.fps = 24
    settings = scene.unified_particles
    settings.particle_radius = RADIUS
    settings.substeps = 8

    bpy.ops.object.armature_add(location=(0.0, 0.0, 0.0))
    rig = active()
    bone = rig.pose.bones["Bone"]
    bone.rotation_mode = "XYZ"
    bone.keyframe_insert("location", frame=1)
    bone.keyframe_insert("rotation_euler", frame=1)
    bone.location = (0.0, 0.0, 1.2)  # bone space: z is world -y, so it walks 1.2 m towards -y
    bone.keyframe_insert("location", frame=FRAMES)
    bone.rotation_euler = (0.0, math.radians(30.0), 0.0)  # turning about the bone's (vertical) axis
    bone.keyframe_insert("rotation_euler", frame=FRAMES)
    scene.frame_set(1)  # parent and bind at the rest pose

    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 1.25))
    torso = assign(active(), material("Shirt", (0.55, 0.56, 0.6), 0.7))
    torso.scale = (0.5, 0.28, 0.7)
    bevel = torso.modifiers.new("Bevel", "BEVEL")
    bevel.width, bevel.segments = 0.1, 3
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.14, location=(0.0, 0.0, 1.8))
    head = assign(active(), material("Skin", (0.8, 0.6, 0.5), 0.5))
    legs = []
    for x in (-0.13, 0.13):
        bpy.ops.mesh.primitive_cylinder_add(radius=0.09, depth=0.9, location=(x, 0.0, 0.45))
        legs.append(assign(active(), material("Trousers", (0.12, 0.14, 0.2), 0.8)))
    for part in (torso, head, *legs):
        matrix = part.matrix_world.copy()
        part.parent, part.parent_type, part.parent_bone = rig, "BONE", "Bone"
        part.matrix_world = matrix
    bpy.ops.object.shade_smooth()

    bpy.ops.mesh.primitive_grid_add(x_subdivisions=24, y_subdivisions=30, size=1.0, location=(0.0, 0.2, 1.05))
    cape = assign(active(), material("Velvet", (0.5, 0.03, 0.05), 0.8))
    cape.scale = (0.75, 1.05, 1.0)
    cape.rotation_euler = (math.pi / 2, 0.0, 0.0)  # hangs behind the torso (its back faces +y)
    bpy.ops.object.transform_apply(location=False, rotation=True, scale=True)
    z = [v.co.z for v in cape.data.vertices]
    top = [v.index for v in cape.data.vertices if v.co.z > max(z) - 1e-4]
    cape.vertex_groups.new(name="Pins").add(top, 1.0, "REPLACE")
    cape.vertex_groups.new(name="Bone").add(top, 1.0, "REPLACE")
    cape.modifiers.new("Armature", "ARMATURE").object = rig
    cape.modifiers.new("Subdivision", "SUBSURF").levels = 1
    solidify = cape.modifiers.new("Solidify", "SOLIDIFY")
    solidify.thickness = 0.01
    bpy.ops.object.shade_smooth()

    bpy.ops.mesh.primitive_plane_add(size=12.0, location=(0.0, 0.0, 0.0))
    ground = assign(active(), material("Floor", (0.33, 0.33, 0.35), 0.9))
    run("make_collider", ground)
    run("make_collider", torso)
    run("make_cloth", cape)
    cape.unified_particles.pin_group = "Pins"
    run("apply_preset", cape, preset="COTTON")

    bpy.ops.object.empty_add(location=(0.0, -0.7, 0.95))
    target = active()
    bpy.ops.object.camera_add(location=(3.3, 2.4, 2.0))
    camera = active()
    track = camera.constraints.new("TRACK_TO")
    track.target, track.track_axis, track.up_axis = target, "TRACK_NEGATIVE_Z", "UP_Y"
    scene.camera = camera
    bpy.ops.object.light_add(
        type="SUN", location=(0.0, 0.0, 5.0), rotation=(math.radians(40), 0.0, math.radians(130))
    )
    active().data.energy = 3.5
    world = bpy.data.worlds.new("Sky")
    world.color = (0.18, 0.2, 0.24)
    scene.world = world


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--out", type=Path, default=REPO / "build" / "docs-cape")
    args = parser.parse_args()
    zip_path = Path(os.environ.get("UP_EXTENSION_ZIP", ""))
    if not zip_path.is_file():
        sys.exit("Set UP_EXTENSION_ZIP to the built zip (make docs-images does this)")
    install_extension(zip_path)
    build_scene()
    configure_render(args.samples)
    scene: Any = bpy.context.scene
    scene.render.resolution_x, scene.render.resolution_y = 960, 540
    scene.cycles.use_denoising = True
    args.out.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(args.out / "cape.blend"))
    say(f"baking {FRAMES} frames")
    with bpy.context.temp_override(**view3d_context()):
        if bpy.ops.unified_particles.bake() != {"FINISHED"}:
            sys.exit(f"Bake failed: {scene.unified_particles_bake.error}")
    still = REPO / "docs" / "images" / "cape.png"
    render_still(still, FRAMES)
    say(f"wrote {still}")


if __name__ == "__main__":
    main()
