"""`make docs-images`: the README gallery, one still per material and a short looping animation.

Each scene is built with the add-on's operators as a user would (select, Make Rigid / Cloth / Granular /
Fluid / Collider, a preset, Bake), baked, and rendered with Cycles on the CPU with OpenImageDenoise:

- ``rigid``: a wall of wooden crates knocked down by a steel ball;
- ``cloth``: a gingham tablecloth dropped over a round table;
- ``granular``: sand poured onto a crate, piling up around it;
- ``fluid``: water poured onto sand, a crate floating in it (needs the Fluid role: skipped, with a
  message, in a build of the add-on that has none);
- ``pour``: water poured into a drinking glass (``gallery_pour.py``);
- ``splash``: a block of water splashing into a pool, with whitewater (``gallery_water.py``);
- ``rope_bridge``, ``glued_wall``, ``flag``: ropes, glue and wind (docs/demo/gallery_rope.py);
- ``curtain``: a curtain torn by a steel ball (``gallery_tear.py``, Tear Strain);
- ``sizes``: fine sand over coarse rocks, a crate and a coarse cloth (``gallery_sizes.py``, Particle Size);
- ``jelly_stairs``, ``balloons``: soft bodies and balloons (``gallery_soft.py``); ``jelly_loop`` the jelly
  shot as a loop;
- ``loop``: the README scene's first seconds as a small looping animated WebP.

Stills go to docs/images/gallery/<name>.jpg, the animations to docs/images/gallery/hammock.webp and, for a
scene function with a ``loop_frames`` attribute, <name>.webp; the .blend files and bake caches to --out.

    UP_EXTENSION_ZIP=dist/unified_particles-0.1.0.zip .venv/bin/python docs/demo/make_gallery.py --only cloth
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Keep Blender's user configuration out of the user's home (must precede `import bpy`).
_USER_DIR = tempfile.mkdtemp(prefix="up-gallery-user-")
os.environ.setdefault("BLENDER_USER_RESOURCES", _USER_DIR)
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(_USER_DIR, "cache"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bpy  # noqa: E402
import gallery_hair  # noqa: E402
import gallery_pour  # noqa: E402
import gallery_rope  # noqa: E402
import gallery_sizes  # noqa: E402
import gallery_soft  # noqa: E402
import gallery_water  # noqa: E402
import make_demo  # noqa: E402
from gallery_tear import curtain  # noqa: E402
from make_demo import (  # noqa: E402
    REPO,
    SAND_DARK,
    SAND_LIGHT,
    active,
    assign,
    bake,
    configure_render,
    grain_material,
    install_extension,
    material,
    new_file,
    run,
    say,
    stage,
    thickness,
)

GALLERY = REPO / "docs" / "images" / "gallery"
STILL_SIZE = (960, 540)
LOOP_SIZE = (640, 360)


def rigid() -> int:
    """A wall of 4 x 4 crates, hit by a steel ball thrown at it. Returns the frame to render."""
    new_file(radius=0.02, frames=11, substeps=8, iterations=2)
    stage(camera=(3.4, -3.9, 1.7), target=(0.0, 0.3, 0.45), lens=45.0)
    size = 0.3
    crates = []
    for row in range(4):
        for col in range(4):
            x = (col - 1.5 + 0.5 * (row % 2)) * (size + 0.01)
            bpy.ops.mesh.primitive_cube_add(size=size, location=(x, 0.5, size / 2 + row * (size + 0.005)))
            shade = (0.8 - 0.05 * ((row + col) % 3), 0.55 - 0.04 * (col % 2), 0.25)
            crates.append(assign(active(), material(f"Crate{row}{col}", shade, 0.55)))
    run("make_rigid", *crates)
    run("apply_preset", *crates, preset="WOOD")
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.22, location=(0.1, -1.6, 0.5), segments=32, ring_count=16)
    ball = assign(active(), material("Steel", (0.8, 0.8, 0.82), 0.25))
    bpy.ops.object.shade_smooth()
    ball.data.materials[0].node_tree.nodes["Principled BSDF"].inputs["Metallic"].default_value = 1.0
    run("make_rigid", ball)
    run("apply_preset", ball, preset="STEEL")
    ball.unified_particles.initial_velocity = (0.0, 5.0, 1.2)
    return 11  # the ball bursting through, crates flying


def cloth() -> int:
    """A gingham tablecloth dropped over a round table with Suzanne sitting on it."""
    radius = 0.012
    new_file(radius=radius, frames=48, substeps=8, iterations=2)
    stage(camera=(2.6, -2.9, 2.0), target=(0.0, 0.0, 0.6), lens=42.0)
    wood = material("Wood", (0.36, 0.2, 0.1), 0.5)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.55, depth=0.06, location=(0, 0, 0.77), vertices=64)
    top = assign(active(), wood)
    bpy.ops.object.shade_smooth()
    bpy.ops.mesh.primitive_cylinder_add(radius=0.06, depth=0.74, location=(0, 0, 0.37), vertices=24)
    leg = assign(active(), wood)
    bpy.ops.mesh.primitive_monkey_add(size=0.45, location=(0.0, 0.0, 0.98), rotation=(-0.35, 0.0, 0.5))
    suzanne = active()
    suzanne.modifiers.new("Smooth", "SUBSURF").levels = 1
    run("make_collider", top, leg, suzanne)
    columns = math.ceil(1.6 / (1.6 * radius))
    bpy.ops.mesh.primitive_grid_add(
        x_subdivisions=columns, y_subdivisions=columns, size=1.6, location=(0, 0, 1.1)
    )
    cloth = active()
    cloth.name = "Tablecloth"
    mat = material("Gingham", (0.75, 0.08, 0.08), 0.85)
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    checker = nodes.new("ShaderNodeTexChecker")
    checker.inputs["Scale"].default_value = 24.0
    checker.inputs["Color1"].default_value = (0.75, 0.08, 0.08, 1.0)
    checker.inputs["Color2"].default_value = (0.92, 0.9, 0.86, 1.0)
    uv = nodes.new("ShaderNodeTexCoord")
    links.new(uv.outputs["UV"], checker.inputs["Vector"])
    links.new(checker.outputs["Color"], nodes["Principled BSDF"].inputs["Base Color"])
    assign(cloth, mat)
    run("make_cloth", cloth)
    run("apply_preset", cloth, preset="COTTON")
    thickness(cloth, 0.008)
    return 48


def granular() -> int:
    """Sand poured through a funnel: thousands of grains piling up into a cone below it."""
    radius = 0.01
    new_file(radius=radius, frames=40, substeps=8, iterations=2)
    stage(camera=(1.8, -2.1, 1.0), target=(0.0, 0.0, 0.38), lens=42.0)
    # The funnel: an open cone made a shell by a Solidify modifier (colliders use the evaluated mesh).
    bpy.ops.mesh.primitive_cone_add(
        vertices=48, radius1=0.1, radius2=0.34, depth=0.4, end_fill_type="NOTHING", location=(0, 0, 0.75)
    )
    funnel = assign(active(), material("Tin", (0.55, 0.57, 0.6), 0.35))
    funnel.active_material.node_tree.nodes["Principled BSDF"].inputs["Metallic"].default_value = 1.0
    funnel.name = "Funnel"
    shell = funnel.modifiers.new("Shell", "SOLIDIFY")
    shell.thickness = 0.02
    bpy.ops.object.shade_smooth()
    run("make_collider", funnel)
    bpy.ops.mesh.primitive_cylinder_add(vertices=32, radius=0.27, depth=0.35, location=(0, 0, 1.05))
    sand = active()
    sand.name = "Sand"
    assign(sand, grain_material("Sand", SAND_DARK, SAND_LIGHT))
    run("make_granular", sand)
    run("apply_preset", sand, preset="DRY_SAND")
    return 40  # the stream still pours onto the cone


def fluid() -> int | None:
    """Water poured from a tap onto a sand bank in a tank, a wooden crate floating in the pool beside it.
    None without the Fluid role."""
    ops = bpy.ops.unified_particles
    if not hasattr(ops, "make_fluid") or not hasattr(ops, "make_inflow"):
        say("this build of the add-on has no Fluid role yet: fluid still skipped")
        return None
    new_file(radius=0.015, frames=48, substeps=8, iterations=2)
    stage(camera=(0.75, -1.25, 1.25), target=(0.0, 0.0, 0.08), lens=35.0)
    # An open stone tank around a 0.9 m x 0.6 m floor, 0.3 m high.
    inner_x, inner_y = 0.45, 0.3
    make_demo.tank(inner_x, inner_y, 0.3)

    def box(name: str, x0: float, x1: float, top: float) -> Any:
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=((x0 + x1) / 2, 0.0, top / 2))
        obj = active()
        obj.name = name
        obj.scale = (x1 - x0, 2 * inner_y - 0.01, top)
        bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
        return obj

    # A bank of damp sand along the right wall, a pool of water on the left.
    sand = assign(box("Sand", 0.08, inner_x - 0.005, 0.15), grain_material("Sand", SAND_DARK, SAND_LIGHT))
    run("make_granular", sand)
    run("apply_preset", sand, preset="WET_SAND")
    water_mat = make_demo.water_material(color=(0.75, 0.9, 0.97), roughness=0.03)
    water = assign(box("Water", -inner_x + 0.005, 0.075, 0.15), water_mat)
    water.unified_particles.surface_smoothing = 10  # a calm surface over the splashing particles
    run("make_fluid", water)
    run("apply_preset", water, preset="WATER")
    # A tap over the sand bank pours more water onto it.
    bpy.ops.mesh.primitive_cylinder_add(radius=0.06, depth=0.06, location=(0.26, 0.0, 0.55))
    tap = assign(active(), water_mat)
    tap.name = "Tap"
    tap.unified_particles.surface_smoothing = 10
    tap.unified_particles.flow_velocity = 1.5  # m/s along the tap's local -Z: straight down
    run("make_inflow", tap)
    # A crate lighter than water (wood, 700 kg/m^3) dropped into the pool: it floats.
    bpy.ops.mesh.primitive_cube_add(size=0.16, location=(-0.2, 0.02, 0.4), rotation=(0.2, 0.3, 0.5))
    crate = assign(active(), material("Crate", (0.8, 0.55, 0.25), 0.55))
    run("make_rigid", crate)
    run("apply_preset", crate, preset="WOOD")
    return 48


def loop(out: Path, samples: int, percentage: int) -> Path:
    """The README scene's first three seconds, every other frame at 12 fps, as an animated WebP."""
    make_demo.build_scene(72)
    return scene_loop("loop", range(1, 73, 2), out, samples, percentage, GALLERY / "hammock.webp")


