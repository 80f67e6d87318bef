# SPDX-License-Identifier: GPL-3.0-or-later
"""The maths of the joint solve: XPBD position and rotation corrections on rigid-body poses.

After Müller, Macklin, Chentanez, Jeschke, Kim, "Detailed Rigid Body Simulation with Extended Position
Based Dynamics" (SCA 2020), Sec. 3.3: a correction of magnitude ``c`` along a unit direction ``n``
applied at the offsets ``r_a``, ``r_b`` from the centres of mass has the generalized inverse masses
``w_i = 1/m_i + (r_i x n)^T I_i^-1 (r_i x n)`` (Eq. 2-3), an angular one ``w_i = n^T I_i^-1 n``
(Eq. 11); the multiplier is ``dlambda = c / (w_a + w_b)`` with zero compliance (Eq. 4), and the
poses move by ``+-dlambda n / m`` and ``+-I^-1 (r x dlambda n)`` (Eq. 6-9). Springs and motors are
XPBD constraints with compliance and damping (Macklin, Müller, Chentanez 2016, Eq. 26).

Every function is vectorized over a batch of joints (rows of equal length) and pure: arrays in,
arrays out. A body pose is a centre of mass ``p`` (K, 3) and a rotation ``R`` (K, 3, 3); inverse
inertias are world-space (K, 3, 3). Imports nothing from the package.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

# Below this rotation angle (rad) Rodrigues' formula uses its Taylor series (sin a / a would lose digits).
SMALL_ANGLE = 1e-8
# A correction shorter than this (m, or rad) is no correction: its direction is noise.
TINY_CORRECTION = 1e-14


def cross(a: FloatArray, b: FloatArray) -> FloatArray:
    """(K, 3) cross products of rows (``np.cross`` costs several times more on small batches)."""
    return np.asarray(a[:, _YZX] * b[:, _ZXY] - a[:, _ZXY] * b[:, _YZX], dtype=np.float64)


def norms(v: FloatArray) -> FloatArray:
    """(K,) lengths of the rows of ``v`` (K, 3)."""
    return np.sqrt(np.einsum("ki,ki->k", v, v))


_YZX, _ZXY = np.array([1, 2, 0]), np.array([2, 0, 1])  # arrays: indexing with lists converts them each call
_SKEW_PLUS, _SKEW_MINUS = np.array([7, 2, 3]), np.array([5, 6, 1])


def skew(v: FloatArray) -> FloatArray:
    """(K, 3, 3) cross-product matrices [v]x of vectors ``v`` (K, 3)."""
    k = np.zeros((len(v), 9))
    k[:, _SKEW_PLUS] = v  # (2,1) = x, (0,2) = y, (1,0) = z
    k[:, _SKEW_MINUS] = -v  # (1,2) = -x, (2,0) = -y, (0,1) = -z
    return k.reshape(-1, 3, 3)


def rotate(rotation: FloatArray, dtheta: FloatArray) -> FloatArray:
    """(K, 3, 3) ``exp([dtheta]x) @ rotation``: each rotation turned by the rotation vector ``dtheta`` (K, 3)
    (world axes, rad), by Rodrigues' formula (stays orthonormal, unlike the linearised update)."""
    a2 = np.einsum("ki,ki->k", dtheta, dtheta)
    a = np.sqrt(a2)
    small = a < SMALL_ANGLE
    safe = np.where(small, 1.0, a)
    s = np.where(small, 1.0 - a2 / 6.0, np.sin(safe) / safe)
    c = np.where(small, 0.5 - a2 / 24.0, (1.0 - np.cos(safe)) / (safe * safe))
    k = skew(dtheta)
    kr = k @ rotation
    return np.asarray(rotation + s[:, None, None] * kr + c[:, None, None] * (k @ kr), dtype=np.float64)


def rotation_vector(rotation: FloatArray) -> FloatArray:
    """(K, 3) rotation vectors (axis times angle, rad, angle in [0, pi]) of rotations (K, 3, 3)."""
    cos = np.clip(0.5 * (np.trace(rotation, axis1=1, axis2=2) - 1.0), -1.0, 1.0)
    angle = np.arccos(cos)
    axis = np.stack(
        [
            rotation[:, 2, 1] - rotation[:, 1, 2],
            rotation[:, 0, 2] - rotation[:, 2, 0],
            rotation[:, 1, 0] - rotation[:, 0, 1],
        ],
        axis=1,
    )
    sin = np.sin(angle)
    small = sin < 1e-6
    # Near 0 the axis term is 2 sin(angle) axis ~ 2 angle axis; near pi it is unreliable, but the
    # joint solve never turns a body by pi within one small step.
    scale = np.where(small, 0.5, 0.5 * angle / np.where(small, 1.0, sin))
    return np.asarray(axis * scale[:, None], dtype=np.float64)


