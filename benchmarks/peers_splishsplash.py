"""SPlisHSPlasH (compiled SPH from PyPI, ``pysplishsplash``) on the S8 dam break, headless, one process.

    python -m benchmarks.peers_splishsplash S8 [--frames N] [--method PBF|DFSPH] [--iterations K]

The S8 tank (benchmarks/scenes.py: a closed 4 x 1.5 x 3 m box, SPlisHSPlasH's own DamBreakModel.json
box) with the same 30 x 28 x 30 water column at the same places (particle radius 2.5 cm, lattice spacing
2r; the count is checked against ours), written as a scene file and run through ``SimulatorBase.run``
with ``useGui=False``. The column starts one lattice spacing off the walls as in DamBreakModel.json:
with particles one radius from a volume-map wall SPlisHSPlasH's PBF blows up in its first step.
SPlisHSPlasH is Y-up: our (x, y, z) is its (x, z, -y). The tank is the library's UnitBox.obj scaled
as in DamBreakModel.json, a wall with volume maps (boundary handling Bender et al. 2019). Material as
DamBreakModel.json: density 1000, standard viscosity 0.01.

Methods:

* ``PBF`` (like for like with ours): Position Based Fluids at a fixed time step of 1/384 s (no CFL), one
  density iteration per step (``--iterations``; 0: until the density error is below 0.05%): the same 16
  small steps per 1/24 s frame as our World's default budget (substeps 4 x iterations 4). Ours repeats
  its density pass up to ``fluid.MAX_DENSITY_ITERATIONS`` times per small step while the mean density
  error is above ``fluid.DENSITY_TOLERANCE`` and the liquid is at rest (a flowing liquid runs one; the
  bench's row "ours, 1 density pass" caps it at one); this peer runs one.
* ``DFSPH``: divergence-free SPH with DamBreakModel.json's own settings (CFL time step, factor 1, at most
  0.005 s; density error 0.05%, divergence error 0.1%, 2 to 100 iterations): the library's default way.

A frame is timed from the time-step callback: its time is the wall time between the steps that cross
k/24 s, minus what the callback itself spends reading positions for the quality figures. The first frame
includes the library's deferred setup (the tank's volume maps, cached in the temporary folder after the
first run), so the median is what counts. OpenMP threads: benchmarks/run.py runs it with busy and with
passive waiting, as pypbd, and keeps the faster.
Prints one JSON result line (see common.py).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import importlib.metadata
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import scenes
from benchmarks.common import emit, peak_rss_mb, result
from benchmarks.peers_pypbd import _quiet_fd1

# ours (x, y, z) -> SPlisHSPlasH (x, z, -y), a proper rotation; back is the transpose.
TO_SPH = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
PBF_STEPS_PER_FRAME = 16  # our World default: substeps 4 x iterations 4


def _load():
    """Import pysplishsplash. Its wheel bundles its own libGLdispatch, which crashes (segfault on import)
    when the system's libGLX binds to it; the system's libGLdispatch loaded first, globally, avoids that.
    No OpenGL is used (no GUI)."""
    name = ctypes.util.find_library("GLdispatch")
    if name:
        ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    import pysplishsplash

    return pysplishsplash


def scene_json(dam: scenes.DamBreak, method: str, data_dir: Path, iterations: int = 1) -> dict:
    """The S8 scene in SPlisHSPlasH's scene-file format."""
    r = dam.radius
    config: dict = {
        "particleRadius": r,
        "gravitation": [0.0, -9.81, 0.0],
        "boundaryHandlingMethod": 2,  # Bender et al. 2019 volume maps, as DamBreakModel.json
        "enableZSort": True,
    }
    if method == "PBF":
        config.update(
            {
                "simulationMethod": 2,
                "timeStepSize": 1.0 / (scenes.FPS * PBF_STEPS_PER_FRAME),
                "cflMethod": 0,
                "numberOfStepsPerRenderUpdate": PBF_STEPS_PER_FRAME,
                # iterations > 0: exactly that many per step; 0: until the mean density error is
                # below 0.05% (2 to 100 iterations, DamBreakModel.json's DFSPH tolerance)
                "PBF": {
                    "minIterations": min(iterations, 2) if iterations else 2,
                    "maxIterations": iterations or 100,
                    "maxError": 0.05,
                    "velocityUpdateMethod": 0,
                },
            }
        )
    else:
        config.update(
            {
                "simulationMethod": 4,
                "timeStepSize": 0.005,
                "cflMethod": 1,
                "cflFactor": 1,
                "cflMaxTimeStepSize": 0.005,
                "numberOfStepsPerRenderUpdate": 4,
                "DFSPH": {
                    "minIterations": 2,
                    "maxIterations": 100,
                    "maxError": 0.05,
                    "maxIterationsV": 100,
                    "maxErrorV": 0.1,
                    "enableDivergenceSolver": True,
                },
            }
        )
    # The tank: our box [-L/2, L/2] x [-W/2, W/2] x [0, H] is, Y up, centred at (0, H/2, 0) with scale
    # (L, H, W). Volume-map resolution as DamBreakModel.json (40 x 30 x 15 cells for 4 x 3 x 1.5 m).
    res = [round(10 * dam.length), round(10 * dam.height), round(10 * dam.width)]
    walls = {
        "geometryFile": str(data_dir / "models" / "UnitBox.obj"),
        "translation": [0.0, dam.height / 2, 0.0],
        "scale": [dam.length, dam.height, dam.width],
        "isDynamic": False,
        "isWall": True,
        "mapInvert": True,
        "mapThickness": 0.0,
        "mapResolution": res,
    }
    # A fluid block's regular sampling puts its outer particles 2r inside the block's faces: a box two
    # radii larger than our column on every side gives our lattice exactly (run_s8 checks the count).
    p = dam.points() @ TO_SPH.T
    lo, hi = p.min(axis=0) - 2 * r, p.max(axis=0) + 2 * r
    block = {"denseMode": 0, "start": lo.tolist(), "end": hi.tolist()}
    return {
        "Configuration": config,
        "Materials": [
            {"id": "Fluid", "density0": 1000, "viscosityMethod": 1, "Standard viscosity": {"viscosity": 0.01}}
        ],
        "RigidBodies": [walls],
        "FluidBlocks": [block],
    }


