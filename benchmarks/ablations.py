"""What each optimisation buys: switch one off, run the scene, compare with everything on, same run.

    python -m benchmarks.ablations [--frames N] [--only LEVER,...]

Each lever below is a choice the solver makes for speed (or for convergence per unit of time). A run
starts each scene once as shipped and once with one lever replaced by the plain NumPy way (the code
that was there before, or the obvious alternative), in fresh subprocesses of ``benchmarks.ours`` with
``--ablate LEVER``, one after the other. The table goes to benchmarks/results/ablations.md (and .json);
``make bench`` runs this too and copies the table into docs/performance.md. The replacements live only
here: the solver has no switches for them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"


def _plain_reductions() -> None:
    """fastops' column/row helpers back to NumPy's axis reductions (numpy 1.26's slow generic loop)."""
    from unified_particles.core import colliders, neighbors, world

    world.column_max = lambda x: x.max(axis=0)  # type: ignore[attr-defined]
    world.column_min = lambda x: x.min(axis=0)  # type: ignore[attr-defined]
    world.row_abs_max = lambda x: np.abs(x).max(axis=1, initial=0.0)  # type: ignore[attr-defined]
    neighbors.column_max = lambda x: x.max(axis=0)  # type: ignore[attr-defined]
    neighbors.column_min = lambda x: x.min(axis=0)  # type: ignore[attr-defined]
    colliders.rows_all = lambda m: m.all(axis=1)  # type: ignore[assignment]


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
    from unified_particles.core import colliders

    cls = colliders.MeshCollider
    original = cls._near_points

    def near(self: Any, q: Any, reach: float, cacheable: bool) -> Any:
        return original(self, q, reach, False)

    cls._near_points = near  # type: ignore[method-assign]


def _jacobi_stretch() -> None:
    """Cloth stretch by Jacobi averaging (paper Eq. 11) instead of graph-coloured Gauss-Seidel."""
    from unified_particles.core import distance, world

    def solvers(self: Any, h: float) -> list[Any]:
        cache = self._solver_cache
        if h not in cache:
            out = []
            if len(self._bend_all):
                out.append(distance.JacobiSolver(self._bend_all, self._inv_mass, h, self.settings.relaxation))
            if len(self._stretch_all):
                out.append(
                    distance.JacobiSolver(self._stretch_all, self._inv_mass, h, self.settings.relaxation)
                )
            cache[h] = out
        return list(cache[h])

    world.World._distance_solvers = solvers  # type: ignore[method-assign]


def _add_at_accumulation() -> None:
    """Jacobi sums with ``np.add.at`` on (N, 3) rows instead of one flat ``np.bincount``."""
    from unified_particles.core import distance, world

    def jacobi_solve(self: Any, x: Any) -> None:
        xab = x[self.ab]
        d = xab[: self.m] - xab[self.m :]
        dist = np.sqrt(np.einsum("ij,ij->i", d, d))
        d *= (self.rest / np.maximum(dist, 1e-12) - 1.0)[:, None]
        np.add.at(x, self.ab, self.k[:, None] * np.concatenate([d, d]))

    def pair_jacobi(self: Any, x: Any, idx: Any, delta: Any, omega: float) -> None:
        count = np.bincount(idx, minlength=len(x))
        k = len(idx) // 2
        scale = omega / np.maximum(count[idx[:k]], count[idx[k:]])
        np.add.at(x, idx, delta.T * np.concatenate([scale, scale])[:, None])

    distance.JacobiSolver.solve = jacobi_solve  # type: ignore[method-assign]
    world.World._apply_pair_jacobi = pair_jacobi  # type: ignore[method-assign]


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
    "take-gather": (
        "Coloured stretch solve gathers with `np.take`, computes coordinate-major and stores flat, instead "
        "of `x[ab]` fancy indexing on (m, 3) rows",
        _fancy_index_gather,
        ("S1",),
    ),
}


def apply(name: str) -> None:
    """Patch the solver in this process so that lever ``name`` is switched off."""
    if name not in LEVERS:
        raise SystemExit(f"unknown lever {name!r}; one of {', '.join(LEVERS)}")
    LEVERS[name][1]()


def _run(scene: str, frames: int, lever: str | None) -> dict:
    from benchmarks.run import Job, _run_job

    args = [scene, "--frames", str(frames)] + (["--ablate", lever] if lever else [])
    solver = "ours" if lever is None else f"ours without {lever}"
    return _run_job(Job(scene, solver, "benchmarks.ours", args, 1800))


def _cell(res: dict) -> str:
    ms = res.get("ms_per_frame")
    return "failed" if ms is None else f"{ms:.1f}"


def markdown(rows: list[dict], frames: int, repeats: int) -> str:
    lines = [
        "Measured by `python -m benchmarks.ablations`: each optimisation switched off alone, everything "
        f"else as shipped; {repeats} runs of each side, alternating, {frames} frames each; the table "
        "shows the fastest run's median ms/frame (other work on the machine only adds time).",
        "",
        "| Optimisation | Scene | Without it (ms/frame) | With it (ms/frame) | Speed-up | Note |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        off, on = r["without"], r["with"]
        a, b = off.get("ms_per_frame"), on.get("ms_per_frame")
        ratio = f"{a / b:.2f}x" if a and b else "-"
        note = ""
        qa, qb = off.get("quality") or {}, on.get("quality") or {}
        if r["scene"] == "S1" and qa.get("max_stretch") is not None and qb.get("max_stretch") is not None:
            note = (
                f"max stretch {qa['max_stretch'] * 100:.0f}% without, {qb['max_stretch'] * 100:.0f}% with "
                f"(last frame {qa['final_stretch'] * 100:.0f}% / {qb['final_stretch'] * 100:.0f}%)"
            )
        lines.append(f"| {r['what']} | {r['scene']} | {_cell(off)} | {_cell(on)} | {ratio} | {note} |")
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=5, help="runs of each side, alternating (default 5)")
    ap.add_argument("--only", default="", help="comma-separated levers")
    args = ap.parse_args(argv)
    only = [s for s in args.only.split(",") if s] or list(LEVERS)
    rows = []
    for lever in only:
        what, _, scenes = LEVERS[lever]
        for scene in scenes:
            # Alternate the two sides so that a change in machine load hits both alike.
            on_runs, off_runs = [], []
            for _ in range(args.repeats):
                on_runs.append(_run(scene, args.frames, None))
                off_runs.append(_run(scene, args.frames, lever))
            on, off = _best_run(on_runs), _best_run(off_runs)
            rows.append({"lever": lever, "what": what, "scene": scene, "with": on, "without": off})
            print(f"{lever:22s} {scene:8s} without {_cell(off):>8s} ms, with {_cell(on):>8s} ms", flush=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = {"frames": args.frames, "repeats": args.repeats, "rows": rows}
    (RESULTS_DIR / "ablations.json").write_text(json.dumps(out, indent=1))
    (RESULTS_DIR / "ablations.md").write_text(markdown(rows, args.frames, args.repeats))
    print(f"wrote {RESULTS_DIR / 'ablations.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
