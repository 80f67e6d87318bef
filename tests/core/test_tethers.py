"""Long-range attachments (tethers) of pinned cloth: Kim, Chentanez and Müller, SCA 2012.

Each vertex of a pinned cloth is tied to its nearest pin by the length of the shortest path along
the mesh edges (rest shape), scaled by 1 + tether_give. The tethers are unilateral: they stop a
heavy load from stretching the cloth away from its pins, whatever the iteration count, and never
pull the cloth tighter than it rests.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.distance import TetherSolver, mesh_edges, tethers
from unified_particles.core.primitives import box_mesh, grid_mesh


def test_tether_lengths_are_shortest_edge_paths_to_the_nearest_pin() -> None:
    # A 5 x 5 grid of spacing 0.25 pinned along x = -0.5: vertex (i, j) is i steps from the pin row,
    # so its tether is i * 0.25 long (a straight edge path), anchored to the pin of its own row.
    v, f = grid_mesh(1.0, 5)
    v = np.asarray(v, float)
    pins = np.flatnonzero(np.isclose(v[:, 0], -0.5))
    free, anchor, length = tethers(mesh_edges(np.asarray(f)), v, pins)
    assert set(free.tolist()) == set(range(len(v))) - set(pins.tolist())
    np.testing.assert_allclose(length, v[free, 0] + 0.5, atol=1e-12)
    np.testing.assert_allclose(v[anchor, 1], v[free, 1], atol=1e-12)
    # Never shorter than the straight line: a tether cannot pull the rest shape tighter.
    assert np.all(length >= np.linalg.norm(v[free] - v[anchor], axis=1) - 1e-12)


def test_no_pins_no_tethers_and_unreachable_vertices_get_none() -> None:
    v, f = grid_mesh(1.0, 3)
    v = np.asarray(v, float)
    edges = mesh_edges(np.asarray(f))
    assert len(tethers(edges, v, np.zeros(0, np.int64))[0]) == 0
    # A second, disconnected triangle without a pin: its vertices have no path to the pin.
    v2 = np.vstack([v, [[5.0, 0.0, 0.0], [6.0, 0.0, 0.0], [5.0, 1.0, 0.0]]])
    e2 = np.vstack([edges, [[9, 10], [10, 11], [9, 11]]])
    free, _, _ = tethers(e2, v2, np.array([0]))
    assert not set(free.tolist()) & {9, 10, 11}


def test_tether_projection_only_pulls_vertices_that_are_too_far() -> None:
    x = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.5, 0.0]])
    solver = TetherSolver(np.array([1, 2]), np.array([0, 0]), np.array([1.0, 1.0]))
    solver.solve(x)
    np.testing.assert_allclose(x[1], [1.0, 0.0, 0.0])  # pulled back onto its 1 m sphere
    np.testing.assert_array_equal(x[2], [0.0, 0.5, 0.0])  # closer than 1 m: untouched


def _hang_box(tether_give: float | None, coarse: int = 0) -> tuple[float, float]:
    """Heavy box (0.25 m, 100 kg) on a 1 m x 1 m, 0.1 kg cloth pinned along two opposite edges, with the
    stretch solve's coarse correction ``coarse`` (World's ``cloth_coarse_correction``).

    Returns the largest ratio (distance to the vertex's pin / its rest tether length) over the
    last second, and the box's final height.
    """
    n = 21
    v, f = grid_mesh(1.0, n)
    v = np.asarray(v, float) + np.array([0.0, 0.0, 1.0])
    pins = np.flatnonzero(np.isclose(np.abs(v[:, 0]), 0.5))
    w = World(radius=0.024, substeps=4, iterations=1, cloth_coarse_correction=coarse)
    cloth = w.add_cloth(v, f, mass=0.1, pinned=pins, tether_give=tether_give, air_viscosity=0.0)  # vacuum
    box = w.add_rigid(*box_mesh((0.25, 0.25, 0.25), (0.0, 0.0, 1.2)), mass=100.0)
    rest_free, rest_anchor, rest_len = tethers(mesh_edges(np.asarray(f)), v, pins)
    worst = 0.0
    for frame in range(48):
        w.step(1.0 / 24.0)
        if frame >= 24:
            x = cloth.vertex_positions
            ratio = np.linalg.norm(x[rest_free] - x[rest_anchor], axis=1) / rest_len
            worst = max(worst, float(ratio.max()))
    return worst, float(box.center[2])


@pytest.mark.slow
def test_tethers_bound_the_stretch_of_pinned_cloth_under_a_heavy_load() -> None:
    # Without tethers, 4 small steps of one Gauss-Seidel sweep each (the fast stretch solve, without the
    # coarse correction) let a 1000:1 load stretch the cloth by ~40% and push through it: tethers guard
    # a stretch solve that does not converge, so the comparisons run on that one. (With the coarse
    # correction, on by default, the untethered cloth stretches 27%, as far as the contacts' 10:1
    # mass-ratio cap lets the box push: item 6 of issue 24.) Tethers are projected before the edge solve
    # in each small step, and the one Gauss-Seidel edge pass after them moves a vertex by a fraction of
    # an edge's correction: the bound is (1 + give) L plus that (measured 6% here for give 0 and 0.05;
    # 7% allowed).
    loose, loose_z = _hang_box(None)
    assert loose > 1.3, f"the test load must stretch untethered cloth ({loose:.3f})"
    for give in (0.0, 0.05):
        tight, tight_z = _hang_box(give)
        assert tight <= 1.0 + give + 0.07, f"give {give}: cloth stretched to {tight:.3f} of its length"
        assert tight < loose - 0.2
        # The tethered cloth holds the box higher than the untethered one. Before exact shapes (issue
        # 22.3) the untethered cloth, stretched > 30%, let the box through (z < 0.8); with the box's
        # outer particles r inside its faces it now holds it 0.84 m up, stretched as much (asserted above).
        assert tight_z > 0.8, "the tethered cloth holds the box"
        assert tight_z > loose_z + 0.05, "the untethered cloth sags further"
        # The same bound with the coarse correction (the default), whose tethers are projected again
        # after it (projection.distance_solvers): measured 5.3% and 5.6% over (1 + give) L.
        converged, converged_z = _hang_box(give, coarse=1)
        assert converged <= 1.0 + give + 0.07, f"give {give}, coarse: cloth stretched to {converged:.3f}"
        assert converged_z > 0.8, "the tethered cloth holds the box"


def test_negative_tether_give_is_refused() -> None:
    v, f = grid_mesh(1.0, 3)
    w = World(radius=0.1)
    with pytest.raises(SimulationInputError, match="tether_give"):
        w.add_cloth(v, f, pinned=[0], tether_give=-0.1)
