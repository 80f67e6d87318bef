"""Speed levers of issue 14 measured on the two passes that dominate large grain scenes (S4).

    python -m benchmarks.levers [--sizes 100k,1M] [--repeats 5]

The neighbour search (``neighbors.find_pairs``) and the particle contacts with their Jacobi sums
(``contacts.particle_contacts``, ``corrections.apply_pair_jacobi``) take most of an S4 frame once the
grains land (a search nearly every small step). Each lever is measured on the S4 block's grain centres
(benchmarks/scenes.py, jittered by up to 4 mm so the lattice is not exact), as each pass alone:

* threads: the thread pool (``core/parallel.py``, shipped) with every core against one thread,
  wall time;
* float32 pair arithmetic: the contacts on float32 positions and masses against float64 (not shipped);
* particle order: the passes with the particles in S4's lattice order (as built), in a random order,
  and sorted by neighbour-search cell (what re-sorting the particles for memory locality would give;
  not shipped);
* fewer, larger NumPy calls: the Jacobi sums as one ``np.bincount`` over 3N bins against one per
  coordinate (shipped: one per coordinate).

Single-thread figures are process CPU time (steadier than wall time on a shared machine), best of
``--repeats``; thread figures are wall time, best of ``--repeats``, both sides alternating. The table
goes to benchmarks/results/levers.md (and .json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import scenes
from unified_particles.core import contacts, neighbors, parallel
from unified_particles.core.contacts import particle_contacts
from unified_particles.core.corrections import apply_pair_jacobi

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
R = scenes.S3_RADIUS
CUTOFF = 3.0 * R  # 2r + the default margin (one radius)


def _best(fn: Callable[[], Any], repeats: int, clock: Callable[[], float]) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best * 1e3


def _contacts(
    x: np.ndarray, i: np.ndarray, j: np.ndarray, threads: int = 1, dtype: Any = np.float64
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One contact pass as the solver runs it (friction on; the step moved every grain 3 mm down)."""
    xs = x.astype(dtype)
    xt = np.ascontiguousarray(xs.T)
    pt = np.ascontiguousarray((x + np.array([0.0, 0.0, 0.003])).astype(dtype).T)
    w = np.ones(len(x), dtype)
    mu = np.full(len(x), 0.5, dtype)
    one = dtype(1.0)
    return parallel.pair_chunks_map(
        lambda a, b: particle_contacts(
            xt.T, pt.T, a, b, w, dtype(R), dtype(10.0), mu, one, one, None, None, None,
            touch_tolerance=dtype(0.1 * R),
        ),
        i, j, threads,
    )  # fmt: skip


def _one_bincount(x: np.ndarray, idx: np.ndarray, delta: np.ndarray, omega: float) -> None:
    """apply_pair_jacobi with the three coordinates' sums in one np.bincount over 3N bins."""
    n = len(x)
    count = np.bincount(idx, minlength=n)
    k = len(idx) // 2
    scale = omega / np.maximum(count[idx[:k]], count[idx[k:]])
    flat = np.concatenate([idx, idx + n, idx + 2 * n])
    sums = np.bincount(flat, weights=(delta * np.concatenate([scale, scale])).ravel(), minlength=3 * n)
    x += sums.reshape(3, n).T


