# SPDX-License-Identifier: GPL-3.0-or-later
"""A pair list reused until particles have moved past a margin from where it was built.

Searching pairs (particle-particle candidates, fluid neighbours, particle-triangle candidates of a
mesh collider) costs far more than checking whether the last search still holds. Each search is
therefore made with a margin and kept with the positions it was made at; a later step reuses it while
the particles stay within the margin of those positions. :class:`PairCache` is that record; the
validity tests differ by user (which motion can bring a new pair within reach), so each is a named
method and its user picks it. Imports ``fastops``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .fastops import column_max, column_min

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def _no_pairs() -> IntArray:
    return np.zeros(0, np.int64)


@dataclass
class PairCache:
    """A pair list and the positions it holds for.

    Attributes:
        reference: (N, 3) positions the list was built from, metres; (0, 3) when there is no list.
            The contact candidates and fluid pairs are pure functions of these, so a snapshot keeps only
            them (a collider's lists are not part of a snapshot).
        i, j: (K,) int64 the pairs (a list of single particles keeps them in ``i``; ``j`` is then empty).
        key: what else the list depends on (a reach in metres, a frame number), None for nothing.
        cut: (B, 3, 3) the rigid bodies' rotations the contact candidates of coarse faces were cut at
            (``face_slab``; NaN: not cut), None for a list that cuts none.
    """

    reference: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    i: IntArray = field(default_factory=_no_pairs)
    j: IntArray = field(default_factory=_no_pairs)
    key: float | None = None
    cut: FloatArray | None = None

    def reset(self) -> None:
        """Forget the list: the next query searches afresh."""
        self.store(np.zeros((0, 3)), _no_pairs(), _no_pairs())
        self.cut = None

    def store(
        self, reference: FloatArray, i: IntArray, j: IntArray | None = None, key: float | None = None
    ) -> None:
        """Keep the list ``i, j`` built at ``reference`` (kept as given, not copied) for ``key``."""
        self.reference, self.i = reference, i
        self.j = _no_pairs() if j is None else j
        self.key = key

    def store_if(
        self, cacheable: bool, x: FloatArray, i: IntArray, j: IntArray | None = None, key: float | None = None
    ) -> None:
        """Keep the list built at ``x`` (copied) if it may be reused (a collider at rest), else forget any."""
        if cacheable:
            self.store(x.copy(), i, j, key)
        else:
            self.reset()

    def holds_for(self, x: FloatArray, key: float | None = None) -> bool:
        """Whether the list was built for positions shaped like ``x`` (N, 3) and for ``key``."""
        return self.reference.shape == x.shape and self.key == key

    # The validity tests: each is one user's criterion, arithmetic unchanged from where it was written.
    def within_half_spread(self, x: FloatArray, margin: float) -> bool:
        """Every pair that can touch at ``x`` is listed, for a list searched with ``margin`` (contact
        candidates, fluid neighbours).

        Only relative motion changes which pairs are close: |d_ij| changes by at most
        |u_i - u_j| <= |u_i - c| + |u_j - c| for displacements u and any common shift c. With c the
        midrange, a block of grains falling together never triggers a rebuild. Per axis the deviation
        from the midrange is at most half the spread (ptp), which bounds |u_i - c| without a
        per-particle norm: the test is half spread < margin / 2.
        """
        moved = x - self.reference
        half_spread = 0.5 * (column_max(moved) - column_min(moved))
        return float((half_spread * half_spread).sum()) < (0.5 * margin) ** 2

    def within_max_move(self, x: FloatArray, margin: float) -> bool:
        """No particle moved ``margin`` or more from its reference (lists of a collider at rest, whose
        surface does not move with the particles)."""
        moved = x - self.reference
        return float(np.einsum("ij,ij->i", moved, moved).max(initial=0.0)) < margin * margin

    def moved_beyond(self, x: FloatArray, margin: float) -> IntArray:
        """(F,) the particles that moved ``margin`` or more from their references (refreshed one by one)."""
        moved = x - self.reference
        return np.flatnonzero(np.einsum("ij,ij->i", moved, moved) >= margin * margin)

    def beyond_median_shift(
        self, x: FloatArray, margin: float, ahead: float
    ) -> tuple[FloatArray, IntArray] | None:
        """Per particle, about the median shift c (most particles resting, or most falling together):
        None while every particle is within ``margin`` / 2 of its reference + c (the list holds), else
        (c (3,), the particles past ``ahead`` times that limit), whose references the caller renews.
        """
        moved = x - self.reference
        c = np.median(moved, axis=0)
        dev = moved - c
        dev2 = np.einsum("ij,ij->i", dev, dev)
        if float(dev2.max()) < (0.5 * margin) ** 2:
            return None
        return c, np.flatnonzero(dev2 >= (ahead * 0.5 * margin) ** 2)
