"""Deep grain piles hold their height and settle without jumping (issue 24, items 3 and 4)."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.blender.materials import PRESETS
from unified_particles.core import World, fill_mesh_with_grains
from unified_particles.core.primitives import box_mesh, grid_points

R = 0.005  # 1 cm grains
G = 9.81
H_SMALL = 1.0 / 24.0 / 16.0  # the default small step: 4 substeps x 4 iterations at 24 fps


def _walled_world(half_width: float, **settings: float) -> World:
    """Ground (friction 0.7) and four frictionless walls |x|, |y| <= half_width around the origin."""
    w = World(radius=R, **settings)
    w.add_collider_plane(friction=0.7)
    for axis in (0, 1):
        for side in (-1.0, 1.0):
            point, normal = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
            point[axis], normal[axis] = side * half_width, -side
            w.add_collider_plane(point=tuple(point), normal=tuple(normal), friction=0.0)
    return w


def _column_top(layers: int, jitter: float, substeps: int = 4) -> tuple[float, float]:
    """A 3 x 3 column of touching grains, ``layers`` high, in a box that fits it; settled 1 s.
    Returns (settled top / packed top, highest top over the run / packed top)."""
    w = _walled_world(3.0 * R, substeps=substeps)
    pts = grid_points((3, 3, layers), 2.0 * R, (-2.0 * R, -2.0 * R, R))
    # Sideways nudges (fractions of r) stand in for the SIMD rounding of other CPUs.
    pts[:, :2] += np.random.default_rng(7).uniform(-jitter, jitter, (len(pts), 2)) * R
    w.add_granular(pts, friction=0.7)
    packed = 2.0 * R * layers
    highest = packed
    for _ in range(24):
        w.step(1.0 / 24.0)
        highest = max(highest, float(w.positions[:, 2].max()) + R)
    return (float(w.positions[:, 2].max()) + R) / packed, highest / packed


@pytest.mark.slow
def test_column_of_fine_grains_holds_its_packed_height() -> None:
    # Sand grains are stiff: quartz (E ~ 70 GPa) under a column 40 grains high deforms by nanometres
    # (Hertz contact), so a column of touching grains keeps its packed height, 40 diameters. With one
    # Jacobi iteration per small step the support rose one layer per small step, so the top fell freely
    # for ~40 small steps: the column settled to 28% of its height (r = 5 mm, the defaults) and was
    # thrown up to 1.87 times it. The grain support pass carries the weight down the pile within one
    # small step; what is left is at most one small step's fall per contact, g h^2 per layer, so the
    # column may lose g h^2 / (2r) of its height: 0.66% at the default h = 1/384 s. Measured: 0.04%
    # (0.004% at 16 substeps).
    allowed = 1.5 * G * H_SMALL**2 / (2.0 * R)
    for jitter in (0.0, 0.05):
        top, highest = _column_top(40, jitter)
        assert top > 1.0 - allowed, (jitter, top)
        # Never above the packed height by more than rounding (nothing throws it up).
        assert highest < 1.0 + 1e-6, (jitter, highest)


def test_settling_fill_never_jumps_and_no_grain_gains_energy() -> None:
    # A silo fill: a 4 x 4 x 40 cm box filled with 1 cm grains (the loose, jittered FCC fill), settling
    # in frictionless walls. It may only go down: a grain may be pushed up by its neighbours as they
    # settle into the gaps, but no grain may end higher than a grain above the fill's top, and the
    # grains' total energy (kinetic plus potential) may only drop. Before the support pass the fill's
    # top rose from 39 to 51 grain diameters, a 60-grain column to twice its height. Tolerance: one
    # small step's fall g h^2 for the energy per grain (rounding of the start), a grain for the top.
    v, f = box_mesh((0.04, 0.04, 0.4), (0.0, 0.0, 0.2))
    pts = fill_mesh_with_grains(v, f, R)
    w = _walled_world(0.02)
    g = w.add_granular(pts, friction=0.7)
    top0 = float(pts[:, 2].max())
    mass = 1.0  # per-grain energy per unit mass (all grains weigh the same)
    energy0 = mass * G * float(pts[:, 2].sum())
    highest, energy_max = top0, energy0
    for _ in range(24):
        w.step(1.0 / 24.0)
        x, vel = w.positions[g.indices], w.velocities[g.indices]
        highest = max(highest, float(x[:, 2].max()))
        energy = mass * (G * float(x[:, 2].sum()) + 0.5 * float(np.einsum("ij,ij->", vel, vel)))
        energy_max = max(energy_max, energy)
    assert highest < top0 + 2.0 * R, (top0, highest)
    assert energy_max <= energy0 + len(pts) * G * G * H_SMALL**2, (energy0, energy_max)
    # The settled fill is no looser than a random close packing of touching grains can be: its top at
    # most where it started (the FCC fill is 12% looser than touching grains), nothing below the floor.
    assert float(w.positions[g.indices][:, 2].min()) > 0.97 * R


def _collapse(aspect: float, nudge: float = 0.0) -> tuple[float, float]:
    """A cylinder of the Dry Sand preset (1 cm grains) of radius R0 = 5 cm and height
    aspect * R0, released on a floor (friction 0.7); after 1.25 s returns the runout (R_inf - R0) / R0
    and the final height H_inf / R0 (R_inf: the 99th percentile of the grains' distance from the axis
    plus a radius; H_inf: the highest grain top)."""
    r0 = 0.05
    height = aspect * r0
    v, f = box_mesh((2.0 * r0, 2.0 * r0, height), (0.0, 0.0, height / 2.0))
    pts = fill_mesh_with_grains(v, f, R)
    pts = pts[np.hypot(pts[:, 0], pts[:, 1]) <= r0 - R]
    pts += np.random.default_rng(3).uniform(-nudge, nudge, pts.shape) * R
    w = World(radius=R)
    w.add_collider_plane(friction=0.7)
    g = w.add_granular(pts, **next(values for ident, _, _, values in PRESETS if ident == "DRY_SAND"))
    for _ in range(30):
        w.step(1.0 / 24.0)
    x = w.positions[g.indices]
    r_inf = float(np.percentile(np.hypot(x[:, 0], x[:, 1]), 99)) + R
    return (r_inf - r0) / r0, (float(x[:, 2].max()) + R) / r0


def test_collapsing_column_leaves_a_cone_as_high_as_real_sand() -> None:
    # Lube, Huppert, Sparks, Hallworth, "Axisymmetric collapses of granular columns", J. Fluid Mech. 508
    # (2004): for aspect ratios a = H0/R0 above ~0.74 the deposit's central cone stands H_inf/R0 =
    # 0.88 a^(1/6) high, whatever the material (sand, salt, sugar, rice, couscous), and the runout is
    # (R_inf - R0)/R0 = 1.24 a (a < 1.7) or 1.6 a^(1/2) (a > 1.7). At a = 2: H_inf/R0 = 0.99, runout 2.26.
    # Before the support pass the released column flattened to H_inf/R0 = 0.49 (its grains' overlap
    # grew with depth as it fell, and the flow spread it as a liquid would); then 0.92, but it ran out
    # only 1.26 (full sliding friction: these grains do not roll, so they slid where real ones roll).
    # With the preset's sliding friction (0.3 of the static) and rolling resistance: H_inf/R0 0.89,
    # runout 2.58 (docs/physics.md). Tolerance: the experiments' scatter about the law is ~10%; this
    # column is only 5 grains in radius (the experiments' 17-97 mm columns of sub-mm grains were
    # 30-200), so the top grain alone is 0.2 R0 and one grain more or less at the front 9% of the runout.
    # Nudging the grains by 0.005-0.05 r (other CPUs' rounding) gave heights 0.87-0.96 and runouts
    # 2.23-2.54 (mean 2.43): the runout is held to -20% / +30% of the law, a grain diameter beyond that.
    aspect = 2.0
    runout, height = _collapse(aspect)
    expected = 0.88 * aspect ** (1.0 / 6.0)
    assert 0.8 * expected < height < 1.15 * expected, (height, expected)
    expected_runout = 1.6 * aspect**0.5
    assert 0.8 * expected_runout < runout < 1.3 * expected_runout, (runout, expected_runout)
