"""S5: the demo scene of `make demo` (docs/demo/make_demo.py), timed as a user plays it in Blender.

    python -m benchmarks.demo_s5 [--frames N]

The scene is built by the demo script's own ``build_scene`` through the add-on's operators (the add-on is
registered from this checkout, no zip needed). Frame 1 builds the World (timed apart); then every
``scene.frame_set(f)`` for f = 2..N+1 runs the add-on's frame handler, which steps the solver once and
writes the result back to the Blender objects: that is the time per frame reported. The solver's own share
(``World.step``) is reported as well. Prints one JSON result line (see common.py).
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import scenes
from benchmarks.common import emit, peak_rss_mb, result, time_frames

ROOT = Path(__file__).resolve().parent.parent
DEMO_SCRIPT = ROOT / "docs" / "demo" / "make_demo.py"


def available() -> bool:
    return DEMO_SCRIPT.is_file()


def run(frames: int) -> dict:
    tmp = tempfile.mkdtemp(prefix="up_bench_s5_")
    atexit.register(shutil.rmtree, tmp, True)
    os.environ["BLENDER_USER_RESOURCES"] = tmp
    os.environ["XDG_CACHE_HOME"] = tmp
    sys.path.insert(0, str(ROOT))
    import bpy

    import unified_particles
    from unified_particles.blender import simulation
    from unified_particles.blender.rna import context_scene

    base = peak_rss_mb()
    unified_particles.register()
    spec = importlib.util.spec_from_file_location("up_make_demo", DEMO_SCRIPT)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {DEMO_SCRIPT}")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)

    t0 = time.perf_counter()
    demo.build_scene(frames + 1)
    scene = context_scene(bpy.context)
    scene.frame_set(1)  # builds the World from the objects
    sim = simulation.find_simulation(scene)
    if sim is None or sim.world is None:
        raise RuntimeError("the add-on did not build a simulation for the demo scene")
    world = sim.world
    build_s = time.perf_counter() - t0

    step_ms: list[float] = []
    step = world.step

    def timed_step(dt: float) -> None:
        s0 = time.perf_counter()
        step(dt)
        step_ms.append((time.perf_counter() - s0) * 1000.0)

    world.step = timed_step  # type: ignore[method-assign]  # timing wrapper around the bound method
    radius = float(world.radius)
    tr = scenes.Tracker()

    def measure(_f: int) -> None:
        low = float(np.asarray(world.positions)[:, 2].min()) - radius
        tr.lowest(low)
        tr.penetration(max(0.0, -low))

    times = time_frames(lambda f: scene.frame_set(f + 1), measure, frames)
    kinds = sorted({e.kind for e in sim.entries}) if hasattr(sim, "entries") else []
    res = result(
        "S5",
        "ours",
        times,
        particles=len(world.positions),
        constraints=None,
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=f"demo scene ({', '.join(kinds).lower()}) via the add-on, radius {radius:g} m, "
        f"substeps {world.substeps}, iterations {world.iterations}; time per frame = frame_set (solver "
        f"step + write-back), World.step alone {statistics.median(step_ms):.1f} ms (median); lowest z = "
        f"lowest particle bottom",
        step_ms=statistics.median(step_ms) if step_ms else None,
        blender=bpy.app.version_string,
    )
    unified_particles.unregister()
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=scenes.FRAMES)
    args = ap.parse_args(argv)
    emit(run(args.frames))
    return 0


if __name__ == "__main__":
    sys.exit(main())
