# SPDX-License-Identifier: GPL-3.0-or-later
"""Step 2 of the small step: the inverse masses particles have in contacts (the solver's mass scaling).

Rigid particles get their effective mass under shape matching's contact weighting, soft particles theirs
(``soft.py``), and with shock propagation (paper Sec. 4.3) lower particles are heavier in contacts. Arrays
in, arrays out; used by ``Solver.small_step``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .model import ParticleModel
from .settings import SolverSettings
from .state import ParticleState

FloatArray = NDArray[np.float64]

# Cap of the shock-propagation exponent k * height: exp(50) ~ 5e21 is far beyond any mass ratio the
# contacts can use (max_mass_ratio limits it), and exp of larger values overflows float64 near 709.
SHOCK_EXPONENT_CAP = 50.0


def scaled_contact_inv_mass(
    model: ParticleModel,
    settings: SolverSettings,
    gravity: FloatArray,
    state: ParticleState,
    x_pred: FloatArray,
    h: float,
) -> tuple[FloatArray, FloatArray | None]:
    """Contact inverse masses (N,), 1/kg: rigid and soft effective masses, shock propagation; and the soft
    particles' contact gain (N,) (``SoftClusters.contact_inv_mass``; None without soft bodies).

    Rigid particles: shape matching weighs a touching particle (1 + W) times its mass m, so a
    correction on it moves its body by m (1 + W) / (M + W m n) of it (M body mass, n touching
    particles of the body, from the previous small step). Giving the contact the effective mass
    m_c = M m (1 + W) / (M + W m n) makes the body's momentum change equal the partner's: the
    weighting keeps friction from being averaged away without breaking momentum conservation.

    Shock propagation (paper Sec. 4.3): w* = w exp(k height), m* = m exp(-k height), ``x_pred`` (N, 3)
    the predicted positions, ``gravity`` (3,) m/s^2, ``h`` the small step, s.
    """
    w = rigid_contact_inv_mass(model, settings, state)
    gain = None
    if model.soft is not None:
        w, gain = model.soft.contact_inv_mass(w, h, model.particle_inv_mass)
    k = settings.shock_propagation
    g = math.sqrt(float(gravity.dot(gravity)))  # np.linalg.norm's own arithmetic, without its overhead
    if k <= 0.0 or g == 0.0 or not model.any_pairs:
        return w, gain
    up = -gravity / g
    axis = np.flatnonzero(up)
    if len(axis) == 1 and abs(up[axis[0]]) == 1.0:
        # Gravity along an axis (the usual -z): the other terms of the dot product are exact zeros, so
        # the height is that coordinate itself (11 us for the einsum over S2's 3375 particles, 1 us).
        height = x_pred[:, axis[0]] * up[axis[0]]
    else:
        height = np.einsum("ij,j->i", x_pred, up)
    # Relative to the lowest particle, capped so exp never overflows.
    return w * np.exp(np.minimum(k * (height - height.min()), SHOCK_EXPONENT_CAP)), gain


def rigid_contact_inv_mass(
    model: ParticleModel, settings: SolverSettings, state: ParticleState
) -> FloatArray:
    """Contact inverse masses (N,) with rigid particles' effective mass (see scaled_contact_inv_mass)."""
    w = model.particle_contact_inv_mass
    sm = model.shape_matching
    if sm is not None:
        big_w = settings.rigid_contact_weight
        n_touch = state.rigid_touch_count[sm.body]
        body_mass = sm.row_body_mass
        if body_mass is None:  # constant per model: gathered once, not every small step
            body_mass = sm.row_body_mass = model.rigid_mass[sm.body]
        factor = (body_mass + big_w * sm.mass * n_touch) / (body_mass * (1.0 + big_w))
        w = w.copy()
        w[sm.rows] *= factor
    return w
