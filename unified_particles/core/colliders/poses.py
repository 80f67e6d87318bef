# SPDX-License-Identifier: GPL-3.0-or-later
"""Collider poses: checked 4x4 transforms, the rotation log/exp that interpolate a frame's rigid motion, and
:class:`FrameMotion`, a mesh collider's motion over a frame (its poses cached)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import SimulationInputError
from ..fastops import rotate_translate
from ..rotations import polar

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Poses (rotation, translation) kept per collider, keyed by matrix: a frame needs two (start, target).
POSE_CACHE_SIZE = 4


def _as_point(value: ArrayLike, what: str) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise SimulationInputError(f"{what} must be 3 finite numbers, got {value!r}")
    return arr


def as_transform(matrix: ArrayLike, what: str = "transform") -> FloatArray:
    """Validate a 4x4 affine matrix (finite, invertible, last row 0 0 0 1)."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)):
        raise SimulationInputError(f"{what} must be a finite 4x4 matrix, got shape {m.shape}")
    if not np.allclose(m[3], [0.0, 0.0, 0.0, 1.0]):
        raise SimulationInputError(f"{what} must be affine (last row 0 0 0 1), got {m[3]}")
    if abs(np.linalg.det(m[:3, :3])) < 1e-12:
        raise SimulationInputError(f"{what} is singular (zero scale on some axis)")
    return m.copy()


def rotation_log(r: FloatArray) -> FloatArray:
    """Rotation vector (axis * angle, radians) of a 3x3 rotation matrix."""
    cos = np.clip((np.trace(r) - 1.0) * 0.5, -1.0, 1.0)
    angle = float(np.arccos(cos))
    w = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    if angle < 1e-9:
        return 0.5 * w
    return w * (angle / (2.0 * np.sin(angle))) if angle < np.pi - 1e-6 else _log_near_pi(r, angle)


def _log_near_pi(r: FloatArray, angle: float) -> FloatArray:
    b = 0.5 * (r + np.eye(3))
    k = int(np.argmax(np.diag(b)))
    axis = b[k] / np.sqrt(max(b[k, k], 1e-300))
    return np.asarray(axis / np.linalg.norm(axis) * angle, dtype=np.float64)


def rotation_exp(w: FloatArray) -> FloatArray:
    """Rotation matrix of a rotation vector (Rodrigues)."""
    angle = float(np.linalg.norm(w))
    if angle < 1e-12:
        return np.eye(3)
    k = w / angle
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.asarray(np.eye(3) + np.sin(angle) * kx + (1.0 - np.cos(angle)) * (kx @ kx), dtype=np.float64)


# Relative change of a collider's scale (polar factor) below which its distance volume is kept: 10 um a
# metre, far below any particle, far above float32 matrices' rounding (6e-8). A turning object's float32
# matrix (Blender's) leaves its polar factor ~1e-7 off the identity: an absolute 1e-9 took that for a new
# scale and rebuilt the volume every frame (13 s a frame for a 0.5 m sphere at r 2 cm).
SCALE_TOLERANCE = 1e-5


def scale_changed(scale: FloatArray, previous: FloatArray) -> bool:
    """True when ``scale`` (3, 3) differs from ``previous`` by more than ``SCALE_TOLERANCE`` (relative)."""
    tolerance = SCALE_TOLERANCE * float(np.abs(previous).max())
    return not np.allclose(scale, previous, rtol=0.0, atol=tolerance)


Motion = tuple[FloatArray, FloatArray, FloatArray, FloatArray, bool]


class FrameMotion:
    """A mesh collider's rigid motion from its frame-start pose to its target (``MeshCollider``): poses
    cached per matrix, the two compared once per pair of matrices, interpolated by the rotation log."""

    def __init__(self) -> None:
        self._cache: dict[bytes, tuple[FloatArray, FloatArray]] = {}
        # The last pose pair compared: (frame start, target, their poses and whether they differ).
        self._memo: tuple[FloatArray, FloatArray, Motion] | None = None

    def clear(self) -> None:
        """Forget the cached poses (the collider's scale changed)."""
        self._cache.clear()

    def pose(self, m: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Rotation (3, 3) and translation (3,) of a 4x4 matrix ``m`` without its scale."""
        key = m.tobytes()
        cached = self._cache.get(key)
        if cached is None:
            r, _ = polar(m[:3, :3])
            cached = (r, m[:3, 3].copy())
            if len(self._cache) > POSE_CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = cached
        return cached

    def motion(self, start: FloatArray, target: FloatArray) -> Motion:
        """(r0, t0, r1, t1, moving): the poses at the frame's ``start`` and ``target`` and whether they
        differ, compared once per pair of pose matrices, not at every query (a collider at rest compared
        them 8 times per small step: 7 % of a small liquid scene's step, benchmarks/small_liquid_notes.md).
        The matrices are replaced, never written in place, so the same two objects mean the same poses."""
        memo = self._memo
        if memo is None or memo[0] is not start or memo[1] is not target:
            r0, t0 = self.pose(start)
            r1, t1 = self.pose(target)
            moving = not (np.array_equal(r0, r1) and np.array_equal(t0, t1))
            memo = self._memo = (start, target, (r0, t0, r1, t1, moving))
        return memo[2]

    def at(self, start: FloatArray, target: FloatArray, alpha: float) -> tuple[FloatArray, FloatArray]:
        """Rotation and translation at fraction ``alpha`` of the frame's rigid motion."""
        r0, t0, r1, t1, moving = self.motion(start, target)
        if not moving:
            return r1, t1
        return r0 @ rotation_exp(alpha * rotation_log(r0.T @ r1)), t0 + alpha * (t1 - t0)

    def surface_velocity(
        self, start: FloatArray, target: FloatArray, ql: FloatArray, dt_frame: float
    ) -> FloatArray:
        """(K, 3) world velocity of the rigid motion at local points ``ql`` (zero at rest), m/s."""
        r0, t0, r1, t1, moving = self.motion(start, target)
        if dt_frame <= 0.0 or not moving:
            return np.zeros_like(ql)
        return rotate_translate(ql, (r1 - r0).T, t1 - t0) / dt_frame
