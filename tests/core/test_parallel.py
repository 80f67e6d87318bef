"""The thread pool (core/parallel.py): results are bit-identical whatever the thread count.

Large passes (neighbour search, particle contacts) run in fixed chunks whose boundaries depend on the
problem size only, combined in chunk order; every chunked pass is element-wise, so the chunked result
is also the unchunked one. The tests compare positions bit for bit (``np.array_equal``, no tolerance).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World, parallel
from unified_particles.core.neighbors import brute_force_pairs, find_pairs
from unified_particles.core.primitives import box_mesh, grid_mesh, grid_points

R = 0.05
THREADS = (1, 2, 4)


def _run(build: Callable[[], World], frames: int) -> tuple[np.ndarray, np.ndarray]:
    w = build()
    for _ in range(frames):
        w.step(1.0 / 24.0)
    return np.asarray(w.positions).copy(), np.asarray(w.velocities).copy()


GRAINS = (36, 36, 32)  # 41,472 grains: above both chunking thresholds


def _grains(threads: int) -> World:
    """A block of grains in contact falling onto a plane, one small step a frame."""
    w = World(radius=R, substeps=1, iterations=1, threads=threads)
    w.add_collider_plane(friction=0.5)
    pts = grid_points(GRAINS, 2.02 * R, (0.0, 0.0, R + 0.002))
    pts += np.random.default_rng(3).uniform(-0.004, 0.004, pts.shape)  # grains in contact, not a lattice
    w.add_granular(pts, friction=0.5)
    return w


@pytest.mark.slow
def test_a_large_granular_scene_is_bit_identical_with_1_2_and_4_threads() -> None:
    n = int(np.prod(GRAINS))
    assert len(parallel.search_chunks(n)) > 1, "the neighbour search must be chunked"
    results = {}
    start = None
    for t in THREADS:
        w = _grains(t)
        start = np.asarray(w.positions).copy()
        i, _ = find_pairs(start, 2.0 * R + R)  # the candidates: within 2r + margin (one radius)
        assert len(parallel.pair_chunks(len(i))) > 1, "the contact pass must be chunked too"
        for _ in range(2):
            w.step(1.0 / 24.0)
        results[t] = (np.asarray(w.positions).copy(), np.asarray(w.velocities).copy())
    for t in THREADS[1:]:
        assert np.array_equal(results[t][0], results[1][0]), f"positions differ with {t} threads"
        assert np.array_equal(results[t][1], results[1][1]), f"velocities differ with {t} threads"
    # it did simulate: the grains fell and touch (gravity g h^2 per small step, 1 small step a frame)
    assert not np.array_equal(results[1][0], start)


def _mixed(threads: int) -> World:
    """Rigid boxes, a cloth and grains in one scene: every contact family."""
    w = World(radius=R, threads=threads)
    w.add_collider_plane(friction=0.5)
    cv, cf = grid_mesh(1.2, 13, (0.0, 0.0, 0.5))
    w.add_cloth(cv, cf, mass=0.5)
    for k, x in enumerate((-0.3, 0.3)):
        v, f = box_mesh((0.3, 0.3, 0.3), (x, 0.1 * k, 0.9))
        w.add_rigid(v, f, density=300.0)
    pts = grid_points((6, 6, 4), 2.1 * R, (-0.25, -0.25, 1.3))
    pts += np.random.default_rng(5).uniform(-0.003, 0.003, pts.shape)
    w.add_granular(pts, friction=0.6, cohesion=0.2)
    return w


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 64 particles or pairs, so a small scene runs every pass in many chunks."""
    monkeypatch.setattr(parallel, "PAIR_CHUNK", 64)
    monkeypatch.setattr(parallel, "SEARCH_CHUNK", 64)


def _unchunked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks larger than any input: every pass is one plain call."""
    monkeypatch.setattr(parallel, "PAIR_CHUNK", 10**12)
    monkeypatch.setattr(parallel, "SEARCH_CHUNK", 10**12)


@pytest.mark.slow
def test_rigid_cloth_and_grains_are_bit_identical_chunked_or_not_with_any_thread_count(
    tiny_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = 10  # the loads land on the cloth and the ground: candidate rebuilds, contacts, friction
    chunked = {t: _run(lambda: _mixed(t), frames) for t in THREADS}  # noqa: B023
    _unchunked(monkeypatch)
    plain = _run(lambda: _mixed(1), frames)
    for t in THREADS:
        assert np.array_equal(chunked[t][0], plain[0]), f"positions differ with {t} threads"
        assert np.array_equal(chunked[t][1], plain[1]), f"velocities differ with {t} threads"
    assert np.ptp(plain[0][:, 2]) > 0.0
    assert np.isfinite(plain[0]).all()


def test_find_pairs_in_chunks_is_the_unchunked_list_in_the_same_order(
    tiny_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    x = rng.uniform(0.0, 1.0, (3000, 3))
    group = rng.integers(0, 4, len(x))
    self_collides = np.array([True, False, True, False])
    assert len(parallel.search_chunks(len(x))) > 1
    lists = {t: find_pairs(x, 0.06, group, self_collides, threads=t) for t in THREADS}
    _unchunked(monkeypatch)
    plain = find_pairs(x, 0.06, group, self_collides)
    for t in THREADS:
        assert np.array_equal(lists[t][0], plain[0])
        assert np.array_equal(lists[t][1], plain[1])
    # and it is the right list: every close pair once (brute force), minus same-group pairs of groups
    # that do not collide with themselves
    bi, bj = brute_force_pairs(x, 0.06)
    keep = (group[bi] != group[bj]) | self_collides[group[bi]]
    want = set(zip(bi[keep].tolist(), bj[keep].tolist(), strict=True))
    got = list(zip(plain[0].tolist(), plain[1].tolist(), strict=True))
    assert len(got) == len(set(got))
    assert set(got) == want


def test_map_ordered_keeps_the_order_of_the_items() -> None:
    items = list(range(50))
    for t in THREADS:
        assert parallel.map_ordered(lambda k: k * k, items, t) == [k * k for k in items]


def test_chunk_bounds_depend_on_the_size_only_and_cover_it() -> None:
    assert parallel.chunk_bounds(199, 100) == [(0, 199)]  # below two chunks: one
    for size in (parallel.PAIR_CHUNK, parallel.SEARCH_CHUNK):
        n = 3 * size + 5
        bounds = parallel.chunk_bounds(n, size)
        assert bounds[0][0] == 0
        assert bounds[-1][1] == n
        assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
        assert all(b - a == size for a, b in bounds[:-1])


def test_threads_setting_defaults_to_one_thread_and_refuses_nonsense() -> None:
    # One thread by default: on 2 cores the pool measured 0.94-0.97x at 100k grains (make bench's
    # "What each optimisation bought"), so it is opt-in (issue 22: until it pays at least 1.3x).
    assert World(radius=R).settings.threads == 1
    assert World(radius=R, threads=None).settings.threads is None
    assert parallel.resolve_threads(None) == parallel.default_threads() >= 1
    assert parallel.resolve_threads(3) == 3
    for bad in (0, -1, 1.5, True):
        with pytest.raises(SimulationInputError, match="threads must be a whole number"):
            World(radius=R, threads=bad)
