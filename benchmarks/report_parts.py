"""What the benchmark report's sections share, and its fluid section (split from benchmarks/report.py).

Scene titles, result lookups and number formats are used by every section of docs/performance.md; the
fluid section (issue 13's dam breaks against SPlisHSPlasH, and what limits the ratio) is the largest one.
``SMALL_LIQUID`` is the hand-kept note on small liquid scenes in Blender (issue 25, item 8), copied in
verbatim after it, so that a full `make bench` no longer drops it.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import scenes
from unified_particles.core.fluid import DENSITY_TOLERANCE, MAX_DENSITY_ITERATIONS

# Hand-written section on small liquid scenes in Blender (benchmarks/small_liquid.py's figures), copied
# verbatim into docs/performance.md after the fluid section.
SMALL_LIQUID = Path(__file__).resolve().parent / "small_liquid_notes.md"

SCENE_TITLES = {
    "S1": "S1 cloth 65x65 on sphere",
    "S2": "S2 rigid pile, 125 cubes",
    "S2-auto": "S2 with Auto particle sizes",
    "S3": "S3 grains, 1000",
    "S4-10k": "S4 grains, 10k",
    "S4-100k": "S4 grains, 100k",
    "S4-1M": "S4 grains, 1M",
    "S5": "S5 demo scene",
    "S6": "S6 deforming collider, 20k triangles",
    "S7-10k": "S7 dam break, 10k fluid",
    "S7-100k": "S7 dam break, 100k fluid",
    "S8": "S8 dam break vs SPlisHSPlasH",
    "S9": "S9 sand and rocks, sizes 10x apart",
    "S9-one": "S9 at one size (the same particle count)",
    "HAIR": "Hair, 1,000 strands x 32 points on a turning head",
    "S10": "S10 six Jelly cubes on stairs (soft bodies, 20k particles)",
    "S11": "S11 a 100 x 100 tearing cloth torn by a ball",
}
# The peers of S8 (issue 13): ours / each is a ratio in the summary and the fluids section.
S8_PEERS = ("SPlisHSPlasH PBF", "SPlisHSPlasH DFSPH", "Blender Mantaflow")
FLUID_100K_LIMIT_MS = 3000.0  # issue 13: at most 3 s per frame for about 100,000 fluid particles
FRONT_CHECK_S = 0.5  # the dam breaks' surge front is compared at this time (Martin and Moyce 1952)


def _get(run: dict, scene: str, solver: str) -> dict | None:
    for r in run["results"]:
        if r.get("scene") == scene and r.get("solver") == solver and r.get("ms_per_frame") is not None:
            return r
    return None


def _ms(run, scene, solver):
    r = _get(run, scene, solver)
    return None if r is None else r["ms_per_frame"]


def _f(v, fmt="{:.1f}", none="-"):
    return none if v is None else fmt.format(v)


def _mm(v):
    return None if v is None else v * 1e3


def _size(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k"


def fluid_section(run: dict) -> list[str]:
    """Issue 13: the fluid scenes (S7, S8), ratios to SPlisHSPlasH, Mantaflow, what limits the ratio."""
    rows = [r for r in run["results"] if r.get("scene") in ("S7-10k", "S7-100k", "S8")]
    if not rows:
        return []
    L = [
        "## Fluids (issue 13)",
        "",
        "Dam breaks (benchmarks/scenes.py `DamBreak`): a column of water on the fill lattice (spacing 2r, "
        f"r = {scenes.FLUID_RADIUS * 100:g} cm) one lattice spacing off the walls of a closed tank, twice "
        "the column's height and 8/3 of its length, the dam removed at frame 0. Ours: `World.add_fluid` "
        "(density 1000, viscosity 0.01, no cohesion or vorticity) in six plane colliders, World defaults "
        "(substeps 4 x iterations 4: 16 small steps per 1/24 s frame, each with 1 to "
        f"{MAX_DENSITY_ITERATIONS} Jacobi passes of the PBF density constraints: passes repeat while the "
        f"mean density error is above {100 * DENSITY_TOLERANCE:g} %, core/fluid.py). S7 "
        "times our solver at "
        f"{_size(_particles(run, 'S7-10k', 10_000))} and {_size(_particles(run, 'S7-100k', 100_000))} "
        "particles; S8 is SPlisHSPlasH's DamBreakModel.json box (4 x 1.5 x 3 m) with a 30 x 28 x 30 column, "
        "run by ours and, at the same particles, radius, tank and simulated time, by SPlisHSPlasH "
        "(`pysplishsplash` from PyPI, compiled C++ with OpenMP, headless, benchmarks/peers_splishsplash.py). "
        "Surge front = distance of the 99.9th-percentile particle from the -x wall (the same code for every "
        f"solver), at t = {FRONT_CHECK_S:g} s and at the end. For S8's square column (length along the "
        "flow = height = a = 1.5 m) Martin and Moyce's experiment (1952) has the front at about 2.1 a "
        f"from the wall at t = {FRONT_CHECK_S:g} s (their T = t sqrt(2 g / a) = 1.8): about 3.2 m.",
        "",
        "| Scene | Solver | Particles | Frames (simulated s) | ms/frame (median) | first frame ms "
        f"| Peak memory MB (scene) | Surge front at {FRONT_CHECK_S:g} s / at the end (m) | Outside the tank "
        "| ours / this |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ours8 = _ms(run, "S8", "ours")
    for r in rows:
        title = SCENE_TITLES.get(r["scene"], r["scene"])
        if "skipped" in r or "error" in r:
            msg = r.get("skipped") or ("failed: " + r["error"])
            L.append(f"| {title} | {r['solver']} | {msg} | | | | | | | |")
            continue
        ratio = "-"
        if r["scene"] == "S8" and r["solver"] != "ours" and ours8 is not None:
            ratio = f"{ours8 / r['ms_per_frame']:.3g}x"
        q = r["quality"]
        series = r.get("front_series") or []
        k = round(FRONT_CHECK_S * scenes.FPS) - 1
        front = f"{_f(series[k] if len(series) > k else None, '{:.2f}')} / {_f(r.get('front_m'), '{:.2f}')}"
        L.append(
            f"| {title} | {r['solver']} | {r['particles']} | {r['frames']} "
            f"({r['frames'] / scenes.FPS:.2f}) | {r['ms_per_frame']:.0f} | {_f(r.get('ms_first'), '{:.0f}')} "
            f"| {r['peak_rss_mb']:.0f} ({r['peak_rss_mb'] - r['base_rss_mb']:.0f}) "
            f"| {front} | {q['max_penetration'] * 1e3:.0f} mm | {ratio} |"
        )
    L.append("")
    for r in rows:
        if r.get("scene") == "S8" and r.get("solver") != "ours" and r.get("notes"):
            L.append(f"- {r['solver']}: {r['notes']}")
    L += ["", *_fluid_limits(run), ""]
    return L


def small_liquid_section() -> list[str]:
    """The hand-kept note on small liquid scenes in Blender, or nothing if the file is gone."""
    return [SMALL_LIQUID.read_text().rstrip(), ""] if SMALL_LIQUID.exists() else []


def _particles(run: dict, scene: str, default: int) -> int:
    r = _get(run, scene, "ours")
    return default if r is None else int(r["particles"])


def _fluid_limits(run: dict) -> list[str]:
    """What limits the ratio: the cProfile breakdown of our fluid step at 100k (benchmarks/run.py)."""
    L = ["### What limits the ratio", ""]
    prof = run.get("fluid_profile") or {}
    groups = prof.get("profile_groups")
    pbf = _get(run, "S8", "SPlisHSPlasH PBF")
    ours8 = _get(run, "S8", "ours")
    if pbf is not None and ours8 is not None:
        per_step_ours = ours8["ms_per_frame"] / 16
        steps = pbf.get("steps_per_frame") or [16]
        per_step_peer = pbf["ms_per_frame"] / (sum(steps) / len(steps))
        L.append(
            "In small steps (S8, PBF both sides, 16 small steps per frame; SPlisHSPlasH's PBF runs one "
            "density iteration per step, ours 1 to "
            f"{MAX_DENSITY_ITERATIONS} passes while the mean density error is above "
            f"{100 * DENSITY_TOLERANCE:g} % and the liquid is at rest, so a flowing liquid runs one; the row "
            "'ours, 1 density pass' caps it at one), our "
            f"small step costs {per_step_ours:.0f} ms against SPlisHSPlasH's {per_step_peer:.0f} ms "
            f"({per_step_ours / per_step_peer:.3g}x). Both do the same arithmetic per particle pair; the "
            "difference is how: SPlisHSPlasH loops over each particle's neighbours in compiled code, in "
            "float32, on every core (OpenMP), with a hashed cell grid (CompactNSearch) and particles sorted "
            "along a space-filling curve (z-sort) so that neighbours are close in memory. Ours is NumPy, "
            "mostly on one core, in float64: every operation is a pass over arrays of pair length (about 30 "
            "neighbours per particle, so millions of entries at 100k): gathering x[i] - x[j], the kernel "
            "values, the pair corrections (and the fluid/solid masks where solids are near), keeping the "
            "pairs within the kernel radius, each a temporary array written to memory and read back, then "
            "`np.bincount` sums them per particle, one call per axis. The compiled loop keeps a pair's "
            "values in registers; ours streams each of them through memory (the table below splits the "
            "density solve into those parts)."
        )
        L.append("")
    if not groups:
        L.append("(no profile of the 100k fluid step in this run: `python -m benchmarks.run --only S7-100k`)")
        return L
    total = groups["total_ms_per_frame"]
    L += [
        f"cProfile of our step at 100k particles (S7-100k, first {prof.get('frames', '?')} frames, "
        f"{total:.0f} ms/frame under the profiler; shares matter, the profiler adds overhead). Cumulative "
        "time of each part of the step (NumPy's `bincount` and `where` wrapped in Python functions for this "
        "run, so that the profiler sees them apart from the arithmetic around them):",
        "",
        "| Part of the step | ms/frame | share |",
        "|---|---:|---:|",
    ]
    for name, ms in sorted(groups["parts_ms_per_frame"].items(), key=lambda kv: -kv[1]):
        L.append(f"| {name} | {ms:.0f} | {ms / total:.0%} |")
    calls, rebuilds = groups["pair_list_calls"], groups["pair_list_rebuilds"]
    L.append("")
    if calls:
        L.append(
            f"The fluid pair list (all pairs within the kernel radius plus a margin) was rebuilt in "
            f"{rebuilds} of {calls} small steps ({rebuilds / calls:.0%}): it is reused only while no "
            "particle has moved more than half the margin since it was built, and in a collapsing column "
            "the fastest particles move metres per second."
        )
    top = prof.get("profile") or []
    if top:
        L += [
            "",
            "Own time per function, the largest first:",
            "",
            "| Function | ms/frame | share | calls |",
            "|---|---:|---:|---:|",
        ]
        for row in top[:10]:
            L.append(
                f"| `{row['function']}` | {row['ms_per_frame']:.1f} | {row['share']:.0%} | {row['calls']} |"
            )
    return L
