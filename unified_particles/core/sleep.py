# SPDX-License-Identifier: GPL-3.0-or-later
"""Sleeping of rigid bodies by islands (``rigid_sleep_threshold``), after Box2D and Bullet.

The per-particle rule (``sleep_threshold``, ``Solver._sleep``) holds every slow particle that touches
something in the very small step it is slow. A body starting at rest on a slope steeper than its
friction angle, or a box 1 mm above the one below, is slow in its first small steps, so it was held
there for good (with the rule on, ``test_coulomb_friction_on_incline`` and the column of 20 boxes
failed). A rigid body here sleeps only when

* it touches something (a collider or a particle: ``rigid_touch_count``), and all its particles have
  been slower than the threshold for ``RIGID_SLEEP_SECONDS`` of small steps in a row (a counter per
  body, ``ParticleState.rigid_still_steps``, kept in snapshots so a resumed bake sleeps alike), and
* every particle it may touch (its candidate pairs, a superset of its contacts) is settled too: a
  particle of another body that has slept's count, any other particle slower than the threshold.

A sleeping body's particles stay where they were with zero velocity for that small step. It wakes
when any of this is no longer true: something landing on it or pushing it gives its particles a
speed above the threshold in the solve (the counter restarts), and a body it may touch that moves
keeps it awake. A body starting from rest escapes sleep when its acceleration exceeds
threshold / ``RIGID_SLEEP_SECONDS`` (0.1 m/s^2 at 0.05 m/s): slower creep than that is stopped, as
in every engine that sleeps. A steady force on a sleeping body (a moving platform's friction) wakes it
only above threshold / h: below, its per-step gain a h stays under the threshold and it is held again
(docs/physics.md, "Sleeping rigid bodies by islands": why this is off by default). Kinematic bodies
never sleep. The counter stops at its limit, so a pile
that sleeps whole is a fixed point of the small step and ``rest_check`` ends its frames early.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .model import ParticleModel
from .state import ParticleState

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# A body must be slow this long (s) before it sleeps: long enough that a body accelerating from rest at
# more than threshold / this (0.1 m/s^2 at 0.05 m/s) passes the threshold first and never sleeps.
RIGID_SLEEP_SECONDS = 0.5


def sleep_steps(h: float) -> int:
    """Small steps of ``h`` seconds in ``RIGID_SLEEP_SECONDS`` (at least 1)."""
    return max(1, math.ceil(RIGID_SLEEP_SECONDS / h - 1e-9))


def sleep_rigid_bodies(
    model: ParticleModel,
    state: ParticleState,
    x_pred: FloatArray,
    threshold: float,
    h: float,
    pair_i: IntArray,
    pair_j: IntArray,
    kinematic: BoolArray | None,
) -> None:
    """Advance each rigid body's still counter and hold the bodies that sleep (see the module docstring).

    Args:
        model: the particle model (its ``shape_matching`` gives the bodies).
        state: positions x (N, 3) at the step's start, velocities v (N, 3) m/s just updated; its
            ``rigid_still_steps`` (B,) and ``rigid_touch_count`` (B,) are read, the former updated.
        x_pred: (N, 3) the step's end positions, metres; a sleeping body's rows are set back to x.
        threshold: speed below which a particle is slow, m/s (> 0).
        h: the small step, s.
        pair_i, pair_j: (P,) this step's candidate pairs.
        kinematic: (B,) bool, kinematic bodies (never sleep), or None.
    """
    sm = model.shape_matching
    if sm is None or not sm.n_bodies:
        return
    v, x = state.velocities, state.positions
    slow = np.einsum("ij,ij->i", v, v) < threshold * threshold  # (N,)
    fast_count = np.bincount(sm.body, weights=~slow[sm.rows], minlength=sm.n_bodies)
    still = (fast_count == 0.0) & (state.rigid_touch_count > 0.0)
    if kinematic is not None:
        still &= ~kinematic
    limit = float(sleep_steps(h))
    count = np.where(still, np.minimum(state.rigid_still_steps + 1.0, limit), 0.0)
    state.rigid_still_steps = count
    ready = count >= limit
    if not ready.any():
        return
    # Settled particles: those of bodies that have been still long enough, any other slow one.
    settled = slow.copy()
    settled[sm.rows] = ready[sm.body]
    if len(pair_i):
        # A body any of whose candidate partners is not settled stays awake (both sides of each pair).
        body_of = np.full(len(x), -1, np.int64)  # -1: not rigid
        body_of[sm.rows] = sm.body
        rigid_i, rigid_j = body_of[pair_i], body_of[pair_j]
        awake = np.zeros(sm.n_bodies, dtype=bool)
        hit = (rigid_i >= 0) & ~settled[pair_j]
        awake[rigid_i[hit]] = True
        hit = (rigid_j >= 0) & ~settled[pair_i]
        awake[rigid_j[hit]] = True
        ready &= ~awake
    rows = sm.idx[ready[sm.body]]  # the particles of the sleeping bodies
    v[rows] = 0.0
    x_pred[rows] = x[rows]
