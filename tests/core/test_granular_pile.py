"""Grain fills are a loose packing real grains could have, and a dropped block of sand slumps (issue 14)."""

from __future__ import annotations

import math

import numpy as np

from unified_particles.core import World, fill_mesh_with_grains, geometry
from unified_particles.core.neighbors import find_pairs
from unified_particles.core.primitives import box_mesh, uv_sphere_mesh

R = 0.05


def _closest_pair(points: np.ndarray, radius: float) -> float:
    i, j = find_pairs(points, 3.0 * radius)
    return float(np.linalg.norm(points[i] - points[j], axis=1).min())


def test_grain_fill_has_no_overlap_lies_inside_and_is_deterministic() -> None:
    for v, f, r in ((*box_mesh((0.6, 0.6, 0.6)), R), (*uv_sphere_mesh(0.5), 0.03)):
        pts = fill_mesh_with_grains(v, f, r)
        # No two grains overlap: centres at least 2r apart (the FCC neighbours are 2.245 r apart, each
        # grain moved by at most 0.12 r).
        assert _closest_pair(pts, r) >= 2.0 * r * (1.0 - 1e-9)
        # Every grain wholly inside: its centre at least r below the surface.
        sdf, _ = geometry.signed_distance(v, f, pts)
        assert float(sdf.max()) <= -r * (1.0 - 1e-6)
        # Same mesh and radius, same grains (seeded jitter).
        np.testing.assert_array_equal(pts, fill_mesh_with_grains(v, f, r))
        # The count never exceeds the estimate the limits use, volume / (2r)^3 ...
        estimate = geometry.estimate_interior_count(v, f, 2.0 * r)
        assert len(pts) <= estimate
        # ... and is about the volume the centres may occupy (the mesh inset by r) at one grain per (2r)^3:
        # FCC nodes on a flat inset boundary add up to half a layer; on a curved one the lattice count
        # differs from the volume by a surface term (a few per cent of the grains here). Inset volume of
        # a convex body, approximated by the ball (cube: the cube) of the same volume shrunk by r.
        volume = geometry.fill_measure(v, f).volume
        assert volume is not None
        if len(v) == 8:
            inset = (volume ** (1.0 / 3.0) - 2.0 * r) ** 3
        else:
            inset = 4.0 / 3.0 * math.pi * ((3.0 * volume / (4.0 * math.pi)) ** (1.0 / 3.0) - r) ** 3
        assert len(pts) >= 0.95 * inset / (2.0 * r) ** 3, (len(pts), inset / (2.0 * r) ** 3)


def test_grain_fill_is_not_stacked_in_columns() -> None:
    # The simple cubic lattice puts every grain straight above another (contact normals vertical, a
    # balanced stack). In the jittered FCC fill, neighbours (closer than 2.3 r) lie in the lattice's <110>
    # directions, horizontal or 45 degrees off the vertical, give or take the 0.12 r jitter (~6 degrees):
    # every grain rests in a pocket between the grains below it, never on top of one.
    v, f = box_mesh((0.6, 0.6, 0.6))
    pts = fill_mesh_with_grains(v, f, R)
    i, j = find_pairs(pts, 2.3 * R)
    d = pts[i] - pts[j]
    cos_vertical = np.abs(d[:, 2]) / np.linalg.norm(d, axis=1)
    assert len(i) > 3 * len(pts)  # a connected packing
    assert cos_vertical.max() < math.cos(math.radians(30.0))


def test_fill_falls_back_to_one_layer_in_a_mesh_thinner_than_a_grain() -> None:
    v, f = box_mesh((1.0, 1.0, 0.05))  # 5 cm thick, grains 10 cm across
    pts = fill_mesh_with_grains(v, f, R)
    np.testing.assert_allclose(pts, geometry.sample_interior(v, f, 2.0 * R).points)


def test_dropped_block_of_dry_sand_slumps_into_a_mound() -> None:
    # A 0.6 m cube of grains (friction 0.5) dropped 0.7 m onto the ground. Dry sand holds no shape
    # steeper than its angle of repose (~30 degrees), so a cube (90 degree sides) must slump into a mound.
    # The simple cubic fill stayed a perfect cube (width 0.50 m, height 0.60 m after 3 s). Measured with
    # the jittered FCC fill: width 0.49 -> 1.62 m, height 0.59 -> 0.24 m.
    v, f = box_mesh((0.6, 0.6, 0.6), (0.0, 0.0, 0.7 + 0.3))
    pts = fill_mesh_with_grains(v, f, R)
    w = World(radius=R)
    w.add_collider_plane(friction=0.5)
    g = w.add_granular(pts, friction=0.5)
    width0 = float(np.ptp(pts[:, 0]))
    height0 = float(np.ptp(pts[:, 2])) + 2.0 * R
    top0 = float(pts[:, 2].max())
    highest = top0
    for _ in range(72):  # 3 s
        w.step(1.0 / 24.0)
        highest = max(highest, float(w.positions[g.indices][:, 2].max()))
    x = w.positions[g.indices]
    width = min(float(np.ptp(x[:, 0])), float(np.ptp(x[:, 1])))
    height = float(x[:, 2].max()) + R  # the ground is at z = 0
    assert width > 2.0 * width0, (width0, width)
    assert height < 0.6 * height0, (height0, height)
    # Invariants: nothing sank into the ground, nothing rose above where it started (no energy gained),
    # and the mound has come to rest.
    assert float(x[:, 2].min()) > 0.97 * R
    assert highest <= top0 + 1e-9
    assert float(np.abs(w.velocities[g.indices]).max()) < 0.5


