"""Our solver (unified_particles.core) on one standard scene, in its own process so peak memory is per scene.

    python -m benchmarks.ours S1|S2|S2-auto|S3|S4-10k|...|S9|S9-one|S10|S11|HAIR [--frames N]
                              [--budget S]
                              [--profile] [--ablate LEVER]

S5 (the demo scene, through Blender and the add-on) is benchmarks/demo_s5.py.

Each frame is one ``World.step(1 / 24)``, timed alone; quality figures are read after the timed call.
Prints one JSON result line (see common.py). Solver settings per scene are in SETTINGS below (World
defaults unless a scene needs a particle radius of its own).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import scenes
from benchmarks.common import (
    emit,
    enable_profile,
    peak_rss_mb,
    profile_called_from,
    profile_cumulative,
    profiling,
    result,
    set_budget,
    time_frames,
)

# Keyword arguments for World(...) per scene. Only the radius is fixed by the scene; everything else is the
# World's default budget (substeps, iterations), so the figures are what a user gets out of the box.
SETTINGS: dict[str, dict] = {
    "S1": {"radius": scenes.S1_RADIUS},
    "S2": {"radius": scenes.S2_RADIUS},
    "S3": {"radius": scenes.S3_RADIUS},
    "S4": {"radius": scenes.S3_RADIUS},
}


def _world(**kw):
    from unified_particles.core import World

    return World(gravity=(0.0, 0.0, -9.81), **kw)


def _count_constraints(w, fallback: int | None) -> int | None:
    """Constraint count as the World reports it, if it does; else the count derived from the scene."""
    for name in ("constraint_count", "num_constraints", "n_constraints"):
        v = getattr(w, name, None)
        if v is not None:
            v = v() if callable(v) else v
            try:
                return int(v)
            except (TypeError, ValueError):
                pass
    stats = getattr(w, "stats", None)
    if callable(stats):
        try:
            s = stats()
            if isinstance(s, dict) and "constraints" in s:
                return int(s["constraints"])
        except Exception:
            pass
    return fallback


def _settings_note(w, kw: dict) -> str:
    parts = [f"radius {kw['radius']:.4g} m"]
    for name in ("substeps", "iterations"):
        v = getattr(w, name, None)
        if isinstance(v, int | float):
            parts.append(f"{name} {v}")
    return ", ".join(parts)


def run_s1(frames: int) -> dict:
    base = peak_rss_mb()
    t0 = time.perf_counter()
    cv, cf = scenes.s1_cloth()
    sv, sf = scenes.s1_sphere()
    kw = SETTINGS["S1"]
    w = _world(**kw)
    cloth = w.add_cloth(cv, cf, mass=1.0, stretch_compliance=0.0, bend_compliance=1e-3)
    w.add_collider_mesh(sv, sf, transform=np.eye(4), friction=0.5)
    edges = scenes.grid_edges(scenes.S1_N)
    rest = np.linalg.norm(cv[edges[:, 0]] - cv[edges[:, 1]], axis=1)
    # derived count: triangle edges (stretch/shear) + interior edges (one bending pair each)
    e = np.sort(np.concatenate([cf[:, [0, 1]], cf[:, [1, 2]], cf[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    derived = int(len(counts) + np.count_nonzero(counts == 2))
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()

    def measure(_f):
        p = np.asarray(cloth.vertex_positions, dtype=np.float64)
        tr.stretch(scenes.edge_stretch(p, edges, rest))
        tr.penetration(scenes.convex_penetration(p, sv, sf))
        tr.lowest(p[:, 2].min())

    times = time_frames(lambda f: w.step(1.0 / scenes.FPS), measure, frames)
    return result(
        "S1",
        "ours",
        times,
        particles=len(w.positions),
        constraints=_count_constraints(w, derived),
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=_settings_note(w, kw) + "; penetration = cloth vertex inside the sphere mesh",
    )


def run_s2(frames: int, auto: bool = False) -> dict:
    """S2; ``auto``: S2-auto (issue 22), the world at the UI's default radius and each cube at its Auto
    size (``core.sizes.fitted_radius``: 3 particles across, 0.5 m / 6, which is S2's radius)."""
    from unified_particles.core.sizes import fitted_radius

    base = peak_rss_mb()
    t0 = time.perf_counter()
    kw = {"radius": scenes.DEFAULT_RADIUS} if auto else SETTINGS["S2"]
    w = _world(**kw)
    bodies, verts = [], []
    for c in scenes.s2_cube_centers():
        v, f = scenes.cube(scenes.S2_SIDE, c)
        own = fitted_radius(v) if auto else None
        bodies.append(w.add_rigid(v, f, density=1000.0, friction=0.5, radius=own))
        verts.append(np.c_[v, np.ones(len(v))])
    w.add_collider_plane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), friction=0.5)
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()

    def measure(_f):
        low = min(
            float((np.asarray(b.transform) @ vh.T)[2].min()) for b, vh in zip(bodies, verts, strict=True)
        )
        tr.lowest(low)
        tr.penetration(max(0.0, -low))

    times = time_frames(lambda f: w.step(1.0 / scenes.FPS), measure, frames)
    return result(
        "S2-auto" if auto else "S2",
        "ours",
        times,
        particles=len(w.positions),
        constraints=_count_constraints(w, len(bodies)),
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=_settings_note(w, kw) + "; lowest z = lowest cube corner (rigid transform of the mesh)",
    )


