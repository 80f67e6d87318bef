"""Issue 25 item 3: a dam break's surge front against Martin and Moyce (1952), at three resolutions.

    python -m benchmarks.surge_front            the table (markdown) on stdout and in
                                                benchmarks/results/surge_front.md

A column of water a = 0.3 m long along the flow and 2a high (Martin and Moyce's n^2 = 2), four
particles wide between two side walls, collapses along a floor 5 a long, at a = 6, 12 and 24 particle
diameters, with the tank's planes at friction 0 (the S7/S8 dam breaks of ``benchmarks/ours.py``) and
0.5 (the World default: a liquid's own friction is 0, so its contacts take the mean, 0.25). The front is
the leading particle's edge (the 99.9th percentile of x plus r) over a; time is Martin and Moyce's
T = n t sqrt(g / a) = t sqrt(2 g / a). Their n^2 = 2 surge front, as digitised for the SPH literature
(Koshizuka and Oka 1996 compare their MPS dam break with it), is ``MM_T``, ``MM_Z``.
(``benchmarks/report.py`` compares S8's square column with it; for a square column, n = 1, time would
read T = t sqrt(g / a), and against that scaling a front looks about 40 per cent further ahead.) World
defaults otherwise (4 substeps x 4 iterations per 1/24 s frame); ms/frame is the median over the run.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from unified_particles.core import World

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "surge_front.md"
A = 0.3  # column side, m
FPS = 24
G = 9.81
MM_T = np.array([0.41, 0.84, 1.19, 1.43, 1.63, 1.83, 1.98, 2.20, 2.32, 2.51, 2.65, 2.83, 2.98, 3.11])
MM_Z = np.array([1.11, 1.22, 1.44, 1.67, 1.89, 2.11, 2.33, 2.56, 2.78, 3.00, 3.22, 3.44, 3.67, 3.89])
RESOLUTIONS = (6, 12, 24)  # particles along a
FRICTIONS = (0.0, 0.5)
T_SHOWN = (1.0, 2.0, 3.0)


def dam_break(n: int, friction: float, width: int = 4) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """(T, Z, seconds per frame) of the column of ``n`` x ``width`` x 2 ``n`` particles (r = a / 2n) until
    T = 3.1, the reference's last point."""
    r = A / (2 * n)
    d = 2.0 * r
    world = World(r, substeps=4, iterations=4)
    length, wide = 5.0 * A, width * d
    for point, normal in (
        ((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
        ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
        ((length, 0.0, 0.0), (-1.0, 0.0, 0.0)),
        ((0.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
        ((0.0, wide, 0.0), (0.0, -1.0, 0.0)),
    ):
        world.add_collider_plane(point, normal, friction=friction)
    grid = np.stack(np.meshgrid(np.arange(n), np.arange(width), np.arange(2 * n), indexing="ij"), -1)
    fluid = world.add_fluid((grid.reshape(-1, 3) + 0.5) * d)
    scale = math.sqrt(2.0 * G / A)
    frames = math.ceil(MM_T[-1] / scale * FPS)
    t_scaled, z, seconds = [], [], []
    for k in range(frames):
        t0 = time.perf_counter()
        world.step(1.0 / FPS)
        seconds.append(time.perf_counter() - t0)
        t_scaled.append((k + 1) / FPS * scale)
        z.append((float(np.percentile(fluid.positions[:, 0], 99.9)) + r) / A)
    return np.array(t_scaled), np.array(z), seconds


def table() -> str:
    head = " | ".join(f"Z at T = {t:g} (M&M {np.interp(t, MM_T, MM_Z):.2f})" for t in T_SHOWN)
    lines = [
        f"| a / 2r | particles | plane friction | {head} | mean / worst error, T 1-3.1 | ms/frame |",
        "|---:|---:|---:|" + "---:|" * len(T_SHOWN) + "---:|---:|",
    ]
    for n in RESOLUTIONS:
        for friction in FRICTIONS:
            t_scaled, z, seconds = dam_break(n, friction)
            ours = np.interp(T_SHOWN, t_scaled, z)
            ref = np.interp(t_scaled, MM_T, MM_Z)
            keep = (t_scaled >= 1.0) & (t_scaled <= MM_T[-1])
            rel = (z[keep] - ref[keep]) / ref[keep]
            worst = rel[np.argmax(np.abs(rel))]
            cells = " | ".join(f"{v:.2f}" for v in ours)
            ms = 1000 * statistics.median(seconds)
            lines.append(
                f"| {n} | {n * n * 8} | {friction:g} | {cells} "
                f"| {100 * rel.mean():+.0f}% / {100 * worst:+.0f}% | {ms:.0f} |"
            )
            print(lines[-1], flush=True)
    return "\n".join(lines)


def main() -> int:
    block = table()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(block + "\n")
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
