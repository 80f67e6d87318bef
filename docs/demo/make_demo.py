"""`make demo`: build the showcase scene through the add-on's own operators, bake it and render it.

A cloth hammock hangs between two posts; wooden cubes and a Suzanne drop onto it, a block of sand is
poured on top; everything lands on a ground collider. The script does what a user does in the sidebar
(select, Make Cloth / Make Rigid / Make Granular / Make Collider, Bake), then renders with Cycles on the
CPU and writes out/demo.blend, out/demo.mp4 and out/demo.png.

Run it with the environment's Python (bpy from PyPI); the built extension zip is installed with
Blender's own extension installer first:

    UP_EXTENSION_ZIP=dist/unified_particles-0.1.0.zip .venv/bin/python docs/demo/make_demo.py [--frames 120]

`--still-only` renders only docs/images/demo.png (used by `make docs-images`).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

# Keep Blender's user configuration out of the user's home (must precede `import bpy`).
_USER_DIR = tempfile.mkdtemp(prefix="up-demo-user-")
os.environ.setdefault("BLENDER_USER_RESOURCES", _USER_DIR)
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(_USER_DIR, "cache"))

import bpy  # noqa: E402

PACKAGE = "bl_ext.user_default.unified_particles"
RADIUS = 0.035  # metres: one particle radius for the whole world


def say(message: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {message}", flush=True)


def install_extension(zip_path: Path) -> None:
    result = bpy.ops.extensions.package_install_files(
        filepath=str(zip_path), repo="user_default", enable_on_install=True
    )
    if result != {"FINISHED"} or PACKAGE not in bpy.context.preferences.addons:
        sys.exit(f"Could not install and enable {zip_path}")


def view3d_context() -> dict[str, Any]:
    window = bpy.context.window_manager.windows[0]
    area = next((a for a in window.screen.areas if a.type == "VIEW_3D"), window.screen.areas[0])
    area.type = "VIEW_3D"
    region = next(r for r in area.regions if r.type == "WINDOW")
    return {"window": window, "screen": window.screen, "area": area, "region": region}


def run(op_name: str, *objects: Any, **props: Any) -> None:
    """Select ``objects`` and click the sidebar button ``op_name``, as a user would."""
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for obj in objects:
        obj.select_set(True)
    if objects:
        bpy.context.view_layer.objects.active = objects[0]
    with bpy.context.temp_override(**view3d_context()):
        result = getattr(bpy.ops.unified_particles, op_name)(**props)
    if result != {"FINISHED"}:
        sys.exit(f"unified_particles.{op_name} did not finish: {result}")


def material(name: str, color: tuple[float, float, float], roughness: float = 0.6) -> Any:
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):
        mat.use_nodes = True  # always on (and deprecated) from 5.0
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    mat.diffuse_color = (*color, 1.0)
    return mat


def assign(obj: Any, mat: Any) -> Any:
    obj.data.materials.clear()
    obj.data.materials.append(mat)
    return obj


def active() -> Any:
    return bpy.context.view_layer.objects.active


def build_scene(frames: int) -> dict[str, Any]:
    """The showcase scene, made with Blender's primitives and the add-on's operators."""
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps = 24
    settings = scene.unified_particles
    settings.particle_radius = RADIUS
    settings.substeps = 6
    settings.iterations = 3

    # Ground: a collider.
    bpy.ops.mesh.primitive_plane_add(size=12.0, location=(0, 0, 0))
    ground = assign(active(), material("Ground", (0.18, 0.2, 0.22), 0.9))
    ground.name = "Ground"
    run("make_collider", ground)

    # Two posts (colliders) and a hammock between them, pinned along both short edges.
    wood = material("Wood", (0.45, 0.28, 0.14), 0.7)
    posts = []
    for x in (-1.2, 1.2):  # just outside the pinned edges (x = +-1.1) so the posts never push a pin
        bpy.ops.mesh.primitive_cylinder_add(radius=0.08, depth=1.5, location=(x, 0, 0.75), vertices=16)
        posts.append(assign(active(), wood))
    run("make_collider", *posts)

    # Vertex spacing 2.2 m / 44 = 5 cm < one particle diameter (7 cm): no gaps for particles to pass.
    columns, rows = 44, 28
    bpy.ops.mesh.primitive_grid_add(
        x_subdivisions=columns, y_subdivisions=rows, size=1.0, location=(0, 0, 1.2)
    )
    hammock = active()
    hammock.name = "Hammock"
    hammock.scale = (2.2, 1.4, 1.0)
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    # Hung with slack and raised long edges, as a real hammock: the rest shape is a shallow dish
    # (the cloth's rest lengths come from it), so loads settle in the middle instead of rolling out.
    for v in hammock.data.vertices:
        u, w = v.co.x / 1.1, v.co.y / 0.7
        v.co.z = -0.3 * (1.0 - u * u) + 0.22 * w * w
    xs = [v.co.x for v in hammock.data.vertices]
    pins = hammock.vertex_groups.new(name="Pins")
    pins.add([v.index for v in hammock.data.vertices if abs(abs(v.co.x) - max(xs)) < 1e-6], 1.0, "REPLACE")
    assign(hammock, material("Canvas", (0.75, 0.15, 0.12), 0.8))
    run("make_cloth", hammock)
    hammock.unified_particles.pin_group = "Pins"
    run("apply_preset", hammock, preset="DENIM")

    # Rigid bodies: two wooden crates and a Suzanne, dropped from above.
    crates = []
    for i, (x, z) in enumerate([(-0.45, 1.9), (0.4, 2.35)]):
        bpy.ops.mesh.primitive_cube_add(size=0.32, location=(x, 0.05 * i, z), rotation=(0.3, 0.5 * i, 0.2))
        crates.append(assign(active(), material(f"Crate{i}", (0.85, 0.6, 0.25), 0.5)))
    run("make_rigid", *crates)
    run("apply_preset", *crates, preset="WOOD")
    bpy.ops.mesh.primitive_monkey_add(size=0.45, location=(0.0, -0.05, 2.9), rotation=(0.4, 0.0, 0.3))
    suzanne = assign(active(), material("Suzanne", (0.2, 0.45, 0.8), 0.3))
    suzanne.name = "Suzanne"
    run("make_rigid", suzanne)
    run("apply_preset", suzanne, preset="RUBBER")

    # Sand poured on top: a block filled with grains.
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.05, 0.0, 3.6))
    sand = active()
    sand.name = "Sand"
    sand.scale = (0.55, 0.35, 0.35)
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    assign(sand, material("Sand", (0.86, 0.72, 0.45), 0.95))
    run("make_granular", sand)
    run("apply_preset", sand, preset="DRY_SAND")

    # Camera and lights.
    bpy.ops.object.camera_add(location=(4.2, -4.6, 2.9), rotation=(math.radians(68), 0, math.radians(42)))
    scene.camera = active()
    scene.camera.data.lens = 38
    bpy.ops.object.light_add(type="SUN", rotation=(math.radians(40), math.radians(10), math.radians(30)))
    active().data.energy = 3.0
    bpy.ops.object.light_add(type="AREA", location=(-3, -2, 4))
    active().data.energy = 600.0
    active().data.size = 3.0
    world = bpy.data.worlds.new("World")
    scene.world = world
    if bpy.app.version < (5, 0, 0):
        world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.6, 0.7, 0.85, 1.0)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.6
    return {"hammock": hammock, "crates": crates, "suzanne": suzanne, "sand": sand}


def configure_render(samples: int) -> None:
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = 480, 270
    scene.render.resolution_percentage = 100


def render_still(path: Path, frame: int) -> None:
    scene = bpy.context.scene
    scene.frame_set(frame)
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):
        settings.media_type = "IMAGE"
    settings.file_format = "PNG"
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)


def render_video(path: Path) -> None:
    scene = bpy.context.scene
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):  # Blender 5.0 separates images from video
        settings.media_type = "VIDEO"
    settings.file_format = "FFMPEG"
    scene.render.ffmpeg.format = "MPEG4"
    scene.render.ffmpeg.codec = "H264"
    scene.render.ffmpeg.constant_rate_factor = "MEDIUM"
    scene.render.filepath = str(path)
    total = scene.frame_end - scene.frame_start + 1
    started = time.perf_counter()

    def progress(_scene: Any, *_args: Any) -> None:
        done = _scene.frame_current - _scene.frame_start + 1
        elapsed = time.perf_counter() - started
        left = elapsed / max(done, 1) * (total - done)
        if done % 10 == 0 or done == total:
            say(f"rendered frame {done} of {total} ({left:.0f} s left)")

    bpy.app.handlers.render_post.append(progress)
    try:
        bpy.ops.render.render(animation=True)
    finally:
        bpy.app.handlers.render_post.remove(progress)
    # FFmpeg output may get a frame-range suffix appended; normalise the name.
    if not path.exists():
        candidates = sorted(path.parent.glob(path.stem + "*" + path.suffix))
        if candidates:
            candidates[-1].rename(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--samples", type=int, default=12)
    parser.add_argument("--out", type=Path, default=REPO / "out")
    parser.add_argument("--still-only", action="store_true", help="render docs/images/demo.png only")
    args = parser.parse_args()

    zip_path = Path(os.environ.get("UP_EXTENSION_ZIP", ""))
    if not zip_path.is_file():
        sys.exit("Set UP_EXTENSION_ZIP to the built zip (make demo does this)")
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    say(f"installing {zip_path.name} with Blender's extension installer")
    install_extension(zip_path)
    say("building the scene with the add-on's operators")
    build_scene(args.frames)
    configure_render(args.samples)
    blend = out / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))  # the bake cache goes next to it

    say(f"baking {args.frames} frames")
    t0 = time.perf_counter()
    with bpy.context.temp_override(**view3d_context()):
        result = bpy.ops.unified_particles.bake()
    if result != {"FINISHED"}:
        sys.exit(f"Bake failed: {bpy.context.scene.unified_particles_bake.error}")
    say(f"baked in {time.perf_counter() - t0:.1f} s")
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))

    still_frame = min(args.frames, 96)
    if args.still_only:
        still = REPO / "docs" / "images" / "demo.png"
        still.parent.mkdir(parents=True, exist_ok=True)
        render_still(still, still_frame)
        say(f"wrote {still}")
        return
    png = out / "demo.png"
    render_still(png, still_frame)
    say(f"rendered the still {png}")
    mp4 = out / "demo.mp4"
    render_video(mp4)
    bpy.context.scene.render.filepath = "//render/"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    backup = blend.with_suffix(".blend1")  # Blender's save backup: not one of the outputs
    if backup.exists():
        backup.unlink()
    say(f"done in {time.perf_counter() - started:.0f} s:\n  {blend}\n  {mp4}\n  {png}")


if __name__ == "__main__":
    main()
