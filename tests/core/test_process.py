"""The process around the solver: large temporaries stay in the heap (core/allocator.py), so a frame of a
grain bed page-faults next to never and is the same bit for bit with glibc's defaults; BLAS runs on one
thread while a world steps (core/blas_threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# One frame of a 4,500-grain bed (~50k candidate pairs: 0.4-1.2 MB per pair array, above glibc's
# default 128 KB mmap threshold) after a first frame that sized every buffer; prints the page faults of
# the second frame and a hash of the positions.
_SCENE = """
import hashlib, resource, numpy as np
from unified_particles.core import World
from unified_particles.core.allocator import keep_temporaries
w = World(radius=0.01)
g = np.stack(np.meshgrid(*(np.arange(k) * 0.022 for k in (30, 30, 5)), indexing="ij"), -1).reshape(-1, 3)
w.add_granular(g + [0.0, 0.0, 0.011], friction=0.5)
w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))
w.step(1 / 24)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
w.step(1 / 24)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(keep_temporaries(), faults, hashlib.sha256(np.asarray(w.positions).tobytes()).hexdigest())
"""


def _run(env_value: str | None) -> tuple[bool, int, str]:
    env = dict(os.environ)
    env.pop("UNIFIED_PARTICLES_MALLOC", None)
    if env_value is not None:
        env["UNIFIED_PARTICLES_MALLOC"] = env_value
    out = subprocess.run([sys.executable, "-c", _SCENE], capture_output=True, text=True, check=True, env=env)
    tuned, faults, digest = out.stdout.split()
    return tuned == "True", int(faults), digest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc: Linux only")
def test_a_frame_does_not_fault_its_temporaries_in_again() -> None:
    tuned, faults, digest = _run(None)
    plain, plain_faults, plain_digest = _run("0")
    assert tuned
    assert not plain  # the environment variable keeps glibc's defaults
    # glibc's defaults: each pair-length temporary is mapped and faulted in afresh (2,400-3,000 faults
    # per frame measured); kept in the heap, a frame reuses the pages the first one faulted in.
    assert plain_faults > 500, f"precondition: the plain run faults {plain_faults} times in a frame"
    assert faults < plain_faults / 10, f"{faults} page faults in a frame against {plain_faults}"
    # Where memory comes from changes no arithmetic.
    assert digest == plain_digest


def test_blas_runs_on_one_thread_while_a_world_steps_and_gets_its_threads_back(monkeypatch) -> None:
    # core/blas_threads.py: OpenBLAS's worker spun beside the solver (S9: CPU time twice the wall time).
    from unified_particles.core import World
    from unified_particles.core.blas_threads import blas_thread_api
    from unified_particles.core.solver import Solver

    api = blas_thread_api()
    if sys.platform.startswith("linux"):
        assert api is not None, "NumPy's bundled OpenBLAS not found: its thread count cannot be set"
    if api is None:
        pytest.skip("NumPy without OpenBLAS: nothing to set")
    get, put = api
    put(2)
    seen: list[int] = []
    small_step = Solver.small_step

    def counting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(get())
        return small_step(self, *args, **kwargs)

    monkeypatch.setattr(Solver, "small_step", counting)
    w = World(radius=0.05)
    w.add_granular([[0.0, 0.0, 0.5], [0.0, 0.0, 0.7]])
    w.step(1 / 24)
    assert seen
    assert set(seen) == {1}
    assert get() == 2  # the process's own count once the frame is done


def test_overlapping_blas_blocks_give_the_process_its_count_back() -> None:
    # Two worlds stepped from two Python threads enter and leave one_blas_thread out of order: the count
    # must be 1 while any block is open and the process's own once the last one closed (a per-block
    # save and restore left it at 1 for good when the blocks overlapped).
    from unified_particles.core.blas_threads import blas_thread_api, one_blas_thread

    api = blas_thread_api()
    if api is None:
        pytest.skip("NumPy without OpenBLAS: nothing to set")
    get, put = api
    put(2)
    first, second = one_blas_thread(), one_blas_thread()
    first.__enter__()
    second.__enter__()
    assert get() == 1
    first.__exit__(None, None, None)  # the first one leaves while the second is still stepping
    assert get() == 1
    second.__exit__(None, None, None)
    assert get() == 2
