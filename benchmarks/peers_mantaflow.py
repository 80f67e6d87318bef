"""Blender's Mantaflow liquid on the S8 dam break, through bpy, one process (issue 13 asks to try it).

    python -m benchmarks.peers_mantaflow S8 [--frames N]

A Fluid domain (liquid) the size of the S8 tank (4 x 1.5 x 3 m) with a voxel of one lattice spacing (2r =
5 cm: resolution 80 along the tank's length), and a Fluid flow object (liquid, behaviour Geometry: the
initial volume) the size of the water column, baked with ``bpy.ops.fluid.bake_all`` into a temporary
cache. The bake runs in a child process: inside the bpy wheels from PyPI, Mantaflow's Python bindings
raise AttributeError and the process then aborts (verified with bpy 5.0.1 and 5.2.3), so a failure is
reported as "not measured" with the error text. If a bake works, its time per frame is reported (the bake
also writes its cache; Mantaflow has no step-by-step timing through bpy).
Prints one JSON result line (see common.py).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import subprocess
import sys
import tempfile
import time

from benchmarks import scenes
from benchmarks.common import emit, peak_rss_mb, result

_BAKE = r"""
import json, sys, time, bpy
args = json.loads(sys.argv[-1])
bpy.ops.wm.read_factory_settings(use_empty=True)
L, W, H = args["tank"]
bpy.ops.mesh.primitive_cube_add(size=1, location=(0, 0, H / 2))
dom = bpy.context.active_object
dom.scale = (L, W, H)
bpy.ops.object.modifier_add(type="FLUID")
dom.modifiers["Fluid"].fluid_type = "DOMAIN"
ds = dom.modifiers["Fluid"].domain_settings
ds.domain_type = "LIQUID"
ds.resolution_max = args["resolution"]
ds.cache_directory = args["cache"]
ds.cache_type = "ALL"
ds.cache_frame_start = 1
ds.cache_frame_end = args["frames"]
lo, hi = args["column"]
bpy.ops.mesh.primitive_cube_add(size=1, location=[(a + b) / 2 for a, b in zip(lo, hi)])
flow = bpy.context.active_object
flow.scale = [b - a for a, b in zip(lo, hi)]
bpy.ops.object.modifier_add(type="FLUID")
flow.modifiers["Fluid"].fluid_type = "FLOW"
fs = flow.modifiers["Fluid"].flow_settings
fs.flow_type = "LIQUID"
fs.flow_behavior = "GEOMETRY"
scene = bpy.context.scene
scene.frame_start, scene.frame_end = 1, args["frames"]
scene.render.fps = args["fps"]
bpy.context.view_layer.objects.active = dom
t = time.perf_counter()
with bpy.context.temp_override(object=dom, active_object=dom):
    out = bpy.ops.fluid.bake_all()
print("MANTA_RESULT " + json.dumps({"ops": sorted(out), "bake_s": time.perf_counter() - t,
      "particles": len(dom.particle_systems[0].particles) if dom.particle_systems else None,
      "bpy": bpy.app.version_string}), flush=True)
"""


def _error_text(stderr: str, returncode: int) -> str:
    """The first Python error Mantaflow printed and how the process ended."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = list(dict.fromkeys(ln for ln in lines if "Error:" in ln and not ln.startswith("File ")))
    fatal = [ln for ln in lines if ln.startswith(("what():", "terminate called"))]
    parts = errors[:2] + fatal[:2]
    text = "; ".join(parts) if parts else " | ".join(lines[-3:])
    return f"{text} (exit {returncode})"


def run_s8(frames: int) -> dict:
    base = peak_rss_mb()
    dam = scenes.s8_dam()
    p = dam.points()
    r = dam.radius
    column = [(p.min(axis=0) - r).tolist(), (p.max(axis=0) + r).tolist()]
    resolution = round(dam.length / (2 * r))
    with tempfile.TemporaryDirectory(prefix="up_mantaflow_") as cache:
        args = {
            "tank": [dam.length, dam.width, dam.height],
            "column": column,
            "resolution": resolution,
            "cache": cache,
            "frames": frames,
            "fps": scenes.FPS,
        }
        cmd = [sys.executable, "-c", _BAKE, json.dumps(args)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return {"scene": "S8", "solver": "Blender Mantaflow", "skipped": "not measured: bake timed out"}
        wall = time.perf_counter() - t0
    out = [ln for ln in proc.stdout.splitlines() if ln.startswith("MANTA_RESULT ")]
    info = json.loads(out[0][len("MANTA_RESULT ") :]) if out else None
    if proc.returncode != 0 or info is None or info["ops"] != ["FINISHED"]:
        why = _error_text(proc.stderr + proc.stdout, proc.returncode)
        bpy_version = importlib.metadata.version("bpy")
        return {
            "scene": "S8",
            "solver": "Blender Mantaflow",
            "skipped": f"not measured: bpy.ops.fluid.bake_all fails in the bpy {bpy_version} wheel: {why}"[
                :700
            ],
        }
    per_frame = info["bake_s"] * 1000.0 / frames
    return result(
        "S8",
        "Blender Mantaflow",
        [per_frame] * frames,
        particles=info["particles"] or 0,
        constraints=None,
        quality={"max_stretch": None, "final_stretch": None, "max_penetration": 0.0, "lowest_z": 0.0},
        base_rss_mb=base,
        build_s=wall - info["bake_s"],
        notes=f"Blender {info['bpy']} Mantaflow FLIP liquid, domain resolution {resolution} (voxel 2r), "
        f"bake_all of {frames} frames into a temporary cache, {info['bake_s']:.1f} s in all (time per frame "
        "= bake time / frames; peak memory is the parent's, the bake ran in a child process)",
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scene", choices=["S8"])
    ap.add_argument("--frames", type=int, default=scenes.FRAMES)
    args = ap.parse_args(argv)
    emit(run_s8(args.frames))
    return 0


if __name__ == "__main__":
    sys.exit(main())
