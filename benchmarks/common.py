"""Helpers shared by the per-scene worker processes: timing loop, peak memory, JSON result line."""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
        if _PROFILER[0] is not None:
            _PROFILER[0].enable()
        t0 = time.perf_counter()
        step(f)
        times.append((time.perf_counter() - t0) * 1000.0)
        if _PROFILER[0] is not None:
            _PROFILER[0].disable()
        measure(f)
        # stop once the next frame (assumed no cheaper than the last) would overrun the budget
        if budget_s and min_frames <= f < frames and (sum(times) + times[-1]) / 1000.0 > budget_s:
            _STOPPED_EARLY[0] = True
            break
    return times


# Wall-time budget of one scene's timed frames (seconds; 0 = none). Set from --budget by the workers.
BUDGET_S = 0.0
_STOPPED_EARLY = [False]


_PROFILER: list[cProfile.Profile | None] = [None]


def profiling() -> bool:
    """Whether this process profiles its steps (--profile)."""
    return _PROFILER[0] is not None


def enable_profile() -> None:
    """Profile the timed step calls with cProfile (a separate run: the profiler adds overhead)."""
    _PROFILER[0] = cProfile.Profile()


def _main_caller(stats: dict, callers: dict, depth: int = 6) -> str | None:
    """The first caller outside NumPy's own Python code, following the heaviest caller upwards."""
    while callers and depth > 0:
        key, _ = max(callers.items(), key=lambda kv: kv[1][2])
        cf, cl, cfunc = key
        if cf != "~" and f"{os.sep}numpy{os.sep}" not in cf:
            return f"{cfunc}, {Path(cf).name}:{cl}"
        callers = stats.get(key, (0, 0, 0, 0, {}))[4]
        depth -= 1
    return None


def profile_top(frames: int, n: int = 12) -> list[dict]:
    """The n functions with the most own time inside the timed steps: name, ms per frame, share."""
    prof = _PROFILER[0]
    if prof is None or frames == 0:
        return []
    st = pstats.Stats(prof)
    rows = []
    total = 0.0
    for (file, line, func), (_cc, _nc, tt, _ct, callers) in st.stats.items():  # type: ignore[attr-defined]
        total += tt
        if file == "~":
            # a NumPy/C built-in: name the Python function that spent most of this time in it
            name = func.replace("<method '", "").replace("<built-in method ", "").split("'")[0].rstrip(">")
            origin = _main_caller(st.stats, callers)  # type: ignore[attr-defined]
            if origin:
                name = f"{name} (mostly from {origin})"
        else:
            name = f"{func} ({Path(file).name}:{line})"
        rows.append((tt, name, _nc))
    rows.sort(reverse=True)
    return [
        {
            "function": name,
            "ms_per_frame": tt * 1e3 / frames,
            "share": tt / total if total else 0.0,
            "calls": nc,
        }
        for tt, name, nc in rows[:n]
    ]


def profile_cumulative(functions: list[tuple[str, str]]) -> dict[str, dict]:
    """Cumulative time (ms, over the profiled steps) and calls of each (file name, function name), e.g.
    ("fluid.py", "solve_density"), keyed "file:function"; a function not seen gets zeros."""
    prof = _PROFILER[0]
    out = {f"{file}:{func}": {"ms": 0.0, "calls": 0} for file, func in functions}
    if prof is None:
        return out
    st = pstats.Stats(prof)
    for (file, _line, func), (_cc, nc, _tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        key = f"{Path(file).name}:{func}"
        if key in out:
            out[key]["ms"] += ct * 1e3
            out[key]["calls"] += nc
    return out


def profile_called_from(callee: tuple[str, str], caller: tuple[str, str]) -> float:
    """Cumulative time (ms, over the profiled steps) of ``callee`` in calls made directly by ``caller``,
    each a (file name, function name)."""
    prof = _PROFILER[0]
    if prof is None:
        return 0.0
    st = pstats.Stats(prof)
    total = 0.0
    for (file, _line, func), (_cc, _nc, _tt, _ct, callers) in st.stats.items():  # type: ignore[attr-defined]
        if (Path(file).name, func) != callee:
            continue
        for (cfile, _cline, cfunc), value in callers.items():
            if (Path(cfile).name, cfunc) == caller:
                total += value[3] * 1e3  # (cc, nc, tt, ct) of the calls from this caller
    return total


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
    partial = f" (stopped after {len(times_ms)} frames: time budget)" if _STOPPED_EARLY[0] else ""
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
        "profile": profile_top(len(times_ms)),
        **extra,
    }


def emit(res: dict) -> None:
    """Print the result as one tagged JSON line on stdout (the parent process parses it)."""
    sys.stdout.write(RESULT_TAG + json.dumps(res) + "\n")
    sys.stdout.flush()


@dataclass
class Job:
    scene: str
    solver: str
    module: str
    args: list[str]
    timeout: float
    env: dict[str, str] | None = None
    # Interpreter of the worker process (default: this one); benchmarks/ablations.py runs each lever under
    # several (NumPy 1.26 in .venv, NumPy 2.5 in .venv52).
    python: str | None = None


def run_worker(job: Job) -> dict:
    """Run one benchmark worker (``python -m job.module``) in a fresh process: its result, or an error."""
    root = Path(__file__).resolve().parent.parent
    cmd = [job.python or sys.executable, "-m", job.module, *job.args]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(job.env or {})
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=job.timeout)
    except subprocess.TimeoutExpired:
        return {"scene": job.scene, "solver": job.solver, "error": f"timed out after {job.timeout:.0f} s"}
    wall = time.perf_counter() - t0
    for line in p.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            res = json.loads(line[len(RESULT_TAG) :])
            res["wall_s"] = wall
            return res
    lines = [ln.strip() for ln in (p.stderr or p.stdout).strip().splitlines()]
    tail = [ln for ln in lines if ln and set(ln) - set("^~ ")][-3:]
    return {
        "scene": job.scene,
        "solver": job.solver,
        "error": f"exit {p.returncode}: " + " | ".join(tail)[-600:],
    }


def put_block(doc: Path, start: str, end: str, block: str, section: str) -> None:
    """Put ``block`` between the markers ``start`` and ``end`` of ``doc``; a doc without them gets
    ``section`` (its heading and text) with the marked block at its end."""
    text = doc.read_text() if doc.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + start + "\n" + block + "\n" + end + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + f"{start}\n{block}\n{end}\n"
    doc.write_text(text)


def marked_block(doc: Path, start: str, end: str) -> str | None:
    """The text between the markers of ``doc`` (carried over when the report is rewritten), or None."""
    text = doc.read_text() if doc.exists() else ""
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")