def _webp(paths: list[Path], target: Path) -> Path:
    """The rendered frames ``paths`` as a looping animated WebP at 12 fps, the last held for a second."""
    from PIL import Image  # Pillow comes with matplotlib in the dev environment

    images = [Image.open(p).convert("RGB") for p in paths]
    durations = [83] * (len(images) - 1) + [1000]
    images[0].save(
        target, save_all=True, append_images=images[1:], duration=durations, loop=0, quality=70, method=6
    )
    return target


def scene_loop(
    name: str, frames: range, out: Path, samples: int, percentage: int, target: Path | None = None
) -> Path:
    """Bake the scene ``name`` (already built) and render ``frames`` of it as ``target`` (an animated WebP;
    None: GALLERY/<name>.webp)."""
    configure_render(samples, LOOP_SIZE, denoise=True, percentage=percentage)
    say(f"{name}: baked in {bake(out / f'{name}.blend'):.0f} s")
    frames_dir = out / f"{name}-frames"
    shutil.rmtree(frames_dir, ignore_errors=True)
    frames_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    paths = []
    for frame in frames:
        paths.append(frames_dir / f"{frame:03d}.png")
        make_demo.render_still(paths[-1], frame)
    say(f"{name}: rendered {len(paths)} frames in {time.perf_counter() - t0:.0f} s")
    return _webp(paths, GALLERY / f"{name}.webp" if target is None else target)


