"""Benchmark results into ratios, target verdicts, a console summary, docs/performance.md and the plot.

    python -m benchmarks.report --ablations-only [--doc docs/performance.md]

A full report is written by ``python -m benchmarks.run`` (``make bench``). The command above refreshes
only the "What each optimisation bought" section of an existing report, from
benchmarks/results/ablations.md (written by ``python -m benchmarks.ablations``) and
benchmarks/optimization_log.md, leaving the rest of the last full run's figures as they were.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks import scenes
from benchmarks.report_parts import (
    FLUID_100K_LIMIT_MS,
    S8_PEERS,
    SCENE_TITLES,
    _f,
    _get,
    _mm,
    _ms,
    _size,
    fluid_section,
    small_liquid_section,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
# Hand-written history of what each optimisation bought; copied verbatim into docs/performance.md.
OPT_LOG = ROOT / "benchmarks" / "optimization_log.md"
# Table of benchmarks/ablations.py (each optimisation switched off alone), copied into docs/performance.md.
ABLATIONS = ROOT / "benchmarks" / "results" / "ablations.md"
# Table of benchmarks/levers.py (issue 14's levers on the neighbour search and contact passes alone).
LEVERS = ROOT / "benchmarks" / "results" / "levers.md"
# One row per full `make bench` run (appended by benchmarks/run.py), copied into docs/performance.md.
HISTORY = ROOT / "benchmarks" / "history.md"
HISTORY_HEADER = [
    "## Benchmark history (full runs, our solver, median ms/frame)",
    "",
    "Appended by every full `make bench`; the load average tells how busy the shared machine was.",
    "",
    "| Date (UTC) | Commit | Load | S1 | S2 | S3 | S4 10k | S4 100k | S4 1M | S5 | S1 stretch "
    "| Blender cloth | pypbd | Bullet S2 | Bullet S3 |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
]


def history_row(run: dict) -> str:
    m = run["machine"]

    def ms(scene, solver="ours"):
        v = _ms(run, scene, solver)
        return "-" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.1f}"

    o1 = _get(run, "S1", "ours")
    st = "-" if o1 is None else f"{o1['quality']['max_stretch']:.0%}"
    cells = [
        m["date"].replace(" UTC", ""),
        m["git"] or "-",
        m["load"].split()[0],
        *(ms(k) for k in ("S1", "S2", "S3", "S4-10k", "S4-100k", "S4-1M", "S5")),
        st,
        ms("S1", "Blender cloth"),
        ms("S1", "pypbd"),
        ms("S2", "Bullet rigid"),
        ms("S3", "Bullet spheres"),
    ]
    return "| " + " | ".join(cells) + " |"


def append_history(run: dict) -> None:
    lines = HISTORY.read_text().rstrip("\n").splitlines() if HISTORY.exists() else list(HISTORY_HEADER)
    lines.append(history_row(run))
    HISTORY.write_text("\n".join(lines) + "\n")


PENETRATION_TOL = 1e-3  # m: "no penetration" means no cloth vertex deeper than 1 mm inside the sphere mesh


# --------------------------------------------------------------------------------------------------------
# Machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


def _git_rev() -> str | None:
    """Short commit id, with "+ local changes" when the work tree differs from it."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "unified_particles", "benchmarks"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if not rev:
        return None
    return rev + (" + local changes" if dirty else "")


def machine_info() -> dict:
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) * 1024 / 1e9, 1)
    except OSError:
        pass
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "bpy": _version("bpy"),
        "pypbd": _version("pypbd"),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "git": _git_rev(),
    }


# --------------------------------------------------------------------------------------------------------
# Lookups and verdicts


