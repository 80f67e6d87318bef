"""Issue 25: the cost per frame of a liquid's look at 100k fluid particles, each part on and off.

The S7-100k dam break (benchmarks/scenes.py: 100,000 particles, r = 1 cm... as ``scenes.s7_dam``) is
stepped frame by frame; after each step the parts the add-on adds per frame are timed on the same
state, one after another:

- ``step``: ``World.step(1 / 24)`` alone (the baseline every row is added to);
- ``smooth surface``: ``core.surface_kernels.smoothed_centres`` of the live particles (what Smooth
  Surface writes into the particle object, live and baked; blender/fluids.py ``shown_points``);
- ``anisotropic kernels``: the full Yu and Turk kernels (centres and ellipsoids), for comparison;
- ``whitewater``: ``core.whitewater.Whitewater.step`` (potentials, generation, advection; capacity
  100k, seeded), as blender/whitewater.py steps it after every frame;
- ``wall friction``: the step with the tank's walls at Friction 0.5 against 0 (a liquid's grip on
  colliders: the collider's friction, halved, see docs/user_guide.md);
- ``drag``: the step with the World's fluid drag switched on, when the World has one (issue 25 item 1,
  another branch: ``fluid_drag``); reported as missing otherwise (air drag acts on cloth only here).

Medians over the frames after the first (warm-up), in CPU time of the process (its threads summed; on
a shared machine the wall time follows the load). The Blender mesher (Points to Volume) is not in
here: benchmarks/small_liquid.py times it in Blender. Results: benchmarks/results/liquid_look.json and a
Markdown table (liquid_look.md) next to it.

    .venv/bin/python -m benchmarks.liquid_look [--quick] [--frames 6] [--size 100k]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import scenes
from unified_particles.core import World
from unified_particles.core.fluid import KERNEL_RADII
from unified_particles.core.settings import SolverSettings
from unified_particles.core.surface_kernels import anisotropic_kernels, smoothed_centres
from unified_particles.core.whitewater import Whitewater

RESULTS = Path(__file__).resolve().parent / "results"
#: World settings of issue 25's other items, if this World has them: (row, keyword, value when on).
SWITCHES = (("drag", "fluid_drag", 1.0),)
#: The walls' friction for the wall friction row (off: 0, as the S7 scene).
WALL_FRICTION = 0.5


def _world(dam: scenes.DamBreak, friction: float = 0.0, **keywords: Any) -> tuple[World, Any]:
    w = World(radius=dam.radius, **keywords)
    for point, normal in dam.planes():
        w.add_collider_plane(point=point, normal=normal, friction=friction)
    fluid = w.add_fluid(dam.points(), density=1000.0, viscosity=0.01, cohesion=0.0, vorticity=0.0)
    return w, fluid


def _timed(fn: Callable[[], Any]) -> float:
    """CPU ms of the process running ``fn`` (on a shared machine the wall time follows the load)."""
    t0 = time.process_time()
    fn()
    return 1e3 * (time.process_time() - t0)


def measure(size: str, frames: int) -> dict[str, Any]:
    """ms per frame of each row (median over frames 2..frames) on the S7 dam break of ``size``."""
    dam = scenes.s7_dam(size)
    w, fluid = _world(dam)
    ww = Whitewater(dam.radius, capacity=100_000, seed=1)
    h = KERNEL_RADII * dam.radius
    rows: dict[str, list[float]] = {
        "step": [],
        "smooth surface": [],
        "anisotropic kernels": [],
        "whitewater": [],
    }
    dt = 1.0 / scenes.FPS
    for frame in range(frames):
        rows["step"].append(_timed(partial(w.step, dt)))
        x, v = np.asarray(fluid.positions), np.asarray(fluid.velocities)
        rows["smooth surface"].append(_timed(partial(smoothed_centres, x, h)))
        rows["anisotropic kernels"].append(_timed(partial(anisotropic_kernels, x, h, 4.2 * dam.radius)))
        rows["whitewater"].append(_timed(partial(ww.step, x, v, dt)))
        print(f"frame {frame + 1}: " + ", ".join(f"{k} {t[-1]:.0f} ms" for k, t in rows.items()), flush=True)
    fields = {f.name for f in dataclasses.fields(SolverSettings)}
    out: dict[str, Any] = {
        "scene": f"S7-{size}",
        "particles": int(fluid.count),
        "frames": frames,
        "whitewater_alive": int(ww.alive.sum()),
        "ms": {k: statistics.median(t[1:] if len(t) > 1 else t) for k, t in rows.items()},
        "missing": [],
    }
    variants: list[tuple[str, dict[str, Any]]] = [("wall friction", {"friction": WALL_FRICTION})]
    for row, keyword, value in SWITCHES:
        if keyword in fields:
            variants.append((row, {keyword: value}))
        else:
            out["missing"].append(f"{row}: no `{keyword}` setting in this World")
    for row, keywords in variants:
        on, _ = _world(dam, **keywords)
        times = [_timed(partial(on.step, dt)) for _ in range(frames)]
        out["ms"][f"step with {row}"] = statistics.median(times[1:] if len(times) > 1 else times)
        print(f"step with {row}: {out['ms'][f'step with {row}']:.0f} ms", flush=True)
    return out


def table(result: dict[str, Any]) -> str:
    """A Markdown table: each part's ms per frame and its share of the step."""
    ms = result["ms"]
    step = ms["step"]
    lines = [
        f"{result['scene']}: {result['particles']:,} fluid particles, median of frames 2-{result['frames']}"
        f" ({result['whitewater_alive']:,} whitewater particles alive at the end)",
        "",
        "| Part | on: CPU ms per frame | off | Cost (share of the step) |",
        "|---|---|---|---|",
        f"| step (baseline) | {step:.0f} | - | - |",
    ]
    for name in ("smooth surface", "anisotropic kernels", "whitewater"):
        lines.append(
            f"| {name} | {step + ms[name]:.0f} | {step:.0f} | +{ms[name]:.0f} ms ({ms[name] / step:.0%}) |"
        )
    for row in ("wall friction", *(r for r, _, _ in SWITCHES)):
        key = f"step with {row}"
        if key in ms:
            extra = ms[key] - step
            lines.append(f"| {row} | {ms[key]:.0f} | {step:.0f} | {extra:+.0f} ms ({extra / step:+.0%}) |")
        else:
            lines.append(f"| {row} | - | {step:.0f} | not in this branch |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 frames")
    ap.add_argument("--frames", type=int, default=6)
    ap.add_argument("--size", default="100k", choices=sorted(scenes.S7_SIZES))
    args = ap.parse_args(argv)
    result = measure(args.size, 3 if args.quick else args.frames)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "liquid_look.json").write_text(json.dumps(result, indent=2) + "\n")
    text = table(result)
    (RESULTS / "liquid_look.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
