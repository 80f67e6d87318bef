"""Helpers shared by the per-scene worker processes: timing loop, peak memory, JSON result line."""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from collections.abc import Callable

RESULT_TAG = "BENCH_RESULT "


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB of 10^6 bytes (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def time_frames(
    step: Callable[[int], None],
    measure: Callable[[int], None],
    frames: int,
    budget_s: float | None = None,
    min_frames: int = 3,
) -> list[float]:
    """Call step(f) for f = 1..frames, timing each call; measure(f) runs after, outside the timed region.

    With a budget, stops early (after at least min_frames) once the timed steps have used budget_s seconds.
    """
    budget_s = BUDGET_S if budget_s is None else budget_s
    times: list[float] = []
    for f in range(1, frames + 1):
        t0 = time.perf_counter()
        step(f)
        times.append((time.perf_counter() - t0) * 1000.0)
        measure(f)
        if budget_s and f >= min_frames and sum(times) / 1000.0 > budget_s:
            break
    return times


# Wall-time budget of one scene's timed frames (seconds; 0 = none). Set from --budget by the workers.
BUDGET_S = 0.0


def set_budget(seconds: float) -> None:
    global BUDGET_S
    BUDGET_S = float(seconds)


def result(
    scene: str,
    solver: str,
    times_ms: list[float],
    particles: int,
    constraints: int | None,
    quality: dict,
    base_rss_mb: float,
    build_s: float,
    notes: str = "",
    **extra,
) -> dict:
    stopped = BUDGET_S and sum(times_ms) > BUDGET_S * 1e3
    partial = f" (stopped after {len(times_ms)} frames: time budget)" if stopped else ""
    return {
        "scene": scene,
        "solver": solver,
        "frames": len(times_ms),
        "ms_per_frame": statistics.median(times_ms) if times_ms else None,
        "ms_mean": statistics.fmean(times_ms) if times_ms else None,
        "ms_first": times_ms[0] if times_ms else None,
        "times_ms": times_ms,
        "particles": particles,
        "constraints": constraints,
        "peak_rss_mb": peak_rss_mb(),
        "base_rss_mb": base_rss_mb,
        "build_s": build_s,
        "quality": quality,
        "notes": notes + partial,
        **extra,
    }


def emit(res: dict) -> None:
    """Print the result as one tagged JSON line on stdout (the parent process parses it)."""
    sys.stdout.write(RESULT_TAG + json.dumps(res) + "\n")
    sys.stdout.flush()