def targets(run: dict) -> list[dict]:
    """Every target of issue 8: measured value, limit, verdict (PASS, MISS, n/a), distance to the limit."""
    out = []

    def add(name, scene, kind, value, limit, fmt, op="<="):
        lim = "none" if limit == 0 else f"{op} {fmt(limit)}"
        row = {"target": name, "scene": scene, "kind": kind, "limit": lim, "value": value}
        if value is None:
            row.update(measured="n/a", verdict="n/a", margin="not measured")
        elif limit == 0:
            ok = value <= PENETRATION_TOL
            row.update(measured=fmt(value), verdict="PASS" if ok else "MISS", margin="")
        else:
            ok = value < limit if op == "<" else value <= limit
            f = value / limit
            margin = f"{f:.2f} of the limit" if ok else f"{f:.2f}x the limit"
            row.update(measured=fmt(value), verdict="PASS" if ok else "MISS", margin=margin)
        out.append(row)

    def ratio(a, b):
        return None if a is None or b is None else a / b

    def x(v):
        return f"{v:.3g}x"

    def pct(v):
        return f"{v:.1%}"

    def mm(v):
        return f"{v * 1e3:.1f} mm"

    s1 = _ms(run, "S1", "ours")
    add("S1 time vs Blender cloth", "S1", "time", ratio(s1, _ms(run, "S1", "Blender cloth")), 0.25, x)
    # Issue 14 tightened the pypbd ratio (6x in issue 8) and the 100k grains' frame time (2 s in issue 8).
    add("S1 time vs pypbd (5 substeps)", "S1", "time", ratio(s1, _ms(run, "S1", "pypbd")), 4.0, x)
    o1 = _get(run, "S1", "ours")
    st = None if o1 is None else o1["quality"]["max_stretch"]
    add("S1 max edge stretch (all frames)", "S1", "quality", st, 0.15, pct, "<")
    pen = None if o1 is None else o1["quality"]["max_penetration"]
    add(
        f"S1 penetration into sphere (tolerance {PENETRATION_TOL * 1e3:.0f} mm)",
        "S1",
        "quality",
        pen,
        0.0,
        mm,
    )
    r = ratio(_ms(run, "S2", "ours"), _ms(run, "S2", "Bullet rigid"))
    add("S2 time vs Bullet", "S2", "time", r, 3.0, x)
    r = ratio(_ms(run, "S2-auto", "ours"), _ms(run, "S2", "Bullet rigid"))
    add("S2 with Auto sizes time vs Bullet", "S2-auto", "time", r, 3.0, x)
    r = ratio(_ms(run, "S3", "ours"), _ms(run, "S3", "Bullet spheres"))
    add("S3 time vs Bullet spheres", "S3", "time", r, 0.2, x)
    a, b = _ms(run, "S4-10k", "ours"), _ms(run, "S4-100k", "ours")
    add("S4 growth 10k -> 100k grains", "S4-100k", "time", ratio(b, a), 15.0, x)
    add("S4 100k grains per frame", "S4-100k", "time", b, 600.0, lambda v: f"{v:.0f} ms")
    c = _ms(run, "S4-1M", "ours")
    add("S4 1M grains per frame", "S4-1M", "time", c, 8000.0, lambda v: f"{v:.0f} ms")
    m = _get(run, "S4-1M", "ours")
    mem = None if m is None else m["peak_rss_mb"]
    add("S4 1M grains peak memory", "S4-1M", "memory", mem, 1500.0, lambda v: f"{v:.0f} MB")
    # Issue 12: a deforming collider of about 20k triangles, the whole frame (grains included).
    s6 = _ms(run, "S6", "ours")
    add("S6 deforming collider (20k triangles) per frame", "S6", "time", s6, 100.0, lambda v: f"{v:.0f} ms")
    # Issue 13: a fluid scene of about 100,000 particles (the S7 dam break), at most 3 s per frame.
    s7 = _ms(run, "S7-100k", "ours")
    add(
        "S7 100k fluid particles per frame",
        "S7-100k",
        "time",
        s7,
        FLUID_100K_LIMIT_MS,
        lambda v: f"{v:.0f} ms",
    )
    return out


# --------------------------------------------------------------------------------------------------------
# Text