def _grains(scene: str, points: np.ndarray, frames: int) -> dict:
    base = peak_rss_mb()
    t0 = time.perf_counter()
    kw = SETTINGS["S4" if scene.startswith("S4") else "S3"]
    r = kw["radius"]
    w = _world(**kw)
    w.add_granular(points, density=1600.0, friction=0.5)
    w.add_collider_plane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), friction=0.5)
    del points
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()

    def measure(_f):
        low = float(np.asarray(w.positions)[:, 2].min()) - r
        tr.lowest(low)
        tr.penetration(max(0.0, -low))

    times = time_frames(lambda f: w.step(1.0 / scenes.FPS), measure, frames)
    return result(
        scene,
        "ours",
        times,
        particles=len(w.positions),
        constraints=_count_constraints(w, None),
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=_settings_note(w, kw) + "; lowest z = lowest grain bottom (centre - radius)",
    )


def run_s9(scene: str, frames: int) -> dict:
    """S9 (issue 22): fine sand and coarse rocks 10x apart in size; S9-one: the same at one size."""
    base = peak_rss_mb()
    t0 = time.perf_counter()
    one = scene == "S9-one"
    w = _world(radius=scenes.S9_FINE)
    w.add_granular(scenes.s9_sand(), density=1600.0, friction=0.5)
    for v, f in scenes.s9_rocks(one):
        w.add_rigid(v, f, density=2500.0, radius=None if one else scenes.S9_COARSE)
    w.add_collider_plane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), friction=0.5)
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()
    radius = np.asarray(w.model.particle_radius) if len(w.model.particle_radius) else None

    def measure(_f):
        r = np.asarray(w.model.particle_radius) if radius is None else radius
        low = float((np.asarray(w.positions)[:, 2] - r).min())
        tr.lowest(low)
        tr.penetration(max(0.0, -low))

    times = time_frames(lambda f: w.step(1.0 / scenes.FPS), measure, frames)
    return result(
        scene,
        "ours",
        times,
        particles=len(w.positions),
        constraints=_count_constraints(w, None),
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=f"radius {scenes.S9_FINE} m sand, rocks of {scenes.S9_FINE if one else scenes.S9_COARSE} m "
        "particles; lowest z = lowest particle bottom (centre - own radius)",
    )