SCENES: dict[str, Callable[[], int | None]] = {
    "rigid": rigid,
    "cloth": cloth,
    "granular": granular,
    "fluid": fluid,
    "rope_bridge": gallery_rope.rope_bridge,
    "glued_wall": gallery_rope.glued_wall,
    "flag": gallery_rope.flag,
    "hair": gallery_hair.hair,
    "pour": gallery_pour.pour,
    "splash": gallery_water.splash,
    "curtain": curtain,
    "sizes": gallery_sizes.sizes,
    "jelly_stairs": gallery_soft.jelly_stairs,
    "jelly_loop": gallery_soft.jelly_loop,
    "balloons": gallery_soft.balloons,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        default=",".join([*SCENES, "loop"]),
        help="comma-separated scenes (default: all, and the loop)",
    )
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--percentage", type=int, default=100, help="render size in per cent")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "docs-gallery")
    parser.add_argument("--gallery", type=Path, default=None, help="where the images go")
    args = parser.parse_args()
    zip_path = Path(os.environ.get("UP_EXTENSION_ZIP", ""))
    if not zip_path.is_file():
        sys.exit("Set UP_EXTENSION_ZIP to the built zip (make docs-images does this)")
    global GALLERY
    if args.gallery is not None:
        GALLERY = args.gallery.resolve()
    GALLERY.mkdir(parents=True, exist_ok=True)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    install_extension(zip_path)
    for name in args.only.split(","):
        started = time.perf_counter()
        if name == "loop":
            target = loop(out, max(8, args.samples // 4), args.percentage)
            seconds = time.perf_counter() - started
            say(f"wrote {target} ({target.stat().st_size // 1024} KB) in {seconds:.0f} s")
            continue
        frame = SCENES[name]()
        if frame is None:
            continue
        frames = getattr(SCENES[name], "loop_frames", None)
        if frames is not None:  # an animated loop, not a still
            target = scene_loop(name, frames, out, max(8, args.samples // 4), args.percentage)
            seconds = time.perf_counter() - started
            say(f"wrote {target} ({target.stat().st_size // 1024} KB) in {seconds:.0f} s")
            continue
        size = getattr(SCENES[name], "still_size", STILL_SIZE)  # a scene may ask for its own size
        samples = getattr(SCENES[name], "still_samples", args.samples)  # and sample count (render time)
        configure_render(samples, size, denoise=True, percentage=args.percentage)
        baked = bake(out / f"{name}.blend")
        target = GALLERY / f"{name}.jpg"
        t0 = time.perf_counter()
        make_demo.render_still(target, frame)
        rendered = time.perf_counter() - t0
        size = target.stat().st_size // 1024
        say(f"{name}: baked in {baked:.0f} s, rendered in {rendered:.0f} s, {target} ({size} KB)")


if __name__ == "__main__":
    main()
