"""`make demo`: build the showcase scene through the add-on's own operators, bake it and render it.

A denim hammock (with thickness: a Solidify modifier after the simulation) hangs between two posts; a
block of sand drops into it and piles up, two wooden crates and a rubber Suzanne land on the sand. The
script does what a user does in the sidebar (select, Make Cloth / Make Rigid / Make Granular / Make
Collider, Bake), then renders with Cycles on the CPU, denoised with OpenImageDenoise, and writes
out/demo.blend, out/demo.mp4 and out/demo.png.

By default (`make demo`) it is a quick first look that finishes in a few minutes on a laptop: 72 frames
(3 s), the still at 640x360 and a light preview video at 320x180. `--hd` (`make demo-video`) bakes 120
frames and renders the still and the video at 1280x720, which takes about half an hour on two cores.

Run it with the environment's Python (bpy from PyPI); the built extension zip is installed with
Blender's own extension installer first:

    UP_EXTENSION_ZIP=dist/unified_particles-0.1.0.zip .venv/bin/python docs/demo/make_demo.py [--hd]

`--still-only` renders only docs/images/demo.jpg (used by `make docs-images`); `--frames`, `--samples` and
`--percentage` override the defaults. The helpers here (stage, bake, materials) are shared by
make_gallery.py.
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
from mathutils import Vector  # noqa: E402

PACKAGE = "bl_ext.user_default.unified_particles"
# `make demo` without --hd: 3 s of motion (the crates and Suzanne have landed by frame 40), the still at
# half size, the video at quarter size, so a newcomer's first command is done in a few minutes.
QUICK = {"frames": 72, "samples": 16, "percentage": 50}
RADIUS = 0.015  # metres: one particle radius for the whole world (sand grains 3 cm across)
SAND_DARK, SAND_LIGHT = (0.3, 0.2, 0.1), (0.64, 0.49, 0.29)  # each grain a shade between the two


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


def new_file(radius: float, frames: int, substeps: int = 8, iterations: int = 2) -> Any:
    """An empty file at 24 fps, frames 1..``frames``, with the solver's particle radius and budget."""
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps = 24
    settings = scene.unified_particles
    settings.particle_radius = radius
    settings.substeps = substeps
    settings.iterations = iterations
    return scene


def material(name: str, color: tuple[float, float, float], roughness: float = 0.6) -> Any:
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):
        mat.use_nodes = True  # always on (and deprecated) from 5.0
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    mat.diffuse_color = (*color, 1.0)
    return mat


def see_through(
    name: str, color: tuple[float, float, float], roughness: float, transmission: float, ior: float
) -> Any:
    """A Principled material letting ``transmission`` (0-1) of the light through, at index ``ior`` (glass,
    jelly); the input's name changed in 4.0 ("Transmission" -> "Transmission Weight")."""
    mat = material(name, color, roughness)
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    key = "Transmission Weight" if "Transmission Weight" in bsdf.inputs else "Transmission"
    bsdf.inputs[key].default_value = transmission
    bsdf.inputs["IOR"].default_value = ior
    return mat


def grain_material(name: str, dark: tuple[float, float, float], light: tuple[float, float, float]) -> Any:
    """A material whose grains vary in colour between ``dark`` and ``light`` (Point Info > Random, so
    each grain of a point cloud keeps its own shade)."""
    mat = material(name, dark, 0.95)
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    ramp = nodes.new("ShaderNodeValToRGB")
    ramp.color_ramp.elements[0].color = (*dark, 1.0)
    ramp.color_ramp.elements[1].color = (*light, 1.0)
    links.new(nodes.new("ShaderNodePointInfo").outputs["Random"], ramp.inputs["Fac"])
    links.new(ramp.outputs["Color"], nodes["Principled BSDF"].inputs["Base Color"])
    mat.diffuse_color = (*light, 1.0)
    return mat


