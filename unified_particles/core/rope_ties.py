# SPDX-License-Identifier: GPL-3.0-or-later
"""Ties of rope particles to rigid bodies (``World.add_rope(attach=...)``), solved on the bodies' poses.

A tie is a point attachment: the rope particle stays at a point fixed in the body (where it was when the
rope was added), a ball joint between a particle and a rigid body. It is solved once per small step after
the cloth and rope distance solves, on the body's shape-matched pose with its whole mass and inertia, as
the joints are (:mod:`.joints`, Müller et al. 2020, Sec. 3.3): the pivot's relative offset d is removed by
the impulse P = K^-1 d, K = w_p E + (E/m - [r]x I^-1 [r]x) (the particle's inverse mass plus the inverse
effective mass of a point of the body, ``joint_solve.point_mass_matrix``); the particle moves by -w_p P,
the body by P/m and turns by I^-1 (r x P), and its particles are put back rigidly at the new pose. The
velocity update (x* - x) / h then carries the correction to the whole body at once.

A pinned rope's tie also has a tether (a long-range attachment, Kim et al. 2012): the body's pivot no
farther from the rope's nearest pin than the rope's tether allows the tied particle, one more
unilateral distance constraint on the body's pose (the pin never moves). The links alone, between light
rope particles and a heavy body, let an 8 kg crate stretch a 0.08 kg rope by 11%.

The earlier ties were distance constraints to one particle of the body in the coloured stretch solve:
that particle's displacement, made after shape matching, became its velocity and the next fit pumped it
into the body, so a crate dragged on the ground by its rope was flung past the pin (docs/physics.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from . import joint_solve as js

if TYPE_CHECKING:
    from .model import ParticleModel
    from .state import ParticleState

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass
class RopeTies:
    """Every tie of a world (global indices), and the force each applied in the last small step.

    Attributes:
        particle: (T,) the tied rope particles.
        body: (T,) the rigid body number of each tie.
        anchor: (T, 3) the pivot in its body's build frame, relative to the body's rest centre of mass, m.
        pin: (T,) the rope pin the body's pivot is tethered to (-1: no tether).
        limit: (T,) the tether's length, metres (inf without one).
        force: (T,) the attachment's force in the last small step, N (the rope's tension at the body).
    """

    particle: IntArray
    body: IntArray
    anchor: FloatArray
    pin: IntArray
    limit: FloatArray
    force: FloatArray = field(init=False)

    def __post_init__(self) -> None:
        self.force = np.zeros(len(self.particle))
        self._arrays: dict[str, Any] | None = None
        self._prepared_for: object = None

    def __len__(self) -> int:
        return len(self.particle)

    @staticmethod
    def concatenate(parts: list[RopeTies]) -> RopeTies | None:
        """All ``parts`` as one (None without ties)."""
        if not parts:
            return None
        return RopeTies(
            np.concatenate([p.particle for p in parts]),
            np.concatenate([p.body for p in parts]),
            np.concatenate([p.anchor for p in parts]),
            np.concatenate([p.pin for p in parts]),
            np.concatenate([p.limit for p in parts]),
        )

    def _prepare(self, model: ParticleModel) -> dict[str, Any]:
        """The tied bodies' particles, masses and build-frame inertias, and the ties' colours (no body and
        no particle twice in a colour), made once per model."""
        sm = model.shape_matching
        if self._arrays is not None and self._prepared_for is sm:
            return self._arrays
        assert sm is not None  # every tie has a rigid body
        bodies = np.unique(self.body)
        chosen = np.isin(sm.body, bodies)
        plocal = np.searchsorted(bodies, sm.body[chosen])
        mass_p, rest = sm.mass[chosen], sm.rest[chosen]
        k = len(bodies)
        mass = np.bincount(plocal, weights=mass_p, minlength=k)
        # Inertia about the centre of mass, build frame: sum m (|q|^2 E - q q^T) plus each particle's own
        # cube of side 2r (m (2r)^2 / 6 E), as the joints compute it (a one-particle body stays invertible).
        r = model.particle_radius[sm.idx[chosen]]
        qq = np.einsum("pi,pj->pij", rest, rest)
        inertia_p = (np.einsum("pii->p", qq) + (2.0 * r) ** 2 / 6.0)[:, None, None] * np.eye(3) - qq
        inertia = np.zeros((k, 3, 3))
        np.add.at(inertia, plocal, mass_p[:, None, None] * inertia_p)
        tie_body = np.searchsorted(bodies, self.body)
        used: list[set[int]] = []
        colour = np.zeros(len(self), np.int64)
        for t, (b, p) in enumerate(zip(tie_body.tolist(), self.particle.tolist(), strict=True)):  # build only
            c = next((c for c, u in enumerate(used) if not ({b, -1 - p} & u)), len(used))
            if c == len(used):
                used.append(set())
            used[c] |= {b, -1 - p}
            colour[t] = c
        self._arrays = dict(
            bodies=bodies, pidx=sm.idx[chosen], plocal=plocal, prest=rest, pmass=mass_p, mass=mass,
            inv_inertia=np.linalg.inv(inertia), tie_body=tie_body,
            colours=[np.flatnonzero(colour == c) for c in range(len(used))],
        )  # fmt: skip
        self._prepared_for = sm
        return self._arrays

    def solve(self, model: ParticleModel, state: ParticleState, x_pred: FloatArray, h: float) -> None:
        """One Gauss-Seidel sweep over the ties (colour by colour): each body's tether, then the point
        attachment; moves the tied rope particles and the tied bodies' particles in ``x_pred`` (rigid, from
        shape matching) and the bodies' rotations in ``state``."""
        arr = self._prepare(model)
        bodies, plocal, pidx, pmass = arr["bodies"], arr["plocal"], arr["pidx"], arr["pmass"]
        k = len(bodies)
        moving = ~state.rigid_kinematic[bodies]
        inv_mass = moving / arr["mass"]
        sums = [np.bincount(plocal, weights=pmass * x_pred[pidx, i], minlength=k) for i in range(3)]
        centre = np.stack(sums, axis=1) / arr["mass"][:, None]
        rot = state.rigid_rotation[bodies].copy()
        w_p = model.particle_inv_mass[self.particle]
        self.force[:] = 0.0
        pulled = np.zeros((len(self), 3))  # the tethers' impulses, XPBD units (N s^2)
        for colour in arr["colours"]:
            b, p = arr["tie_body"][colour], self.particle[colour]
            inv_i = rot[b] @ arr["inv_inertia"][b] @ np.transpose(rot[b], (0, 2, 1))
            inv_i *= moving[b, None, None]
            tether = colour[self.pin[colour] >= 0]
            if len(tether):  # the pivot no farther from the pin than the rope allows (unilateral)
                bt = arr["tie_body"][tether]
                it = inv_i[self.pin[colour] >= 0]
                r = np.einsum("kij,kj->ki", rot[bt], self.anchor[tether])
                d = centre[bt] + r - x_pred[self.pin[tether]]
                length, n = js.split_direction(d)
                excess = np.maximum(length - self.limit[tether], 0.0)
                w = js.positional_inverse_mass(inv_mass[bt], it, r, n)
                push = -(excess / np.where(w > 0.0, w, 1.0))[:, None] * n
                pulled[tether] = push
                centre[bt] += inv_mass[bt, None] * push
                rot[bt] = js.rotate(rot[bt], np.einsum("kij,kj->ki", it, js.cross(r, push)))
            r = np.einsum("kij,kj->ki", rot[b], self.anchor[colour])
            d = x_pred[p] - (centre[b] + r)
            wp = w_p[colour]  # this colour's ties only (a body tied twice has ties in two colours)
            kmat = js.point_mass_matrix(inv_mass[b], inv_i, r) + wp[:, None, None] * np.eye(3)
            ok = np.einsum("kii->k", kmat) > 0.0  # a pinned particle on a kinematic body: nothing moves
            kmat[~ok] = np.eye(3)
            impulse = np.linalg.solve(kmat, (d * ok[:, None])[:, :, None])[:, :, 0]
            x_pred[p] -= wp[:, None] * impulse
            centre[b] += inv_mass[b, None] * impulse
            rot[b] = js.rotate(rot[b], np.einsum("kij,kj->ki", inv_i, js.cross(r, impulse)))
            # What holds the body: the attachment's impulse and its tether's (both act at the pivot).
            self.force[colour] = js.norms(impulse + pulled[colour]) / (h * h)
        if moving.any():  # each moved body's particles back rigidly at its new pose
            sel = moving[plocal]
            lb = plocal[sel]
            x_pred[pidx[sel]] = np.einsum("pij,pj->pi", rot[lb], arr["prest"][sel]) + centre[lb]
            rotations = state.rigid_rotation.copy()  # shape matching made it; copy, as it may be shared
            rotations[bodies[moving]] = rot[moving]  # Rodrigues' turns stay orthonormal
            state.rigid_rotation = rotations
