"""Heavy on light: a heavier load sags a pinned cloth further, by its mass (issue 24, item 6).

Three 1 x 1 m, 5 kg cloths (17 x 17 vertices, stretch compliance 1e-3 m/N) pinned at their corners
carry a 0.3 x 0.3 x 0.1 m box of 3.2, 12.8 and 25.6 kg (1x, 4x, 8x) set down gently on their centres;
after 2 s (damping 4/s: the static sag does not depend on it) the centre sags are compared.

Reference: a membrane without pretension pinned at its edge under a central load P deflects as
w ~ (P / E t)^(1/3) (Foppl's membrane theory; Timoshenko and Woinowsky-Krieger, Theory of Plates and
Shells, 2nd ed. 1959, Sec. 96), so 8x the load gives 2x the sag and 4x gives 4^(1/3) = 1.59x. The
cloth's own weight W adds to the load: with a share b W of it acting like load at the centre, the
ratio is ((k P + b W) / (P + b W))^(1/3). docs/physics.md ("Sag against load") takes the band 1.55-2.0
for 8x (b W / P from 0 to 1.57, the static equilibrium of the same spring network gives 1.82); the same
range of b W / P gives 1.29-1.59 for 4x. Before the fix every box heavier than `max_mass_ratio` (10)
cloth vertices per particle sagged the cloth alike: 12.8 and 25.6 kg to the same millimetre (0.331 m;
light 0.281 m); with the boxes nudged by 0.1 mm, 0.339 / 0.304 m and 0.352 / 0.304 m: the 25.6 kg box
never sags deeper. The mid sag moves by ~5 cm under such nudges at 2 s, so a fix must also show its
ratios hold for nudged boxes (docs/physics.md, "Heavy on light"). With the loads' contacts solved again
at the true mass ratio on compliant cloth (core/cloth_load.py): 0.281 / 0.390 / 0.447 m (1.39, 1.59);
nudged by 0.1 mm (seeds 1-3) and 1 mm, 1.38-1.39 and 1.58-1.66.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh, grid_mesh

LOADS_KG = (3.2, 12.8, 25.6)
R = 0.03


def _sags(nudge: float = 0.0) -> np.ndarray:
    """Centre sags (3,), m, of the three cloths under LOADS_KG, mean of the last 0.25 s of 2 s."""
    v, f = grid_mesh(1.0, 17)  # 6.25 cm edges, ~17 g a vertex
    v = np.asarray(v, float)
    v[:, 2] += 1.0
    corners = np.flatnonzero(np.isclose(np.abs(v[:, 0]), 0.5) & np.isclose(np.abs(v[:, 1]), 0.5))
    centre = int(np.argmin(np.hypot(v[:, 0], v[:, 1])))
    w = World(radius=R, damping=4.0)
    size = (0.3, 0.3, 0.1)
    cloths = []
    rng = np.random.default_rng(1)
    for k, kg in enumerate(LOADS_KG):  # side by side, 1.5 m apart: one world, one vectorized step
        shift = np.array([1.5 * k, 0.0, 0.0])
        cloth = w.add_cloth(v + shift, np.asarray(f), mass=5.0, stretch_compliance=1e-3, pinned=corners)
        cloths.append(cloth)
        bv, bf = box_mesh(size, (1.5 * k, 0.0, 1.0 + 0.05 + 2.0 * R))
        bv = np.asarray(bv, float) + nudge * rng.standard_normal(np.shape(bv))
        w.add_rigid(bv, bf, density=kg / float(np.prod(size)))
    drops = []
    for frame in range(48):
        w.step(1.0 / 24.0)
        if frame >= 42:
            drops.append([1.0 - float(c.vertex_positions[centre, 2]) for c in cloths])
    return np.mean(drops, axis=0)


@pytest.mark.slow
@pytest.mark.parametrize("nudge", [0.0, 1e-4])  # and with the boxes' vertices moved by ~0.1 mm
def test_sag_grows_with_the_load_as_a_membrane(nudge: float) -> None:
    light, mid, heavy = _sags(nudge)
    assert heavy > mid > light, f"sags {light:.3f} / {mid:.3f} / {heavy:.3f} m"
    assert 1.29 <= mid / light <= 1.59, f"4x the load: sag ratio {mid / light:.2f}"
    assert 1.55 <= heavy / light <= 2.0, f"8x the load: sag ratio {heavy / light:.2f}"