def run_s10(frames: int) -> dict:
    """S10 (issue 26): six Jelly cubes (SOFT_PRESETS["JELLY"]) dropped on stairs, 20,250 particles."""
    from unified_particles.core import SOFT_PRESETS

    base = peak_rss_mb()
    t0 = time.perf_counter()
    w = _world(radius=scenes.S10_RADIUS)
    bodies = [w.add_soft(v, f, **SOFT_PRESETS["JELLY"]) for v, f in scenes.s10_jellies()]
    for v, f in scenes.s10_stairs():
        w.add_collider_mesh(v, f, transform=np.eye(4), friction=0.5)
    w.add_collider_plane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), friction=0.5)
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()

    def measure(_f):
        tr.lowest(float(np.asarray(w.positions)[:, 2].min() - scenes.S10_RADIUS))

    times = time_frames(lambda f: w.step(1.0 / scenes.FPS), measure, frames)
    clusters = w.model.soft.n_clusters if w.model.soft is not None else 0
    return result(
        "S10",
        "ours",
        times,
        particles=len(w.positions),
        constraints=len(w.model.soft.idx) if w.model.soft is not None else None,
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=f"radius {scenes.S10_RADIUS} m, {len(bodies)} Jelly cubes, {clusters} clusters; constraints = "
        "cluster memberships; lowest z = lowest particle bottom",
    )


def run_s6(frames: int) -> dict:
    """S6: the deforming collider scene, timed with the collider deforming (``set_vertices`` every frame,
    included in the frame's time) and, for reference, the same scene with the collider left still."""
    kw = SETTINGS["S3"]
    r = kw["radius"]
    sv, sf = scenes.s6_sphere()

    def build():
        w = _world(**kw)
        w.add_granular(scenes.s6_points(), density=1600.0, friction=0.5)
        w.add_collider_plane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), friction=0.5)
        col = w.add_collider_mesh(sv, sf, transform=np.eye(4), friction=0.5)
        return w, col

    still, _ = build()
    still_times = time_frames(lambda f: still.step(1.0 / scenes.FPS), lambda f: None, frames)
    base = peak_rss_mb()
    t0 = time.perf_counter()
    w, col = build()
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()

    def step(f):
        col.set_vertices(scenes.s6_deformed(sv, f))
        w.step(1.0 / scenes.FPS)

    def measure(_f):
        low = float(np.asarray(w.positions)[:, 2].min()) - r
        tr.lowest(low)
        tr.penetration(max(0.0, -low))

    times = time_frames(step, measure, frames)
    still_ms = float(np.median(still_times))
    return result(
        "S6",
        "ours",
        times,
        particles=len(w.positions),
        constraints=_count_constraints(w, None),
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=_settings_note(w, kw)
        + f"; {len(sf)} collider triangles; the same scene with the collider still: {still_ms:.1f} ms/frame",
        still_ms_per_frame=still_ms,
        triangles=len(sf),
    )


def run_dam(scene: str, dam: scenes.DamBreak, frames: int, passes: int | None = None) -> dict:
    """S7 / S8: a dam break in a closed tank of six plane colliders, water from ``World.add_fluid``
    (density 1000 kg/m^3, the WATER preset's viscosity 0.01, no cohesion or vorticity: the peers' plain
    water), World defaults otherwise (substeps 4, iterations 4); ``passes``: liquid_density_passes
    (None: the default; 1 is like for like with SPlisHSPlasH's PBF, which runs one density iteration)."""
    from unified_particles.core.fluid import MAX_DENSITY_ITERATIONS

    base = peak_rss_mb()
    t0 = time.perf_counter()
    kw: dict = {"radius": dam.radius}
    if passes is not None:
        kw["liquid_density_passes"] = passes
    w = _world(**kw)
    for point, normal in dam.planes():
        w.add_collider_plane(point=point, normal=normal, friction=0.0)
    fluid = w.add_fluid(dam.points(), density=1000.0, viscosity=0.01, cohesion=0.0, vorticity=0.0)
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()
    fronts: list[float] = []

    def measure(_f):
        p = np.asarray(fluid.positions)
        tr.lowest(float(p[:, 2].min()) - dam.radius)
        tr.penetration(dam.outside(p))
        fronts.append(dam.front(p))

    times = time_frames(lambda f: w.step(1.0 / scenes.FPS), measure, frames)
    sim_t = len(times) / scenes.FPS
    groups = _fluid_profile_groups(len(times)) if profiling() else None
    return result(
        scene,
        "ours" if passes is None else f"ours, {passes} density pass" + ("es" if passes > 1 else ""),
        times,
        particles=len(w.positions),
        constraints=fluid.count,  # one density constraint per fluid particle
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=_settings_note(w, kw) + f"; PBF, {w.substeps * w.iterations} small steps per frame of 1 to "
        f"{passes or MAX_DENSITY_ITERATIONS} density passes (the passes after the first while the liquid is "
        "at rest, until the mean density error is within DENSITY_TOLERANCE); tank "
        f"{dam.length:.3g} x {dam.width:.3g} x {dam.height:.3g} m, column {dam.nx} x {dam.ny} x {dam.nz}; "
        f"surge front {fronts[-1]:.2f} m from the wall at t = {sim_t:.3f} s; penetration = farthest centre "
        "outside the tank",
        front_m=fronts[-1],
        front_series=fronts,
        simulated_s=sim_t,
        profile_groups=groups,
    )