def _poured_ridge_angles(materials: list[dict[str, float]], rows: int = 60) -> list[float]:
    """Pour one ridge of grains per material and return each one's angle of repose, degrees.

    Each ridge is a slice of a heap (plane strain), poured between two frictionless walls 0.4 m apart (3
    grains across), so a pile 30 grains wide needs only a couple of hundred grains: every 2 frames a row
    of 3 grains is released 2.5 r above the pile's top, at 0.5 m/s, on the ridge's axis (a small funnel
    that rises with the pile), then the piles settle for 2 s. All ridges share one World (2.5 m apart)
    so the cost per step is shared. The angle is the standard pile measure, tan(a) = 2 H / W: H the
    highest grain top, W the base width (2nd to 98th percentile of x, plus a grain).
    """
    w = World(radius=R)
    w.add_collider_plane(friction=0.6)
    w.add_collider_plane(point=(0.0, -0.2, 0.0), normal=(0.0, 1.0, 0.0), friction=0.0)
    w.add_collider_plane(point=(0.0, 0.2, 0.0), normal=(0.0, -1.0, 0.0), friction=0.0)
    rng = np.random.default_rng(5)
    centres = 2.5 * np.arange(len(materials))
    ys = np.array([-2.2 * R, 0.0, 2.2 * R])
    for row in range(rows):
        x, speed = w.positions, np.linalg.norm(w.velocities, axis=1)
        for c, material in zip(centres, materials, strict=True):
            pts = np.stack(
                [c + rng.uniform(-0.3, 0.3, 3) * R, ys + rng.uniform(-0.05, 0.05, 3) * R, np.zeros(3)], 1
            )
            on_axis = np.abs(x[:, 0] - c) < 3.0 * R
            resting = on_axis & (speed < 0.2)
            top = 2.5 * R
            if row:  # above the resting pile, and above the grains still falling
                top = max(
                    x[resting, 2].max() + 2.5 * R if resting.any() else top, x[on_axis, 2].max() + 2.3 * R
                )
            pts[:, 2] = top
            w.add_granular(pts, initial_velocity=(0.0, 0.0, -0.5), **material)
        for _ in range(2):
            w.step(1.0 / 24.0)
    for _ in range(48):
        w.step(1.0 / 24.0)
    angles = []
    for c in centres:
        x = w.positions[np.abs(w.positions[:, 0] - c) < 1.25]
        height = float(x[:, 2].max()) + R
        width = float(np.percentile(x[:, 0], 98) - np.percentile(x[:, 0], 2)) + 2.0 * R
        angles.append(math.degrees(math.atan(2.0 * height / width)))
    return angles


def test_poured_pile_angle_rises_with_friction_cohesion_and_rolling_resistance() -> None:
    # Poured heaps of the Dry Sand preset (friction 0.6, no cohesion, no rolling resistance) and of one
    # change each. Measured (NumPy 1.26 / 2.x): dry 41.0 / 39.7 degrees, friction 0.3: 33.3 / 32.2,
    # friction 1.5: 46.0 / 46.6, cohesion 0.1: 50.0 / 49.8, rolling friction 1.0: 48.6 / 47.1. The same
    # pour with other random releases spreads by about +-2 degrees, so each step must be at least 3.
    # (Real dry sand stands at 30-35 degrees; 2 H / W reads this small heap's peaked top a few degrees
    # high: the slope of its flanks alone is 25-30 degrees, too noisy at this size to test.)
    dry = {"friction": 0.6, "cohesion": 0.0, "rolling_friction": 0.0}
    materials = [
        dry,
        {**dry, "friction": 0.3},
        {**dry, "friction": 1.5},
        {**dry, "cohesion": 0.1},
        {**dry, "rolling_friction": 1.0},
    ]
    angle_dry, slippery, rough, damp, rolling = _poured_ridge_angles(materials)
    assert 30.0 <= angle_dry <= 45.0, angle_dry
    assert slippery < angle_dry - 3.0, (slippery, angle_dry)
    assert rough > angle_dry + 3.0, (rough, angle_dry)
    assert damp > angle_dry + 3.0, (damp, angle_dry)
    assert rolling > angle_dry + 3.0, (rolling, angle_dry)
