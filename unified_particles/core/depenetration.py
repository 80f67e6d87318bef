# SPDX-License-Identifier: GPL-3.0-or-later
"""Gentle separation of bodies that overlap at the start (nested shells, interpenetrating props).

Bodies placed inside each other are pushed apart by the contact constraints, and position-based dynamics
turns every correction into velocity (v = (x* - x) / h): a deep overlap resolved within a few small steps
throws the bodies apart at metres per second (issue 23: nested hollow bodies thrown 15 m up). As PhysX's
maximum depenetration velocity (``PxRigidBody::setMaxDepenetrationVelocity``: "the maximum velocity
permitted to be introduced by the solver to correct for penetrations in contacts") and Unity's
``Rigidbody.maxDepenetrationVelocity`` do, the speed that overlaps present at the start can create is
capped: the bodies (collision groups) that overlap another body where they were built
(``model.particle_rest_q``: two particles of different groups closer than ``OVERLAP_FRACTION`` of a
diameter) and still do when the solver first steps them (a body added to a running world is built where
others were at their own start, which does not count) have their speed clamped to
``max_depenetration_speed`` after each small step (a rigid body as a whole: its velocity field scaled so
that no point of it is faster; grains and cloth vertices one by one) while they are closer than
``RELEASE_FRACTION`` of a diameter to another body, so they separate at most that fast, then move freely
(bodies that stay in contact, a box nested in a solid one, stay capped). The set is made at the first small
step after bodies were added, and snapshots carry it (``to_array`` / ``from_array``), so a run resumed from a
snapshot caps the very bodies the straight run caps (bit-identical resume). Bodies that did not
overlap at the start are never touched (impacts keep their speed), and fluid particles are left out (a
liquid is compressed on purpose).

Used by the solver (``Solver.small_step``, after the velocity update).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .corrections import clamp_speed
from .model import KIND_RIGID
from .neighbors import find_pairs
from .sizes import find_sized_pairs, pair_rest

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# Two particles of different bodies overlap at the start when closer than this fraction of a diameter:
# touching bodies built side by side sit at one diameter, and rounding must not count as an overlap.
OVERLAP_FRACTION = 0.9
# Such bodies stay capped while closer than this fraction of a diameter to another body: the last tenth
# of an overlap resolved in one small step would otherwise leave at 0.2 r / h (metres per second).
# Resting contact sits within a percent of a diameter, so bodies that stay in contact stay capped.
RELEASE_FRACTION = 0.99


class Depenetration:
    """The bodies that overlap another one where they were built, and the speed cap on them."""

    def __init__(
        self, max_speed: float, model: Any, radius: Any, x: FloatArray, groups: IntArray | None = None
    ) -> None:
        """``groups``: the start groups as :meth:`to_array` saved them (a snapshot); None: found here."""
        rest, group, fluid = model.particle_rest_q, model.particle_group, model.particle_is_fluid
        kind = model.particle_kind
        self.max_speed = float(max_speed)
        self.radius = radius
        self.fluid = fluid
        self.rigid = kind == KIND_RIGID
        if groups is not None:
            self.start_groups = np.asarray(groups, dtype=np.int64)
            return
        # radius: one, or (N,) per particle (a pair's diameter is then r_i + r_j).
        if np.ndim(radius):  # by size class (a cell of the largest would list 1000x the pairs)
            no_self = np.zeros(int(group.max(initial=0)) + 1, dtype=bool)
            i, j = find_sized_pairs(rest, OVERLAP_FRACTION * radius, group, no_self)
        else:
            i, j = find_pairs(rest, OVERLAP_FRACTION * 2.0 * radius)
        d = x[i] - x[j]  # still overlapping now (bodies added later were built where others had been)
        keep = (group[i] != group[j]) & ~fluid[i] & ~fluid[j]
        keep &= np.einsum("ij,ij->i", d, d) < (OVERLAP_FRACTION * pair_rest(radius, i, j)) ** 2
        # (G,) the collision groups that overlap another group at the start.
        self.start_groups = np.unique(np.concatenate([group[i[keep]], group[j[keep]]]))

    def clamp(
        self, v: FloatArray, x: FloatArray, pair_i: IntArray, pair_j: IntArray, group: IntArray
    ) -> None:
        """Cap the speed (in place) of the particles of start-overlapping bodies that still overlap.

        ``x``: (N, 3) positions at the start of the small step (its velocity resolved the overlap there);
        ``pair_i``, ``pair_j``: the step's candidate pairs (a superset of the
        pairs closer than a diameter); ``group``: (N,) collision groups.
        """
        if len(self.start_groups) == 0 or len(pair_i) == 0:
            return
        fluid = self.fluid
        candidate = np.isin(group[pair_i], self.start_groups) | np.isin(group[pair_j], self.start_groups)
        candidate &= (group[pair_i] != group[pair_j]) & ~fluid[pair_i] & ~fluid[pair_j]
        a, b = pair_i[candidate], pair_j[candidate]
        d = x[a] - x[b]
        close = np.einsum("ij,ij->i", d, d) < (RELEASE_FRACTION * pair_rest(self.radius, a, b)) ** 2
        now = np.intersect1d(np.unique(np.concatenate([group[a[close]], group[b[close]]])), self.start_groups)
        if len(now) == 0:
            return
        capped = np.isin(group, now) & ~fluid
        rigid = capped & self.rigid
        if rigid.any():  # a rigid body as a whole: its velocity field scaled so no point is faster
            which = np.flatnonzero(rigid)
            g = group[which]
            fastest = np.zeros(int(group.max()) + 1)
            np.maximum.at(fastest, g, np.sqrt(np.einsum("ij,ij->i", v[which], v[which])))
            scale = np.minimum(1.0, self.max_speed / np.maximum(fastest, 1e-300))
            v[which] *= scale[g][:, None]
        loose = np.flatnonzero(capped & ~self.rigid)
        if len(loose):  # grains and cloth vertices one by one
            sub = v[loose]
            clamp_speed(sub, self.max_speed)
            v[loose] = sub


def to_array(current: Depenetration | None) -> FloatArray:
    """The start set for a snapshot: (0,) not made yet; else -1 followed by the start groups (G,)."""
    if current is None:
        return np.zeros(0)
    return np.concatenate([[-1.0], current.start_groups.astype(np.float64)])


def from_array(
    saved: FloatArray, max_speed: float, model: Any, radius: Any, x: FloatArray
) -> Depenetration | None:
    """The start set saved by :func:`to_array` (None: not made yet, or a snapshot from before it: made
    at the next small step from the positions then, so a resumed run caps exactly the bodies a straight
    run caps)."""
    if len(saved) == 0 or not np.isfinite(max_speed):
        return None
    return Depenetration(max_speed, model, radius, x, np.rint(saved[1:]).astype(np.int64))


def apply(
    current: Depenetration | None,
    max_speed: float,
    model: Any,
    radius: Any,
    v: FloatArray,
    x: FloatArray,
    pair_i: IntArray,
    pair_j: IntArray,
) -> Depenetration | None:
    """The solver's hook: make the start-overlap set on first use (None: no cap), cap, return it."""
    if not np.isfinite(max_speed):
        return current
    if current is None:
        current = Depenetration(max_speed, model, radius, x)
    current.max_speed = float(max_speed)
    current.clamp(v, x, pair_i, pair_j, model.particle_group)
    return current