# Where a fluid step's time goes, by cumulative time (cProfile) of the functions below: the named part of
# the step, minus the parts nested in it that have a row of their own.
_FLUID_FUNCTIONS = [
    ("world.py", "step"),
    ("fluid.py", "_pair_list"),
    ("fluid.py", "build"),
    ("fluid.py", "solve_density"),
    ("fluid.py", "_wall_terms"),
    ("fluid.py", "velocity_pass"),
    ("solver.py", "_candidates"),
    ("solver.py", "_contact_pass"),
]


_BINCOUNT, _WHERE = np.bincount, np.where


def np_bincount(*args, **kwargs):
    return _BINCOUNT(*args, **kwargs)


def np_where(*args, **kwargs):
    return _WHERE(*args, **kwargs)


def _profile_numpy_calls() -> None:
    """For profile runs of the fluid scenes: ``np.bincount`` and ``np.where`` as Python functions of their
    own (``np_bincount``, ``np_where``), so that cProfile sees them. NumPy's array-function dispatchers
    are not built-in functions to the profiler, so their time would count as their caller's own time."""
    np.bincount = np_bincount  # type: ignore[assignment]
    np.where = np_where  # type: ignore[assignment]


def _fluid_profile_groups(frames: int) -> dict:
    """ms per frame of each part of the fluid step, and how often the fluid pair list was rebuilt."""
    c = profile_cumulative(_FLUID_FUNCTIONS)

    def ms(key: str) -> float:
        return float(c[key]["ms"]) / max(frames, 1)

    def called(callee: str, caller: str) -> float:
        return profile_called_from(("ours.py", callee), ("fluid.py", caller)) / max(frames, 1)

    total = ms("world.py:step")
    sums = called("np_bincount", "solve_density")
    masks = called("np_where", "solve_density")
    parts = {
        "neighbour search (fluid pair list rebuilds: grid, candidate pairs)": ms("fluid.py:_pair_list"),
        "density solve: per-particle sums over the pairs (np.bincount)": sums,
        "density solve: fluid/solid masks over the pairs (np.where)": masks,
        "density solve: the rest (gathers x[i] - x[j], pairs within H kept, kernels, corrections)": ms(
            "fluid.py:solve_density"
        )
        - ms("fluid.py:_pair_list")
        - ms("fluid.py:_wall_terms")
        - sums
        - masks,
        "plane walls in the density (per-plane distance and table lookup)": ms("fluid.py:_wall_terms"),
        "velocity pass (XSPH viscosity, cohesion, vorticity; bincount sums)": ms("fluid.py:velocity_pass"),
        "solid contact and collider passes (neighbour candidates included)": ms("solver.py:_contact_pass")
        + ms("solver.py:_candidates"),
    }
    parts["rest of the step (prediction, velocity update, bookkeeping)"] = total - sum(parts.values())
    return {
        "total_ms_per_frame": total,
        "parts_ms_per_frame": parts,
        "pair_list_calls": int(c["fluid.py:_pair_list"]["calls"]),
        "pair_list_rebuilds": int(c["fluid.py:build"]["calls"]),
    }