def run_s8(frames: int, method: str, iterations: int = 1) -> dict:
    base_rss = peak_rss_mb()
    t_build = time.perf_counter()
    dam = scenes.s8_dam()
    with _quiet_fd1():
        sph = _load()
    data_dir = Path(sys.executable).parent / "data"
    if not (data_dir / "models" / "UnitBox.obj").exists():
        raise SystemExit(f"pysplishsplash's data files not found in {data_dir}")
    # A fixed folder: the library caches the tank's volume maps there (built once, a minute on 2 cores).
    tmp = Path(tempfile.gettempdir()) / "up_splishsplash_S8"
    tmp.mkdir(exist_ok=True)
    scene_file = tmp / "S8.json"
    scene_file.write_text(json.dumps(scene_json(dam, method, data_dir, iterations), indent=1))
    stop = frames / scenes.FPS
    base = sph.Exec.SimulatorBase()
    with _quiet_fd1():
        base.init(
            useGui=False,
            sceneFile=str(scene_file),
            outputDir=str(tmp / "output"),
            initialPause=False,
            stopAt=stop,
            useCache=True,
        )
    tm = sph.TimeManager.getCurrent()
    tr = scenes.Tracker()
    times: list[float] = []
    clock: dict = {"start": time.perf_counter(), "steps": 0, "frame_steps": [], "n": 0, "fronts": []}

    def positions() -> np.ndarray:
        fm = sph.Simulation.getCurrent().getFluidModel(0)
        n = fm.numActiveParticles()
        clock["n"] = n
        # float32 (n, 3) view of the library's positions (capacity may exceed n)
        return np.asarray(fm.getFieldBuffer("position"))[:n].astype(np.float64) @ TO_SPH

    def on_step() -> None:
        t = time.perf_counter()
        clock["steps"] += 1
        if len(times) < frames and tm.getTime() >= (len(times) + 1) / scenes.FPS - 1e-6:
            times.append((t - clock["start"]) * 1000.0)
            clock["frame_steps"].append(clock["steps"])
            clock["steps"] = 0
            p = positions()
            tr.lowest(float(p[:, 2].min()) - dam.radius)
            tr.penetration(dam.outside(p))
            clock["fronts"].append(dam.front(p))
            ts = sph.Simulation.getCurrent().getTimeStep()
            clock["iterations"] = ts.getValueUInt(ts.MAX_ITERATIONS)
            clock["start"] = time.perf_counter()  # the measurement above is outside the frame's time

    base.setTimeStepCB(on_step)
    build_s = time.perf_counter() - t_build
    clock["start"] = time.perf_counter()
    with _quiet_fd1():
        base.run()
    iters = clock.get("iterations", "?")
    steps = clock["frame_steps"]
    if method == "PBF":
        how = (
            f"PBF, fixed time step 1/{scenes.FPS * PBF_STEPS_PER_FRAME} s (no CFL), "
            f"{iters} density iteration(s) per step: {PBF_STEPS_PER_FRAME} small steps of one iteration "
            "per frame, as ours"
        )
    else:
        how = (
            "DFSPH with DamBreakModel.json's settings: CFL time step (factor 1, at most 5 ms), density "
            "error 0.05%, divergence error 0.1%, 2-100 iterations"
        )
    version = importlib.metadata.version("pysplishsplash")
    front = clock["fronts"][-1] if clock["fronts"] else 0.0
    ours_n = len(dam.points())
    same = (
        f"the same {ours_n} particles as ours"
        if clock["n"] == ours_n
        else f"{clock['n']} particles where ours has {ours_n}: the fluid block does not reproduce our lattice"
    )
    return result(
        "S8",
        f"SPlisHSPlasH {method}",
        times,
        particles=int(clock["n"]),
        constraints=None,
        quality=tr.as_dict(),
        base_rss_mb=base_rss,
        build_s=build_s,
        notes=f"pysplishsplash {version}, headless (useGui=False): {how}; {same}; "
        f"{float(np.mean(steps)) if steps else 0:.1f} time steps per frame on average; volume-map walls "
        f"(Bender et al. 2019), standard viscosity 0.01; float32; OpenMP threads; surge front "
        f"{front:.2f} m from the wall at t = {len(times) / scenes.FPS:.3f} s",
        front_m=front,
        front_series=clock["fronts"],
        simulated_s=len(times) / scenes.FPS,
        steps_per_frame=steps,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scene", choices=["S8"])
    ap.add_argument("--frames", type=int, default=scenes.FRAMES)
    ap.add_argument("--method", choices=["PBF", "DFSPH"], default="PBF")
    ap.add_argument(
        "--iterations",
        type=int,
        default=1,
        help="PBF density iterations per step (0: until 0.05%% density error, 2-100)",
    )
    args = ap.parse_args(argv)
    emit(run_s8(args.frames, args.method, args.iterations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
