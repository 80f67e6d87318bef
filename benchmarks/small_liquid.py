"""Issue 25 item 8: the time per frame of a small liquid scene in Blender, simulation and surface apart.

A 0.6 x 0.6 x 0.4 m block of water (r = 2.5 cm: 1,152 particles) collapses in an open 0.8 m tank (a mesh
collider with Solidify walls, as tests/blender/test_fluids.py builds it), World defaults (4 x 4 small steps
per frame); ``--block 0.75 0.75 0.65`` is the "few thousand" variant (2,925 particles). Per frame:
``scene.frame_set`` (the simulation's frame handler, then the depsgraph with the Liquid Surface modifier) and,
separately, one more evaluation of the surface alone (its modifier switched off and on). Medians over frames
4-13 (the collapse). The add-on is imported from ``--src`` (default: this checkout), so an older checkout can
be timed the same way. Wall and CPU time are both printed (CPU time of the process: on a shared machine the
wall time varies with the load).

    .venv/bin/python benchmarks/small_liquid.py [--src DIR] [--frames 12] [--block X Y Z] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_USER_DIR = tempfile.mkdtemp(prefix="up-bench-user-")
os.environ.setdefault("BLENDER_USER_RESOURCES", _USER_DIR)
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(_USER_DIR, "cache"))
REPO = Path(__file__).resolve().parents[1]

import bpy  # noqa: E402  (after the environment above)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(REPO), help="checkout whose unified_particles is timed")
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    parser.add_argument(
        "--block",
        type=float,
        nargs=3,
        default=(0.6, 0.6, 0.4),
        metavar=("X", "Y", "Z"),
        help="the water block's size, metres (default 0.6 0.6 0.4: 1,152 particles; 0.7 0.7 0.6: 2,352;"
        " 0.75 0.75 0.65: 2,925), standing on the tank's floor",
    )
    args = parser.parse_args()
    sys.path.insert(0, args.src)
    sys.path.insert(0, str(REPO / "tests" / "blender"))
    import bmesh
    import numpy as np
    from helpers import add_cube, run_op  # type: ignore[import-not-found]

    import unified_particles

    unified_particles.register()
    print("timing", unified_particles.__file__)
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene: Any = bpy.context.scene
    scene.unified_particles.particle_radius = 0.025
    scene.frame_start, scene.frame_end = 1, 250
    scene.frame_set(1)
    bpy.ops.mesh.primitive_cube_add(size=0.8, location=(0, 0, 0.4))
    tank: Any = bpy.context.active_object
    bm = bmesh.new()
    bm.from_mesh(tank.data)
    top = [f for f in bm.faces if f.calc_center_median().z > 0.4 - 1e-6]
    bmesh.ops.delete(bm, geom=top, context="FACES_ONLY")
    bm.to_mesh(tank.data)
    bm.free()
    walls: Any = tank.modifiers.new("Walls", "SOLIDIFY")
    walls.thickness, walls.offset = 0.1, 1.0
    run_op(bpy, "make_collider", tank)
    bx, by, bz = args.block
    water = add_cube(bpy, size=1.0, location=(0, 0, 0.05 + 0.5 * bz))
    water.scale = (bx, by, bz)
    run_op(bpy, "make_fluid", water)
    particles = water.unified_particles.particle_object
    modifier = particles.modifiers["Liquid Surface"]
    profile = cProfile.Profile(time.process_time)
    frame_s: list[float] = []
    surface_s: list[float] = []
    frame_cpu: list[float] = []
    surface_cpu: list[float] = []
    for frame in range(2, 2 + args.frames):
        if args.profile:
            profile.enable()
        t0, c0 = time.perf_counter(), time.process_time()
        scene.frame_set(frame)
        frame_s.append(time.perf_counter() - t0)
        frame_cpu.append(time.process_time() - c0)
        if args.profile:
            profile.disable()
        modifier.show_viewport = False
        bpy.context.evaluated_depsgraph_get()
        t0, c0 = time.perf_counter(), time.process_time()
        modifier.show_viewport = True
        evaluated = particles.evaluated_get(bpy.context.evaluated_depsgraph_get())
        evaluated.to_mesh()
        evaluated.to_mesh_clear()
        surface_s.append(time.perf_counter() - t0)
        surface_cpu.append(time.process_time() - c0)
    n = len(particles.data.vertices)
    frame_ms = 1e3 * float(np.median(frame_s[2:]))
    surface_ms = 1e3 * float(np.median(surface_s[2:]))
    print(f"{n} particles: {frame_ms:.0f} ms per frame (frame_set), of which the surface {surface_ms:.0f} ms")
    # CPU time of this process (all its threads): what a busy shared machine distorts least.
    frame_cpu_ms = 1e3 * float(np.median(frame_cpu[2:]))
    surface_cpu_ms = 1e3 * float(np.median(surface_cpu[2:]))
    print(f"CPU time: {frame_cpu_ms:.0f} ms per frame, of which the surface {surface_cpu_ms:.0f} ms")
    if args.profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