def run_s11(frames: int) -> dict:
    """S11 (issue 27): a 100 x 100 tearing cloth (2 m, pinned along its frame, tear strain 0.02) torn by a
    60 kg ball dropped on it from 0.4 m; memory includes the spare particles (one per tearable vertex)."""
    from unified_particles.core.primitives import grid_mesh, uv_sphere_mesh

    base = peak_rss_mb()
    t0 = time.perf_counter()
    w = _world(radius=0.01)
    v, f = grid_mesh(size=2.0, vertices_per_side=100, center=(0.0, 0.0, 1.0))
    frame_pins = np.flatnonzero(np.abs(v[:, :2]).max(axis=1) > 0.999)
    cloth = w.add_cloth(v, f, mass=0.4, pinned=frame_pins, bending_rigidity=1.5e-5, tear_strain=0.02)
    bv, bf = uv_sphere_mesh(radius=0.2, center=(0.0, 0.0, 1.6), segments=16, rings=8)
    w.add_rigid(bv, bf, density=1800.0, radius=0.02)
    build_s = time.perf_counter() - t0
    times = time_frames(lambda f: w.step(1.0 / scenes.FPS), lambda f: None, frames)
    return result(
        "S11",
        "ours",
        times,
        particles=len(w.positions),
        constraints=_count_constraints(w, None),
        quality={"torn_edges": cloth.torn_edges, "spares_used": int(cloth.tear.used)},
        base_rss_mb=base,
        build_s=build_s,
        notes=f"100 x 100 vertices + {len(cloth.tear.spares)} spare particles; torn edges at the end: "
        f"{cloth.torn_edges}",
    )


def run(scene: str, frames: int, passes: int | None = None) -> dict:
    if scene == "S1":
        return run_s1(frames)
    if scene in ("S2", "S2-auto"):
        return run_s2(frames, auto=scene == "S2-auto")
    if scene == "S3":
        return _grains("S3", scenes.s3_points(), frames)
    if scene.startswith("S4-"):
        return _grains(scene, scenes.s4_points(scene[3:]), frames)
    if scene == "S6":
        return run_s6(frames)
    if scene in ("S9", "S9-one"):
        return run_s9(scene, frames)
    if scene == "S10":
        return run_s10(frames)
    if scene == "S11":
        return run_s11(frames)
    if scene.startswith("S7-"):
        return run_dam(scene, scenes.s7_dam(scene[3:]), frames)
    if scene == "S8":
        return run_dam(scene, scenes.s8_dam(), frames, passes)
    if scene == "HAIR":
        from benchmarks.hair_scene import run_hair

        return run_hair(frames)
    raise SystemExit(f"unknown scene {scene}")


SCENES: tuple[str, ...] = (
    "S1",
    "S2",
    "S2-auto",
    "S3",
    "S4-10k",
    "S4-100k",
    "S4-1M",
    "S6",
    "S7-10k",
    "S7-100k",
    "S8",
    "S9",
    "S9-one",
    "HAIR",  # issue 27: benchmarks/hair_scene.py
    "S10",
    "S11",  # issue 27: a tearing cloth
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("scene", choices=SCENES)
    ap.add_argument("--frames", type=int, default=scenes.FRAMES)
    ap.add_argument("--budget", type=float, default=0.0, help="stop after this many seconds of stepping")
    ap.add_argument("--profile", action="store_true", help="profile the steps (cProfile) into the result")
    ap.add_argument("--passes", type=int, default=None, help="S8: liquid_density_passes (default: World's)")
    ap.add_argument("--ablate", default="", help="switch one optimisation off (see benchmarks/ablations.py)")
    args = ap.parse_args(argv)
    if args.ablate:
        from benchmarks import ablations

        ablations.apply(args.ablate)
    set_budget(args.budget)
    if args.profile:
        if args.scene.startswith(("S7", "S8")):
            _profile_numpy_calls()
        enable_profile()
    emit(run(args.scene, args.frames, args.passes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
