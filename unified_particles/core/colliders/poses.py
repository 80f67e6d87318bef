# SPDX-License-Identifier: GPL-3.0-or-later
"""Collider poses: checked 4x4 transforms and the rotation log/exp that interpolate a frame's rigid motion."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import SimulationInputError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


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