def one_line(r: dict) -> str:
    if "skipped" in r:
        return "skipped: " + r["skipped"]
    if "error" in r:
        return "FAILED: " + r["error"]
    q = r["quality"]
    s = f"{r['ms_per_frame']:.1f} ms/frame ({r['frames']} frames), {r['particles']} particles, "
    s += f"peak {r['peak_rss_mb']:.0f} MB"
    if q.get("max_stretch") is not None:
        s += f", stretch {q['max_stretch']:.1%}"
    if "max_penetration" in q:  # scenes without a contact measure (S11's tearing cloth) report none
        s += f", penetration {q['max_penetration'] * 1e3:.1f} mm, lowest z {q['lowest_z']:.3f}"
    return s


def console_summary(run: dict) -> str:
    lines = ["Ratios (same run, medians):"]
    pairs = [
        ("S1", "Blender cloth"),
        ("S1", "pypbd"),
        ("S1", "pypbd (20 iterations)"),
        ("S2", "Bullet rigid"),
        ("S3", "Bullet spheres"),
        *(("S8", peer) for peer in S8_PEERS),
    ]
    for scene, peer in pairs:
        a, b = _ms(run, scene, "ours"), _ms(run, scene, peer)
        if a is not None and b is not None:
            lines.append(f"  {scene} ours / {peer}: {a:.1f} / {b:.1f} ms = {a / b:.3g}x")
    a, b = _ms(run, "S8", "ours, 1 density pass"), _ms(run, "S8", "SPlisHSPlasH PBF")
    if a is not None and b is not None:  # like for like: one density iteration per small step both sides
        lines.append(f"  S8 ours at 1 density pass / SPlisHSPlasH PBF: {a:.1f} / {b:.1f} ms = {a / b:.3g}x")
    lines.append("Targets (issue 8):")
    for t in targets(run):
        lines.append(f"  [{t['verdict']:4s}] {t['target']}: {t['measured']} (target {t['limit']})")
    return "\n".join(lines)


