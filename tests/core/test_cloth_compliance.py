"""Pinned cloth follows its own stretch compliance: tethers bound only the stretch beyond it (issue 14).

Tethers (long-range attachments, tests/core/test_tethers.py) used to cap every pinned cloth at
(1 + tether_give) times its rest path to the pins, whatever its compliance, so a soft cloth sagged no
further under a heavier load once the tethers were taut. They now leave each cloth the strain its own
compliance allows under a plausible maximal membrane tension (``distance.compliant_strain``: strain =
compliance x tension, 1000 N/m) and bound only what lies beyond.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.distance import TETHER_TENSION, compliant_strain, mesh_edges, tethers
from unified_particles.core.primitives import box_mesh, grid_mesh, uv_sphere_mesh


def test_compliant_strain_is_compliance_times_tension() -> None:
    # An edge of length l carrying T stretches by alpha T (strain alpha T / l); edges l apart across a
    # width carry T = tension * l each, so strain = alpha * tension at any mesh resolution.
    assert compliant_strain(0.0) == 0.0
    assert compliant_strain(1e-4) == 1e-4 * TETHER_TENSION
    assert compliant_strain(2e-3, 50.0) == 0.1


def test_tether_lengths_add_the_compliant_strain_to_the_give() -> None:
    v, f = grid_mesh(1.0, 5)
    v = np.asarray(v, float)
    f = np.asarray(f)
    pins = np.flatnonzero(np.isclose(v[:, 0], -0.5))
    _, _, path = tethers(mesh_edges(f), v, pins)
    for alpha, give in ((0.0, 0.1), (1e-4, 0.1), (1e-3, 0.02)):
        w = World(radius=0.1)
        w.add_cloth(v, f, stretch_compliance=alpha, pinned=pins, tether_give=give)
        w.model.finalize()
        expected = path * (1.0 + give + alpha * TETHER_TENSION)
        np.testing.assert_allclose(w.model.tether.length, expected, rtol=1e-12)


N = 21  # 1 m x 1 m, 5 cm vertex spacing
R = 0.025  # particle radius: half the vertex spacing


def _load_corner_pinned_cloth(compliance: float, box_density: float) -> tuple[float, float]:
    """A 0.2 m box dropped on a 0.5 kg cloth pinned at its four corners; 4 s with light air damping.

    Returns (sag of the box: its drop below where it would rest on the flat cloth, averaged over the
    last second; largest ratio of a vertex's distance to its pin over its rest path over that second).
    """
    v, f = grid_mesh(1.0, N)
    v = np.asarray(v, float)
    f = np.asarray(f)
    v[:, 2] += 1.0
    corners = np.flatnonzero(np.isclose(np.abs(v[:, 0]), 0.5) & np.isclose(np.abs(v[:, 1]), 0.5))
    w = World(radius=R, damping=1.0)
    cloth = w.add_cloth(v, f, mass=0.5, stretch_compliance=compliance, pinned=corners, tether_give=0.1)
    bv, bf = box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 1.15))
    box = w.add_rigid(bv, bf, density=box_density)
    free, anchor, path = tethers(mesh_edges(f), v, corners)
    z, ratio = [], 0.0
    for frame in range(96):
        w.step(1.0 / 24.0)
        if frame >= 72:
            z.append(float(box.center[2]))
            x = cloth.vertex_positions
            ratio = max(ratio, float((np.linalg.norm(x[free] - x[anchor], axis=1) / path).max()))
    return 1.1 - float(np.mean(z)), ratio


@pytest.mark.slow
def test_heavier_load_sags_a_soft_pinned_cloth_more_and_a_stiff_one_stays_near_its_length() -> None:
    # Box particles of density 10 and 80 kg/m^3 weigh (2r)^3 rho = 1.25 g and 10 g against a cloth vertex
    # of ~1.1 g: both within the contact mass-ratio limit (10:1), so the contacts see the 8x load.
    soft = 1e-2  # m/N: compliant strain 1e-2 x 1000 N/m = 10, so the tethers never bind
    light, _ = _load_corner_pinned_cloth(soft, 10.0)
    heavy, heavy_ratio = _load_corner_pinned_cloth(soft, 80.0)
    stiff_light, stiff_light_ratio = _load_corner_pinned_cloth(0.0, 10.0)
    stiff_heavy, stiff_heavy_ratio = _load_corner_pinned_cloth(0.0, 80.0)
    # Measured: soft 0.245 m and 0.291 m; with the old cap (tethers at 1.1 x the path whatever the
    # compliance) 0.222 m and 0.242 m, and no vertex got beyond ~1.17 x its path.
    assert heavy > light + 0.03, f"8x the load sagged the soft cloth {heavy:.3f} m against {light:.3f} m"
    assert heavy_ratio > 1.1 + 0.07 + 0.1, f"soft cloth held at {heavy_ratio:.3f} x its rest path"
    assert light > stiff_heavy, "a soft cloth must sag more than a stiff one"
    # Inextensible cloth: held by its tethers at (1 + give) x the path plus the edge pass after them
    # (the slack of tests/core/test_tethers.py: measured 1.144 and 1.162 here; 1.156 and 1.160 with the
    # coarse correction, whose tethers are projected again after it).
    for ratio in (stiff_light_ratio, stiff_heavy_ratio):
        assert ratio <= 1.1 + 0.07, f"stiff cloth stretched to {ratio:.3f} x its rest path"
    assert stiff_heavy > stiff_light, "even a stiff cloth gives a little more under a heavier load"


def test_free_cloth_draped_on_a_sphere_rests_under_15_percent_stretch() -> None:
    """Benchmark S1 in small (issue 14): an unpinned 2 m inextensible cloth of 21 x 21 vertices dropped
    from 1 m onto a sphere of radius 0.5 m, 3 s at the default budget. No tethers hold it (no pins), so
    only the coloured stretch sweeps bound its stretch; the hanging skirt's weight passes through the
    cap on the sphere, which stretches most. Measured 6.8% in the last frame (14% at the impact)."""
    v, f = grid_mesh(2.0, 21)
    v = np.asarray(v, float) + np.array([0.0, 0.0, 1.0])
    f = np.asarray(f)
    w = World(radius=0.05)
    cloth = w.add_cloth(v, f, mass=1.0, stretch_compliance=0.0, bend_compliance=1e-3)
    w.add_collider_mesh(*uv_sphere_mesh(0.5), friction=0.5)
    edges = mesh_edges(f)
    rest = np.linalg.norm(v[edges[:, 0]] - v[edges[:, 1]], axis=1)
    for _ in range(72):
        w.step(1.0 / 24.0)
    x = cloth.vertex_positions
    stretch = float((np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1) / rest).max()) - 1.0
    assert x[:, 2].min() < 0.0, "the cloth must drape over the sphere, not lie on top of it"
    assert np.linalg.norm(x, axis=1).min() > 0.5 - 0.05, "the cloth went into the sphere"
    assert stretch < 0.15, f"draped cloth stretched by {100 * stretch:.1f}% at rest"