def water_material(
    name: str = "Water", color: tuple[float, float, float] = (0.8, 0.92, 0.98), roughness: float = 0.02
) -> Any:
    """Clear water: fully transmissive, IOR 1.33, nearly smooth."""
    water = material(name, color, roughness)
    bsdf = water.node_tree.nodes["Principled BSDF"]
    transmission = "Transmission Weight" if "Transmission Weight" in bsdf.inputs else "Transmission"
    bsdf.inputs[transmission].default_value = 1.0
    bsdf.inputs["IOR"].default_value = 1.33
    return water


def tank(inner_x: float, inner_y: float, height: float, wall: float = 0.04) -> list[Any]:
    """An open stone tank centred on the origin: four walls ``wall`` m thick (colliders) around a floor of
    2 ``inner_x`` x 2 ``inner_y`` m, ``height`` m high, dark tiles on its floor (a picture only: the ground
    below is the collider). Returns the walls."""
    stone = material("Stone", (0.5, 0.48, 0.45), 0.8)
    walls = []
    for x, y, sx, sy in (
        (0.0, -inner_y - wall / 2, 2 * (inner_x + wall), wall),
        (0.0, inner_y + wall / 2, 2 * (inner_x + wall), wall),
        (-inner_x - wall / 2, 0.0, wall, 2 * inner_y),
        (inner_x + wall / 2, 0.0, wall, 2 * inner_y),
    ):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(x, y, height / 2))
        walls.append(assign(active(), stone))
        walls[-1].scale = (sx, sy, height)
        bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    run("make_collider", *walls)
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.0, 0.0, 0.001))
    assign(active(), material("Tiles", (0.08, 0.16, 0.2), 0.6)).scale = (2 * inner_x, 2 * inner_y, 1.0)
    return walls


def assign(obj: Any, mat: Any) -> Any:
    obj.data.materials.clear()
    obj.data.materials.append(mat)
    return obj


def active() -> Any:
    return bpy.context.view_layer.objects.active


def thickness(cloth: Any, metres: float) -> None:
    """Give a cloth thickness for rendering: a Solidify modifier after the simulation's modifiers (the
    cloth simulates its own mesh; modifiers act on the result, and a bake's Mesh Cache runs first)."""
    solidify = cloth.modifiers.new("Thickness", "SOLIDIFY")
    solidify.thickness = metres
    solidify.offset = 0.0
    solidify.use_even_offset = True
    cloth.modifiers.new("Smooth", "SUBSURF").levels = 1
    for polygon in cloth.data.polygons:
        polygon.use_smooth = True


def look_at(obj: Any, target: tuple[float, float, float]) -> None:
    """Turn a camera or light at ``obj``'s location towards ``target``."""
    direction = Vector(target) - obj.location
    obj.rotation_euler = direction.to_track_quat("-Z", "Y").to_euler()


def stage(camera: tuple[float, float, float], target: tuple[float, float, float], lens: float = 40.0) -> Any:
    """The common set: a ground collider reaching the horizon, a soft sun, a fill light, a sky, the camera."""
    scene = bpy.context.scene
    bpy.ops.mesh.primitive_plane_add(size=60.0, location=(0, 0, 0))
    ground = assign(active(), material("Ground", (0.34, 0.35, 0.36), 0.9))
    ground.name = "Ground"
    run("make_collider", ground)
    bpy.ops.object.camera_add(location=camera)
    scene.camera = active()
    scene.camera.data.lens = lens
    look_at(scene.camera, target)
    bpy.ops.object.light_add(type="SUN", rotation=(math.radians(40), math.radians(10), math.radians(30)))
    active().data.energy = 2.4
    active().data.angle = math.radians(8.0)  # soft shadow edges
    bpy.ops.object.light_add(type="AREA", location=(-3, -2, 4))
    active().data.energy = 600.0
    active().data.size = 3.0
    world = bpy.data.worlds.new("World")
    scene.world = world
    if bpy.app.version < (5, 0, 0):
        world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.6, 0.7, 0.85, 1.0)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.45
    return ground


