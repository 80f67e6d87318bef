"""The column/row reduction helpers give exactly NumPy's own reductions (they change speed only)."""

from __future__ import annotations

import numpy as np

from unified_particles.core.fastops import (
    column_max,
    column_min,
    rotate_translate,
    row_abs_max,
    rows_all,
    take_columns,
)


def test_reductions_equal_numpy_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1001, 3)) * 1e3
    np.testing.assert_array_equal(column_min(x), x.min(axis=0))
    np.testing.assert_array_equal(column_max(x), x.max(axis=0))
    np.testing.assert_array_equal(row_abs_max(x), np.abs(x).max(axis=1))
    mask = x > -500.0
    np.testing.assert_array_equal(rows_all(mask), mask.all(axis=1))
    c = rng.integers(-5, 9, size=(50, 3))
    assert column_max(c).dtype == c.dtype
    np.testing.assert_array_equal(column_max(c), c.max(axis=0))


def test_nan_and_inf_are_not_hidden() -> None:
    # The divergence check relies on NaN propagating: a NaN coordinate must not look "near".
    x = np.array([[0.0, 1.0, 2.0], [np.nan, 0.0, 0.0], [0.0, -np.inf, 0.0]])
    out = row_abs_max(x)
    assert out[0] == 2.0
    assert np.isnan(out[1])
    assert out[2] == np.inf
    assert not (out[1] <= 1e6)


def test_rotate_translate_is_the_affine_map() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(500, 3))
    m = rng.normal(size=(3, 3))
    c = rng.normal(size=3)
    np.testing.assert_allclose(rotate_translate(x, m, c), x @ m + c, rtol=0, atol=1e-12)


def test_take_columns_is_the_boolean_column_index() -> None:
    rng = np.random.default_rng(13)
    a = rng.normal(size=(3, 2000))
    keep = rng.random(2000) < 0.5
    np.testing.assert_array_equal(take_columns(a, np.flatnonzero(keep)), a[:, keep])
    assert take_columns(a, np.zeros(0, np.int64)).shape == (3, 0)
