"""Uniform-grid neighbour search against brute force (property-based)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_particles.core import neighbors
from unified_particles.core.neighbors import brute_force_pairs, find_pairs, pairs_touching


def _as_set(i: np.ndarray, j: np.ndarray) -> set[tuple[int, int]]:
    assert np.all(i < j), "pairs must be ordered i < j"
    pairs = set(zip(i.tolist(), j.tolist(), strict=True))
    assert len(pairs) == len(i), "no pair may be reported twice"
    return pairs


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=120),
    cutoff=st.floats(min_value=0.01, max_value=0.6),
    scale=st.sampled_from([0.05, 1.0, 3.0]),
    offset=st.floats(min_value=-1e3, max_value=1e3),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
)
def test_grid_matches_brute_force(n: int, cutoff: float, scale: float, offset: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)) * scale + offset
    if n > 4:
        x[1] = x[0]  # coincident particles
        x[3] = x[2] + cutoff * np.array([1.0, 0.0, 0.0]) * (1 - 1e-9)  # just inside the cutoff
    assert _as_set(*find_pairs(x, cutoff)) == _as_set(*brute_force_pairs(x, cutoff))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(min_value=2, max_value=80), seed=st.integers(min_value=0, max_value=2**31 - 1))
def test_same_group_pairs_skipped_unless_self_colliding(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)) * 0.5
    group = rng.integers(0, 3, n)
    self_collides = np.array([False, True, False])
    bi, bj = brute_force_pairs(x, 0.2)
    keep = (group[bi] != group[bj]) | self_collides[group[bi]]
    expected = set(zip(bi[keep].tolist(), bj[keep].tolist(), strict=True))
    assert _as_set(*find_pairs(x, 0.2, group, self_collides)) == expected


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(min_value=100, max_value=400),
    lone_share=st.floats(min_value=0.6, max_value=1.0),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
)
def test_a_group_walked_apart_gives_the_same_list_in_the_same_order(
    n: int, lone_share: float, seed: int
) -> None:
    # A liquid's search: most particles are collider samples (a group that does not collide with
    # itself), walked over the other particles of each run only (neighbors._LoneGroup). The list must
    # be the whole walk's with the group's own pairs dropped, pair for pair and in order (the density
    # sums follow the list's order). The others: a self-colliding group and one that is not (a rigid
    # body). The box is dense enough for the column walk (at most 8 cells per particle).
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)) * 0.3
    lone = rng.random(n) < lone_share
    group = np.where(lone, 1, np.where(rng.random(n) < 0.5, 0, 2))
    self_collides = np.array([True, False, False])
    i, j = find_pairs(x, 0.15)
    keep = (group[i] != group[j]) | self_collides[group[i]]
    gi, gj = find_pairs(x, 0.15, group, self_collides)
    assert np.array_equal(gi, i[keep])
    assert np.array_equal(gj, j[keep])
    walked_apart = neighbors._LoneGroup.of(neighbors._Sorted.of(x, np.arange(n), 0.15, group, self_collides))
    assert (walked_apart is not None) == (np.count_nonzero(lone) >= neighbors.LONE_GROUP_SHARE * n)


def test_large_input_uses_batches_and_stays_exact() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((3000, 3))
    assert _as_set(*find_pairs(x, 0.04)) == _as_set(*brute_force_pairs(x, 0.04))


def test_output_is_deterministic() -> None:
    x = np.random.default_rng(5).random((500, 3))
    a = find_pairs(x, 0.1)
    b = find_pairs(x.copy(), 0.1)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=150),
    cutoff=st.floats(min_value=0.02, max_value=0.5),
    share=st.floats(min_value=0.0, max_value=1.0),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
)
def test_pairs_touching_finds_every_pair_of_the_query_once(
    n: int, cutoff: float, share: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    query = np.flatnonzero(rng.random(n) < share)
    is_query = np.zeros(n, dtype=bool)
    is_query[query] = True
    bi, bj = brute_force_pairs(x, cutoff)
    mine = is_query[bi] | is_query[bj]
    expected = set(zip(bi[mine].tolist(), bj[mine].tolist(), strict=True))
    assert _as_set(*pairs_touching(x, query, cutoff)) == expected


@pytest.mark.parametrize(
    ("spread", "expected_path"),
    [(1.0, "_Columns"), (1.0e4, "_Grid")],  # a dense box: columns; particles flung far apart: cells
)
def test_both_search_paths_match_brute_force(
    spread: float, expected_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    x = rng.random((300, 3)) * 0.6
    x[:3] *= spread  # three far-flung particles make the box sparse when spread is large
    used: list[str] = []
    for name in ("_Columns", "_Grid"):
        cls = getattr(neighbors, name)
        original = cls.pairs

        def spy(self: object, task: object, _original: object = original, _name: str = name) -> object:
            used.append(_name)
            return _original(self, task)  # type: ignore[operator]

        monkeypatch.setattr(cls, "pairs", spy)
    cutoff = 0.12
    assert _as_set(*find_pairs(x, cutoff)) == _as_set(*brute_force_pairs(x, cutoff))
    assert set(used) == {expected_path}
    query = np.arange(0, 300, 7)
    is_query = np.zeros(300, dtype=bool)
    is_query[query] = True
    bi, bj = brute_force_pairs(x, cutoff)
    mine = is_query[bi] | is_query[bj]
    expected = set(zip(bi[mine].tolist(), bj[mine].tolist(), strict=True))
    assert _as_set(*pairs_touching(x, query, cutoff)) == expected
