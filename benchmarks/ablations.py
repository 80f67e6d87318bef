"""What each optimisation buys: switch one off, run the scene, compare with everything on, same run.

    python -m benchmarks.ablations [--frames N] [--only LEVER,...] [--repeats N] [--python PATH ...]
    python -m benchmarks.ablations --python .venv/bin/python --python .venv52/bin/python
    python -m benchmarks.ablations --from-json     (rewrite the table from the last results, no runs)

Each lever below is a choice the solver makes for speed (or for convergence per unit of time). A run
starts each scene once as shipped and once with one lever replaced by the plain NumPy way (the code
that was there before, or the obvious alternative), in fresh subprocesses of ``benchmarks.ours`` with
``--ablate LEVER``, one after the other. Several levers were chosen for NumPy 1.26's slow paths, and
Blender 5.2 bundles NumPy 2.5, so every lever runs under each interpreter given by ``--python`` (by
default this one and .venv52's when it exists), the runs of all interpreters and both sides alternating;
the table has one column group per NumPy version. The table goes to benchmarks/results/ablations.md
(and .json); ``make bench`` runs this too and copies the table into docs/performance.md
(``python -m benchmarks.report --ablations-only`` copies it alone). The replacements live only here:
the solver has no switches for them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import Job, run_worker

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"


def _plain_reductions() -> None:
    """fastops' column/row helpers back to NumPy's axis reductions (numpy 1.26's slow generic loop)."""
    from unified_particles.core import divergence, neighbors, pair_cache, solver
    from unified_particles.core.colliders import binning, sweeps, volume

    solver.column_max = lambda x: x.max(axis=0)  # type: ignore[assignment]
    solver.column_min = lambda x: x.min(axis=0)  # type: ignore[assignment]
    divergence.row_abs_max = lambda x: np.abs(x).max(axis=1, initial=0.0)  # type: ignore[assignment]
    neighbors.column_max = lambda x: x.max(axis=0)  # type: ignore[attr-defined]
    neighbors.column_min = lambda x: x.min(axis=0)  # type: ignore[attr-defined]
    pair_cache.column_max = lambda x: x.max(axis=0)  # type: ignore[assignment]
    pair_cache.column_min = lambda x: x.min(axis=0)  # type: ignore[assignment]
    for module in (binning, sweeps, volume):  # the collider modules that use it
        module.rows_all = lambda m: m.all(axis=1)  # type: ignore[attr-defined]


def _search_every_step() -> None:
    """No reuse of neighbour candidates: search every small step (margin ~0, so any motion rebuilds)."""
    from unified_particles.core import world

    original = world.World.__init__

    def init(self: Any, *args: Any, **kw: Any) -> None:
        kw["collision_margin"] = 1e-9
        original(self, *args, **kw)

    world.World.__init__ = init  # type: ignore[method-assign]


def _no_collider_near_cache() -> None:
    """Mesh colliders re-test every particle against the bounding box and coarse SDF each small step."""
    from unified_particles.core.colliders import volume

    cls = volume.VolumeContacts
    original = cls.near_points

    def near(self: Any, q: Any, reach: float, cache: Any, cacheable: bool) -> Any:
        return original(self, q, reach, cache, False)

    cls.near_points = near  # type: ignore[method-assign]


def _jacobi_stretch() -> None:
    """Cloth stretch by Jacobi averaging (paper Eq. 11) instead of graph-coloured Gauss-Seidel."""
    from unified_particles.core import bending, distance, solver

    def solvers(self: Any, h: float) -> list[Any]:
        cache, model, omega = self._solver_cache, self.model, self.settings.relaxation
        if h not in cache:
            out: list[Any] = []
            if len(model.bend):
                out.append(distance.JacobiSolver(model.bend, model.particle_inv_mass, h, omega))
            if len(model.bend_isometric):  # isometric bending and its limits as in the solver
                out.append(bending.BendingSolver(model.bend_isometric, model.particle_inv_mass, h))
            if len(model.stretch):
                out.append(distance.JacobiSolver(model.stretch, model.particle_inv_mass, h, omega))
            if len(model.stretch_limit):
                limit = model.stretch_limit
                out.append(distance.GaussSeidelSolver(limit, model.particle_inv_mass, h, unilateral=True))
            cache[h] = out
        return list(cache[h])

    solver.Solver._distance_solvers = solvers  # type: ignore[method-assign]


def _add_at_accumulation() -> None:
    """Jacobi sums with ``np.add.at`` on (N, 3) rows instead of one flat ``np.bincount``."""
    from unified_particles.core import contact_pass, distance

    def jacobi_solve(self: Any, x: Any) -> None:
        xab = x[self.ab]
        d = xab[: self.m] - xab[self.m :]
        dist = np.sqrt(np.einsum("ij,ij->i", d, d))
        d *= (self.rest / np.maximum(dist, 1e-12) - 1.0)[:, None]
        np.add.at(x, self.ab, self.k[:, None] * np.concatenate([d, d]))

    exact = contact_pass.apply_pair_jacobi

    def pair_jacobi(x: Any, idx: Any, delta: Any, omega: float, share: Any = None) -> None:
        if share is not None:  # several sizes: counted by mass (corrections.py), not ablated
            exact(x, idx, delta, omega, share)
            return
        count = np.bincount(idx, minlength=len(x))
        k = len(idx) // 2
        scale = omega / np.maximum(count[idx[:k]], count[idx[k:]])
        np.add.at(x, idx, delta.T * np.concatenate([scale, scale])[:, None])

    distance.JacobiSolver.solve = jacobi_solve  # type: ignore[method-assign]
    contact_pass.apply_pair_jacobi = pair_jacobi


def _fancy_index_gather() -> None:
    """Coloured stretch solve with ``x[ab]`` fancy indexing instead of ``np.take`` and flat stores."""
    from unified_particles.core import distance

    def solve(self: Any, x: Any) -> None:
        for ab, _flat, ka, kb, rest in self.colours:
            m = len(rest)
            xab = x[ab]
            d = xab[:m] - xab[m:]
            dist = np.sqrt(np.einsum("ij,ij->i", d, d))
            d *= (rest / np.maximum(dist, 1e-12) - 1.0)[:, None]
            xab[:m] += ka[:, None] * d
            xab[m:] -= kb[:, None] * d
            x[ab] = xab

    distance.GaussSeidelSolver.solve = solve  # type: ignore[method-assign]


def _every_core() -> None:
    """The per-step passes on the thread pool, every core (``threads=None``; the default is one thread)."""
    from unified_particles.core import world

    original = world.World.__init__

    def init(self: Any, *args: Any, **kw: Any) -> None:
        kw["threads"] = None
        original(self, *args, **kw)

    world.World.__init__ = init  # type: ignore[method-assign]


def _full_search_only() -> None:
    """No per-particle refresh of the neighbour candidates: a full search whenever motion exceeds it."""
    from unified_particles.core import solver

    solver.INCREMENTAL_MIN_PARTICLES = 2**62


# name -> (what is switched off, the plain replacement's patch, scenes it matters in)
LEVERS: dict[str, tuple[str, Callable[[], None], tuple[str, ...]]] = {
    "column-reductions": (
        "Column-wise min/max over (N, 3) arrays (`core/fastops.py`) instead of `x.max(axis=0)`",
        _plain_reductions,
        ("S2", "S4-10k"),
    ),
    "contact-reuse": (
        "Neighbour candidates with a margin, rebuilt only when motion exceeds it, instead of a search "
        "every small step",
        _search_every_step,
        ("S3", "S4-10k"),
    ),
    "candidate-refresh": (
        "Neighbour candidates refreshed for the particles that moved beyond half the margin only "
        "(`Solver._refresh_candidates`), instead of a full search whenever one did",
        _full_search_only,
        ("S4-100k",),
    ),
    "collider-near-cache": (
        "Mesh collider: the particles near it are cached while nothing moved a radius, instead of "
        "testing every particle each small step",
        _no_collider_near_cache,
        ("S1",),
    ),
    "stretch-gauss-seidel": (
        "Cloth stretch by graph-coloured Gauss-Seidel instead of Jacobi averaging",
        _jacobi_stretch,
        ("S1",),
    ),
    "bincount-accumulation": (
        "Jacobi sums by `np.bincount`, coordinate-major, instead of `np.add.at` on (m, 3) rows",
        _add_at_accumulation,
        ("S1", "S3"),
    ),
    "thread-pool": (
        "Neighbour search and particle contacts of large scenes in fixed chunks on a thread pool (every "
        "core, `threads=None`; `core/parallel.py`, bit-identical results) instead of one thread",
        _every_core,
        ("S4-100k",),
    ),
    "take-gather": (
        "Coloured stretch solve gathers with `np.take`, computes coordinate-major and stores flat, instead "
        "of `x[ab]` fancy indexing on (m, 3) rows",
        _fancy_index_gather,
        ("S1",),
    ),
}


# Levers that ship switched off (opt-in): their patch switches them on, so the shipped run is the
# "without" side. The thread pool is opt-in until it pays at least 1.3x on 2 cores (issue 22: it measured
# 0.94-0.97x on S4-100k).
OPT_IN = frozenset({"thread-pool"})


def apply(name: str) -> None:
    """Patch the solver in this process so that lever ``name`` is switched off."""
    if name not in LEVERS:
        raise SystemExit(f"unknown lever {name!r}; one of {', '.join(LEVERS)}")
    LEVERS[name][1]()


def default_pythons() -> list[str]:
    """The interpreters a full ``make bench`` measures the levers under.

    This one (``make bench`` runs .venv: Python 3.11, NumPy 1.26, as Blender 4.2 to 5.0 bundle) and Blender
    5.2's (.venv52: Python 3.13, NumPy 2.5, made by ``make env52``) when that environment exists.
    """
    out = [sys.executable]
    v52 = ROOT / ".venv52"
    python52 = v52 / "bin" / "python"
    if python52.exists() and os.path.realpath(v52) != os.path.realpath(sys.prefix):
        out.append(str(python52))
    return out


_PROBE = "import json, platform, numpy; print(json.dumps([platform.python_version(), numpy.__version__]))"


def interpreter(python: str) -> dict:
    """Python and NumPy versions of an interpreter, asked in a subprocess; ``label`` heads its columns."""
    try:
        p = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SystemExit(f"{python}: cannot run it: {e}") from e
    if p.returncode != 0:
        raise SystemExit(f"{python}: cannot import numpy: {p.stderr.strip()[-300:]}")
    py, npv = json.loads(p.stdout.strip().splitlines()[-1])
    label = f"NumPy {npv} (Python {'.'.join(py.split('.')[:2])})"
    return {"python": python, "python_version": py, "numpy": npv, "label": label}


def _run(scene: str, frames: int, lever: str | None, python: str | None = None) -> dict:

    args = [scene, "--frames", str(frames)] + (["--ablate", lever] if lever else [])
    solver = "ours" if lever is None else f"ours without {lever}"
    return run_worker(Job(scene, solver, "benchmarks.ours", args, 1800, python=python))


def _cell(res: dict) -> str:
    ms = res.get("ms_per_frame")
    return "failed" if ms is None else f"{ms:.1f}"


# A speed-up within this fraction of 1 counts as no difference: alternating runs on the shared 2-core
# machine still moved single medians by a few percent.
NOISE = 0.05


def _speedup(col: dict) -> float | None:
    a, b = col["without"].get("ms_per_frame"), col["with"].get("ms_per_frame")
    return a / b if a and b else None


def _median_speedup(col: dict) -> float | None:
    """Without / with from the medians of all runs of each side (the cells keep the fastest run)."""
    a, b = col.get("without_runs_ms") or [], col.get("with_runs_ms") or []
    if not a or not b or None in a or None in b:
        return None
    return statistics.median(a) / statistics.median(b)


def _reading(ratio: float) -> str:
    if ratio >= 1 + NOISE:
        return "faster"
    if ratio <= 1 / (1 + NOISE):
        return "slower"
    return f"within {NOISE:.0%}"


def _verdict(col: dict) -> str:
    """faster, slower or within NOISE if the fastest runs and the medians of all runs agree; else unclear."""
    best = _speedup(col)
    if best is None:
        return "failed"
    readings = {_reading(r) for r in (best, _median_speedup(col)) if r is not None}
    return readings.pop() if len(readings) == 1 else "unclear"


def _short(col: dict) -> str:
    """'NumPy 1.26' from NumPy 1.26.4: the verdict column names versions by major.minor."""
    return "NumPy " + ".".join(str(col["numpy"]).split(".")[:2])


def _shipped_choice(cols: list[dict]) -> str:
    """Whether the shipped choice is faster, slower or no different under each NumPy version."""
    verdicts = [_verdict(c) for c in cols]
    if len(cols) == 1:
        return verdicts[0]
    if len(set(verdicts)) == 1:
        return f"{verdicts[0]} on {'both' if len(cols) == 2 else 'all'}"
    return ", ".join(f"{v} on {_short(c)}" for v, c in zip(verdicts, cols, strict=True))


def _note(r: dict) -> str:
    """S1's cloth stretch with and without the lever (per NumPy version only where they differ)."""
    if r["scene"] != "S1":
        return ""
    notes = []
    for c in r["columns"]:
        off, on = c["without"].get("quality") or {}, c["with"].get("quality") or {}
        if off.get("max_stretch") is None or on.get("max_stretch") is None:
            notes.append("")
            continue
        notes.append(
            f"max stretch {off['max_stretch'] * 100:.0f}% without, {on['max_stretch'] * 100:.0f}% with "
            f"(last frame {off['final_stretch'] * 100:.0f}% / {on['final_stretch'] * 100:.0f}%)"
        )
    if len(set(notes)) == 1:
        return notes[0]
    return "; ".join(f"{_short(c)}: {n}" for c, n in zip(r["columns"], notes, strict=True) if n)


def markdown(
    rows: list[dict], frames: int, repeats: int, pythons: list[dict], measured: dict | None = None
) -> str:
    labels = [p["label"] for p in pythons]
    when = ""
    if measured:
        when = (
            f" on {measured['date']} (load average {measured['load']} at start, "
            f"{measured.get('load_end', '?')} at end)"
        )
    lines = [
        f"Measured by `python -m benchmarks.ablations`{when} (a full `make bench` runs it): each "
        f"optimisation switched off alone, everything else as shipped; {repeats} runs of each side under "
        f"each interpreter, {frames} frames each; a cell is the fastest run's median ms/frame (other work "
        "on the machine only adds time), and a speed-up is without / with from those cells.",
        "",
    ]
    if len(pythons) > 1:
        lines += [
            f"One column group per NumPy version: {', '.join(labels)}. Blender 4.2 to 5.0 bundle NumPy 1.26, "
            "Blender 5.2 bundles NumPy 2.5, and several levers were chosen for NumPy 1.26's slow paths "
            "(the coordinate-major ones: (3, m) arrays, `np.bincount` and flat stores instead of (m, 3) "
            "rows), so every lever is measured under each. A speed-up above 1 means the shipped choice is "
            "the faster one under that NumPy, below 1 that the plain alternative would be. Both "
            "interpreters and both sides alternate run by run, in reversed order every other round, so a "
            "change in machine load hits every column alike. *Shipped choice* reads each speed-up twice, "
            "from the fastest runs (the cells) and from the medians of all runs of each side: faster, "
            f"slower, or within {NOISE:.0%} of 1 (no difference on this shared machine) when both readings "
            "agree, *unclear* when they do not (the noise is larger than the effect).",
            "",
        ]
    else:
        lines += [
            f"One NumPy version only ({labels[0]}): with Blender 5.2's environment (`make env52`) present, "
            "`make bench` adds a column group for NumPy 2.5.",
            "",
        ]
    head = ["Optimisation", "Scene"]
    for label in labels:
        head += [f"{label}: without (ms/frame)", f"{label}: with (ms/frame)", f"{label}: speed-up"]
    head += ["Shipped choice", "Note"]
    lines += ["| " + " | ".join(head) + " |", "|---|---|" + "---:|---:|---:|" * len(labels) + "---|---|"]
    for r in rows:
        cells = [r["what"], r["scene"]]
        for c in r["columns"]:
            ratio = _speedup(c)
            cells += [_cell(c["without"]), _cell(c["with"]), "-" if ratio is None else f"{ratio:.2f}x"]
        choice = _shipped_choice(r["columns"])
        if r.get("lever") in OPT_IN:
            choice = f"off by default (opt-in); with it: {choice}"
        cells += [choice, _note(r)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _best_run(runs: list[dict]) -> dict:
    """The fastest run (its quality figures come along); a failed run if any failed.

    Other work on the shared machine only ever adds time, so the fastest of several alternating runs
    is the steadiest estimate of what a lever costs (medians of 3 still swung by 20% on S1).
    """
    failed = [r for r in runs if r.get("ms_per_frame") is None]
    if failed:
        return failed[0]
    return min(runs, key=lambda r: r["ms_per_frame"])


def _measure(lever: str, scene: str, frames: int, repeats: int, pythons: list[dict]) -> list[dict]:
    """One column per interpreter: fastest run with the lever and without it, and every run's median."""
    runs: dict[tuple[int, str], list[dict]] = {(k, s): [] for k in range(len(pythons)) for s in ("on", "off")}
    for rep in range(repeats):
        # Alternate interpreters and sides, reversing the order every other round (A-on A-off B-on B-off,
        # then B-off B-on A-off A-on), so that a change in machine load hits every column alike.
        order = [(k, s) for k in range(len(pythons)) for s in ("on", "off")]
        for k, side in order[::-1] if rep % 2 else order:
            lever_off = lever if side == "off" else None
            runs[(k, side)].append(_run(scene, frames, lever_off, pythons[k]["python"]))
    cols = []
    for k, py in enumerate(pythons):
        col = {key: py[key] for key in ("label", "numpy", "python_version", "python")}
        on, off = ("off", "on") if lever in OPT_IN else ("on", "off")  # opt-in: the patch switches it on
        col["with"], col["without"] = _best_run(runs[(k, on)]), _best_run(runs[(k, off)])
        col["with_runs_ms"] = [r.get("ms_per_frame") for r in runs[(k, on)]]
        col["without_runs_ms"] = [r.get("ms_per_frame") for r in runs[(k, off)]]
        cols.append(col)
    return cols


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5, help="runs of each side, alternating (default 5)")
    ap.add_argument("--only", default="", help="comma-separated levers")
    ap.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="PATH",
        help="interpreter to measure under, repeatable: one column group each, runs alternating "
        "(default: this one, and .venv52's if it exists)",
    )
    ap.add_argument(
        "--from-json",
        action="store_true",
        help="measure nothing: rewrite ablations.md from the last ablations.json (after a table change)",
    )
    args = ap.parse_args(argv)
    if args.from_json:
        last = json.loads((RESULTS_DIR / "ablations.json").read_text())
        md = markdown(last["rows"], last["frames"], last["repeats"], last["pythons"], last.get("measured"))
        (RESULTS_DIR / "ablations.md").write_text(md)
        print(f"wrote {RESULTS_DIR / 'ablations.md'} from {RESULTS_DIR / 'ablations.json'}")
        return 0
    only = [s for s in args.only.split(",") if s] or list(LEVERS)
    for lever in only:
        if lever not in LEVERS:
            raise SystemExit(f"unknown lever {lever!r}; one of {', '.join(LEVERS)}")
    # a path with a slash is taken from the current directory (the workers run from the repository root)
    paths = [str(Path(p).absolute()) if os.sep in p else p for p in args.python] or default_pythons()
    pythons = [interpreter(p) for p in paths]
    measured = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    print("interpreters: " + "; ".join(f"{p['label']}: {p['python']}" for p in pythons), flush=True)
    rows = []
    for lever in only:
        what, _, scenes = LEVERS[lever]
        for scene in scenes:
            cols = _measure(lever, scene, args.frames, args.repeats, pythons)
            row = {"lever": lever, "what": what, "scene": scene, "columns": cols}
            # the first interpreter's pair also at the top level, as before there were columns
            row["with"], row["without"] = cols[0]["with"], cols[0]["without"]
            rows.append(row)
            figures = "; ".join(
                f"{c['label']}: without {_cell(c['without'])} ms, with {_cell(c['with'])} ms"
                + (f" ({s:.2f}x)" if (s := _speedup(c)) is not None else "")
                for c in cols
            )
            print(f"{lever:22s} {scene:8s} {figures}", flush=True)
    measured["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = {
        "frames": args.frames,
        "repeats": args.repeats,
        "measured": measured,
        "pythons": pythons,
        "noise": NOISE,
        "rows": rows,
    }
    (RESULTS_DIR / "ablations.json").write_text(json.dumps(out, indent=1))
    (RESULTS_DIR / "ablations.md").write_text(markdown(rows, args.frames, args.repeats, pythons, measured))
    print(f"wrote {RESULTS_DIR / 'ablations.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