def measure(size: str, repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    base = scenes.s4_points(size)
    base += rng.uniform(-0.004, 0.004, base.shape)
    # a pitch of 1.98 r instead of 2.2 r: every grain touches its 6 face neighbours, as in a settled pile
    base *= 1.98 / 2.2
    rows: list[dict] = []
    cpu = time.process_time
    cores = parallel.default_threads()

    def row(lever: str, what: str, a_label: str, a: float, b_label: str, b: float, kept: str) -> None:
        rows.append(
            {"size": size, "lever": lever, "what": what, "a": a_label, "a_ms": a, "b": b_label, "b_ms": b,
             "ratio": a / b if b else None, "kept": kept}
        )  # fmt: skip
        print(f"{size:5s} {lever:22s} {what:28s} {a_label} {a:8.1f} ms / {b_label} {b:8.1f} ms", flush=True)

    # threads, wall time, alternating
    i, j = neighbors.find_pairs(base, CUTOFF, threads=cores)  # warms the pool up too
    _contacts(base, i, j, cores)
    wall = time.perf_counter
    one = [0.0, 0.0]
    many = [0.0, 0.0]
    one_runs: list[list[float]] = [[], []]
    many_runs: list[list[float]] = [[], []]
    for _ in range(repeats):
        one_runs[0].append(_best(lambda: neighbors.find_pairs(base, CUTOFF, threads=1), 1, wall))
        many_runs[0].append(_best(lambda: neighbors.find_pairs(base, CUTOFF, threads=cores), 1, wall))
        one_runs[1].append(_best(lambda: _contacts(base, i, j, 1), 1, wall))
        many_runs[1].append(_best(lambda: _contacts(base, i, j, cores), 1, wall))
    one = [min(r) for r in one_runs]
    many = [min(r) for r in many_runs]
    row("threads", "neighbour search", "1 thread", one[0], f"{cores} threads", many[0], "yes")
    row("threads", "particle contacts", "1 thread", one[1], f"{cores} threads", many[1], "yes")

    # float32 pair arithmetic
    up = contacts._UP
    t64 = _best(lambda: _contacts(base, i, j), repeats, cpu)
    contacts._UP = up.astype(np.float32)  # the +z fallback normal, else every where() promotes
    try:
        with np.errstate(divide="ignore", invalid="ignore"):  # 1e-300 is 0 in float32
            t32 = _best(lambda: _contacts(base, i, j, dtype=np.float32), repeats, cpu)
    finally:
        contacts._UP = up
    row("float32", "particle contacts", "float64", t64, "float32", t32, "no")

    # particle order
    c = np.floor((base - base.min(axis=0)) / CUTOFF).astype(np.int64)
    dims = c.max(axis=0) + 1
    key = (c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2]
    orders = {"lattice order": np.arange(len(base)), "random order": rng.permutation(len(base))}
    orders["cell-sorted"] = np.argsort(key, kind="stable")
    times: dict[str, tuple[float, float, float]] = {}
    for name, perm in orders.items():
        x = np.ascontiguousarray(base[perm])
        pi, pj = neighbors.find_pairs(x, CUTOFF)
        idx, delta, _ = _contacts(x, pi, pj)
        tf = _best(lambda: neighbors.find_pairs(x, CUTOFF, threads=1), repeats, cpu)  # noqa: B023
        tc = _best(lambda: _contacts(x, pi, pj), repeats, cpu)  # noqa: B023
        tj = _best(lambda: apply_pair_jacobi(x.copy(), idx, delta, 1.0), repeats, cpu)  # noqa: B023
        times[name] = (tf, tc, tj)
    for k, what in enumerate(("neighbour search", "particle contacts", "Jacobi sums")):
        lat, srt, rnd = times["lattice order"][k], times["cell-sorted"][k], times["random order"][k]
        row("particle order", what, "lattice order", lat, "cell-sorted", srt, "no")
        row("particle order", what, "random order", rnd, "cell-sorted", srt, "no")

    # fewer, larger calls
    idx, delta, _ = _contacts(base, i, j)
    t3 = _best(lambda: apply_pair_jacobi(base.copy(), idx, delta, 1.0), repeats, cpu)
    t1 = _best(lambda: _one_bincount(base.copy(), idx, delta, 1.0), repeats, cpu)
    row("fewer calls", "Jacobi sums", "one bincount", t1, "3 per-axis (shipped)", t3, "no")
    return rows


def markdown(rows: list[dict], measured: dict) -> str:
    lines = [
        f"Measured by `python -m benchmarks.levers` on {measured['date']} (load average {measured['load']} "
        f"at start, {measured['load_end']} at end; {measured['cores']} cores): each pass alone on the S4 "
        "block's grain centres. A ratio above 1 means the second column is faster.",
        "",
        "| Grains | Lever | Pass | A | A (ms) | B | B (ms) | A / B | Shipped |",
        "|---|---|---|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']} | {r['lever']} | {r['what']} | {r['a']} | {r['a_ms']:.1f} | {r['b']} | "
            f"{r['b_ms']:.1f} | {r['ratio']:.2f} | {r['kept']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100k,1M", help="S4 sizes, comma-separated (10k, 100k, 1M)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    measured = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "cores": parallel.default_threads(),
    }
    rows = []
    for size in [s for s in args.sizes.split(",") if s]:
        rows += measure(size, args.repeats)
    measured["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "levers.json").write_text(json.dumps({"measured": measured, "rows": rows}, indent=1))
    (RESULTS_DIR / "levers.md").write_text(markdown(rows, measured))
    print(f"wrote {RESULTS_DIR / 'levers.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
