# SPDX-License-Identifier: GPL-3.0-or-later
"""Air: the drag and lift of still (or moving) air on every cloth triangle, in the external-force stage.

Without it a cloth swings as in a vacuum: a 1 m square pinned along one edge and released horizontal swung
back to 77% of its drop and had not settled after 2 s (issue 25). Each triangle t (area A, unit normal n)
moving at v_rel = (mean of its vertices' velocities) - (the air's: still, or Wind fields', wind_air.py)
feels the pressure force of a flat plate,

    F_t = -1/2 rho C_d A |v_rel| (v_rel . n) n        (normal force coefficient C_N = C_d sin(alpha)),

the broadside drag 1/2 rho C_d A v^2 of a plate falling flat (C_d = 1.17 for a square plate, Hoerner 1965,
"Fluid-dynamic drag", 3-16), and for a plate at an angle of attack alpha a force along its normal whose
component across the flow is the lift (the "drag and lift" of cloth models, e.g. FleX). Tangential skin
friction (C_f ~ 0.005) is left out: two orders smaller. Each vertex takes a third of its triangles'
forces.

``viscosity`` scales the air density per cloth: 1 is air at sea level (rho = 1.2 kg/m^3), 0 a vacuum.
The name and default are Blender's cloth *Air Viscosity* (``air_damping``, default 1), whose solver
applies a linear force -0.01 Cvi v per vertex in its frame units (``implicit_blender.cc``,
``SIM_mass_spring_force_drag``): a decay rate of fps 0.01 Cvi / vertex mass that depends on the frame
rate and on the per-vertex mass setting; ours depends on the cloth's area and mass as real air does.

The force is velocity dependent and a light vertex can be stopped in one small step, so it is integrated
semi-implicitly: v_i <- v_i + h a_i / (1 + h k_i), with k_i = sum over its triangles of
(1/2 rho C_d A |v_rel| / 3) / m_i, the rate at which the drag alone would stop it. A vertex is then
slowed, never reversed, however light the cloth or long the step.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .errors import SimulationInputError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Air at sea level and 20 C, kg/m^3 (ISO 2533 standard atmosphere: 1.204).
AIR_DENSITY = 1.2
# Flat plate broadside to the flow (Hoerner 1965, 3-16: 1.17 for a square plate, 1.2 commonly used).
PLATE_DRAG_COEFFICIENT = 1.2


def _cross(p: FloatArray, q: FloatArray) -> FloatArray:
    """(3, F) column-wise cross products of two (3, F) arrays."""
    return np.stack([p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]])


def _gather(a: FloatArray, idx: IntArray) -> FloatArray:
    """(3, K) rows ``idx`` of the (N, 3) array ``a``, coordinate-major: one 1-D gather per column is ~4x
    faster than fancy-indexing the transposed view."""
    return np.stack([a[:, k][idx] for k in range(3)])


class Air:
    """The triangles of every cloth that feels the air, with their cloth's air viscosity.

    ``World.add_cloth(air_viscosity=...)`` adds a cloth's triangles (``Solver.air``); :meth:`apply` runs
    in ``Solver._apply_external_forces`` after the force fields.
    """

    def __init__(self) -> None:
        self.triangles = np.zeros((0, 3), np.int64)  # (F, 3) global particle indices
        self.coefficient = np.zeros(0)  # (F,) 1/2 rho C_d per triangle, kg/m^3
        self._flat: IntArray | None = None  # the triangles' vertices, all a, then all b, then all c
        self._vertices: NDArray[np.bool_] | None = None

    def vertices(self, n: int) -> NDArray[np.bool_] | None:
        """(n,) the particles of the triangles that feel the air (None if none do)."""
        if not len(self.triangles):
            return None
        if self._vertices is None or len(self._vertices) != n:
            self._vertices = np.zeros(n, dtype=bool)
            self._vertices[self.triangles.ravel()] = True
        return self._vertices

    def add_cloth(self, indices: IntArray, faces: IntArray, viscosity: float) -> None:
        """Add one cloth's triangles ``faces`` (F, 3), local vertex numbers of ``indices``; ``viscosity``
        >= 0 scales the air density (1: sea level, 0: vacuum, then nothing is added)."""
        viscosity = float(viscosity)
        if not (np.isfinite(viscosity) and viscosity >= 0.0):
            raise SimulationInputError(
                f"air_viscosity must be >= 0 (1: air at sea level, 0: vacuum), got {viscosity!r}"
            )
        if viscosity == 0.0 or not len(faces):
            return
        tris = np.asarray(indices, np.int64)[np.asarray(faces, np.int64)]
        self.triangles = np.concatenate([self.triangles, tris])
        c = 0.5 * AIR_DENSITY * PLATE_DRAG_COEFFICIENT * viscosity
        self.coefficient = np.concatenate([self.coefficient, np.full(len(tris), c)])
        self._vertices = None

    def reset(self) -> None:
        """The triangles changed in place (a cloth tore, core/tearing.py)."""
        self._flat = None

    def apply(
        self,
        x: FloatArray,
        v: FloatArray,
        inv_mass: FloatArray,
        h: float,
        wind: FloatArray | None = None,
    ) -> None:
        """v <- v + h a / (1 + h k) on the cloth's vertices, in place.

        Args:
            x, v: (N, 3) positions, metres, and velocities, m/s (``v`` updated).
            inv_mass: (N,) inverse masses, 1/kg (0: pinned, left alone).
            h: small step, s.
            wind: (N, 3) local air velocity, m/s (None: still air).
        """
        tris = self.triangles
        if not len(tris):
            return
        n = len(x)
        if self._flat is None or len(self._flat) != 3 * len(tris):
            self._flat = np.ascontiguousarray(tris.T).ravel()  # vertex a of every triangle, then b, then c
        flat = self._flat
        f = len(tris)
        # One gather per array, coordinate-major (3, 3F): columns [a-block | b-block | c-block].
        xc = _gather(x, flat)
        xa, xb, xcc = xc[:, :f], xc[:, f : 2 * f], xc[:, 2 * f :]
        cross = _cross(xb - xa, xcc - xa)  # (3, F), |cross| = 2 A
        twice_area = np.sqrt(np.einsum("ij,ij->j", cross, cross))
        normal = cross / np.maximum(twice_area, 1e-300)
        vc = _gather(v, flat)
        rel = vc[:, :f] + vc[:, f : 2 * f] + vc[:, 2 * f :]
        if wind is not None:
            wc = _gather(wind, flat)
            rel -= wc[:, :f] + wc[:, f : 2 * f] + wc[:, 2 * f :]
        rel *= 1.0 / 3.0
        speed = np.sqrt(np.einsum("ij,ij->j", rel, rel))
        # k_t = 1/2 rho C_d A |v_rel| (kg/s); F_t = -k_t (v_rel . n) n, a third to each vertex.
        k_third = self.coefficient * (0.5 / 3.0) * twice_area * speed
        force_third = normal * (-k_third * np.einsum("ij,ij->j", rel, normal))
        k = np.bincount(flat, weights=np.concatenate([k_third, k_third, k_third]), minlength=n) * inv_mass
        scale = h * inv_mass / (1.0 + h * k)
        for axis in range(3):  # column by column: see fastops on (N, 3) broadcasting
            fa = force_third[axis]
            v[:, axis] += np.bincount(flat, weights=np.concatenate([fa, fa, fa]), minlength=n) * scale
