# SPDX-License-Identifier: GPL-3.0-or-later
"""Soft bodies: overlapping shape-matching clusters (Macklin et al. 2014, deformable bodies), plastic.

A soft body is the rigid fill (particles on a 2r grid inside the mesh) where, instead of one rigid shape
per body, each of many overlapping clusters of particles is pulled towards its own best-fit rotation of
its rest shape (Müller et al. 2005, "Meshless deformations based on shape matching", Sec. 4.3 and 4.5).
A particle in n clusters weighs m / n in each cluster's fit and moves by the mean of their pulls (mass
splitting, Tonge et al. 2012): each cluster's pulls sum to zero momentum, and a particle near the surface is
held as firmly as one inside.

Each membership is a zero-length spring of stiffness k = m (2 pi f)^2 to its goal: in one small step of h
the particle moves the fraction (w h)^2, w = 2 pi f, of the way to it (at most all of it), so the static
stiffness is k at any step count up to f = 1 / (2 pi h) (61 Hz at 16 small steps of 1/384 s). The cluster
``frequency`` f (Hz) is the material's stiffness: a block wobbles at a frequency proportional to it and a
cantilever's tip sags in proportion to 1 / f^2. (XPBD's fraction (w h)^2 / (1 + (w h)^2) is the converged
answer for one spring; in one iteration it adds the compliance h^2 / m in series, which capped how stiff a
long body got: a cantilever's sag fell 2 times, not 4, per doubling of f near 60 Hz.)

Plasticity (Müller et al. 2005, Sec. 4.4; FleX's plastic threshold and creep): with F = A_pq A_qq^-1 the
cluster's deformation gradient against its current rest shape and F = R S its polar decomposition, a
cluster whose strain |S - I| (Frobenius) exceeds its ``yield_strain`` moves its rest shape towards the
deformed one, q <- M q with M = I + min(h c, 1) (S - I), normalized to det M = 1 so that plastic flow
never changes the rest volume. ``c`` is the creep rate, 1/s.

All clusters of all soft bodies are solved together: the sums are ``np.bincount`` over a flat membership
layout and the rotations one batched polar decomposition, as in :mod:`.shape_matching`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .rotations import polar_rotations

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Pinned particles (infinite mass) weigh this many times their mass in their clusters' fits: the fitted
# motion is then theirs, so a cluster holding pins cannot turn about them (with plain mass weights a
# cantilever's pinned end was a hinge).
PIN_FIT_WEIGHT = 1.0e3
# Largest fraction of a contact's push the clusters are taken to undo within a small step (the soft
# particle's contact mass at most 1 / (1 - it) = 4 times its own): the gain 1 / (1 - phi) stays bounded
# where a cluster's goal moves with the push (a stiff body pressed flat on a whole face). At 0.95 (20 times)
# a 60 Hz rubber ball dropped on sand left it at 17 m/s; at 0.5 a 4 kg box went through a 1 kg 60 Hz block.
MAX_CONTACT_RESTORE = 0.75
# Below this determinant (relative to its scale^3) a cluster's rest moment matrix is treated as flat: its
# plastic strain is not measured (a cluster of one row of particles has no 3D deformation gradient).
FLAT_CLUSTER_DET = 1e-6


@dataclass
class SoftClusters:
    """Static cluster data of all soft bodies (M memberships, C clusters).

    Attributes:
        idx: (M,) particle index of each membership.
        cluster: (M,) cluster number 0..C-1 of each membership.
        rest: (M, 3) build-time offset of the particle from its cluster's rest centre, metres: the centre
            weighted by ``weight`` (``rest_centres``).
        mass: (M,) particle mass, kg.
        center: (C, 3) each cluster's rest centre (weighted by ``weight``) at build time, metres.
        frequency: (C,) each cluster's stiffness as a natural frequency, Hz (see the module docstring).
        yield_strain: (C,) strain above which the cluster flows plastically (inf: purely elastic).
        creep: (C,) plastic creep rate, 1/s (0: purely elastic).
        body_cluster_start: (S + 1,) the first cluster of each soft body, and C at the end.
    """

    idx: IntArray
    cluster: IntArray
    rest: FloatArray
    mass: FloatArray
    center: FloatArray
    frequency: FloatArray
    yield_strain: FloatArray
    creep: FloatArray
    body_cluster_start: IntArray

    def __post_init__(self) -> None:
        c = len(self.center)
        self.n_clusters = c
        if np.any(np.diff(self.cluster) < 0):  # the sums run over each cluster's contiguous run
            order = np.argsort(self.cluster, kind="stable")
            self.idx, self.cluster = self.idx[order], self.cluster[order]
            self.rest, self.mass = self.rest[order], self.mass[order]
        # First membership of each cluster (every cluster holds at least its centre): np.add.reduceat
        # over these runs is 4x faster than one np.bincount per sum (71k memberships: 3.1 ms for 9 sums).
        self._starts = np.searchsorted(self.cluster, np.arange(c))
        # Per-cluster values reach the memberships by np.repeat over these run lengths: the same array as
        # np.take(values, cluster, axis=1), 5x faster (12 x 71k: 1.5 against 7.1 ms).
        self._sizes = np.diff(np.append(self._starts, len(self.cluster)))
        # Mass splitting (Tonge et al. 2012): a particle in n clusters weighs m / n in each cluster's fit
        # and moves by the mean of its clusters' pulls. Each cluster's pulls then sum to zero momentum
        # (and angular momentum: the fit is a weighted polar decomposition) while a particle near the
        # surface, in few clusters, is pulled as hard as one inside. (Scaling each cluster by 1 / its
        # most-shared particle's count kept momentum too, but a corner particle in 4 of 18 clusters then
        # felt 4/18 of its stiffness: soft surfaces that loads went through, docs/physics.md.)
        count = np.bincount(self.idx)[self.idx].astype(np.float64)
        self._inv_count = 1.0 / count
        self.weight = self.mass * self._inv_count
        self.total = _sum_by(self.cluster, self.weight, c)
        self.plastic = bool(np.any((self.creep > 0.0) & np.isfinite(self.yield_strain)))
        self._rest0_qq_inv = _inverse_moments(self.cluster, self.weight, self.rest.T, c)
        self._contact_cache: dict[float, tuple[FloatArray, FloatArray]] = {}  # contact_inv_mass per h
        self._fraction_cache: dict[float, FloatArray] = {}  # _membership_fraction per h

    @staticmethod
    def concatenate(parts: list[SoftClusters]) -> SoftClusters | None:
        """One :class:`SoftClusters` of several bodies' (cluster numbers shifted); None for none."""
        if not parts:
            return None
        offsets = np.cumsum([0] + [p.n_clusters for p in parts])
        starts = [p.body_cluster_start[:-1] + o for p, o in zip(parts, offsets, strict=False)]
        return SoftClusters(
            np.concatenate([p.idx for p in parts]),
            np.concatenate([p.cluster + o for p, o in zip(parts, offsets, strict=False)]),
            np.concatenate([p.rest for p in parts]),
            np.concatenate([p.mass for p in parts]),
            np.concatenate([p.center for p in parts]),
            np.concatenate([p.frequency for p in parts]),
            np.concatenate([p.yield_strain for p in parts]),
            np.concatenate([p.creep for p in parts]),
            np.concatenate([*starts, offsets[-1:]]).astype(np.int64),
        )

    def solve(self, x: FloatArray, rest: FloatArray, h: float, inv_mass: FloatArray) -> None:
        """One small step of the clusters on ``x`` (N, 3) in place; plastic flow updates ``rest`` (M, 3),
        the current rest offsets (the state's ``soft_rest``), in place. ``h``: small step, s."""
        c, starts = self.n_clusters, self._starts
        xt = np.take(np.ascontiguousarray(x.T), self.idx, axis=1)  # (3, M)
        free = inv_mass[self.idx] > 0.0
        rt = np.ascontiguousarray(rest.T)
        if free.all():  # rest offsets are centred on the weighted rest centre (flow keeps them so)
            weight, total = self.weight, self.total
        else:  # pins weigh more: offsets from the weighted rest centre
            weight = self.weight * np.where(free, 1.0, PIN_FIT_WEIGHT)
            total = np.add.reduceat(weight, starts)
            rt = rt - np.repeat(np.add.reduceat(rt * weight, starts, axis=1) / total, self._sizes, axis=1)
        wx = xt * weight
        centre = np.add.reduceat(wx, starts, axis=1) / total  # (3, C)
        # A_pq = sum w x q^T (sum w q = 0), the nine sums in one reduceat.
        apq = np.add.reduceat((wx[:, None, :] * rt[None, :, :]).reshape(9, -1), starts, axis=1)
        apq = np.ascontiguousarray(apq.T).reshape(c, 3, 3)
        rot = polar_rotations(apq)
        # Goals g = R q + c; each particle moves the fraction of its cluster towards it, averaged over
        # its clusters; pinned particles (inverse mass 0) stay. One gather of R and c.
        frame = np.concatenate([rot.reshape(c, 9).T, centre])  # (12, C)
        rp = np.repeat(frame, self._sizes, axis=1)  # (12, M)
        frac = self._membership_fraction(h) * free
        n = len(x)
        for k in range(3):
            g = rp[3 * k] * rt[0] + rp[3 * k + 1] * rt[1] + rp[3 * k + 2] * rt[2] + rp[9 + k]
            x[:, k] += np.bincount(self.idx, weights=(g - xt[k]) * frac, minlength=n)
        if self.plastic:
            self._flow(apq, rot, rest, rt, weight, h)

    def step_fraction(self, h: float) -> FloatArray:
        """(C,) fraction of the way to its goal each cluster moves a particle in one small step of ``h``
        (s): (omega h)^2, omega = 2 pi f, at most 1 (module docstring)."""
        omega_h = 2.0 * np.pi * self.frequency * h
        return np.minimum(omega_h**2, 1.0)

    def _membership_fraction(self, h: float) -> FloatArray:
        """(M,) each membership's share of its particle's step: its cluster's ``step_fraction(h)`` / the
        particle's memberships (mass splitting). Cached per ``h``."""
        frac = self._fraction_cache.get(h)
        if frac is None:
            frac = np.repeat(self.step_fraction(h), self._sizes) * self._inv_count
            if len(self._fraction_cache) > 8:
                self._fraction_cache.clear()
            self._fraction_cache[h] = frac
        return frac

    def contact_inv_mass(
        self, w: FloatArray, h: float, inv_mass: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Contact inverse masses ``w`` (N,) with each soft particle's effective one for small steps of
        ``h`` (s), and (N,) the gain its contact corrections are applied with (1 elsewhere).

        The clusters solved after the contacts pull a particle a contact moved back by the fraction
        phi of the way (its clusters' mean ``step_fraction``), and hand that part of its momentum to the
        rest of the body. Within one small step the particle is then m / (1 - phi) heavy: the contact
        splits its correction with w (1 - phi), and the particle is moved by its share times
        1 / (1 - phi), which the clusters bring back to the share while passing the momentum on. Both
        sides' momenta change by the same amount (Newton's third law holds exactly), and a stiff body
        stops a load as a rigid one would: with its own w a 1 kg block of 8 g particles gave a 4 kg
        box a tenth of each overlap (max_mass_ratio) and the box went through it (docs/physics.md).
        Pinned particles are immovable already. Cached per ``h``.
        """
        cached = self._contact_cache.get(h)
        if cached is None:
            free = inv_mass[self.idx] > 0.0
            frac = self._membership_fraction(h) * free
            phi = np.minimum(np.bincount(self.idx, weights=frac, minlength=len(w)), MAX_CONTACT_RESTORE)
            cached = (1.0 - phi, 1.0 / (1.0 - phi))
            if len(self._contact_cache) > 8:
                self._contact_cache.clear()
            self._contact_cache[h] = cached
        return w * cached[0], cached[1]

    def _flow(
        self, apq: FloatArray, rot: FloatArray, rest: FloatArray, rt: FloatArray, weight: FloatArray, h: float
    ) -> None:
        """Plastic flow (module docstring): clusters strained past their yield move their rest shapes
        (``rt`` (3, M): the offsets from the ``weight``-ed rest centres the fit ``apq`` used)."""
        c, cl = self.n_clusters, self.cluster
        aqq = np.empty((c, 3, 3))
        for k in range(3):
            for m in range(3):
                aqq[:, k, m] = _sum_by(cl, weight * rt[k] * rt[m], c)
        scale = np.einsum("cii->c", aqq) / 3.0
        ok = np.abs(np.linalg.det(aqq)) > FLAT_CLUSTER_DET * np.maximum(scale, 1e-300) ** 3
        eye = np.eye(3)
        aqq[~ok] = eye
        f = apq @ np.linalg.inv(aqq)
        s = np.swapaxes(rot, 1, 2) @ f
        s = 0.5 * (s + np.swapaxes(s, 1, 2))  # symmetric part: rounding aside, S is symmetric
        strain = np.linalg.norm((s - eye).reshape(c, 9), axis=1)
        flow = ok & (strain > self.yield_strain) & (self.creep > 0.0)
        if not flow.any():
            return
        step = np.minimum(h * self.creep[flow], 1.0)[:, None, None]
        m = eye + step * (s[flow] - eye)
        det = np.linalg.det(m)
        m /= np.cbrt(np.where(det > 0.0, det, 1.0))[:, None, None]  # volume-preserving flow
        full = np.tile(eye, (c, 1, 1))
        full[flow] = m
        moving = flow[cl]
        members = np.flatnonzero(moving)
        offset = rt.T[members]  # about the fit's rest centre, which stays where it is
        rest[members] += np.einsum("mij,mj->mi", full[cl[members]], offset) - offset

    def affine(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Each cluster's best-fit affine map from its build-time rest shape to ``x`` (N, 3): (C, 3, 3)
        matrices F = A_pq A_qq^-1 and (C, 3) current centres of mass (for skinning render meshes; it
        shows stretch, squash and plastic dents, which a rotation alone would not)."""
        c, cl = self.n_clusters, self.cluster
        xt = np.take(np.ascontiguousarray(x.T), self.idx, axis=1)
        wx = xt * self.weight
        centre = np.stack([_sum_by(cl, wx[k], c) for k in range(3)]) / self.total
        apq = _moments(cl, wx, np.ascontiguousarray(self.rest.T), c)
        return apq @ self._rest0_qq_inv, centre.T.copy()


def rest_centres(member: IntArray, cluster: IntArray, points: FloatArray, c: int) -> FloatArray:
    """(C, 3) rest centres of the clusters of one body of equal-mass particles at ``points`` (P, 3), each
    membership (``member`` (M,) particle, ``cluster`` (M,)) weighted by 1 / its particle's number of
    memberships: the weights of the clusters' fits (mass splitting, :class:`SoftClusters`)."""
    w = 1.0 / np.bincount(member, minlength=len(points))[member]
    sums = np.stack([_sum_by(cluster, w * points[member, k], c) for k in range(3)], axis=1)
    return np.asarray(sums / _sum_by(cluster, w, c)[:, None], dtype=np.float64)


def _moments(cl: IntArray, wx: FloatArray, rt: FloatArray, c: int) -> FloatArray:
    """(C, 3, 3) A_pq = sum m (x - c) q^T of mass-weighted positions ``wx`` (3, M) and rest offsets ``rt``
    (3, M) centred on their cluster's centre of mass: sum m q = 0 makes it sum m x q^T (no centring)."""
    a = np.empty((c, 3, 3))
    for k in range(3):
        for m in range(3):
            a[:, k, m] = _sum_by(cl, wx[k] * rt[m], c)
    return a


def _inverse_moments(cl: IntArray, mass: FloatArray, rt: FloatArray, c: int) -> FloatArray:
    """(C, 3, 3) A_qq^-1 of rest offsets ``rt`` (3, M); the pseudo-inverse for flat clusters."""
    aqq = np.empty((c, 3, 3))
    for k in range(3):
        for m in range(3):
            aqq[:, k, m] = _sum_by(cl, mass * rt[k] * rt[m], c)
    return np.asarray(np.linalg.pinv(aqq), dtype=np.float64)


def _sum_by(index: IntArray, values: FloatArray, length: int) -> FloatArray:
    """Sums of ``values`` per ``index`` bin (one ``np.bincount``), float64 of ``length``."""
    return np.asarray(np.bincount(index, weights=values, minlength=length), dtype=np.float64)
