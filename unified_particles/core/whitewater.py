# SPDX-License-Identifier: GPL-3.0-or-later
"""Whitewater: spray, foam and bubble particles made by a liquid's motion (Ihmsen et al. 2012).

After Ihmsen, Akinci, Akinci and Teschner 2012, "Unified spray, foam and air bubbles for particle-based
fluids" (The Visual Computer 28). Each step, every fluid particle i gets three potentials from its
neighbours j within the kernel radius H (weight W_ij = 1 - |x_ij| / H, zero beyond):

* **trapped air** I_ta = sum_j |v_ij| (1 - v^_ij . x^_ij) W_ij: neighbours closing in on each other
  (a plunging jet, a breaking wave) trap air;
* **wave crest** I_wc = kappa_i if v^_i . n^_i >= CREST_ALIGNMENT else 0, with the curvature
  kappa_i = sum_j (1 - n^_i . n^_j) W_ij over the neighbours behind the surface (x^_ji . n^_i < 0) and
  n_i = sum_j x^_ij W_ij the outward surface normal (zero inside the liquid);
* **kinetic energy** I_k = |v_i|^2 / 2 per unit mass (J/kg).

Each is clamped to [0, 1] by Phi(I, lo, hi) = (min(I, hi) - min(I, lo)) / (hi - lo) and the particle
makes I_k (k_ta Phi(I_ta) + k_wc Phi(I_wc)) dt diffuse particles in a step (the fraction drawn at random
from the seeded generator). They start in a cylinder of the particle radius around the particle, along
its velocity over the step, with its velocity. A diffuse particle is, by its fluid neighbours within H
(a fraction of the full lattice's count): **spray** (few: ballistic under gravity), **foam** (at the
surface: carried with the liquid's local velocity, and it decays: a lifetime drawn from
``foam_lifetime``), or a **bubble** (inside: buoyancy against gravity and drag towards the liquid's
velocity). Foam whose lifetime ran out, and anything below ``floor_z``, is removed.

Everything is vectorized over particles and pairs (one pair search of the liquid, one between the diffuse
particles and the liquid per step); diffuse particles live in a fixed number of slots (``capacity``) so
that a bake writes a fixed point count. No effect on the liquid (one-way, as in the paper). Imports
``fluid`` (the kernel radius), ``neighbors`` and ``errors``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import SimulationInputError
from .fluid import KERNEL_RADII
from .neighbors import find_pairs

FloatArray = NDArray[np.float64]

FREE, SPRAY, FOAM, BUBBLE = 0, 1, 2, 3
#: A particle moving along its surface normal (cosine at least this) is a wave crest (Ihmsen: 0.6).
CREST_ALIGNMENT = 0.6
#: Fluid neighbours of a diffuse particle, as fractions of a particle's neighbours inside the rest
#: lattice: below SPRAY_FRACTION it flies as spray, above BUBBLE_FRACTION it is a bubble, else foam
#: (Ihmsen's 6 and 20 of a full neighbourhood of about 33 at their kernel radius).
SPRAY_FRACTION = 6.0 / 33.0
BUBBLE_FRACTION = 20.0 / 33.0


@dataclass(frozen=True)
class WhitewaterSettings:
    """How much whitewater a liquid makes and how it moves (Ihmsen et al. 2012, Table 1's roles).

    Attributes:
        trapped_air: (lo, hi) clamping range of I_ta, m/s.
        wave_crest: (lo, hi) clamping range of I_wc (dimensionless curvature sum).
        kinetic: (lo, hi) clamping range of the kinetic energy per unit mass, J/kg. The default's lower
            end, 0.125 J/kg, is a speed of 0.5 m/s: calm water makes nothing.
        rate_trapped_air, rate_wave_crest: diffuse particles per fluid particle per second at full
            potential (k_ta, k_wc).
        buoyancy: a bubble's upward acceleration in units of g (k_b).
        drag: fraction of the gap to the liquid's velocity a bubble closes per step (k_d, 0..1).
        foam_lifetime: (lo, hi) seconds a foam particle lives, drawn uniformly.
    """

    trapped_air: tuple[float, float] = (0.5, 3.0)
    wave_crest: tuple[float, float] = (0.5, 2.0)
    kinetic: tuple[float, float] = (0.125, 2.0)
    rate_trapped_air: float = 40.0
    rate_wave_crest: float = 40.0
    buoyancy: float = 2.0
    drag: float = 0.5
    foam_lifetime: tuple[float, float] = (1.0, 3.0)


def clamp_potential(values: FloatArray, lo: float, hi: float) -> FloatArray:
    """Ihmsen's Phi: (min(I, hi) - min(I, lo)) / (hi - lo), 0 below lo, 1 above hi."""
    return np.asarray((np.minimum(values, hi) - np.minimum(values, lo)) / (hi - lo))


def _lattice_neighbours(h_in_spacings: float) -> int:
    """Points of the unit cubic lattice within ``h_in_spacings`` of a node, the node excluded."""
    k = int(np.ceil(h_in_spacings))
    g = np.arange(-k, k + 1, dtype=np.float64)
    d2 = g[:, None, None] ** 2 + g[None, :, None] ** 2 + g[None, None, :] ** 2
    return int(np.count_nonzero(d2 < h_in_spacings**2)) - 1


class Whitewater:
    """The diffuse particles of one liquid: ``capacity`` slots of position, velocity, kind and lifetime.

    Step it once per frame (or per small step) after the world, with the liquid's live positions and
    velocities: ``whitewater.step(fluid.positions, fluid.velocities, dt)``.

    Args:
        radius: the world's particle radius r, metres (the liquid's lattice spacing is 2r).
        capacity: slots for diffuse particles; generation stops while all are taken.
        seed: seed of the generator that places new particles (same seed and inputs: same particles).
        settings: the potentials' ranges and rates (:class:`WhitewaterSettings`).
        gravity: (3,) m/s^2.
        floor_z: diffuse particles below this height (metres) are removed (None: never).
    """

    def __init__(
        self,
        radius: float,
        capacity: int = 100_000,
        seed: int = 0,
        settings: WhitewaterSettings | None = None,
        gravity: ArrayLike = (0.0, 0.0, -9.81),
        floor_z: float | None = None,
    ) -> None:
        if not np.isfinite(radius) or radius <= 0.0:
            raise SimulationInputError(f"whitewater radius must be a positive number of metres, not {radius}")
        if int(capacity) < 1:
            raise SimulationInputError(f"whitewater capacity must be at least 1, not {capacity}")
        self.radius = float(radius)
        self.h = KERNEL_RADII * self.radius
        self.settings = settings or WhitewaterSettings()
        self.gravity = np.asarray(gravity, dtype=np.float64).reshape(3)
        self.floor_z = floor_z
        self.rng = np.random.default_rng(seed)
        n = int(capacity)
        self.positions = np.zeros((n, 3))
        self.velocities = np.zeros((n, 3))
        self.kind = np.zeros(n, dtype=np.int8)
        self.lifetime = np.zeros(n)
        self.generated = 0  # diffuse particles made so far
        self.removed = 0  # and removed (alive = generated - removed)
        full = _lattice_neighbours(self.h / (2.0 * self.radius))
        self.spray_below = SPRAY_FRACTION * full
        self.bubble_above = BUBBLE_FRACTION * full

    @property
    def capacity(self) -> int:
        """Number of slots."""
        return len(self.kind)

    @property
    def alive(self) -> NDArray[np.bool_]:
        """(capacity,) which slots hold a diffuse particle."""
        return np.asarray(self.kind != FREE)

    def counts(self) -> dict[str, int]:
        """Live diffuse particles by kind: {"spray": ..., "foam": ..., "bubble": ...}."""
        c = np.bincount(self.kind, minlength=4)
        return {"spray": int(c[SPRAY]), "foam": int(c[FOAM]), "bubble": int(c[BUBBLE])}

    # ------------------------------------------------------------------ potentials
    def potentials(self, x: FloatArray, v: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """(I_ta, I_wc, I_k), each (N,), of liquid particles at ``x`` (N, 3) m moving at ``v`` (N, 3) m/s
        (the module doc's formulas; I_ta in m/s, I_wc dimensionless, I_k in J/kg)."""
        n = len(x)
        i, j = find_pairs(x, self.h)
        d = x[i] - x[j]
        r = np.sqrt(np.einsum("ij,ij->i", d, d))
        keep = r > 1e-12
        i, j, d, r = i[keep], j[keep], d[keep], r[keep]
        w = 1.0 - r / self.h
        dhat = d / r[:, None]
        # Trapped air: the same for both members of a pair (x_ji = -x_ij, v_ji = -v_ij).
        vij = v[i] - v[j]
        speed = np.sqrt(np.einsum("ij,ij->i", vij, vij))
        closing = np.einsum("ij,ij->i", vij, dhat) / np.maximum(speed, 1e-12)
        ta = speed * (1.0 - closing) * w
        i_ta = np.bincount(i, ta, n) + np.bincount(j, ta, n)
        # Outward normals: sum of x^_ij W_ij (cancels inside the liquid).
        normal = np.zeros((n, 3))
        for axis in range(3):
            normal[:, axis] = np.bincount(i, dhat[:, axis] * w, n) - np.bincount(j, dhat[:, axis] * w, n)
        length = np.sqrt(np.einsum("ij,ij->i", normal, normal))
        nhat = normal / np.maximum(length, 1e-12)[:, None]
        # Curvature: neighbours behind i's surface (x^_ji . n^_i < 0, i.e. d . n_i > 0), and j's alike.
        bend = (1.0 - np.einsum("ij,ij->i", nhat[i], nhat[j])) * w
        behind_i = np.einsum("ij,ij->i", d, nhat[i]) > 0.0
        behind_j = np.einsum("ij,ij->i", d, nhat[j]) < 0.0
        kappa = np.bincount(i, np.where(behind_i, bend, 0.0), n) + np.bincount(
            j, np.where(behind_j, bend, 0.0), n
        )
        vlen = np.sqrt(np.einsum("ij,ij->i", v, v))
        along = np.einsum("ij,ij->i", v, nhat) >= CREST_ALIGNMENT * vlen
        i_wc: FloatArray = np.where(along & (vlen > 0.0) & (length > 0.0), kappa, 0.0)
        i_k: FloatArray = 0.5 * vlen * vlen
        return np.asarray(i_ta, dtype=np.float64), i_wc, i_k

    # ------------------------------------------------------------------ step
    def step(self, x: ArrayLike, v: ArrayLike, dt: float) -> None:
        """Advance the diffuse particles by ``dt`` seconds through the liquid at positions ``x`` (N, 3) m
        with velocities ``v`` (N, 3) m/s (its live particles), then add the new ones its motion makes."""
        xf = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        vf = np.asarray(v, dtype=np.float64).reshape(-1, 3)
        if xf.shape != vf.shape:
            raise SimulationInputError(f"whitewater: positions {xf.shape} and velocities {vf.shape} differ")
        if not np.isfinite(dt) or dt <= 0.0:
            raise SimulationInputError(f"whitewater: dt must be a positive number of seconds, not {dt}")
        self._advect(xf, vf, dt)
        if len(xf) >= 2:
            self._generate(xf, vf, dt)

    def _advect(self, xf: FloatArray, vf: FloatArray, dt: float) -> None:
        """Classify the live diffuse particles by their fluid neighbours and move each by its kind."""
        live = np.flatnonzero(self.kind != FREE)
        if len(live) == 0:
            return
        s = self.settings
        xd = self.positions[live]
        count = np.zeros(len(live))
        vmean = np.zeros((len(live), 3))
        if len(xf):
            both = np.concatenate([xf, xd])
            group = np.concatenate([np.zeros(len(xf), np.int64), np.ones(len(live), np.int64)])
            a, b = find_pairs(both, self.h, group, np.array([False, False]))
            # Cross pairs only (each group skips its own): a is the liquid particle (lower index).
            r = np.sqrt(np.einsum("ij,ij->i", both[a] - both[b], both[a] - both[b]))
            w = 1.0 - r / self.h
            k = b - len(xf)
            count = np.bincount(k, minlength=len(live)).astype(np.float64)
            wsum = np.bincount(k, w, len(live))
            for axis in range(3):
                vmean[:, axis] = np.bincount(k, w * vf[a, axis], len(live))
            vmean /= np.maximum(wsum, 1e-12)[:, None]
        kind = np.where(count < self.spray_below, SPRAY, np.where(count > self.bubble_above, BUBBLE, FOAM))
        vd = self.velocities[live]
        spray, foam, bubble = kind == SPRAY, kind == FOAM, kind == BUBBLE
        vd[spray] += self.gravity * dt
        vd[foam] = vmean[foam]
        # v <- v + k_b |g| dt up + k_d (v_liquid - v): terminal rise k_b |g| dt / k_d in still water.
        vd[bubble] += -s.buoyancy * self.gravity * dt + s.drag * (vmean[bubble] - vd[bubble])
        xd += vd * dt
        became_foam = foam & (self.kind[live] != FOAM)
        life = self.lifetime[live]
        life[became_foam] = self.rng.uniform(*s.foam_lifetime, int(became_foam.sum()))
        life[foam] -= dt
        gone = foam & (life <= 0.0)
        if self.floor_z is not None:
            gone |= xd[:, 2] < self.floor_z
        self.positions[live], self.velocities[live], self.lifetime[live] = xd, vd, life
        self.kind[live] = np.where(gone, FREE, kind).astype(np.int8)
        self.removed += int(gone.sum())

    def _generate(self, xf: FloatArray, vf: FloatArray, dt: float) -> None:
        """New diffuse particles from the potentials, in free slots (none while all are taken)."""
        s = self.settings
        i_ta, i_wc, i_k = self.potentials(xf, vf)
        expected = (
            clamp_potential(i_k, *s.kinetic)
            * (
                s.rate_trapped_air * clamp_potential(i_ta, *s.trapped_air)
                + s.rate_wave_crest * clamp_potential(i_wc, *s.wave_crest)
            )
            * dt
        )
        emitting = np.flatnonzero(expected > 0.0)
        if len(emitting) == 0:
            return
        number = np.floor(expected[emitting] + self.rng.random(len(emitting))).astype(np.int64)
        free = np.flatnonzero(self.kind == FREE)
        total = min(int(number.sum()), len(free))
        if total == 0:
            return
        source = np.repeat(emitting, number)[:total]
        # A cylinder of the particle radius around the particle's path over the step (Ihmsen Eq. 7).
        vs = vf[source]
        speed = np.sqrt(np.einsum("ij,ij->i", vs, vs))
        axis = vs / np.maximum(speed, 1e-12)[:, None]
        helper = np.where(np.abs(axis[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
        e1 = np.cross(axis, helper)
        e1 /= np.sqrt(np.einsum("ij,ij->i", e1, e1))[:, None]
        e2 = np.cross(axis, e1)
        u = self.rng.random((total, 3))
        rad = self.radius * np.sqrt(u[:, 0])
        theta = 2.0 * np.pi * u[:, 1]
        slot = free[:total]
        self.positions[slot] = (
            xf[source]
            + (rad * np.cos(theta))[:, None] * e1
            + (rad * np.sin(theta))[:, None] * e2
            + (u[:, 2] * speed * dt)[:, None] * axis
        )
        self.velocities[slot] = vs
        self.kind[slot] = SPRAY  # classified by its neighbours at its first advection
        self.lifetime[slot] = 0.0
        self.generated += total

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict[str, Any]:
        """Everything time-varying (copies), the generator's state included: :meth:`set_state` resumes."""
        return {
            "positions": self.positions.copy(),
            "velocities": self.velocities.copy(),
            "kind": self.kind.copy(),
            "lifetime": self.lifetime.copy(),
            "generated": self.generated,
            "removed": self.removed,
            "rng": self.rng.bit_generator.state,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Put back a :meth:`state` of a whitewater of the same capacity."""
        if np.shape(state["positions"]) != self.positions.shape:
            raise SimulationInputError(
                "whitewater state is of another capacity: make one of the same capacity"
            )
        self.positions[:] = state["positions"]
        self.velocities[:] = state["velocities"]
        self.kind[:] = state["kind"]
        self.lifetime[:] = state["lifetime"]
        self.generated, self.removed = int(state["generated"]), int(state["removed"])
        self.rng.bit_generator.state = state["rng"]
