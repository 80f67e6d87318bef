"""What writing a bake costs next to the simulation it stores: a 100k-vertex cloth in real Blender.

Run with the bpy environment (the add-on is registered from this checkout)::

    .venv/bin/python benchmarks/bench_bake.py [--frames 6] [--n 317] [--json out/bench_bake.json]

A 317 x 317 grid (100,489 vertices) is made cloth above a ground plane and baked twice, to a point
cache (PC2 + Mesh Cache) and to shape keys, through the same ``BakeJob`` the Bake operator runs. The
motion source is the live runner wrapped with timers, so the figures split into:

* simulation: building the World plus ``ensure_frame`` (stepping the solver) for every frame;
* writing: everything else the bake does per frame (reading the positions, world -> local, the PC2
  stream, the per-frame resume snapshot, the progress file) plus the commit (moving files in place,
  creating shape keys / modifiers, sidecars).

The issue asks writing < 10% of the simulation time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def run(frames: int, n: int) -> list[dict[str, Any]]:
    user = tempfile.mkdtemp(prefix="up-bench-user-")
    os.environ.setdefault("BLENDER_USER_RESOURCES", user)
    os.environ.setdefault("XDG_CACHE_HOME", os.path.join(user, "cache"))
    sys.path.insert(0, str(REPO))
    import bpy

    import unified_particles
    from unified_particles.blender import bake

    unified_particles.register()
    try:
        results = []
        for output in ("PC2", "SHAPE_KEYS"):
            results.append(_bake_once(bpy, bake, frames, n, output))
        return results
    finally:
        unified_particles.unregister()


def _bake_once(bpy: Any, bake: Any, frames: int, n: int, output: str) -> dict[str, Any]:
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.unified_particles.particle_radius = 1.0 / (n - 1)  # half the grid spacing of a 2 m cloth
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n - 1, y_subdivisions=n - 1, size=2.0, location=(0, 0, 1))
    cloth = bpy.context.active_object
    cloth.unified_particles.role = "CLOTH"
    cloth.unified_particles_bake.cloth_output = output
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    ground = bpy.context.active_object
    ground.unified_particles.role = "COLLIDER"
    ground.unified_particles.collider_shape = "PLANE"
    folder = tempfile.mkdtemp(prefix="up-bench-bake-")
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(folder, "bench.blend"))

    timers = {"build": 0.0, "steps": 0.0}

    class TimedSource(bake.LiveSource):  # type: ignore[misc,name-defined]
        def build(self, scene: Any, depsgraph: Any) -> Any:
            began = time.perf_counter()
            try:
                return super().build(scene, depsgraph)
            finally:
                timers["build"] += time.perf_counter() - began

        def advance(self, scene: Any, frame: int) -> None:
            began = time.perf_counter()
            try:
                super().advance(scene, frame)
            finally:
                timers["steps"] += time.perf_counter() - began

    job = bake.BakeJob(scene, source_factory=TimedSource)
    began = time.perf_counter()
    job.begin()
    while not job.step():
        pass
    stepped = time.perf_counter()
    job.finish()
    finished = time.perf_counter()
    total = finished - began
    simulation = timers["build"] + timers["steps"]
    writing = total - simulation
    result = {
        "output": output,
        "vertices": len(cloth.data.vertices),
        "frames": frames,
        "simulation_s": simulation,
        "build_s": timers["build"],
        "steps_s": timers["steps"],
        "writing_s": writing,
        "commit_s": finished - stepped,
        "writing_per_frame_ms": 1000 * (stepped - began - simulation) / frames,
        "writing_fraction": writing / simulation,
        "writing_fraction_of_steps": writing / timers["steps"],
    }
    bake.free_bake(scene)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=6)
    parser.add_argument("--n", type=int, default=317, help="grid vertices per side (317: 100,489)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    results = run(args.frames, args.n)
    header = ("output", "vertices", "frames", "build s", "steps s", "write s", "commit s", "w/sim", "w/steps")
    print("{:<11}{:>9}{:>7}{:>9}{:>9}{:>9}{:>9}{:>8}{:>8}".format(*header))
    for r in results:
        print(
            f"{r['output']:<11}{r['vertices']:>9}{r['frames']:>7}{r['build_s']:>9.2f}{r['steps_s']:>9.2f}"
            f"{r['writing_s']:>9.3f}{r['commit_s']:>9.3f}{100 * r['writing_fraction']:>7.1f}%"
            f"{100 * r['writing_fraction_of_steps']:>7.1f}%"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["writing_fraction"] < 0.10 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
