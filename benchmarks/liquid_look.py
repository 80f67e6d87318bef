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
- ``drag``: the step with a Drag force field over the whole liquid (Blender's Drag: Linear 1, Quadratic
  1; fields act on liquids, issue 25 item 9): the air's drag on a liquid is a Drag field (or the World's
  ``damping``); the Air Viscosity's drag and lift act on cloth triangles (core/air.py).

Medians over the frames after the first (warm-up), in CPU time of the process (its threads summed; on
a shared machine the wall time follows the load). The Blender mesher (Points to Volume) is not in
here: benchmarks/small_liquid.py times it in Blender. Results: benchmarks/results/liquid_look.json and a
Markdown table (liquid_look.md) next to it.

    .venv/bin/python -m benchmarks.liquid_look [--quick] [--frames 6] [--size 100k]

``make bench`` (benchmarks/run.py's full run, or ``--only LIQUID``) runs this and the surge front
(benchmarks/surge_front.py), each in its own process, and writes both tables into docs/performance.md
between the ``<!-- liquid -->`` markers (:func:`section`, :func:`insert`; a run without them keeps the
last tables, :func:`keep`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import scenes
from benchmarks.common import marked_block, put_block
from unified_particles.core import World
from unified_particles.core.fluid import KERNEL_RADII
from unified_particles.core.surface_kernels import anisotropic_kernels, smoothed_centres
from unified_particles.core.whitewater import Whitewater

RESULTS = Path(__file__).resolve().parent / "results"
#: The Drag field of the drag row: Blender's FieldSettings (F = -(linear |v| + quadratic) v per unit mass).
DRAG_FIELD: dict[str, Any] = {"linear_drag": 1.0, "quadratic_drag": 1.0}
#: The walls' friction for the wall friction row (off: 0, as the S7 scene).
WALL_FRICTION = 0.5


def _world(dam: scenes.DamBreak, friction: float = 0.0, drag: bool = False) -> tuple[World, Any]:
    w = World(radius=dam.radius)
    for point, normal in dam.planes():
        w.add_collider_plane(point=point, normal=normal, friction=friction)
    fluid = w.add_fluid(dam.points(), density=1000.0, viscosity=0.01, cohesion=0.0, vorticity=0.0)
    if drag:
        w.add_force_field("DRAG", strength=1.0, **DRAG_FIELD)
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
    out: dict[str, Any] = {
        "scene": f"S7-{size}",
        "particles": int(fluid.count),
        "frames": frames,
        "whitewater_alive": int(ww.alive.sum()),
        "ms": {k: statistics.median(t[1:] if len(t) > 1 else t) for k, t in rows.items()},
        "missing": [],
    }
    variants: list[tuple[str, dict[str, Any]]] = [
        ("wall friction", {"friction": WALL_FRICTION}),
        ("drag", {"drag": True}),
    ]
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
    for row in ("wall friction", "drag"):
        key = f"step with {row}"
        if key in ms:
            extra = ms[key] - step
            lines.append(f"| {row} | {ms[key]:.0f} | {step:.0f} | {extra:+.0f} ms ({extra / step:+.0%}) |")
        else:
            lines.append(f"| {row} | - | {step:.0f} | not in this branch |")
    return "\n".join(lines) + "\n"


START, END = "<!-- liquid -->", "<!-- /liquid -->"
HEADING = "## The liquid's look and the surge front (issue 25)"
TIMEOUT_S = 3600.0


def _run(module: str, *args: str) -> str:
    """``python -m module args`` in its own process (peak memory per part); its stdout, or why it failed."""
    root = Path(__file__).resolve().parent.parent
    try:
        p = subprocess.run(
            [sys.executable, "-m", module, *args], cwd=root, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{module} timed out after {TIMEOUT_S:.0f} s") from None
    if p.returncode != 0:
        raise RuntimeError(f"{module} exit {p.returncode}: " + " | ".join(p.stderr.strip().splitlines()[-3:]))
    return p.stdout


def section(quick: bool) -> str:
    """The block for docs/performance.md: this module's table at 100k, then the surge front's."""
    parts = []
    try:
        _run("benchmarks.liquid_look", *(["--quick"] if quick else []))
        look = table(json.loads((RESULTS / "liquid_look.json").read_text()))
    except (RuntimeError, OSError, ValueError) as exc:
        look = f"Not measured: {exc}\n"
    parts.append(
        "The cost per frame of the parts a liquid's look adds, on the S7-100k dam break (100,000 fluid "
        "particles), each timed on the same state after a step (`python -m benchmarks.liquid_look`; CPU "
        "time of the process). Drag is a Drag force field over the whole liquid (Linear 1, Quadratic 1).\n\n"
        + look
    )
    try:
        _run("benchmarks.surge_front")
        surge_text = (RESULTS / "surge_front.md").read_text()
    except (RuntimeError, OSError) as exc:
        surge_text = f"Not measured: {exc}\n"
    parts.append(
        "### Dam-break surge front against Martin and Moyce (1952)\n\n"
        "A column a = 0.3 m long and 2a high collapsing along a floor, at three resolutions, the tank's "
        "planes at friction 0 and 0.5 (`python -m benchmarks.surge_front`; method in its docstring). Z is "
        "the front over a, T = t sqrt(2 g / a); the error is against the experiment's front at the same "
        "T.\n\n" + surge_text
    )
    return "\n".join(parts)


def insert(doc: Path, block: str) -> None:
    """Put ``block`` between the liquid markers of ``doc``, adding its section at the end if it has none."""
    put_block(doc, START, END, block, f"{HEADING}\n\n")


def keep(doc: Path) -> str | None:
    """The liquid block of ``doc`` (carried over when the report is rewritten without it), or None."""
    return marked_block(doc, START, END)


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
