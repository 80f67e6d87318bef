# SPDX-License-Identifier: GPL-3.0-or-later
"""Calm surface: a free surface near rest relaxes towards its neighbours' velocity (issue 25, item 2).

Inside a liquid at rest the particles sleep (``FluidSolver.settle``: above rest density and slower than
half of g h), but a free-surface particle is below rest density, so it never sleeps, and the unilateral
density constraint does not hold it down: the slosh a settling fill leaves in a wide tank decayed only
through XSPH viscosity (0.01), its fastest particles still at 0.057 m/s after 3 s. Here each surface
particle whose neighbourhood's mean velocity is below ``CALM_GH`` g h (and its own speed below
``OWN_GH`` g h) takes a fraction of the difference between its neighbours' kernel-weighted mean velocity
and its own, as XSPH does (PBF Eq. 17), with a strength that falls linearly to zero at those speeds.
Relative velocity only: a surface moving with the liquid under it (a drop falling, a sheet spreading as
one, liquid carried by a uniform push) keeps its motion; a splash onto still water is faster than the
thresholds and keeps its.
Damping, not sleeping, so there is no yield threshold: a particle pulled down a slope slides at a reduced
speed instead of being held.

What the liquid does on its own is calmed, what pushes it from outside is not: a particle a force field
pushed in this small step (``pushed``: wind, turbulence, any Blender effector) is left alone, so a field's
push on still water is not damped where it varies from particle to particle; liquid near a solid particle
(a grain, a rigid body's or cloth's particles: bodies that move it) is left alone too. Inflows emit at
their flow speed and moving colliders push at theirs, both above the threshold for any visible motion.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# Speeds below which a surface particle counts as near rest, in units of g h (h the small step): its
# neighbourhood's kernel-weighted mean velocity below CALM_GH g h, its own speed below OWN_GH g h; the
# strength falls linearly to zero at either. The rest noise of one density pass per small step is about
# g h (0.026 m/s at 24 fps and 16 small steps); the liquid counts as at rest below 8 g h (fluid.REST_GH)
# for the density passes. Both at 4 g h (0.1 m/s, session 9) the 0.6 m deep tank sat 1.0-1.04 per cent
# low (perturbed fills); both at 2 g h (session 10) the wide tank's fastest particle after 3 s was 0.019,
# 0.019, 0.040, 0.019 m/s over four fills (main 0.057, 0.030, 0.020, 0.024): the 0.040 fill's surface
# still had lone particles hopping at 0.07-0.1 m/s over a still neighbourhood at 2.3-3 s, above the
# threshold. With the particle's own limit at 4 g h: 0.020, 0.014, 0.027, 0.021 m/s (3 g h: the third
# 0.021), the deep tank's fastest 0.31-0.72 g h over six fills (2 g h: 0.55-1.28, main 0.13-1.19) and
# its level 0.87-1.08 per cent low (2 g h 0.87-0.94, main 0.68-0.98).
CALM_GH = 2.0
OWN_GH = 4.0
# Fraction of the velocity difference to the neighbours' mean taken per small step at zero speed (the
# strength falls linearly to 0 at CALM_GH g h). Explicit relaxation towards a weighted mean of the
# neighbours: stable for any fraction up to 1. 0.05 left the wide tank at 0.023 m/s; 0.4 with 2 g h held a
# grain 1.5 layers up in shallow water (test_grains_sink_and_settle_in_water) in 2 of 3 fills.
CALM_FRACTION = 0.2
# Only the surface of a body of liquid: a surface particle with at least UNDER_SHARE of its kernel weight on
# particles above rest density. A sheet a particle or two thick keeps its motion: calmed too, a collapsing
# heap of water kept particles resting on its one-particle layer (test_honey_stays_a_heap_where_water_
# spreads: 95th percentile of the height 0.10 m against 0.06, for any fraction 0.01-0.2; 0.06 at 0.5).
UNDER_SHARE = 0.5
# Liquid within NEAR_SOLID_HOPS neighbourhoods of a solid particle (grain, rigid or cloth particle) moves
# with it or around it: not calmed.
NEAR_SOLID_HOPS = 2


def calm_surface(
    v: FloatArray,
    pairs: tuple[IntArray, IntArray, int, FloatArray],
    compressed: BoolArray,
    is_fluid: BoolArray,
    pushed: BoolArray | None,
    gh: float,
) -> None:
    """Relax the near-rest surface particles' velocities ``v`` (N, 3, m/s, in place) towards their
    neighbours' mean. ``pairs`` (pi, pj, ff, W) are the pairs of the last density pass, fluid-fluid first
    (``ff`` of them, W (ff,) their kernel values, any unit: only ratios count), then fluid (i) - solid
    particle (j); ``compressed`` (N,) the particles above rest density at the last pass (inside a
    liquid), ``is_fluid`` (N,) the fluid particles, ``pushed`` (N,) those a force field pushed in this
    small step (None: none); ``gh`` gravity times the small step, m/s."""
    pi_all, pj_all, ff, weight = pairs
    pi, pj = pi_all[:ff], pj_all[:ff]
    if gh <= 0.0 or CALM_FRACTION <= 0.0 or len(pi) == 0 or len(weight) != ff:
        return
    limit, own_limit = CALM_GH * gh, OWN_GH * gh
    speed2 = np.einsum("ij,ij->i", v, v)
    candidate = is_fluid & ~compressed & (speed2 < own_limit * own_limit)
    if pushed is not None and len(pushed) == len(v):
        candidate &= ~pushed
    if not candidate.any():
        return
    n = len(v)
    if NEAR_SOLID_HOPS > 0 and len(pi_all) > ff:  # fluid i - solid j pairs after the first ff
        near = np.bincount(pi_all[ff:], minlength=n) > 0
        for _ in range(NEAR_SOLID_HOPS - 1):
            near = near | (np.bincount(pi, weights=near[pj], minlength=n) > 0)
            near |= np.bincount(pj, weights=near[pi], minlength=n) > 0
        candidate &= ~near
    inside = compressed.astype(np.float64)
    on_i, on_j = candidate[pi], candidate[pj]
    ii, jj, wi = pi[on_i], pj[on_i], weight[on_i]  # candidate i sees neighbour j
    ij, ji, wj = pj[on_j], pi[on_j], weight[on_j]  # candidate j sees neighbour i
    total = np.bincount(ii, weights=wi, minlength=n) + np.bincount(ij, weights=wj, minlength=n)
    # (not in place: np.bincount of no pairs is int64)
    under = np.bincount(ii, weights=wi * inside[jj], minlength=n) + np.bincount(
        ij, weights=wj * inside[ji], minlength=n
    )
    candidate &= under > UNDER_SHARE * total
    idx = np.flatnonzero(candidate & (total > 0.0))
    if len(idx) == 0:
        return
    mean = np.empty((len(idx), 3))
    for axis in range(3):
        s = np.bincount(ii, weights=wi * v[jj, axis], minlength=n) + np.bincount(
            ij, weights=wj * v[ji, axis], minlength=n
        )
        mean[:, axis] = s[idx] / total[idx]
    # The local flow: the faster of the particle and its neighbourhood's mean, so a splash onto still
    # water (fast particle) and a surface riding a flow (fast neighbours) are both left alone.
    flow = np.maximum(np.sqrt(speed2[idx]) / own_limit, np.sqrt(np.einsum("ij,ij->i", mean, mean)) / limit)
    strength = CALM_FRACTION * np.maximum(1.0 - flow, 0.0)
    v[idx] += strength[:, None] * (mean - v[idx])