def euler_xyz(rel: FloatArray) -> FloatArray:
    """(K, 3) angles (a, b, c), rad, with ``rel = Rx(a) Ry(b) Rz(c)`` for rotations ``rel`` (K, 3, 3): the
    decomposition Bullet's generic 6-DOF constraint (Blender's Generic constraint) limits; b in
    [-pi/2, pi/2], a and c in (-pi, pi]."""
    out = np.empty((len(rel), 3))
    out[:, 0] = np.arctan2(-rel[:, 1, 2], rel[:, 2, 2])
    out[:, 1] = np.arcsin(np.clip(rel[:, 0, 2], -1.0, 1.0))
    out[:, 2] = np.arctan2(-rel[:, 0, 1], rel[:, 0, 0])
    return out


def euler_axes(frame_a: FloatArray, frame_b: FloatArray, angles: FloatArray) -> FloatArray:
    """(K, 3, 3) world axes g_k (as ``[:, k]`` columns) about which turning body B by a small angle d
    changes Euler angle k alone by d (``euler_xyz`` of frame_a^T frame_b): A's X axis, the X-turned
    Y axis, B's Z axis (the angular velocity is a' g_0 + b' g_1 + c' g_2)."""
    a = angles[:, 0]
    g = np.empty((len(a), 3, 3))
    g[:, :, 0] = frame_a[:, :, 0]
    g[:, :, 1] = frame_a[:, :, 1] * np.cos(a)[:, None] + frame_a[:, :, 2] * np.sin(a)[:, None]
    g[:, :, 2] = frame_b[:, :, 2]
    return g


