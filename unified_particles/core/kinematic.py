# SPDX-License-Identifier: GPL-3.0-or-later
"""Kinematic rigid bodies: where their particles are during one frame (``RigidBody.kinematic``).

A kinematic body has infinite mass and follows a target pose given for the end of each frame
(``RigidBody.set_target``). Across the frame's small steps its pose is interpolated from where it was
at the frame's start: the centre of mass linearly, the rotation along the shortest arc (slerp), so
its particles' velocities, (x* - x) / h, are the animation's velocity and it pushes what it meets.
The solver (``Solver.begin_frame``) builds one :class:`KinematicFrame` per frame. Imports
``rotations``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .rotations import polar_rotations

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# Below this angle (rad) between the start and end rotations slerp becomes a normalised lerp
# (sin(theta) in the denominator would lose all its digits).
SLERP_MIN_ANGLE = 1e-6


def quaternions(m: FloatArray) -> FloatArray:
    """(K, 4) unit quaternions (w, x, y, z) of rotation matrices ``m`` (K, 3, 3), Shepperd's method
    (of the four equivalent formulas the one with the largest pivot, stable at every angle)."""
    m00, m11, m22 = m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]
    trace = m00 + m11 + m22
    a, b = m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0]
    c, d = m[:, 1, 0] - m[:, 0, 1], m[:, 0, 1] + m[:, 1, 0]
    e, f = m[:, 0, 2] + m[:, 2, 0], m[:, 1, 2] + m[:, 2, 1]
    candidates = np.stack(
        [
            np.stack([1.0 + trace, a, b, c], axis=1),  # each is 4 q_k q: pick the largest q_k
            np.stack([a, 1.0 + m00 - m11 - m22, d, e], axis=1),
            np.stack([b, d, 1.0 - m00 + m11 - m22, f], axis=1),
            np.stack([c, e, f, 1.0 - m00 - m11 + m22], axis=1),
        ]
    )
    pick = np.argmax(np.stack([trace, m00, m11, m22]), axis=0)
    q = candidates[pick, np.arange(len(m))]
    return np.asarray(q / np.linalg.norm(q, axis=1)[:, None], dtype=np.float64)


def rotation_matrices(q: FloatArray) -> FloatArray:
    """(K, 3, 3) rotation matrices of unit quaternions ``q`` (K, 4) (w, x, y, z)."""
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=1),
        ],
        axis=1,
    )


def slerp(q0: FloatArray, q1: FloatArray, alpha: float) -> FloatArray:
    """(K, 4) rotations a fraction ``alpha`` of the shortest arc from ``q0`` to ``q1`` (K, 4) each."""
    dot = np.einsum("ij,ij->i", q0, q1)
    q1 = np.where(dot[:, None] < 0.0, -q1, q1)
    theta = np.arccos(np.clip(np.abs(dot), -1.0, 1.0))
    small = theta < SLERP_MIN_ANGLE
    sin = np.where(small, 1.0, np.sin(theta))
    k0 = np.where(small, 1.0 - alpha, np.sin((1.0 - alpha) * theta) / sin)
    k1 = np.where(small, alpha, np.sin(alpha * theta) / sin)
    q = k0[:, None] * q0 + k1[:, None] * q1
    return np.asarray(q / np.linalg.norm(q, axis=1)[:, None], dtype=np.float64)


# World.set_target takes a target transform's rotation without its scale under this name.
nearest_rotation = polar_rotations


class KinematicFrame:
    """The motion of the kinematic rigid bodies over one frame.

    Attributes:
        bodies: (K,) numbers of the kinematic bodies.
        idx: (P,) their particles (global indices).
        mask: (N,) bool, True for those particles.
    """

    def __init__(
        self,
        bodies: IntArray,
        idx: IntArray,
        local_body: IntArray,
        rest: FloatArray,
        n_particles: int,
        start: tuple[FloatArray, FloatArray],
        end: tuple[FloatArray, FloatArray],
    ) -> None:
        self.bodies = bodies
        self.idx = idx
        self._local_body = local_body
        self._rest_t = np.ascontiguousarray(rest.T)  # (3, P), relative to the rest centre of mass
        self.mask: BoolArray = np.zeros(n_particles, dtype=bool)
        self.mask[idx] = True
        self._q0, self._c0 = quaternions(start[0]), start[1]
        self._q1, self._c1 = quaternions(end[0]), end[1]
        self.end_rotation, self.end_center = end

    @classmethod
    def begin(
        cls,
        kinematic: BoolArray,
        rotation: FloatArray,
        center: FloatArray,
        target: FloatArray,
        rest_center: FloatArray,
        rigid_idx: IntArray,
        rigid_body: IntArray,
        rigid_rest: FloatArray,
        n_particles: int,
    ) -> KinematicFrame | None:
        """The frame from the bodies' poses now (``rotation`` (B, 3, 3), ``center`` (B, 3)) to their
        ``target`` transforms (B, 4, 4); None when no body is kinematic.

        ``rest_center`` (B, 3) is each body's centre of mass at build time; ``rigid_idx``,
        ``rigid_body``, ``rigid_rest`` (R,), (R,), (R, 3) list the rigid particles (as ShapeMatching).
        """
        bodies = np.flatnonzero(kinematic).astype(np.int64)
        if len(bodies) == 0:
            return None
        chosen = kinematic[rigid_body]
        local_body = np.searchsorted(bodies, rigid_body[chosen]).astype(np.int64)
        t = target[bodies]
        end_rotation = t[:, :3, :3]
        end_center = np.einsum("bij,bj->bi", end_rotation, rest_center[bodies]) + t[:, :3, 3]
        return cls(
            bodies,
            rigid_idx[chosen],
            local_body,
            rigid_rest[chosen],
            n_particles,
            (rotation[bodies], center[bodies]),
            (end_rotation, end_center),
        )

    def positions(self, alpha: float) -> FloatArray:
        """(P, 3) positions of the kinematic particles a fraction ``alpha`` (0..1) into the frame."""
        if alpha >= 1.0:
            rotation, center = self.end_rotation, self.end_center
        else:
            rotation = rotation_matrices(slerp(self._q0, self._q1, alpha))
            center = self._c0 + alpha * (self._c1 - self._c0)
        r, b = self._rest_t, self._local_body
        x = np.empty((len(b), 3))
        for axis in range(3):  # coordinate by coordinate (see fastops)
            rot = rotation[b, axis]
            x[:, axis] = rot[:, 0] * r[0] + rot[:, 1] * r[1] + rot[:, 2] * r[2] + center[b, axis]
        return x
