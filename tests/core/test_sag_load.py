"""Sag against load, the experiments row's scene (issue 24, item 6; benchmarks/experiments.py, ``load``).

A 1 x 1 m, 5 kg cloth (21 x 21 vertices, 5 cm edges, r = 2.5 cm, stretch compliance 1e-3 m/N, damping
1/s) pinned at its corners carries a 0.3 x 0.3 x 0.1 m box of 3.2 or 25.6 kg (1x and 8x the load) set
down on its centre; the centre's drop below the pins is averaged over the last 0.5 s of 3 s (the cloth
still swings a few cm).

Reference: a membrane without pretension pinned at its edge under a central load P deflects as
w ~ (P / E t)^(1/3) (Foppl's membrane theory; Timoshenko and Woinowsky-Krieger, Theory of Plates and
Shells, 2nd ed. 1959, Sec. 96), so 8x the load gives 2x the sag, less with the cloth's own weight W:
((8 P + b W) / (P + b W))^(1/3) for the share b W of it that acts like load at the centre, 1.55-2.0 for
b W / P from 0 to 1.57 (docs/physics.md, "Sag against load"). The static equilibrium of this spring
network (edges of stiffness 1 / compliance, the box's weight spread over the 7 x 7 vertices under it,
Newton's method to a residual of 1e-7 N) sags 0.307 m and 0.561 m: ratio 1.83, inside the band.

Before the cloth-load contacts were solved in several Jacobi passes (core/cloth_load.py, CARRY_PASSES)
the row measured 0.306 / 0.394 m (ratio 1.29) at the default budget and 1.19 at 16 substeps: one pass
left a vertex under the box most of the overlap (Jacobi averaging over its 2-4 contacts) and the held
pass took the rest of the box's weight without pushing the cloth.
Now 0.303 / 0.488 m (1.61) at the default budget, 0.262 / 0.422 m (1.61) at 16 substeps; after 6 s
0.306 / 0.483 m (1.58, the heavy cloth still swinging +-2 cm); with the box nudged by 0.1 and 1 mm,
1.76 and 1.69 at 3 s (the swing's phase moves the mean of the last 0.5 s).
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh, grid_mesh

N, R = 21, 0.025
BOX = (0.3, 0.3, 0.1)
LIGHT_KG, HEAVY_KG = 3.2, 25.6  # 8x the load
BAND = (1.55, 2.0)  # Foppl: ((8 P + b W) / (P + b W))^(1/3), b W / P from 0 to 1.57 (see above)


def sag_under(box_kg: float, seconds: float = 3.0, nudge: float = 0.0) -> tuple[float, float]:
    """The centre's drop below the pins, m, averaged over the last 0.5 s of ``seconds``, and the lowest
    height of the box's particles above the cloth's lowest vertex at the end, m (negative: through).
    ``nudge`` moves the box's vertices by that much at random (seed 1), m."""
    v, f = grid_mesh(1.0, N)
    v = np.asarray(v, float)
    v[:, 2] += 1.0
    corners = np.flatnonzero(np.isclose(np.abs(v[:, 0]), 0.5) & np.isclose(np.abs(v[:, 1]), 0.5))
    centre = int(np.argmin(np.hypot(v[:, 0], v[:, 1])))
    w = World(radius=R, damping=1.0)
    cloth = w.add_cloth(v, np.asarray(f), mass=5.0, stretch_compliance=1e-3, pinned=corners)
    bv, bf = box_mesh(BOX, (0.0, 0.0, 1.0 + 0.05 + 2.0 * R))
    bv = np.asarray(bv, float) + nudge * np.random.default_rng(1).standard_normal(np.shape(bv))
    box = w.add_rigid(bv, bf, density=box_kg / float(np.prod(BOX)))
    frames = round(24 * seconds)
    drops = []
    for frame in range(frames):
        w.step(1.0 / 24.0)
        if frame >= frames - 12:
            drops.append(1.0 - float(cloth.vertex_positions[centre, 2]))
    above = float(w.positions[box.indices][:, 2].min() - cloth.vertex_positions[:, 2].min())
    return float(np.mean(drops)), above


@pytest.mark.parametrize("nudge", [0.0, 1e-4])  # and with the box's vertices moved by ~0.1 mm
def test_eight_times_the_load_sags_like_a_membrane(nudge: float) -> None:
    light, light_above = sag_under(LIGHT_KG, nudge=nudge)
    heavy, heavy_above = sag_under(HEAVY_KG, nudge=nudge)
    assert light_above > 0.0, f"the light box went through: {light_above} m"
    assert heavy_above > 0.0, f"the heavy box went through: {heavy_above} m"
    ratio = heavy / light
    assert BAND[0] <= ratio <= BAND[1], f"sags {light:.3f} / {heavy:.3f} m: ratio {ratio:.2f}, band {BAND}"
