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
in every engine that sleeps. A steady force on a sleeping body (a moving platform's friction) gives it
only a h per step, under the threshold, so what moves bodies other than contacts wakes them
(:class:`Wake`): a collider contact with a nonzero surface velocity, a force field that changed their
velocity, an intact joint or a rope tie. A kinematic body settles its partners only while it stands
still, and sleep spreads by islands (a ready body next to an awake one wakes, ``_islands``). Kinematic
bodies never sleep. The counter stops at its limit, so a pile that sleeps whole is a fixed point of the
small step and ``rest_check`` ends its frames early.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .model import ParticleModel
from .state import ParticleState

if TYPE_CHECKING:
    from .joints import JointSystem

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# A body must be slow this long (s) before it sleeps: long enough that a body accelerating from rest at
# more than threshold / this (0.1 m/s^2 at 0.05 m/s) passes the threshold first and never sleeps.
RIGID_SLEEP_SECONDS = 0.5


@dataclass
class Wake:
    """What moves rigid bodies this small step besides contacts: each wakes the bodies it acts on.

    Attributes:
        contact_idx: (K,) particles in collider contacts this small step.
        contact_velocity: (K, 3) the surface's velocity at each, m/s (nonzero: a moving collider).
        field_pushed: (N,) bool, particles whose velocity a force field changed, or None.
        tied: (B,) bool, bodies in an intact joint or tied to a rope, or None.
    """

    contact_idx: IntArray
    contact_velocity: FloatArray
    field_pushed: BoolArray | None = None
    tied: BoolArray | None = None


def tied_bodies(
    model: ParticleModel, joints: JointSystem | None, cache: dict[str, object]
) -> BoolArray | None:
    """(B,) bool, the bodies in an intact joint or tied to a rope (a joint's motor, a rope's pull or a
    moving partner acts on them through the tie, not through a contact), or None without any; ``cache``
    keeps it per model and set of intact joints (the joints' handles are listed once, not every step)."""
    sm = model.shape_matching
    if sm is None or (model.rope_ties is None and (joints is None or not len(joints))):
        return None
    broken = b"" if joints is None else joints.broken.tobytes()
    key = (id(sm), broken, id(model.rope_ties))
    if cache.get("key") != key:
        tied = np.zeros(sm.n_bodies, dtype=bool)
        if model.rope_ties is not None:
            tied[model.rope_ties.body] = True
        if joints is not None:
            ends = [(j.body_a, j.body_b) for j in joints.joints if not j.broken]
            numbers = [b.number for pair in ends for b in pair if b is not None]
            tied[np.asarray(numbers, np.int64)] = True
        cache["key"], cache["tied"] = key, tied
    return cache["tied"]  # type: ignore[return-value]


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
    wake: Wake | None = None,
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
        kinematic: (B,) bool, kinematic bodies (never sleep; they settle their partners only while
            they stand still), or None.
        wake: what acts on bodies besides contacts this small step (:class:`Wake`), or None.
    """
    sm = model.shape_matching
    if sm is None or not sm.n_bodies:
        return
    v, x = state.velocities, state.positions
    speed2 = np.einsum("ij,ij->i", v, v)
    slow = speed2 < threshold * threshold  # (N,)
    fast_count = sm.body_sums((~slow[sm.rows]).astype(np.float64))
    still = (fast_count == 0.0) & (state.rigid_touch_count > 0.0)
    driven = _driven_bodies(model, wake, len(x))
    if driven is not None:  # a moving collider, a force field or a tie acts on it: awake (module doc)
        still &= ~driven
    if kinematic is not None:
        still &= ~kinematic
    limit = float(sleep_steps(h))
    count = np.where(still, np.minimum(state.rigid_still_steps + 1.0, limit), 0.0)
    state.rigid_still_steps = count
    ready = count >= limit
    if not ready.any():
        return
    # Settled particles: those of bodies that have been still long enough, any other slow one; a
    # kinematic body's only while it stands still (its path velocity is exactly zero).
    settled = slow.copy()
    settled[sm.rows] = ready[sm.body]
    if kinematic is not None:
        kin_rows = sm.idx[kinematic[sm.body]]
        settled[kin_rows] = speed2[kin_rows] == 0.0
    if len(pair_i):
        asleep = _islands(sm.body, sm.idx, sm.n_bodies, ready, settled, pair_i, pair_j, len(x))
        # A ready body its island keeps awake counts one short, so that a full count always means
        # "slept in the last small step" (``sleeping_rows``); still next step, it is ready again.
        state.rigid_still_steps = np.where(ready & ~asleep, limit - 1.0, count)
        ready = asleep
    rows = sm.idx[ready[sm.body]]  # the particles of the sleeping bodies
    v[rows] = 0.0
    x_pred[rows] = x[rows]


def sleeping_rows(model: ParticleModel, state: ParticleState, h: float) -> IntArray | None:
    """The particles of the rigid bodies that slept in the last small step (their still count is full),
    or None without any. The frame's stabilization pass leaves them where they are: it moves x itself,
    so pushing a sleeping pile out of its steady overlap raised it a little every frame (a column of
    three boxes rose 0.8 mm over 10 s, its potential energy up 0.2 J a frame) where a sleeping body
    must not move at all."""
    sm = model.shape_matching
    if sm is None or not sm.n_bodies:
        return None
    asleep = state.rigid_still_steps >= float(sleep_steps(h))
    if not asleep.any():
        return None
    return sm.idx[asleep[sm.body]]


def all_asleep(model: ParticleModel, state: ParticleState, h: float) -> bool:
    """Whether every particle belongs to a rigid body that slept in the last small step. The frame's
    stabilization pass then moves nothing (``sleeping_rows``), so the solver skips it, and the frame's
    first small step may end the frame as a fixed point (``rest_check``): a pile asleep whole costs one
    small step a frame instead of two."""
    sm = model.shape_matching
    if sm is None or len(sm.idx) != len(state.positions):
        return False
    return bool(np.all(state.rigid_still_steps >= float(sleep_steps(h))))


def _driven_bodies(model: ParticleModel, wake: Wake | None, n: int) -> BoolArray | None:
    """(B,) bool, the bodies something besides contacts moves this small step (``Wake``), or None."""
    sm = model.shape_matching
    if wake is None or sm is None:
        return None
    moving = None
    if len(wake.contact_idx) and wake.contact_velocity.any():  # planes and still meshes: all zero
        moving = np.einsum("ij,ij->i", wake.contact_velocity, wake.contact_velocity) > 0.0
    if moving is None and wake.field_pushed is None:  # nothing but ties (the per-particle pass: 10 us)
        return None if wake.tied is None else wake.tied.copy()
    moved = np.zeros(n, dtype=bool)  # particles a moving surface, a field or a tie acts on
    if moving is not None:
        moved[wake.contact_idx[moving]] = True
    if wake.field_pushed is not None:
        moved |= wake.field_pushed
    driven = np.bincount(sm.body, weights=moved[sm.rows], minlength=sm.n_bodies) > 0.0
    if wake.tied is not None:
        driven |= wake.tied
    return driven


def _islands(
    body: IntArray,
    rows: IntArray,
    n_bodies: int,
    ready: BoolArray,
    settled: BoolArray,
    pair_i: IntArray,
    pair_j: IntArray,
    n: int,
) -> BoolArray:
    """The ready bodies whose whole island is settled: a body with a candidate partner that is not
    settled wakes, and so, in turn, does every ready body it may touch (rounds of propagation until none
    wakes; each round is vectorized, and a pile needs about as many rounds as bodies in its tallest
    chain). Returns the bodies that sleep, (B,) bool."""
    body_of = np.full(n, -1, np.int64)  # -1: not rigid
    body_of[rows] = body
    rigid_i, rigid_j = body_of[pair_i], body_of[pair_j]
    # Pairs between two bodies (their islands' edges); pairs with any other particle wake once.
    awake = np.zeros(n_bodies, dtype=bool)
    hit = (rigid_i >= 0) & ~settled[pair_j]
    awake[rigid_i[hit]] = True
    hit = (rigid_j >= 0) & ~settled[pair_i]
    awake[rigid_j[hit]] = True
    link = (rigid_i >= 0) & (rigid_j >= 0) & (rigid_i != rigid_j)
    a, b = rigid_i[link], rigid_j[link]
    if len(a):
        key = np.unique(a * n_bodies + b)
        a, b = key // n_bodies, key % n_bodies
    asleep = ready & ~awake
    while len(a):
        # A sleeping body next to one that is awake (not sleeping: woken, or never ready) wakes.
        woken = np.zeros(n_bodies, dtype=bool)
        woken[a[~asleep[b]]] = True
        woken[b[~asleep[a]]] = True
        woken &= asleep
        if not woken.any():
            break
        asleep &= ~woken
    return asleep