def _table(run: dict) -> list[str]:
    rows = [
        "| Scene | Solver | Particles | Constraints | ms/frame (median) | frames | Peak memory MB "
        "(scene) | Max stretch (last frame) | Max penetration | Lowest z (m) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    order = {k: i for i, k in enumerate(SCENE_TITLES)}
    res = sorted(run["results"], key=lambda r: (order.get(r.get("scene"), 99), r.get("solver") != "ours"))
    for r in res:
        title = SCENE_TITLES.get(r.get("scene"), r.get("scene"))
        if "skipped" in r or "error" in r:
            msg = r.get("skipped") or ("failed: " + r["error"])
            rows.append(f"| {title} | {r['solver']} | {msg} | | | | | | | |")
            continue
        q = r["quality"]
        st = "-" if q.get("max_stretch") is None else f"{q['max_stretch']:.1%} ({q['final_stretch']:.1%})"
        rows.append(
            f"| {title} | {r['solver']} | {r['particles']} | {_f(r['constraints'], '{}')} | "
            f"{r['ms_per_frame']:.1f} | {r['frames']} | {r['peak_rss_mb']:.0f} "
            f"({r['peak_rss_mb'] - r['base_rss_mb']:.0f}) | {st} | "
            f"{_f(_mm(q.get('max_penetration')))} mm | {_f(q.get('lowest_z'), '{:.3f}')} |"
        )
    return rows


def markdown(run: dict, png_rel: str) -> str:
    m = run["machine"]
    quick = run.get("quick")
    L = ["# Performance", ""]
    L += [
        "Generated by `make bench` (`python -m benchmarks.run`); do not edit by hand: the history of "
        "optimisations is kept in `benchmarks/optimization_log.md`, the note on small liquid scenes in "
        "`benchmarks/small_liquid_notes.md`; both are copied in below.",
        "",
    ]
    if quick:
        L += [
            "**Quick smoke run (`--quick`): 12 frames per scene, no 1M scene. Not the reference figures.**",
            "",
        ]
    L += [
        "## Machine",
        "",
        f"- CPU: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM; {m['os']}",
        f"- Python {m['python']}, NumPy {m['numpy']}, Blender {m['bpy']} (bpy from PyPI), pypbd {m['pypbd']}",
        f"- Date: {m['date']}; commit {m['git'] or '(uncommitted)'}; load average (1, 5, 15 min) at start "
        f"{m['load']}, at end {m.get('load_end', '?')}",
        "- The machine is shared with other work (2 cores): medians are used to damp the noise, and the "
        "ratios come from the same run, but absolute figures can move by tens of percent between runs.",
        "",
        "## Targets (issues 8, 12, 13, 14)",
        "",
        "| Target | Measured | Limit | Verdict | How far |",
        "|---|---:|---:|---|---|",
    ]
    for t in targets(run):
        L.append(f"| {t['target']} | {t['measured']} | {t['limit']} | {t['verdict']} | {t['margin']} |")
    ratios = []
    for line in console_summary(run).splitlines()[1:]:
        if line.startswith("Targets"):
            break
        ratios.append("-" + line[1:])
    if ratios:
        L += ["", "Ratios (ours / peer, medians of the same run):", "", *ratios]
    L += ["", "## Results", ""]
    L += _table(run)
    L += ["", *_observations(run)]
    early = s4_early(run)
    if early:
        n = early[0][2]
        parts = ", ".join(f"{_size(p)}: {ms:.0f} ms" for p, ms, _ in early)
        L += [
            f"S4 like for like over the first {n} frames (all the 1M run has; the grains land from frame 8 "
            f"on): {parts} per frame (median). The 48-frame medians above include the piles settling.",
            "",
        ]
    L += ["", f"![time per frame against particle count, log-log]({png_rel})", ""]
    L += _bake_section(run.get("bake"))
    L += fluid_section(run)
    L += small_liquid_section()
    L += ["## Notes per run", ""]
    for r in run["results"]:
        if r.get("notes"):
            L.append(f"- {r['scene']} {r['solver']}: {r['notes']}")
        elif "skipped" in r:
            L.append(f"- {r['scene']} {r['solver']}: skipped ({r['skipped']})")
    L += _missed(run)
    L += _profiles(run)
    L += ["", _METHOD, ""]
    if HISTORY.exists():
        L += [HISTORY.read_text().rstrip(), ""]
    L += ablations_section()
    return "\n".join(L)


ABLATIONS_HEADING = "## What each optimisation bought"


def ablations_section() -> list[str]:
    """The last section of the report: the ablation table (generated) and the hand-kept log."""
    L = [ABLATIONS_HEADING, ""]
    if ABLATIONS.exists():
        L += ["### Switched off one at a time (generated)", "", ABLATIONS.read_text().rstrip(), ""]
    if LEVERS.exists():
        L += ["### Levers on the large-scene passes alone (generated)", "", LEVERS.read_text().rstrip(), ""]
    if OPT_LOG.exists():
        L += ["### Changes, before and after (kept by hand)", "", OPT_LOG.read_text().rstrip(), ""]
    return L


def refresh_ablations(doc: Path = DOC) -> None:
    """Replace the ablations section of an existing report, up to the next "## " heading, in place."""
    text = doc.read_text()
    start = text.find("\n" + ABLATIONS_HEADING + "\n")
    if start < 0:
        raise SystemExit(f"{doc}: no {ABLATIONS_HEADING!r} section; run `python -m benchmarks.run` first")
    end = text.find("\n## ", start + 1)
    rest = "\n" + text[end + 1 :] if end >= 0 else ""
    doc.write_text(text[: start + 1] + "\n".join(ablations_section()) + rest)


def _bake_section(bake: list[dict] | dict | None) -> list[str]:
    """Issue 5's figure: writing a bake of a 100k-vertex cloth next to simulating it."""
    if not bake:
        return []
    L = ["## Writing a bake", ""]
    if isinstance(bake, dict):
        return [*L, f"`benchmarks/bench_bake.py` failed: {bake.get('error', '?')}", ""]
    L += [
        "`benchmarks/bench_bake.py`: a cloth grid of the size below falls onto a ground plane and is baked "
        "through the same `BakeJob` as the Bake button. *Simulation* is building the World and stepping it; "
        "*writing* is everything else the bake does (reading positions, world to local, the point stream, "
        "the per-frame resume snapshot, the progress file, and the commit: moving files in place, shape keys "
        "or modifiers, sidecars). Issue 5 asks writing < 10% of the simulation time.",
        "",
        "| Output | Vertices | Frames | Simulation (s) | Writing (s) | of which commit (s) "
        "| Writing / simulation | Verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in bake:
        frac = r["writing_fraction"]
        L.append(
            f"| {r['output']} | {r['vertices']} | {r['frames']} | {r['simulation_s']:.2f} | "
            f"{r['writing_s']:.3f} | {r['commit_s']:.3f} | {100 * frac:.1f}% | "
            f"{'PASS' if frac < 0.10 else 'MISS'} |"
        )
    return [*L, ""]


def s4_early(run: dict) -> list[tuple[int, float, int]]:
    """(particles, median ms, frames) of each S4 size over the frames the 1M run managed (like for like)."""
    rs = {r["scene"]: r for r in run["results"] if r.get("solver") == "ours" and r.get("times_ms")}
    if "S4-1M" not in rs:
        return []
    n = len(rs["S4-1M"]["times_ms"])
    out = []
    for k in ("S4-10k", "S4-100k", "S4-1M"):
        if k in rs and len(rs[k]["times_ms"]) >= n:
            out.append((rs[k]["particles"], float(np.median(rs[k]["times_ms"][:n])), n))
    return out


def _missed(run: dict) -> list[str]:
    """One line per missed target: by how much and, for time targets, where the time goes."""
    profs = {p.get("scene"): p for p in run.get("profiles") or [] if p.get("profile")}
    L = []
    for t in targets(run):
        if t["verdict"] != "MISS":
            continue
        line = f"- {t['target']}: {t['measured']} against {t['limit']} ({t['margin']})."
        p = profs.get(t["scene"]) if t["kind"] == "time" else None
        if p:
            top = "; ".join(f"`{r['function']}` {r['share']:.0%}" for r in p["profile"][:3])
            line += f" Largest own-time shares in the profile: {top}."
        L.append(line)
    if not L:
        return []
    return ["", "## Missed targets", "", *L]


def _profiles(run: dict) -> list[str]:
    """Where the time goes in scenes whose time target was missed (separate cProfile runs)."""
    profs = run.get("profiles") or []
    if not profs:
        return []
    L = [
        "",
        "## Where the time goes (scenes with a missed time target)",
        "",
        "cProfile of our solver's steps in a separate run (the profiler adds some overhead; shares matter,",
        "not absolute figures). Own time per function, the largest first.",
    ]
    for p in profs:
        if "error" in p or not p.get("profile"):
            L += ["", f"### {p.get('scene')}: profile failed: {p.get('error', 'no data')}"]
            continue
        L += [
            "",
            f"### {SCENE_TITLES.get(p['scene'], p['scene'])}: {p['ms_per_frame']:.0f} ms/frame under the "
            f"profiler, {p['frames']} frames",
            "",
            "| Function | ms/frame | share | calls |",
            "|---|---:|---:|---:|",
        ]
        for row in p["profile"]:
            L.append(
                f"| `{row['function']}` | {row['ms_per_frame']:.1f} | {row['share']:.0%} | {row['calls']} |"
            )
    return L


def _observations(run: dict) -> list[str]:
    """Sentences the numbers call for: a peer whose speed comes with broken quality, a scene cut short."""
    out = []
    for r in run["results"]:
        if r.get("ms_per_frame") is None:
            continue
        q = r["quality"]
        bad = []
        if q.get("max_stretch") is not None and q["max_stretch"] >= 0.15:
            bad.append(f"max edge stretch {q['max_stretch']:.0%} (last frame {q['final_stretch']:.0%})")
        if r["scene"] == "S1" and q["max_penetration"] > PENETRATION_TOL:
            bad.append(f"cloth vertices up to {q['max_penetration'] * 1e3:.0f} mm inside the sphere")
        if bad:
            out.append(f"- {r['scene']} {r['solver']}: {'; '.join(bad)}.")
    if out:
        out.insert(0, "Quality caveats behind the times (S1 limits: stretch < 15%, no penetration):")
        out.append("")
    return out


_METHOD = f"""## Method

- Scenes (benchmarks/scenes.py, one geometry for every solver): S1 a 65x65-vertex 2 m grid at z = 1 m
  dropped onto a UV sphere (32 segments, 16 rings) of radius 0.5 m at the origin; our cloth particle radius
  {scenes.S1_RADIUS * 100:.3g} cm (half the grid spacing). S2 125 cubes of 0.5 m on a 0.55 m pitch
  (5x5x5, lowest bottoms at z = 0.5 m) onto the ground plane z = 0; our particle radius 0.5/6 m (3x3x3
  particles per cube). S3 1000 grains of radius 5 cm on a 0.11 m pitch, lowest centres at z = 0.5 m. S4 the
  same lattice with 25x20x20, 50x50x40 and 100x100x100 grains.
- Timing: {scenes.FRAMES} frames at {scenes.FPS} fps; each frame timed alone (`World.step(1/24)` for ours,
  `scene.frame_set(f)` for Blender, frame 1 being the rest state, `TimeStepController.step` for pypbd);
  the median is reported. S1-S3 (the ratio targets) run 3 times, peers and ours alternating, and each
  solver's fastest run is kept (`--repeats`): other work on the shared machine only adds time, and one S1
  run measured 41 ms/frame at a busy moment against 27 ms minutes later. Quality figures are computed
  between frames, outside the timed region. S4 1M runs
  12 frames (its lowest grains land from frame 8 on, so its peak memory includes contacts; its time per
  frame is compared like for like with the first 12 frames of 10k and 100k under the results table). Our
  solver has a per-scene time budget (600 s of stepping); a scene that hits it reports the frames it ran.
- Blender's cloth and Bullet run multi-threaded, our solver mostly on one core (NumPy): when other work
  loads the shared machine the threaded peers lose more, so compare ratios from runs with a low load.
- Peak memory: `ru_maxrss` of the scene's own process (Python, NumPy and, for peers, Blender or pypbd
  included), in MB of 10^6 bytes; in brackets the growth over the process's peak before the scene was
  built (a bpy process is about 280 MB before any scene, a Python + NumPy one about 40 MB).
- Quality: max edge stretch = largest (length / rest length - 1) over the 8320 grid edges, over all frames;
  penetration = deepest cloth vertex inside the (convex) sphere mesh, or deepest point below the ground
  (lowest cube corner via the body transform, lowest sphere bottom), over all frames; lowest z likewise.
- Peers: Blender's Cloth modifier with default settings (quality 5, memory cache) on `primitive_grid_add`
  (64 subdivisions, size 2) with a Collision modifier on the sphere; Bullet rigid bodies (Blender defaults:
  10 substeps per frame, 10 iterations; box shapes for S2, sphere shapes for S3) on a passive ground box;
  pypbd (PositionBasedDynamics from PyPI, compiled C++) with distance + isometric bending constraints and
  the sphere as a static rigid body with a signed distance field, contact tolerance 0.015 m (Blender
  cloth's default collision distance, about our particle radius). One 1/24 s step per frame split into 5
  substeps with the library's default of 1 solver iteration each (the issue's configuration: the ratio
  target is against this run), plus a 20-iteration run as a quality reference. pypbd runs its OpenMP
  threads twice, with the default (busy) and with passive waiting (`OMP_WAIT_POLICY=PASSIVE`), and the
  faster median counts: busy waiting is faster on an idle machine but swung its times by 10x while other
  processes used the cores. At a 1/24 s frame this configuration does not hold the cloth (see the
  quality columns); its time is still the reference.
  Bullet bodies count as one "particle" each in the table.
- S5 is the `make demo` scene (docs/demo/make_demo.py: a pinned cloth hammock, two crates and a Suzanne,
  a block of sand, posts and ground as colliders), built by the demo's own `build_scene` through the
  add-on's operators and played in Blender: time per frame = `scene.frame_set(f)`, i.e. the add-on's
  frame handler stepping the World once and writing back to the objects (the notes give `World.step`
  alone), with the demo's own solver settings."""


# --------------------------------------------------------------------------------------------------------
# Plot


def plot(run: dict, path: Path) -> None:
    """Log-log time per frame against particle count (our particle count for each scene)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5.0), dpi=110)
    ours = {r["scene"]: r for r in run["results"] if r.get("solver") == "ours" and r.get("ms_per_frame")}
    s4 = [ours[k] for k in ("S4-10k", "S4-100k") if k in ours]
    if s4:
        xs = np.array([r["particles"] for r in s4], dtype=float)
        ys = np.array([r["ms_per_frame"] for r in s4])
        ax.plot(xs, ys, "o-", color="C0", label=f"ours, S4 grains ({s4[0]['frames']} frames)", zorder=3)
        ref = np.array([xs[0], xs[0] * 100])
        ax.plot(ref, ys[0] * ref / xs[0], ":", color="gray", label="linear (slope 1) from 10k")
    early = s4_early(run)
    if len(early) >= 2:
        n_early = early[0][2]
        ax.plot(
            [e[0] for e in early],
            [e[1] for e in early],
            "o--",
            mfc="white",
            color="C0",
            label=f"ours, S4 grains, first {n_early} frames (10k, 100k, 1M)",
            zorder=3,
        )
    marks = {
        "S1": ("s", "C1"),
        "S2": ("^", "C2"),
        "S3": ("D", "C3"),
        "S5": ("*", "C4"),
        "S7-10k": ("v", "C5"),
        "S7-100k": ("v", "C5"),
        "S8": ("p", "C6"),
    }
    for k, (mk, col) in marks.items():
        if k in ours:
            r = ours[k]
            label = f"ours, {SCENE_TITLES[k]}"
            if k.startswith("S7-"):  # one legend entry for both sizes
                label = (
                    "ours, S7 dam break (fluid)" if k == "S7-10k" or "S7-10k" not in ours else "_nolegend_"
                )
            ax.plot(r["particles"], r["ms_per_frame"], mk, color=col, ms=8, label=label)
    peer_marks = {
        "Blender cloth": ("s", "C1"),
        "pypbd": ("P", "C1"),
        "pypbd (20 iterations)": ("X", "C1"),
        "Bullet rigid": ("^", "C2"),
        "Bullet spheres": ("D", "C3"),
        "SPlisHSPlasH PBF": ("p", "C6"),
        "SPlisHSPlasH DFSPH": ("h", "C6"),
    }
    for r in run["results"]:
        if r.get("solver") in peer_marks and r.get("ms_per_frame") and r["scene"] in ours:
            mk, col = peer_marks[r["solver"]]
            ax.plot(
                ours[r["scene"]]["particles"],
                r["ms_per_frame"],
                mk,
                mfc="none",
                mec=col,
                mew=1.6,
                ms=9,
                label=f"{r['solver']} ({r['scene']})",
            )
    ax.plot([5e4, 2e5], [600, 600], "--", color="C0", lw=1.0, label="S4 target: 100k grains <= 0.6 s/frame")
    if "S7-100k" in ours:
        ax.plot(
            [5e4, 2e5],
            [FLUID_100K_LIMIT_MS] * 2,
            "--",
            color="C5",
            lw=1.0,
            label="S7 target: 100k fluid <= 3 s/frame",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("particles (our solver's count for the scene)")
    ax.set_ylabel("time per frame, median (ms)")
    title = "Unified Particles: time per frame (1/24 s) vs particle count"
    if run.get("quick"):
        title += " [quick run]"
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best", framealpha=0.9)
    else:
        ax.text(0.5, 0.5, "no results", transform=ax.transAxes, ha="center")
    m = run["machine"]
    fig.text(0.99, 0.01, f"{m['cpu']}, {m['cores']} cores, {m['date']}", ha="right", fontsize=6, color="gray")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--ablations-only",
        action="store_true",
        help="refresh only the ablations section (after python -m benchmarks.ablations)",
    )
    ap.add_argument("--doc", default=str(DOC), help="report to update (default: docs/performance.md)")
    args = ap.parse_args(argv)
    if not args.ablations_only:
        ap.error("the full report is written by `python -m benchmarks.run`; here only --ablations-only")
    doc = Path(args.doc)
    refresh_ablations(doc)
    print(f"refreshed the ablations section of {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
