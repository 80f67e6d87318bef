# SPDX-License-Identifier: GPL-3.0-or-later
"""Wind fields as moving air for cloth that feels the air (``World.add_cloth(air_viscosity > 0)``).

Blender's Wind field is a force, not an air speed: ``strength * falloff`` newtons along the field's Z axis
(:mod:`.fields`), which Blender's cloth feels as ``0.02`` N per square metre per newton on each vertex's
share of the area (``CLOTH_EFFECTOR_SCALE``). Cloth with air drag (:mod:`.air`) instead feels the drag of
the air *relative to the wind*: a Wind field there is an air velocity U, and the cloth's drag and lift are
computed on v - U, so a flag streams and flaps in the wind and still air still slows it.

The mapping keeps Blender's force where Blender defines it, on a sheet held broadside to the wind: the
wind's force on a held sheet of area A is Blender's ``0.02 A |E|`` and the air's is ``1/2 rho C_d A U^2``,
so

    U = E / |E| * sqrt(2 * 0.02 * |E| / (rho C_d))        (rho C_d = 1.2 * 1.2 = 1.44 kg/m^3),

with E the fields' summed Wind force at the vertex (each field's strength, noise, falloff, frame-rate
scaling and the body's weights as for any field). A Wind strength of 9 N is then a 0.5 m/s breeze, 36 N
1 m/s, 900 N 5 m/s (at ``vel_to_sec`` 1; the Blender layer divides by the frame rate, as Blender's cloth
does). The earlier attempt read the strength as the speed itself (a strength of 200 became 200 m/s).
On these vertices a Wind field's force and Flow are replaced by the air (the air's drag is the flow);
cloth without air, rigid bodies, grains and fluids feel Wind fields as forces, as before.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .air import AIR_DENSITY, PLATE_DRAG_COEFFICIENT

FloatArray = NDArray[np.float64]

# Blender's cloth feels this many N per m^2 per N of field force (``fields.CLOTH_EFFECTOR_SCALE``).
HELD_SHEET_PRESSURE = 0.02


def wind_air_velocity(force: FloatArray) -> FloatArray:
    """(3, N) air velocity, m/s, of the summed Wind force ``force`` (3, N), newtons (see the module doc)."""
    magnitude = np.sqrt(np.einsum("ij,ij->j", force, force))
    speed = np.sqrt(2.0 * HELD_SHEET_PRESSURE * magnitude / (AIR_DENSITY * PLATE_DRAG_COEFFICIENT))
    return np.asarray(force * (speed / np.maximum(magnitude, 1e-300)), dtype=np.float64)