def bake(blend: Path) -> float:
    """Save to ``blend`` (the cache goes next to it), press Bake, save again; return the seconds taken."""
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    t0 = time.perf_counter()
    with bpy.context.temp_override(**view3d_context()):
        result = bpy.ops.unified_particles.bake()
    if result != {"FINISHED"}:
        sys.exit(f"Bake failed: {bpy.context.scene.unified_particles_bake.error}")
    seconds = time.perf_counter() - t0
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    return seconds


def build_scene(frames: int) -> dict[str, Any]:
    """The showcase scene, made with Blender's primitives and the add-on's operators."""
    # Grains 3 cm across landing at 4 m/s move 1.6 cm per substep at 10 substeps: under a radius.
    new_file(RADIUS, frames, substeps=10, iterations=2)

    stage(camera=(3.2, -3.6, 3.3), target=(0.0, 0.0, 0.85), lens=40.0)

    # Two posts (colliders) and a hammock between them, pinned along both short edges.
    wood = material("Wood", (0.45, 0.28, 0.14), 0.7)
    posts = []
    for x in (-1.2, 1.2):  # just outside the pinned edges (x = +-1.1) so the posts never push a pin
        bpy.ops.mesh.primitive_cylinder_add(radius=0.08, depth=1.5, location=(x, 0, 0.75), vertices=24)
        posts.append(assign(active(), wood))
        bpy.ops.object.shade_smooth()
    run("make_collider", *posts)

    # Vertex spacing 0.7 particle diameters: no gaps for grains to pass, even where the cloth stretches.
    columns, rows = math.ceil(2.2 / (1.4 * RADIUS)), math.ceil(1.4 / (1.4 * RADIUS))
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
    thickness(hammock, 1.2 * RADIUS)

    # Rigid bodies: two wooden crates and a Suzanne, dropped from above onto the sand.
    crates = []
    for i, (x, z) in enumerate([(-0.45, 2.45), (0.4, 2.9)]):
        bpy.ops.mesh.primitive_cube_add(size=0.32, location=(x, 0.05 * i, z), rotation=(0.3, 0.5 * i, 0.2))
        crates.append(assign(active(), material(f"Crate{i}", (0.85, 0.6, 0.25), 0.5)))
    run("make_rigid", *crates)
    run("apply_preset", *crates, preset="WOOD")
    bpy.ops.mesh.primitive_monkey_add(size=0.45, location=(0.0, -0.05, 3.45), rotation=(0.4, 0.0, 0.3))
    suzanne = assign(active(), material("Suzanne", (0.2, 0.45, 0.8), 0.3))
    suzanne.name = "Suzanne"
    bpy.ops.object.shade_smooth()
    run("make_rigid", suzanne)
    run("apply_preset", suzanne, preset="RUBBER")

    # Sand: a block filled with grains, dropped just above the hammock (from higher up, fast grains
    # would need more substeps not to pass between the cloth's particles).
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.05, 0.0, 1.85))
    sand = active()
    sand.name = "Sand"
    sand.scale = (0.7, 0.45, 0.4)
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    assign(sand, grain_material("Sand", SAND_DARK, SAND_LIGHT))
    run("make_granular", sand)
    run("apply_preset", sand, preset="DRY_SAND")

    return {"hammock": hammock, "crates": crates, "suzanne": suzanne, "sand": sand}


def configure_render(
    samples: int, size: tuple[int, int] = (480, 270), denoise: bool = False, percentage: int = 100
) -> None:
    """Cycles on the CPU; ``denoise`` runs OpenImageDenoise (in the bpy wheel) on the final image."""
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = denoise
    if denoise:
        scene.cycles.denoiser = "OPENIMAGEDENOISE"
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = percentage


