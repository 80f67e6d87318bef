"""pypbd (PositionBasedDynamics, compiled C++, from PyPI) on the S1 cloth, one process.

    python -m benchmarks.peers_pypbd S1 [--frames N] [--substeps 5]

The S1 grid (65x65, 2 m) as a triangle model with PBD distance constraints on the triangle edges
(stretch/shear, stiffness 1) and isometric bending (stiffness 0.01, the library's cloth example), dropped from
1 m onto a static rigid body made from the same UV sphere mesh (the library's cubic signed distance field,
resolution 30^3). pypbd is Y-up with gravity (0, -9.81, 0): our Z-up coordinates map to (x, z, -y).
One frame = one ``TimeStepController.step`` with a time step of 1/24 s split into ``--substeps`` substeps of
``--iterations`` solver iterations each (library default: 1).
Prints one JSON result line (see common.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time

import numpy as np

from benchmarks import scenes
from benchmarks.common import emit, peak_rss_mb, result, time_frames

# ours (x, y, z) -> pypbd (x, z, -y); a proper rotation (det = +1)
TO_PBD = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


@contextlib.contextmanager
def _quiet_fd1():
    """Silence C++ output on file descriptor 1 (pypbd prints SDF progress) so our JSON line stays clean."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def run_s1(frames: int, substeps: int, iterations: int = 1) -> dict:
    import pypbd as pbd

    base = peak_rss_mb()
    t0 = time.perf_counter()
    cv, cf = scenes.s1_cloth()
    sv, sf = scenes.s1_sphere()
    with _quiet_fd1():
        sim = pbd.Simulation.getCurrent()
        sim.initDefault()
        model = sim.getModel()
        ts = sim.getTimeStep()
        cd = ts.getCollisionDetection()

        vd = pbd.VertexData()
        for v in sv @ TO_PBD.T:
            vd.addVertex(np.asarray(v, dtype=np.float64))
        mesh = pbd.IndexedFaceMesh()
        mesh.initMesh(len(sv), 0, len(sf))
        for f in sf:
            mesh.addFace([int(i) for i in f])
        mesh.buildNeighbors()
        rb = model.addRigidBody(
            1.0, vd, mesh, generateCollisionObject=True, resolution=np.array([30, 30, 30], dtype=np.uint32)
        )
        rb.setMass(0.0)

        pts = [np.asarray(p, dtype=np.float64) for p in cv @ TO_PBD.T]
        tri = model.addTriangleModel(pts, [int(i) for i in cf.ravel()], testMesh=True)
        # 1 = PBD distance constraints on the triangle edges; stiffness 1 for stretch and shear
        model.addClothConstraints(tri, 1, 1.0, 1.0, 1.0, 1.0, 0.3, 0.3, False, False)
        # 2 = isometric bending (PBD)
        model.addBendingConstraints(tri, 2, 0.01)
        cd.setTolerance(0.015)  # contact distance: Blender cloth's default 0.015 m, ~ our particle radius
        ts.setValueUInt(pbd.TimeStepController.NUM_SUB_STEPS, substeps)
        ts.setValueUInt(pbd.TimeStepController.MAX_ITERATIONS, iterations)
        pbd.TimeManager.getCurrent().setTimeStepSize(1.0 / scenes.FPS)

    pd = model.getParticles()
    offset = tri.getIndexOffset()
    n = len(cv)
    n_constraints = len(model.getConstraints())
    edges = scenes.grid_edges(scenes.S1_N)
    rest = np.linalg.norm(cv[edges[:, 0]] - cv[edges[:, 1]], axis=1)
    build_s = time.perf_counter() - t0

    def positions() -> np.ndarray:
        p = np.array([pd.getPosition(offset + i) for i in range(n)]).reshape(n, 3)
        return p @ TO_PBD  # back to Z up (inverse of a rotation is its transpose)

    tr = scenes.Tracker()

    def measure(_f):
        p = positions()
        tr.stretch(scenes.edge_stretch(p, edges, rest))
        tr.penetration(scenes.convex_penetration(p, sv, sf))
        tr.lowest(p[:, 2].min())

    def step(_f):
        ts.step(model)

    with _quiet_fd1():
        times = time_frames(step, measure, frames)
    sim_time = pbd.TimeManager.getCurrent().getTime()
    return result(
        "S1",
        "pypbd" if iterations == 1 else f"pypbd ({iterations} iterations)",
        times,
        particles=n,
        constraints=n_constraints,
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=f"PositionBasedDynamics {_version()}: distance + isometric bending constraints, "
        f"{substeps} substeps x {iterations} iteration(s) per 1/24 s frame, SDF sphere collider; "
        f"simulated {sim_time:.3f} s",
    )


def _version() -> str:
    try:
        from importlib.metadata import version

        return "pypbd " + version("pypbd")
    except Exception:
        return "pypbd"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("scene", choices=["S1"])
    ap.add_argument("--frames", type=int, default=scenes.FRAMES)
    ap.add_argument("--substeps", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=1, help="iterations per substep (library default 1)")
    args = ap.parse_args(argv)
    emit(run_s1(args.frames, args.substeps, args.iterations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