def coordinates(
    p_a: FloatArray,
    r_a: FloatArray,
    anchor_a: FloatArray,
    frame_a: FloatArray,
    p_b: FloatArray,
    r_b: FloatArray,
    anchor_b: FloatArray,
    frame_b: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """A joint's six coordinates from the bodies' poses.

    Args:
        p_a, r_a: (K, 3), (K, 3, 3) pose of body A (centre of mass, rotation); likewise p_b, r_b.
        anchor_a, frame_a: (K, 3), (K, 3, 3) the joint's pivot and axes (columns X, Y, Z) in A's body
            frame (relative to its centre of mass); likewise anchor_b, frame_b in B's.

    Returns:
        (coords (K, 6): B's pivot relative to A's along A's joint axes (m), then the Euler angles of
        B's joint frame relative to A's (rad); world offsets of the pivots ra_w, rb_w (K, 3); world
        joint frames fa, fb (K, 3, 3); Euler axes (K, 3, 3), see ``euler_axes``).
    """
    ra_w = np.einsum("kij,kj->ki", r_a, anchor_a)
    rb_w = np.einsum("kij,kj->ki", r_b, anchor_b)
    fa = r_a @ frame_a
    fb = r_b @ frame_b
    d = (p_b + rb_w) - (p_a + ra_w)
    coords = np.empty((len(d), 6))
    coords[:, :3] = np.einsum("kji,kj->ki", fa, d)  # fa^T d
    coords[:, 3:] = euler_xyz(np.transpose(fa, (0, 2, 1)) @ fb)
    return coords, ra_w, rb_w, fa, fb, euler_axes(fa, fb, coords[:, 3:])


def dual_basis(g: FloatArray) -> FloatArray:
    """(K, 3, 3) the dual basis of the columns g_k of ``g`` (d_i . g_k = 1 if i = k else 0), as columns:
    d_0 = g_1 x g_2 / det and cyclic. The gradients of the Euler angles per unit turn (``euler_axes``)."""
    g0, g1, g2 = g[:, :, 0], g[:, :, 1], g[:, :, 2]
    d = np.empty_like(g)
    d[:, :, 0], d[:, :, 1], d[:, :, 2] = cross(g1, g2), cross(g2, g0), cross(g0, g1)
    det = np.einsum("ki,ki->k", g0, d[:, :, 0])
    # Euler XYZ is singular at b = +-90 degrees (g_0 parallel to g_2), as in Bullet's generic joint.
    return np.asarray(d / np.where(np.abs(det) > 1e-9, det, 1e-9)[:, None, None], dtype=np.float64)


def wrap_angle(a: FloatArray) -> FloatArray:
    """Angles folded into (-pi, pi] (a change of an Euler angle across its seam)."""
    return np.asarray((a + np.pi) % (2.0 * np.pi) - np.pi, dtype=np.float64)


def positional_inverse_mass(
    inv_mass: FloatArray, inv_inertia: FloatArray, r: FloatArray, n: FloatArray
) -> FloatArray:
    """(K,) generalized inverse masses 1/m + (r x n)^T I^-1 (r x n) (Müller et al. 2020, Eq. 2)."""
    rn = cross(r, n)
    return np.asarray(inv_mass + np.einsum("ki,kij,kj->k", rn, inv_inertia, rn), dtype=np.float64)


def angular_inverse_mass(inv_inertia: FloatArray, n: FloatArray) -> FloatArray:
    """(K,) generalized inverse masses n^T I^-1 n of a rotation about ``n`` (Müller et al. 2020, Eq. 11)."""
    return np.asarray(np.einsum("ki,kij,kj->k", n, inv_inertia, n), dtype=np.float64)


def point_mass_matrix(inv_mass: FloatArray, inv_inertia: FloatArray, r: FloatArray) -> FloatArray:
    """(K, 3, 3) how a pivot at offset ``r`` (K, 3) moves per unit impulse: dx = (E/m - [r]x I^-1 [r]x) p
    (the inverse effective mass of a point on a rigid body, as Bullet's point-to-point constraint)."""
    rx = skew(r)
    return np.asarray(inv_mass[:, None, None] * np.eye(3) - rx @ inv_inertia @ rx, dtype=np.float64)


def joint_mass_matrix(
    wa: FloatArray, ia: FloatArray, ra: FloatArray, wb: FloatArray, ib: FloatArray, rb: FloatArray
) -> FloatArray:
    """(K, 6, 6) how the pivots' relative offset and the bodies' relative turn change per unit impulse
    (push p at the pivots, turn t): [[K_a + K_b, -C], [-C^T, I_a^-1 + I_b^-1]] with K the point matrices
    (``point_mass_matrix``) and C = [r_a]x I_a^-1 + [r_b]x I_b^-1; symmetric, as it must be."""
    c = skew(ra) @ ia + skew(rb) @ ib
    m = np.empty((len(wa), 6, 6))
    m[:, :3, :3] = point_mass_matrix(wa, ia, ra) + point_mass_matrix(wb, ib, rb)
    m[:, :3, 3:] = -c
    m[:, 3:, :3] = -np.transpose(c, (0, 2, 1))
    m[:, 3:, 3:] = ia + ib
    return m


def block_impulse(
    matrix: FloatArray, rows: FloatArray, change: FloatArray, active: NDArray[np.bool_]
) -> FloatArray:
    """(K, n) world impulse that changes the coordinates whose gradients are the columns of ``rows``
    (K, n, n) by ``change`` (K, n) where ``active``, and leaves the inactive ones' multipliers at zero.

    Solves (D^T M D) mu = change on the active rows (M = ``matrix``, the relative motion per unit
    impulse, D = rows) as one block, so coupled rows converge in one step: corrected along one
    direction at a time, a long rod's anisotropic inertia fed each correction back into the others and
    two joined rods drifted apart by a millimetre per frame.
    """
    m = active.astype(np.float64)
    a = np.transpose(rows, (0, 2, 1)) @ matrix @ rows
    a = a * m[:, :, None] * m[:, None, :] + np.eye(m.shape[1]) * (1.0 - m)[:, None, :]
    mu = np.linalg.solve(a, (change * m)[:, :, None])[:, :, 0]
    return np.asarray(np.einsum("kij,kj->ki", rows, mu), dtype=np.float64)


def split_direction(correction: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(length (K,), unit direction (K, 3)) of corrections (K, 3); zero corrections get direction 0."""
    length = norms(correction)
    n = correction / np.where(length > TINY_CORRECTION, length, 1.0)[:, None]
    n[length <= TINY_CORRECTION] = 0.0
    return length, n


def spring_multiplier(
    c: FloatArray, dc: FloatArray, stiffness: FloatArray, damping: FloatArray, w: FloatArray, h: float
) -> FloatArray:
    """XPBD multiplier of a damped spring on a coordinate, one iteration (lambda starts at 0):

    dlambda = -(k h^2 C + c_d h dC) / (1 + (k h^2 + c_d h) w),

    Macklin et al. 2016, Eq. 26 with alpha = 1/k and gamma = alpha c_d / h multiplied through by k h^2,
    which stays finite for k = 0 (a pure damper). ``c`` (K,) is the coordinate's offset from the spring's
    rest, ``dc`` its change over this small step, ``w`` the generalized inverse mass along it.
    """
    k, d = stiffness * h * h, damping * h
    return np.asarray(-(k * c + d * dc) / (1.0 + (k + d) * w))


def motor_multiplier(
    dc: FloatArray, target: FloatArray, limit: FloatArray, w: FloatArray, h: float
) -> FloatArray:
    """Multiplier that makes a coordinate advance by ``target * h`` over this small step (a velocity
    motor: C = dc - target h, zero compliance), capped at the motor's largest force or torque:
    |dlambda| <= limit h^2 (XPBD: force = lambda / h^2)."""
    lam = -(dc - target * h) / np.where(w > 0.0, w, 1.0)
    cap = limit * h * h
    return np.asarray(np.clip(np.where(w > 0.0, lam, 0.0), -cap, cap))