def render_still(path: Path, frame: int) -> None:
    """Render ``frame`` to ``path``: JPEG (quality 92, a few tens of KB) for a .jpg name, else PNG."""
    scene = bpy.context.scene
    scene.frame_set(frame)
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):
        settings.media_type = "IMAGE"
    if path.suffix.lower() in (".jpg", ".jpeg"):
        settings.file_format = "JPEG"
        settings.quality = 92
    else:
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
    step = scene.frame_step
    total = len(range(scene.frame_start, scene.frame_end + 1, step))
    started = time.perf_counter()

    def progress(_scene: Any, *_args: Any) -> None:
        done = (_scene.frame_current - _scene.frame_start) // step + 1
        elapsed = time.perf_counter() - started
        left = elapsed / max(done, 1) * (total - done)
        if done % max(1, total // 8) == 0 or done == total:
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
    parser.add_argument("--hd", action="store_true", help="120 frames, still and video at 1280x720 (slow)")
    parser.add_argument("--frames", type=int, help="frames to bake (default 72; 120 with --hd)")
    parser.add_argument("--samples", type=int, help="Cycles samples of the still (default 16; 32 with --hd)")
    parser.add_argument(
        "--percentage", type=int, help="render size in per cent of 1280x720 (default 50; 100 with --hd)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "out")
    parser.add_argument("--still-only", action="store_true", help="render docs/images/demo.jpg only")
    parser.add_argument("--still", type=Path, default=REPO / "docs" / "images" / "demo.jpg")
    args = parser.parse_args()
    # The quick default and the HD run differ only in these three numbers.
    defaults = {"frames": 120, "samples": 32, "percentage": 100} if args.hd else QUICK
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)

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
    particles = {o.name: len(o.data.vertices) for o in bpy.data.objects if o.name.endswith(" Grains")}
    say(f"grains: {particles}")
    configure_render(args.samples, (1280, 720), denoise=True, percentage=args.percentage)
    blend = out / "demo.blend"
    say(f"baking {args.frames} frames (progress every 10 frames)")
    say(f"baked in {bake(blend):.1f} s")

    still_frame = min(args.frames, 96)
    if args.still_only:
        still = args.still.resolve()
        still.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        render_still(still, still_frame)
        say(f"wrote {still} in {time.perf_counter() - t0:.0f} s")
        return
    png = out / "demo.png"
    t0 = time.perf_counter()
    say(f"rendering the still (frame {still_frame}, {args.percentage} % of 1280x720, {args.samples} samples)")
    render_still(png, still_frame)
    say(f"rendered the still {png} in {time.perf_counter() - t0:.0f} s")
    mp4 = out / "demo.mp4"
    # The video at half size and half the samples (denoised): about a quarter of the still's time a frame.
    # Each frame costs seconds even at a small size (Cycles syncs thousands of grains), so the quick
    # preview renders every third frame and plays them at 8 fps: the same 3 seconds, a third of the work.
    scene = bpy.context.scene
    scene.render.resolution_percentage = args.percentage // 2
    scene.cycles.samples = max(8, args.samples // 2)
    step = 1 if args.hd else 3
    scene.frame_step, scene.render.fps_base = step, float(step)
    say(
        f"rendering the video: {len(range(1, args.frames + 1, step))} frames at "
        f"{scene.render.resolution_percentage} % of 1280x720, {scene.cycles.samples} samples"
    )
    try:
        render_video(mp4)
    finally:
        # Back to every frame at 24 fps: the saved file plays the bake as baked (the frame rate is part
        # of what makes a bake Outdated).
        scene.frame_step, scene.render.fps_base = 1, 1.0
    bpy.context.scene.render.filepath = "//render/"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    backup = blend.with_suffix(".blend1")  # Blender's save backup: not one of the outputs
    if backup.exists():
        backup.unlink()
    say(f"done in {time.perf_counter() - started:.0f} s:\n  {blend}\n  {mp4}\n  {png}")


if __name__ == "__main__":
    main()
