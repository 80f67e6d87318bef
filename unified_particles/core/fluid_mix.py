# SPDX-License-Identifier: GPL-3.0-or-later
"""Liquids of different densities separate: each liquid drifts relative to the mixture (issue 25, item 7).

Why not by the particles' own motion: the density solve's anti-clumping (PBF Eq. 13 and the close-pair
term, core/fluid.py) and the XSPH viscosity give a resting liquid a yield stress of a few hundred pascals
at r = 2.5 cm, and a light liquid under a heavy one must flow particle past particle: Oil (900 kg/m^3)
under Water (1000) never overturned (docs/physics.md, "Liquids of different densities").

The mixture model of multiple-fluid SPH moves the *phases* instead of the particles: the particles carry
the mixture's motion, and each phase moves relative to it with a drift velocity (Ren, Li, Yan, Lin and
Hu 2014, "Multiple-fluid SPH simulation using a mixture model", ACM TOG 33(5); after Manninen et al.
1996), whose buoyancy term is

    u_k = tau (rho_k - rho_m) / rho_m (g - a).

Here a particle holds one liquid (its object), so the phase fraction is 0 or 1 and the phase flux is
quantized: a light particle with a heavier neighbour above it (within H) trades places with that
neighbour once its drift has carried it one lattice spacing 2r, i.e. at the rate |u_i| / 2r. Positions
and velocities are exchanged, so the mixture's particles, positions and velocity field stay where they
were, and only which liquid sits where changes; no particle passes another, so the yield stress above
does not hold it. Every exchange lowers the heavy liquid and lifts the light one: the mass centre only
falls.

The drift speed: Ren et al. leave tau as a parameter; here it is the one of a droplet of one particle's
size (diameter 2r) rising at its terminal speed in the Newton drag regime (C_d = 0.44, the sphere's for
Reynolds numbers 1e3-2e5: an oil drop of 5 cm rises at about 0.3 m/s in water),
u_i = sqrt((8/3) r |g| (rho_m - rho_i) / (rho_m C_d)), with rho_m the kernel-weighted mean density of the
particle and its liquid neighbours (Ren et al.'s mixture density). Only a particle with an unlike liquid
within H has rho_m != rho_i, and the pass runs only in worlds with more than one liquid density.

Densities come from the masses: every fluid particle has the same volume (2r)^3, so
(rho_m - rho_i) / rho_m = (m_m - m_i) / m_m with m_m the kernel-weighted mean mass.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# Drag coefficient of the droplet whose terminal speed sets the drift (a sphere at Re 1e3-2e5).
DRAG_COEFFICIENT = 0.44
# Any heavier neighbour higher up is a partner, however little: a light particle takes the one most
# directly above it. Requiring a step up of r or 0.2 r left the interface of the tilted scene
# (docs/physics.md) sloped 0.1 m across the tank (Oil's mean height 0.290 / 0.292 m after 3 s, 0.295 m
# with any step).


def several_liquids(is_fluid: BoolArray, inv_mass: FloatArray) -> bool:
    """Whether the movable fluid particles have more than one mass (more than one liquid density)."""
    w = inv_mass[is_fluid]
    w = w[w > 0.0]
    return bool(len(w)) and float(w.min()) != float(w.max())


class PhaseDrift:
    """The liquids' drift through each other, as exchanges of light and heavy particles.

    ``progress`` (N,) is each particle's drift since its last exchange, in lattice spacings; a light
    particle exchanges once it reaches 1.
    """

    def __init__(self, count: int, radius: float) -> None:
        self.progress = np.zeros(count)
        self.radius = radius
        self.exchanges = 0  # in the last small step

    def step(
        self,
        x: FloatArray,
        x_pred: FloatArray,
        pi: IntArray,
        pj: IntArray,
        wk: FloatArray,
        w0: float,
        inv_mass: FloatArray,
        gravity: FloatArray,
        h: float,
    ) -> None:
        """One small step of length ``h``: advance the drift and exchange the particles due, ``x`` and
        ``x_pred`` (N, 3) in place (the velocity (x_pred - x) / h goes with the place).

        ``pi``, ``pj`` (K,) are fluid-fluid pairs within H (of live particles), ``wk`` (K,) their kernel
        values, ``w0`` the kernel at 0, ``inv_mass`` (N,) (0: pinned, never exchanged), ``gravity`` (3,).
        """
        self.exchanges = 0
        g_norm = float(np.linalg.norm(gravity))
        if len(pi) == 0 or g_norm == 0.0:
            return
        wi, wj = inv_mass[pi], inv_mass[pj]
        unlike = (wi != wj) & (wi > 0.0) & (wj > 0.0)
        if not unlike.any():
            return
        n = len(inv_mass)
        down = np.asarray(gravity, dtype=np.float64) / g_norm
        # Light below heavy (a larger inverse mass is the lighter particle): the pair's light side, heavy
        # side and how directly the heavy one is above it.
        ui, uj = pi[unlike], pj[unlike]
        light_is_i = inv_mass[ui] > inv_mass[uj]
        light = np.where(light_is_i, ui, uj)
        heavy = np.where(light_is_i, uj, ui)
        above = (x_pred[light] - x_pred[heavy]) @ down  # how far the heavy one is above, m
        keep = above > 0.0
        if not keep.any():
            return
        light, heavy, above = light[keep], heavy[keep], above[keep]
        # Drift speed of each light particle with a heavy one above, from its mixture density.
        mass = np.where(inv_mass > 0.0, 1.0 / np.where(inv_mass > 0.0, inv_mass, 1.0), 0.0)
        movable = (wi > 0.0) & (wj > 0.0)
        wm = wk * movable
        weight = np.bincount(pi, weights=wm, minlength=n) + np.bincount(pj, weights=wm, minlength=n)
        massed = np.bincount(pi, weights=wm * mass[pj], minlength=n)
        massed += np.bincount(pj, weights=wm * mass[pi], minlength=n)
        idx = np.unique(light)
        m_i = mass[idx]
        m_mix = (massed[idx] + w0 * m_i) / (weight[idx] + w0)
        contrast = np.maximum(m_mix - m_i, 0.0) / m_mix
        speed = np.sqrt((8.0 / 3.0) * self.radius * g_norm * contrast / DRAG_COEFFICIENT)
        self.progress[idx] += speed * h / (2.0 * self.radius)
        due = self.progress[light] >= 1.0
        if not due.any():
            return
        light, heavy, above = light[due], heavy[due], above[due]
        # Each particle in one exchange at most: a light particle takes the heavy neighbour most directly
        # above it; a heavy particle chosen twice goes to the light one furthest along.
        order = np.lexsort((-above, light))
        first = np.ones(len(order), dtype=bool)
        first[1:] = light[order][1:] != light[order][:-1]
        light, heavy = light[order][first], heavy[order][first]
        order = np.lexsort((light, -self.progress[light], heavy))
        first = np.ones(len(order), dtype=bool)
        first[1:] = heavy[order][1:] != heavy[order][:-1]
        light, heavy = light[order][first], heavy[order][first]
        # A particle may be a heavy partner in one pair and a light one in another (three liquids).
        clash = np.isin(heavy, light)
        light, heavy = light[~clash], heavy[~clash]
        for arr in (x, x_pred):
            arr[light], arr[heavy] = arr[heavy], arr[light].copy()
        self.progress[light] -= 1.0
        self.exchanges = len(light)
