# SPDX-License-Identifier: GPL-3.0-or-later
"""Fluids (core/fluid.py, World.add_fluid): rest state, volume, buoyancy, containment, momentum, emitters."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import FLUID_PRESETS, Fluid, SimulationInputError, World, fill_mesh_with_fluid
from unified_particles.core.fluid import LatticeRest, PairBlocks
from unified_particles.core.primitives import box_mesh, grid_mesh

R = 0.025
HALF = 0.3  # tank half-width, m
FPS = 24


def _tank(depth: float = 0.2, **kw: float) -> tuple[World, Fluid]:
    """A square tank of plane colliders (0.6 m wide) filled to ``depth`` on the fill lattice; ``kw`` goes
    to ``add_fluid``."""
    return _column(HALF, depth, fluid=kw)


def _walled(half_x: float, half_y: float, **kw: int) -> World:
    """A World at the default budget (``kw`` to ``World``) with a floor and four walls of friction 0.5 around
    the 2 ``half_x`` x 2 ``half_y`` m rectangle about the origin."""
    world = World(R, substeps=4, iterations=4, **kw)
    world.add_collider_plane((0, 0, 0), (0, 0, 1), friction=0.5)
    for point, normal in (
        ((-half_x, 0, 0), (1, 0, 0)),
        ((half_x, 0, 0), (-1, 0, 0)),
        ((0, -half_y, 0), (0, 1, 0)),
        ((0, half_y, 0), (0, -1, 0)),
    ):
        world.add_collider_plane(point, normal, friction=0.5)
    return world


def _column(half: float, depth: float, fluid: dict | None = None, **kw: int) -> tuple[World, Fluid]:
    """A square column of water 2 ``half`` wide and ``depth`` deep in plane walls, at the default budget;
    ``fluid`` goes to ``add_fluid``, ``kw`` to ``World``."""
    world = _walled(half, half, **kw)
    v, f = box_mesh((2 * half, 2 * half, depth), (0, 0, depth / 2))
    return world, world.add_fluid(fill_mesh_with_fluid(v, f, R), **(fluid or {}))


def _small_step(world: World) -> float:
    return 1.0 / FPS / (world.substeps * world.iterations)


def test_fill_is_the_rest_lattice() -> None:
    # A box of 0.6 x 0.6 x 0.2 m at spacing 2r = 0.05 m holds 12 x 12 x 4 particles at the lattice nodes.
    _, fluid = _tank()
    assert fluid.count == 12 * 12 * 4
    x = fluid.positions
    assert np.allclose(np.unique(np.round(x[:, 2], 9)), [0.025, 0.075, 0.125, 0.175])
    # n0 is the Poly6 kernel sum (H = 4r) over that lattice; the kernel integrates to 1, so the sum is
    # close to the continuum number density 1 / (2r)^3: within 5 per cent.
    rest = LatticeRest.for_radius(R)
    assert abs(rest.n0 * (2 * R) ** 3 - 1.0) < 0.05
    assert rest.denominator > 0


@pytest.mark.slow
def test_water_at_rest_stays_level_at_its_volume_and_calms_down() -> None:
    world, fluid = _tank()
    for _ in range(3 * FPS):
        world.step(1.0 / FPS)
    x0 = fluid.positions.copy()
    for _ in range(FPS):
        world.step(1.0 / FPS)
    x = fluid.positions
    # Volume: the mean height of a uniform column of depth D is D / 2 = 0.1 m. Within 3 per cent.
    assert abs(x[:, 2].mean() - 0.1) < 0.003
    # Level: the top layer (the particles in the top 12 x 12 sheet) has no slope: its height does not
    # depend on x or y beyond a particle radius.
    top = x[np.argsort(x[:, 2])[-144:]]
    slope = np.linalg.lstsq(np.c_[top[:, :2], np.ones(len(top))], top[:, 2], rcond=None)[0][:2]
    assert np.all(np.abs(slope) * 2 * HALF < R)
    # Calm: nothing in the tank flows. PBD leaves a rest velocity of the order of g h per small step
    # (gravity added, then taken back by one constraint iteration); allow 3 g h rms and, over one second,
    # a median drift below a fifth of a radius.
    v = world.velocities
    gh = 9.81 * _small_step(world)
    assert np.sqrt((v**2).sum(axis=1).mean()) < 3.0 * gh
    assert np.median(np.linalg.norm(x - x0, axis=1)) < 0.2 * R


@pytest.mark.slow
def test_a_deep_tank_left_alone_becomes_still_and_keeps_its_volume() -> None:
    # Issue 25's still water: a tank 0.6 m deep (12 layers) left alone. One Jacobi density iteration per
    # small step over-corrected the lattice's short waves (fluid.jacobi_gain, 2.7 > 4/3): it boiled at
    # 0.15-0.23 m/s rms, its fastest particles at 0.45-0.75 m/s, for as long as it ran. Relaxed
    # (fluid.RELAXED_GAIN) it settles: 0.014-0.023 m/s rms over the half second after 3 s (1e-9 m
    # perturbations of the fill). Bound: 0.06 m/s. The relaxed solve leaves the column 1.6 per cent
    # more compressed (mean height 4.9 mm low, it was 0.8): within 3 per cent, as the shallow tank.
    depth = 0.6
    world, fluid = _column(0.2, depth)
    for _ in range(3 * FPS):
        world.step(1.0 / FPS)
    square, fastest, mean = 0.0, 0.0, 0.0
    for _ in range(FPS // 2):
        world.step(1.0 / FPS)
        speed = np.linalg.norm(world.velocities, axis=1)
        square += float((speed**2).mean()) / (FPS // 2)
        fastest, mean = max(fastest, float(speed.max())), max(mean, float(speed.mean()))
    assert np.sqrt(square) < 0.06
    assert abs(fluid.positions[:, 2].mean() - depth / 2) < 0.03 * depth / 2
    # Still water (issue 25, item 2): liquid slower than half of g h after a small step sleeps
    # (fluid.SLEEP_GH), and density passes repeat until the mean density error is 0.3 per cent
    # (fluid.DENSITY_TOLERANCE). Before: fastest particle 0.07-0.13 m/s, mean 0.016 m/s, level 1.5 per
    # cent low; after, from about 2 s on: every particle at rest, level 0.7 per cent low. Bounds from the
    # rest noise scale g h (0.026 m/s): fastest below 0.8 g h, mean below 0.08 g h (2 mm/s), level within
    # 1 per cent of D / 2.
    gh = 9.81 * _small_step(world)
    assert fastest < 0.8 * gh
    assert mean < 0.08 * gh
    assert abs(fluid.positions[:, 2].mean() - depth / 2) < 0.01 * depth / 2


@pytest.mark.slow
def test_no_particle_leaves_a_closed_tank() -> None:
    # Drop the water 0.3 m into the tank with a lid: it splashes but no centre ever crosses a wall.
    world, fluid = _tank()
    world.add_collider_plane((0, 0, 0.8), (0, 0, -1))
    world.positions = world.positions + np.array([0.0, 0.0, 0.3])
    world.velocities = np.tile([1.5, -0.8, -1.0], (world.particle_count, 1))
    for _ in range(2 * FPS):
        world.step(1.0 / FPS)
        x = fluid.positions
        assert np.all(np.abs(x[:, :2]) < HALF)
        assert np.all(x[:, 2] > 0.0)
        assert np.all(x[:, 2] < 0.8)


@pytest.mark.slow
def test_buoyancy_follows_archimedes() -> None:
    # Archimedes: a floating body of density rho_b is submerged to the fraction rho_b / rho_w of its height
    # (a cube floating flat); a body denser than water sinks to the bottom. Three 0.15 m cubes, 500, 800 and
    # 3000 kg/m^3, dropped side by side into 0.3 m of water. Tolerance: 0.1 of the height, i.e. 15 mm,
    # 0.6 particle diameters: the surface is found to a particle layer (95th percentile + r).
    world, fluid = _tank(depth=0.3)
    light = world.add_rigid(*box_mesh((0.15, 0.15, 0.15), (-0.18, -0.1, 0.45)), density=500.0)
    mid = world.add_rigid(*box_mesh((0.15, 0.15, 0.15), (0.0, 0.12, 0.45)), density=800.0)
    heavy = world.add_rigid(*box_mesh((0.15, 0.15, 0.15), (0.18, -0.1, 0.45)), density=3000.0)
    for _ in range(3 * FPS):
        world.step(1.0 / FPS)
    surface = np.percentile(fluid.positions[:, 2], 95) + R
    half = 0.075
    for body, density in ((light, 500.0), (mid, 800.0)):
        submerged = (surface - (body.center[2] - half)) / (2 * half)
        assert abs(submerged - density / 1000.0) < 0.1
    # On the floor, with at most one fluid layer (2r) trapped under its bottom particles (r above it).
    assert heavy.center[2] - half < 2 * R + 2 * R + R


def _thrown(solid: str, thrown: str, **material: float) -> tuple[World, float]:
    """No gravity, no colliders: a block of fluid (or grains) thrown at 1 m/s into grains or a rigid box;
    returns the world and the relative change of the total momentum sum m v over half a second.

    1 m/s moves a particle 1 cm per small step, less than a radius, so the particle sweep (sweep.py) never
    cuts a path: a cut path loses the rest of that step's motion, and with it momentum (a known limit of
    the sweep, for every kind of particle)."""
    world = World(R, gravity=(0, 0, 0), substeps=2, iterations=2)
    if solid == "rigid":
        world.add_rigid(*box_mesh((0.3, 0.3, 0.3), (0.6, 0, 0)), density=700.0)
    else:
        world.add_granular(fill_mesh_with_fluid(*box_mesh((0.3, 0.3, 0.1), (0.6, 0, 0)), R), density=1600.0)
    pts = fill_mesh_with_fluid(*box_mesh((0.25, 0.25, 0.25), (0, 0, 0)), R)
    if thrown == "fluid":
        world.add_fluid(pts, initial_velocity=(1.0, 0, 0.2), **{**material, "vorticity": 0.0})
    else:
        world.add_granular(pts, initial_velocity=(1.0, 0, 0.2), density=1000.0, friction=0.0)
    m = 1.0 / world.inverse_masses
    p0 = (m[:, None] * world.velocities).sum(axis=0)
    for _ in range(12):
        world.step(1.0 / FPS)
    p1 = (m[:, None] * world.velocities).sum(axis=0)
    return world, float(np.linalg.norm(p1 - p0) / np.linalg.norm(p0))


def test_fluid_and_grains_conserve_momentum() -> None:
    # Every fluid pair term (density, viscosity, cohesion, adhesion) is split by inverse masses, equal and
    # opposite, as are the grain contacts: the total momentum stays as it was to round-off, about 1e-12
    # relative per operation over ~100 small steps (vorticity confinement is not momentum-conserving: off).
    world, change = _thrown("grains", "fluid", viscosity=0.2, cohesion=0.3, adhesion=0.3)
    assert change < 1e-9
    assert world.velocities[world.bodies[0].indices, 0].mean() > 0.05  # the fluid did push the grains


def test_fluid_and_a_rigid_body_conserve_momentum_as_well_as_grains_do() -> None:
    # Fluid corrections on rigid particles move the whole body with their momentum (solver.rigid_impulse),
    # exactly. The particle contacts between fluid and body go through the contact-weighted shape matching,
    # whose effective masses lag by one small step (rigid_touch_count) while the number of touching
    # particles changes, and that is not exact. The same block thrown as frictionless grains shows what
    # that costs today (9.8 per cent of the momentum over the half second). Water goes through those
    # contacts too, but most of its push is the exact density term: it must lose clearly less, at most
    # 0.6 of what the grains lose (measured: 5.0 per cent, 0.51 of it).
    world, fluid_change = _thrown("rigid", "fluid", **FLUID_PRESETS["WATER"])
    _, grain_change = _thrown("rigid", "grains")
    assert fluid_change <= 0.6 * grain_change
    assert world.rigid_centers[0, 0] > 0.6 + 0.02  # the fluid did push the box


@pytest.mark.slow
def test_grains_sink_and_settle_in_water() -> None:
    world, _ = _tank(depth=0.15)
    grains = np.array([(x, y, 0.3) for x in (-0.1, 0.0, 0.1) for y in (-0.1, 0.0, 0.1)])
    sand = world.add_granular(grains, density=2600.0)
    for _ in range(3 * FPS):
        world.step(1.0 / FPS)
    # Denser than water: they end on the floor (centres within a layer of it), at rest.
    assert np.all(sand.positions[:, 2] < 3 * R)
    assert np.abs(sand.velocities).max() < 0.1


def test_emit_and_remove_keep_the_particle_count_and_restore_exactly() -> None:
    world = World(0.05)
    world.add_collider_plane()
    fluid = world.add_fluid(np.zeros((0, 3)), capacity=50, **FLUID_PRESETS["WATER"])
    assert world.particle_count == 50
    assert fluid.count == 0
    nozzle = np.array([(x, y, 1.0) for x in (-0.1, 0.0, 0.1) for y in (-0.1, 0.0, 0.1)])
    for _ in range(4):
        fluid.emit(nozzle, (0.0, 0.0, -2.0))
        world.step(1.0 / FPS)
    assert fluid.count == 36
    assert world.particle_count == 50
    # Free slots never move.
    free = fluid.indices[~fluid.active]
    assert np.all(world.positions[free] == world.positions[free][0])
    snap = world.state()
    world.step(1.0 / FPS)
    after = world.positions.copy()
    world.set_state(snap)
    world.step(1.0 / FPS)
    assert np.array_equal(world.positions, after)  # the activity and pair lists are in the snapshot
    fluid.remove(fluid.active & (fluid.positions[:, 0] > 0.0))
    assert 0 < fluid.count < 36
    with pytest.raises(SimulationInputError, match="larger capacity"):
        fluid.emit(np.zeros((60, 3)))
    with pytest.raises(SimulationInputError, match="capacity"):
        world.add_fluid(np.zeros((3, 3)), capacity=2)
    with pytest.raises(SimulationInputError, match="viscosity"):
        world.add_fluid(np.zeros((1, 3)), viscosity=-1.0)


def test_presets_order_viscosity_and_cohesion() -> None:
    p = FLUID_PRESETS
    assert p["HONEY"]["viscosity"] > p["OIL"]["viscosity"] > p["WATER"]["viscosity"]
    assert p["SLIME"]["cohesion"] > p["WATER"]["cohesion"]
    assert p["HONEY"]["density"] > p["WATER"]["density"] > p["OIL"]["density"]


@pytest.mark.slow
def test_water_in_a_mesh_tank_keeps_its_volume() -> None:
    # The same water in a tank built of mesh colliders (a floor slab and four walls, as a Blender user
    # would model it): their surface samples count in the density (fluid.Boundary), so the bottom layers
    # are not squeezed. Mean height D / 2 = 0.1 m within 3 per cent after 2 s, no particle outside.
    world = World(R, substeps=4, iterations=4)
    t = 0.05
    for size, center in (
        ((2 * HALF + 2 * t, 2 * HALF + 2 * t, t), (0, 0, -t / 2)),
        ((t, 2 * HALF, 0.4), (-HALF - t / 2, 0, 0.2)),
        ((t, 2 * HALF, 0.4), (HALF + t / 2, 0, 0.2)),
        ((2 * HALF + 2 * t, t, 0.4), (0, -HALF - t / 2, 0.2)),
        ((2 * HALF + 2 * t, t, 0.4), (0, HALF + t / 2, 0.2)),
    ):
        world.add_collider_mesh(*box_mesh(size, center))
    fluid = world.add_fluid(fill_mesh_with_fluid(*box_mesh((2 * HALF, 2 * HALF, 0.2), (0, 0, 0.1)), R))
    for _ in range(2 * FPS):
        world.step(1.0 / FPS)
    x = fluid.positions
    assert abs(x[:, 2].mean() - 0.1) < 0.003
    assert np.all(np.abs(x[:, :2]) < HALF)
    assert np.all(x[:, 2] > 0.0)


def test_a_stream_carries_a_cloth_along() -> None:
    # No gravity: a 0.25 m block of water moving at 1 m/s along x meets a free 0.3 m cloth (0.1 kg) hanging
    # across its path, its plane normal to the flow. The water pushes it (fluid-solid density and contacts)
    # and carries it: after half a second the cloth moves along x at least at half the speed everything
    # would share (total momentum / total mass), and at most twice the water's speed (the elastic limit
    # for a light body hit by a heavy one), and no water passed through it.
    world = World(R, gravity=(0, 0, 0), substeps=2, iterations=2)
    v, f = grid_mesh(0.3, 9, (0, 0, 0))
    sheet = world.add_cloth(v[:, [2, 0, 1]] + [0.3, 0.0, 0.0], f, mass=0.1)  # the XY grid turned to YZ
    water = world.add_fluid(
        fill_mesh_with_fluid(*box_mesh((0.25, 0.25, 0.25), (0, 0, 0)), R), initial_velocity=(1.0, 0, 0)
    )
    m = 1.0 / world.inverse_masses
    p0 = (m[:, None] * world.velocities).sum(axis=0)[0]
    for _ in range(12):
        world.step(1.0 / FPS)
    u = sheet.velocities[:, 0].mean()
    common = p0 / m.sum()  # the speed of everything moving together
    assert u > 0.5 * common
    assert u < 2.0 * 1.0
    assert water.positions[:, 0].max() < sheet.positions[:, 0].max() + R


@pytest.mark.slow
def test_floating_bodies_are_submerged_by_the_density_ratio() -> None:
    # Issue 25 item 4: Archimedes by submerged height, averaged from 1.5 to 2.5 s (the bodies bob by a
    # few mm). Cubes of 0.15 m at 700 (wood) and 800 kg/m^3 in 0.3 m of water, the surface measured away
    # from them. Measured: 0.69-0.72 and 0.79-0.82 (over 1e-9 m perturbations of the fill; the issue's
    # 0.82-0.89 for a Wood crate is not reproduced in the core). Bound: 0.05 of the height (7.5 mm, 0.3 r).
    world, fluid = _tank(depth=0.3)
    size, densities = 0.15, (700.0, 800.0)
    bodies = [
        world.add_rigid(*box_mesh((size,) * 3, (x, 0.0, 0.3 + size / 2 + 0.01)), density=d)
        for x, d in zip((-0.15, 0.15), densities, strict=True)
    ]
    samples = []
    for k in range(5 * FPS // 2):
        world.step(1.0 / FPS)
        if k >= 3 * FPS // 2 and k % 4 == 0:
            x = fluid.positions
            surface = np.percentile(x[np.abs(x[:, 1]) > 0.15, 2], 95) + R
            samples.append([(surface - (b.center[2] - size / 2)) / size for b in bodies])
    submerged = np.mean(samples, axis=0)
    assert np.all(np.abs(submerged - np.array(densities) / 1000.0) < 0.05), submerged


def _column_height(**kw: int) -> float:
    """Mean height of a 0.2 x 0.2 x 0.6 m column of water (192 particles) after 0.5 s, m."""
    world, fluid = _column(0.1, 0.6, **kw)
    for _ in range(FPS // 2):
        world.step(1.0 / FPS)
    return float(fluid.positions[:, 2].mean())


def test_liquid_density_passes_trade_the_column_height_for_speed() -> None:
    # liquid_density_passes caps the density passes per small step, which repeat while the mean density
    # error is above fluid.DENSITY_TOLERANCE (0.3 %). One pass holds a column like an equation of state
    # whose compression grows with depth (fluid.py, DENSITY_TOLERANCE): measured 1.3 % low at 0.6 m after
    # 0.5 s, against 0.85 % with the default 4. The default is 4 exactly (same bits); one pass sits lower
    # by at least a third of the measured 0.45 % of the half depth, and both within the 3 % of the tanks.
    default, four, one = (
        _column_height(),
        _column_height(liquid_density_passes=4),
        _column_height(liquid_density_passes=1),
    )
    assert default == four
    assert default - one > 0.0015 * 0.3
    for height in (default, one):
        assert abs(height - 0.3) < 0.03 * 0.3
    for bad in (0, 1.5, True):
        with pytest.raises(SimulationInputError, match="liquid_density_passes"):
            World(R, liquid_density_passes=bad)


def test_oil_over_water_stays_layered_at_its_volumes() -> None:
    # Issue 25 item 7, the stable half: Oil (900 kg/m^3) over Water (1000) in a 0.4 x 0.2 m tank, 0.2 m of
    # each (128 + 128 particles), the fill nudged by seeded 1e-3 r noise. A light layer over a heavy one is
    # in stable equilibrium (Rayleigh-Taylor: stable when the Atwood number of heavy over light is below
    # 0), so nothing may lift the heavy liquid or lower the light one: every Oil particle stays above every
    # Water particle and the mass centre does not rise (no energy from nowhere). Each liquid keeps its
    # volume within the 3 % of the tanks above (mean heights 0.1 and 0.3 m). Measured after 1 s over four
    # seeds: the layers 46 mm apart at their closest particles (one spacing 2r: 50 mm), the mean heights
    # 0.9 and 0.6 % low, the mass centre 1.4 mm lower, fastest particle 0.017-0.029 m/s. (The unstable
    # half, Oil under Water:
    # test_oil_under_water_rises_to_the_top.)
    half_x, half_y, depth = 0.2, 0.1, 0.2
    world = _walled(half_x, half_y)
    rng = np.random.default_rng(7)
    layers = []
    for name, bottom in (("WATER", 0.0), ("OIL", depth)):
        points = fill_mesh_with_fluid(
            *box_mesh((2 * half_x, 2 * half_y, depth), (0, 0, bottom + depth / 2)), R
        )
        layers.append(
            world.add_fluid(points + 1e-3 * R * rng.standard_normal(points.shape), **FLUID_PRESETS[name])
        )
    water, oil = layers

    def mass_centre() -> float:
        return float(0.9 * oil.positions[:, 2].mean() + water.positions[:, 2].mean()) / 1.9

    start = mass_centre()
    for _ in range(FPS):
        world.step(1.0 / FPS)
    assert oil.positions[:, 2].min() > water.positions[:, 2].max()
    assert mass_centre() <= start
    assert abs(water.positions[:, 2].mean() - depth / 2) < 0.03 * depth / 2
    assert abs(oil.positions[:, 2].mean() - 1.5 * depth) < 0.03 * 1.5 * depth


def _oil_under_water(tilt: float) -> tuple[World, Fluid, Fluid]:
    """A 0.4 x 0.2 x 0.4 m tank filled at r = 2.5 cm (default budget), the fill nudged by seeded 1e-3 r
    noise; Oil below the interface z = 0.2 m + ``tilt`` cos(pi (x + 0.2) / 0.4), Water above."""
    half_x, half_y, depth = 0.2, 0.1, 0.2
    world = _walled(half_x, half_y)
    points = fill_mesh_with_fluid(*box_mesh((2 * half_x, 2 * half_y, 2 * depth), (0, 0, depth)), R)
    points += 1e-3 * R * np.random.default_rng(7).standard_normal(points.shape)
    below = points[:, 2] < depth + tilt * np.cos(np.pi * (points[:, 0] + half_x) / (2 * half_x))
    oil = world.add_fluid(points[below], **FLUID_PRESETS["OIL"])
    water = world.add_fluid(points[~below], **FLUID_PRESETS["WATER"])
    return world, oil, water


def test_oil_under_water_rises_to_the_top() -> None:
    # Issue 25 item 7: Oil (900 kg/m^3) under Water (1000) overturns (Rayleigh-Taylor: heavy over light is
    # unstable), by the liquids' drift relative to the mixture (core/fluid_mix.py, Ren et al. 2014).
    # Reference (docs/physics.md, "Liquids of different densities"): with the interface tilted by +-0.1 m
    # the hydrostatic imbalance drives plumes at sqrt(A g L) ~ 0.3 m/s (A = 0.053, L = 0.2 m), so the
    # liquids trade their 0.17 m of mean height within about 1 s: Oil's mean height above Water's at 1 s
    # (measured: they cross at 0.71 s; at 1 s 0.261 against 0.136 m; before the drift both stayed put).
    # The mass centre only falls: every exchange lifts the light liquid and lowers the heavy one.
    world, oil, water = _oil_under_water(0.1)

    def mass_centre() -> float:
        return float(0.9 * oil.positions[:, 2].sum() + water.positions[:, 2].sum()) / (
            0.9 * len(oil.positions) + len(water.positions)
        )

    start = mass_centre()
    for _ in range(FPS):
        world.step(1.0 / FPS)
    assert oil.positions[:, 2].mean() > water.positions[:, 2].mean()
    assert mass_centre() < start
    # A flat interface (only the 1e-3 r noise) needs no seed to grow: each liquid ends at its own layer's
    # mean height (0.3 and 0.1 m) within the 3 % of the layered test above after 2 s (measured over three
    # seeds: layered by 1.5 s, 0.297 and 0.099 m; an exact solver's instability would need 4-5 s from
    # this noise, see the docs).
    world, oil, water = _oil_under_water(0.0)
    for _ in range(2 * FPS):
        world.step(1.0 / FPS)
    assert abs(oil.positions[:, 2].mean() - 0.3) < 0.03 * 0.3
    assert abs(water.positions[:, 2].mean() - 0.1) < 0.03 * 0.1


def test_unlike_liquids_resume_from_a_snapshot_bit_for_bit() -> None:
    # The drift towards each particle's next exchange (fluid_mix.PhaseDrift.progress) is state: a bake
    # resumed from a snapshot (or Blender re-simulating from a cached frame) must exchange the same
    # particles at the same small steps as the straight run.
    ref, _, _ = _oil_under_water(0.1)
    for _ in range(10):
        ref.step(1.0 / FPS)
    world, _, _ = _oil_under_water(0.1)
    for _ in range(6):
        world.step(1.0 / FPS)
    snap = world.state()
    assert snap.fluid_drift.max() > 0.0  # part-way to an exchange when the snapshot is taken
    fresh, _, _ = _oil_under_water(0.1)
    fresh.set_state(snap.to_arrays())
    for _ in range(4):
        fresh.step(1.0 / FPS)
    assert np.array_equal(fresh.positions, ref.positions)
    assert np.array_equal(fresh.velocities, ref.velocities)


def _collapse(passes: int, old: bool = False) -> tuple[World, Fluid]:
    """A 0.2 x 0.2 x 1 m column of water (640 particles) against the -x wall of a 1 m long channel, after
    it collapsed for 0.5 s at ``liquid_density_passes``."""
    world = World(R, liquid_density_passes=passes)
    world.add_collider_plane((0, 0, 0), (0, 0, 1), friction=0.0)
    for point, normal in (((-0.1, 0, 0), (1, 0, 0)), ((0.9, 0, 0), (-1, 0, 0))):
        world.add_collider_plane(point, normal, friction=0.0)
    for point, normal in (((0, -0.1, 0), (0, 1, 0)), ((0, 0.1, 0), (0, -1, 0))):
        world.add_collider_plane(point, normal, friction=0.0)
    v, f = box_mesh((0.2, 0.2, 1.0), (0, 0, 0.5))
    fluid = world.add_fluid(fill_mesh_with_fluid(v, f, R), viscosity=0.01, cohesion=0.0, vorticity=0.0)
    for _ in range(FPS // 2):
        world.step(1.0 / FPS)
    return world, fluid


def test_a_flowing_liquid_pays_one_density_pass_per_small_step() -> None:
    # Issue 25: the density passes after the first solve the liquid near rest only (fluid.REST_GH,
    # REST_SHARE), so a liquid in motion costs what one pass costs. A 1 m column collapsing for 0.5 s:
    # with passes over all the liquid while its mean density error was above 0.3 per cent it took 1.10
    # passes per small step (1.26 times the CPU of one pass; S8's deeper, larger collapse up to 1.9
    # times) and its mean height ended 1.0 mm higher. Now every small step of it runs exactly what
    # liquid_density_passes=1 runs (same bits), while a column at rest takes its passes (the test above).
    default, one = _collapse(4)[1].positions, _collapse(1)[1].positions
    assert np.array_equal(default, one)


def test_pair_blocks_are_a_stable_sort_by_kind() -> None:
    # PairBlocks.order partitions the pairs by kind (fluid-fluid, fluid-solid, fluid-sample) keeping their
    # order within each kind, and kept() counts the blocks of a filtered list: both as the plain NumPy
    # formulation (np.argsort(kind, kind="stable"), counts of a boolean mask) would.
    rng = np.random.default_rng(5)
    n_real, n = 40, 60
    is_fluid = np.zeros(n, dtype=bool)
    is_fluid[:25] = True
    i = rng.integers(0, 25, 500)
    j = rng.integers(0, n, 500)
    blocks, oi, oj = PairBlocks.order(i, j, is_fluid, n_real)
    kind = np.where(is_fluid[j], 0, np.where(j < n_real, 1, 2))
    order = np.argsort(kind, kind="stable")
    np.testing.assert_array_equal(oi, i[order])
    np.testing.assert_array_equal(oj, j[order])
    assert (blocks.ff, blocks.real) == (np.count_nonzero(kind == 0), np.count_nonzero(kind < 2))
    keep = rng.random(500) < 0.4
    kept = blocks.kept(np.flatnonzero(keep))
    assert (kept.ff, kept.real) == (
        np.count_nonzero(keep[: blocks.ff]),
        np.count_nonzero(keep[: blocks.real]),
    )
