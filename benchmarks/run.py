"""`make bench`: standard scenes (issue 8), our solver and the peers; prints ratios, writes the report.

    python -m benchmarks.run            full run: 48 frames at 24 fps, S4 up to 1M grains;
                                        writes docs/performance.md and docs/images/perf_scaling.png
    python -m benchmarks.run --quick    smoke run: 12 frames, no 1M; writes into benchmarks/results/ only
    python -m benchmarks.run --only S1,S4-10k --no-peers   a subset (report goes to benchmarks/results/)
    python -m benchmarks.run --only S7-10k,S7-100k,S8       the fluids (issue 13) with their peers

Every scene runs in a fresh subprocess (our solver: benchmarks/ours.py; Blender's cloth and Bullet:
benchmarks/peers_blender.py through bpy; pypbd: benchmarks/peers_pypbd.py; S5, the demo scene through the
add-on: benchmarks/demo_s5.py; SPlisHSPlasH and Mantaflow on the S8 dam break:
benchmarks/peers_splishsplash.py, benchmarks/peers_mantaflow.py), one after another, so peak
memory is per scene and runs do not compete for the two cores. Raw results go to
benchmarks/results/latest.json. A full run then switches each optimisation off in turn
(benchmarks/ablations.py, skip with --no-ablations; under both NumPy 1.26 and, when .venv52 exists,
NumPy 2.5) for the "What each optimisation bought" table,
and times writing a bake of a 100k-vertex cloth (benchmarks/bench_bake.py, skip with --no-bake). Last, it
runs issue 24's experiments against their references at 4 and 16 substeps (benchmarks/experiments.py, skip
with --no-experiments: the report then keeps the previous table), and issue 25's liquid tables: the cost per
frame of each part of a liquid's look at 100k particles and the surge front against Martin and Moyce
(benchmarks/liquid_look.py, benchmarks/surge_front.py; skip with --no-liquid, run alone with --only LIQUID).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import ablations, demo_s5, experiments, liquid_look, report
from benchmarks.common import Job, run_worker

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "performance.md"
PNG = ROOT / "docs" / "images" / "perf_scaling.png"


# Scenes whose targets are ratios to a peer: run several times, alternating, fastest run kept. S2-auto
# too (its target is a ratio to S2's Bullet): run once against S2's fastest of three it read 16-20 %
# slower, though both run the same arithmetic (same particles, same radius, same call counts).
RATIO_SCENES = ("S1", "S2", "S2-auto", "S3")


# pypbd parallelises with OpenMP. Its default busy-waiting threads are fastest on an idle machine but
# swung its times by 10x while other work used the cores; passive waiting is steadier but slower when
# idle. Each pypbd run is done both ways and the faster median counts (the peer's best case).
PYPBD_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}
PYPBD_VARIANTS: tuple[dict[str, str], ...] = ({}, PYPBD_ENV)
# SPlisHSPlasH is OpenMP-parallel too: the same two runs, the faster counts.
OPENMP_PEERS = ("benchmarks.peers_pypbd", "benchmarks.peers_splishsplash")

# Fluids (issue 13). S7-100k and S8 run one second of the dam break (24 frames: the column collapses and
# the surge crosses the tank; at 100k about 2 minutes at the 3 s/frame aim, the per-scene budget stops it
# earlier if it is slower); S7-10k the standard 48 frames. The cProfile run of our fluid step at 100k (for
# the report's "what limits the ratio") profiles a few frames.
S7_100K_FRAMES = 24
S8_FRAMES = 24
FLUID_PROFILE_FRAMES = 4


def jobs(quick: bool, peers: bool, only: set[str] | None, budget: float, frames_1m: int) -> list[Job]:
    f = 12 if quick else 48
    fr = ["--frames", str(f)]
    out: list[Job] = []
    if peers:
        out += [
            Job("S1", "Blender cloth", "benchmarks.peers_blender", ["S1", *fr], 900),
            Job("S1", "pypbd", "benchmarks.peers_pypbd", ["S1", *fr, "--substeps", "5"], 600, PYPBD_ENV),
            Job(
                "S1",
                "pypbd (20 iterations)",
                "benchmarks.peers_pypbd",
                ["S1", *fr, "--substeps", "5", "--iterations", "20"],
                600,
                PYPBD_ENV,
            ),
            Job("S2", "Bullet rigid", "benchmarks.peers_blender", ["S2", *fr], 600),
            Job("S3", "Bullet spheres", "benchmarks.peers_blender", ["S3", *fr], 900),
        ]
    b = ["--budget", str(budget)]
    out += [
        Job("S1", "ours", "benchmarks.ours", ["S1", *fr, *b], budget + 600),
        Job("S2", "ours", "benchmarks.ours", ["S2", *fr, *b], budget + 600),
        # Issue 22: S2 with Auto particle sizes (the world at the UI default); its peer is S2's Bullet run.
        Job("S2-auto", "ours", "benchmarks.ours", ["S2-auto", *fr, *b], budget + 600),
        Job("S3", "ours", "benchmarks.ours", ["S3", *fr, *b], budget + 600),
        Job("S4-10k", "ours", "benchmarks.ours", ["S4-10k", *fr, *b], budget + 600),
        Job("S4-100k", "ours", "benchmarks.ours", ["S4-100k", *fr, *b], budget + 900),
    ]
    if not quick:
        out.append(
            Job("S4-1M", "ours", "benchmarks.ours", ["S4-1M", "--frames", str(frames_1m), *b], budget + 1800)
        )
    # S5: the demo scene of `make demo`, played through the add-on in Blender (skipped with a note if the
    # demo script is missing).
    out.append(Job("S5", "ours", "benchmarks.demo_s5", fr, budget + 900))
    out.append(Job("S6", "ours", "benchmarks.ours", ["S6", *fr, *b], budget + 600))
    # Mixed sizes (issue 22): sand and rocks 10x apart, and the same scene at one size.
    out.append(Job("S9", "ours", "benchmarks.ours", ["S9", *fr, *b], budget + 600))
    out.append(Job("S9-one", "ours", "benchmarks.ours", ["S9-one", *fr, *b], budget + 600))
    # Hair (issue 27): 1,000 strands of 32 points on a turning head (benchmarks/hair_scene.py).
    out.append(Job("HAIR", "ours", "benchmarks.ours", ["HAIR", *fr, *b], budget + 600))
    # Soft bodies (issue 26): six Jelly cubes on stairs.
    out.append(Job("S10", "ours", "benchmarks.ours", ["S10", *fr, *b], budget + 900))
    # Tearing cloth (issue 27): a 100 x 100 sheet torn by a ball.
    out.append(Job("S11", "ours", "benchmarks.ours", ["S11", *fr, *b], budget + 900))
    # Fluids (issue 13): the dam breaks of benchmarks/scenes.py.
    f100k = min(f, S7_100K_FRAMES)
    f8 = ["--frames", str(min(f, S8_FRAMES))]
    out += [
        Job("S7-10k", "ours", "benchmarks.ours", ["S7-10k", *fr, *b], budget + 600),
        Job("S7-100k", "ours", "benchmarks.ours", ["S7-100k", "--frames", str(f100k), *b], budget + 1200),
        Job("S8", "ours", "benchmarks.ours", ["S8", *f8, *b], budget + 900),
        # Like for like with SPlisHSPlasH's PBF (one density iteration per small step; issue 25).
        Job("S8", "ours, 1 density pass", "benchmarks.ours", ["S8", "--passes", "1", *f8, *b], budget + 900),
    ]
    if peers:
        out += [
            Job("S8", "SPlisHSPlasH PBF", "benchmarks.peers_splishsplash", ["S8", *f8], 1800, PYPBD_ENV),
            Job(
                "S8",
                "SPlisHSPlasH DFSPH",
                "benchmarks.peers_splishsplash",
                ["S8", *f8, "--method", "DFSPH"],
                1800,
                PYPBD_ENV,
            ),
            Job("S8", "Blender Mantaflow", "benchmarks.peers_mantaflow", ["S8", *f8], 900),
        ]
    # peers and ours of one scene back to back, so a change in machine load hits both sides of a ratio alike
    order = [
        "S1",
        "S2",
        "S2-auto",
        "S3",
        "S4-10k",
        "S4-100k",
        "S4-1M",
        "S5",
        "S6",
        "S7-10k",
        "S7-100k",
        "S8",
        "S9",
        "S9-one",
        "HAIR",
        "S10",
        "S11",
    ]
    out.sort(key=lambda j: order.index(j.scene))
    if only:
        out = [j for j in out if j.scene in only]
    return out


def run_job(job: Job) -> dict:
    if job.module in OPENMP_PEERS and job.env == PYPBD_ENV:
        runs = [
            _run_job(Job(job.scene, job.solver, job.module, job.args, job.timeout, env))
            for env in PYPBD_VARIANTS
        ]
        ok = [r for r in runs if r.get("ms_per_frame") is not None]
        if not ok:
            return runs[0]
        best = min(ok, key=lambda r: r["ms_per_frame"])
        both = ", ".join(
            f"{'passive' if r is runs[1] else 'default (busy)'} waiting {r['ms_per_frame']:.1f} ms"
            for r in ok
        )
        best["notes"] += f"; OpenMP {both}: the faster counts"
        return best
    return _run_job(job)


def _run_job(job: Job) -> dict:
    if job.module == "benchmarks.demo_s5" and not demo_s5.DEMO_SCRIPT.is_file():
        rel = demo_s5.DEMO_SCRIPT.relative_to(ROOT)
        return {"scene": job.scene, "solver": job.solver, "skipped": f"no demo scene yet ({rel} not found)"}
    return run_worker(job)


def bake_cost() -> list[dict] | dict:
    """benchmarks/bench_bake.py in its own process: the bake's writing time next to its simulation."""
    out = RESULTS_DIR / "bench_bake.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_bake.py"), "--json", str(out)]
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 1800 s"}
    if not out.exists():
        tail = " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:])
        return {"error": f"exit {p.returncode}: {tail}"[-600:]}
    print(p.stdout.strip(), flush=True)
    results: list[dict] = json.loads(out.read_text())
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="12 frames, skip 1M grains, do not touch docs/")
    ap.add_argument("--no-peers", action="store_true", help="our solver only")
    ap.add_argument("--only", default="", help="comma-separated scenes, e.g. S1,S4-10k")
    ap.add_argument(
        "--budget", type=float, default=600.0, help="max seconds of stepping per scene for our solver"
    )
    ap.add_argument("--frames-1m", type=int, default=12, help="frames for the 1M-grain scene (default 12)")
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile runs of missed time targets")
    ap.add_argument("--no-ablations", action="store_true", help="skip benchmarks/ablations.py in a full run")
    ap.add_argument("--no-bake", action="store_true", help="skip benchmarks/bench_bake.py in a full run")
    ap.add_argument(
        "--no-experiments", action="store_true", help="skip benchmarks/experiments.py in a full run"
    )
    ap.add_argument(
        "--no-liquid", action="store_true", help="skip issue 25's liquid tables (liquid_look, surge_front)"
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs of each ratio scene (S1-S3, S2-auto), fastest kept (default 3)",
    )
    ap.add_argument(
        "--resume", action="store_true", help="keep the results already in benchmarks/results/progress.jsonl"
    )
    ap.add_argument("--out", default="", help="report path (default: docs/performance.md for a full run)")
    args = ap.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()} or None
    full = not args.quick and not only and not args.no_peers
    todo = jobs(args.quick, not args.no_peers, only, args.budget, args.frames_1m)

    t_start = time.perf_counter()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    machine = report.machine_info()
    print(f"Unified Particles benchmarks ({'quick' if args.quick else 'full'}): {len(todo)} runs")
    print(f"machine: {machine['cpu']}, {machine['cores']} cores, load {machine['load']}")
    results = []
    # Each result is appended to progress.jsonl as it comes, so a run that stops part way (a crash in the
    # report, a closed terminal) can go on with --resume instead of measuring 40 minutes again.
    progress = RESULTS_DIR / "progress.jsonl"
    done: dict[tuple[str, str], dict] = {}
    if args.resume and progress.is_file():
        for line in progress.read_text().splitlines():
            r = json.loads(line)
            done[(r.get("scene"), r.get("solver"))] = r
    elif progress.is_file():
        progress.unlink()
    for k, job in enumerate(todo, 1):
        print(f"[{k}/{len(todo)}] {job.scene:8s} {job.solver:22s} ...", end=" ", flush=True)
        res = done.get((job.scene, job.solver))
        if res is None:
            res = run_job(job)
            with progress.open("a") as fh:
                fh.write(json.dumps(res) + "\n")
        else:
            print("(from progress.jsonl)", end=" ")
        results.append(res)
        print(report.one_line(res), flush=True)
    if args.repeats > 1:
        # The ratio scenes again, peers and ours alternating, keeping each solver's fastest run: other
        # work on the shared machine only ever adds time (one S1 run measured 41 ms/frame at a busy
        # moment against 27 ms minutes later), and alternating exposes both sides of a ratio alike.
        again = [i for i, j in enumerate(todo) if j.scene in RATIO_SCENES]
        for rep in range(2, args.repeats + 1):
            for i in again:
                job = todo[i]
                print(f"[run {rep}] {job.scene:8s} {job.solver:22s} ...", end=" ", flush=True)
                res = run_job(job)
                print(report.one_line(res), flush=True)
                best = results[i]
                if res.get("ms_per_frame") is not None and (
                    best.get("ms_per_frame") is None or res["ms_per_frame"] < best["ms_per_frame"]
                ):
                    results[i] = res
        for i in again:
            if results[i].get("ms_per_frame") is not None:
                results[i]["notes"] = (results[i].get("notes") or "") + f"; fastest of {args.repeats} runs"

    machine["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    run = {"quick": args.quick, "machine": machine, "results": results}
    if not args.no_profile and any(j.scene == "S7-100k" for j in todo):
        # Where our fluid step spends its time at 100k (the report's "what limits the ratio").
        frames = ["--frames", str(FLUID_PROFILE_FRAMES)]
        job = Job("S7-100k", "ours", "benchmarks.ours", ["S7-100k", "--profile", *frames], 1800)
        print(f"[profile] {job.scene:8s} ours (fluid step) ...", end=" ", flush=True)
        res = run_job(job)
        run["fluid_profile"] = res
        top = (res.get("profile") or [{}])[0]
        print(f"top: {top.get('function', res.get('error', '?'))} {top.get('share', 0):.0%}", flush=True)
    if not args.quick and not args.no_profile:
        missed = sorted(
            {t["scene"] for t in report.targets(run) if t["verdict"] == "MISS" and t["kind"] == "time"}
        )
        profiles = []
        for scene in missed:
            if scene == "S7-100k" and "fluid_profile" in run:
                profiles.append(run["fluid_profile"])  # profiled just above
                continue
            job = Job(scene, "ours", "benchmarks.ours", [scene, "--profile", "--budget", "120"], 900)
            print(f"[profile] {scene:8s} ours ...", end=" ", flush=True)
            res = run_job(job)
            profiles.append(res)
            top = (res.get("profile") or [{}])[0]
            print(f"top: {top.get('function', res.get('error', '?'))} {top.get('share', 0):.0%}", flush=True)
        run["profiles"] = profiles
    if full and not args.no_bake:
        print("[bake] writing a bake of a 100k-vertex cloth (benchmarks/bench_bake.py) ...", flush=True)
        run["bake"] = bake_cost()
    if full and not args.no_ablations:
        # Under every NumPy the add-on meets: this interpreter (.venv, NumPy 1.26) and Blender 5.2's
        # (.venv52, NumPy 2.5, when `make env52` has made it), runs alternating, one column pair each.
        pythons = ablations.default_pythons()
        print(
            f"[ablations] each optimisation switched off in turn (benchmarks/ablations.py), "
            f"{len(pythons)} interpreter(s) ...",
            flush=True,
        )
        ablations.main([arg for py in pythons for arg in ("--python", py)])
    raw = RESULTS_DIR / (
        "latest.json" if full else "latest-quick.json" if args.quick else "latest-partial.json"
    )
    raw.write_text(json.dumps(run, indent=1))
    print()
    print(report.console_summary(run))

    if args.out:
        doc = Path(args.out)
        png = doc.parent / "perf_scaling.png"
    elif full:
        doc, png = DOC, PNG
    else:
        doc = RESULTS_DIR / ("performance-quick.md" if args.quick else "performance-partial.md")
        png = RESULTS_DIR / "perf_scaling.png"
    doc.parent.mkdir(parents=True, exist_ok=True)
    png.parent.mkdir(parents=True, exist_ok=True)
    if full:
        report.append_history(run)
    report.plot(run, png)
    kept = experiments.keep(doc)  # the last experiments table, carried over if they are not run now
    kept_liquid = liquid_look.keep(doc)  # and the last liquid tables
    doc.write_text(report.markdown(run, os.path.relpath(png, doc.parent)))
    if (full and not args.no_liquid) or (only and "LIQUID" in only):
        print(
            "[liquid] the liquid's look at 100k, the surge front (benchmarks/liquid_look.py) ...", flush=True
        )
        liquid_look.insert(doc, liquid_look.section(args.quick))
    elif kept_liquid is not None:
        liquid_look.insert(doc, kept_liquid)
    if full and not args.no_experiments:
        print("[experiments] issue 24's experiments against their references (benchmarks/experiments.py)")
        experiments.main(["--doc", str(doc)])
    elif kept is not None:
        experiments.insert(doc, kept)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")
    print(f"wrote {doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc}, {png.name}; raw: {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
