# SPDX-License-Identifier: GPL-3.0-or-later
"""Force fields (core/fields.py): Blender's Force, Wind, Vortex, Turbulence and Drag on the particles.

Each physics test compares with an analytic reference (the equation in a comment) with a tolerance
from the step size h, then checks invariants.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.fields import turbulence, value_noise
from unified_particles.core.primitives import box_mesh, grid_mesh

R = 0.05
FPS = 24.0


def grain_world(points: list[tuple[float, float, float]], density: float = 1600.0) -> tuple[World, list]:
    """A weightless world with one single-grain object per point (each its own object)."""
    w = World(radius=R, gravity=(0.0, 0.0, 0.0), substeps=4, iterations=4)
    grains = [w.add_granular(np.array([p]), density=density) for p in points]
    return w, grains


def small_step(w: World) -> float:
    return 1.0 / FPS / (w.substeps * w.iterations)


def translation(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def test_uniform_force_accelerates_a_grain_as_f_over_m() -> None:
    # A PLANE-shaped Force field pushes along its Z axis, away from its XY plane, with
    # falloff_power 0 the same at every height: a = F / m, v(t) = a t, x(t) = x0 + a t^2 / 2.
    w, (g,) = grain_world([(0.0, 0.0, 1.0)])
    strength = 0.5
    w.add_force_field("FORCE", transform=np.eye(4), strength=strength, shape="PLANE")
    m = 1600.0 * (2.0 * R) ** 3
    a = strength / m
    frames = 24
    for _ in range(frames):
        w.step(1.0 / FPS)
    t = frames / FPS
    h = small_step(w)
    # Semi-implicit Euler is exact in v for a constant force and off by a t h / 2 in x.
    assert g.velocities[0] == pytest.approx([0.0, 0.0, a * t], abs=1e-9)
    assert g.positions[0, 2] == pytest.approx(1.0 + 0.5 * a * t**2, abs=a * t * h)
    assert np.abs(g.positions[0, :2]).max() < 1e-12


def test_falloff_follows_blenders_law_at_two_distances() -> None:
    # effect.cc falloff_func: factor = (1 + d - d_min)^-power (d_min = 0 unless used), 1 within
    # d_min when used, 0 beyond d_max when used. A POINT Force pushes radially: a = s f(d) / m.
    strength, power = 2.0, 2.0
    w, grains = grain_world([(1.0, 0.0, 0.0), (0.0, 3.0, 0.0), (0.0, 0.0, 6.0)])
    w.add_force_field(
        "FORCE",
        strength=strength,
        shape="POINT",
        falloff_power=power,
        use_max_distance=True,
        distance_max=5.0,
    )
    m = 1600.0 * (2.0 * R) ** 3
    dt = 1e-3  # one tiny frame: the grains hardly move, so d stays put
    w.step(dt)
    for g, d, axis in zip(grains[:2], (1.0, 3.0), (0, 1), strict=True):
        expected = strength * (1.0 + d) ** (-power) / m * dt
        assert g.velocities[0, axis] == pytest.approx(expected, rel=1e-6)
    assert np.all(grains[2].velocities == 0.0)  # beyond distance_max
    # With use_min_distance: full strength within d_min, (1 + d - d_min)^-power beyond it.
    w2, (near, far) = grain_world([(0.5, 0.0, 0.0), (3.0, 0.0, 0.0)])
    w2.add_force_field(
        "FORCE", strength=strength, falloff_power=power, use_min_distance=True, distance_min=1.0
    )
    w2.step(dt)
    assert near.velocities[0, 0] == pytest.approx(strength / m * dt, rel=1e-6)
    assert far.velocities[0, 0] == pytest.approx(strength * (1.0 + 3.0 - 1.0) ** -power / m * dt, rel=1e-6)


def test_quadratic_drag_setting_decays_velocity_exponentially() -> None:
    # Blender's code (effect.cc, PFIELD_DRAG): F = -(linear_drag |v| + quadratic_drag) v, each capped at
    # 2; so Blender's "Quadratic" alone is a force -c v: v(t) = v0 exp(-k t), k = c / m. Implicit steps
    # give v0 (1 + h k)^-n, whose relative error is about n (h k)^2 / 2 = t h k^2 / 2.
    w, (g,) = grain_world([(0.0, 0.0, 0.0)])
    m = 1600.0 * (2.0 * R) ** 3
    k = 1.0  # 1/s (c = 1.6 N s/m, under the cap of 2)
    w.add_force_field("DRAG", linear_drag=0.0, quadratic_drag=k * m)
    v0 = np.array([2.0, -1.0, 0.5])
    w.velocities[0] = v0
    frames = 24
    for _ in range(frames):
        w.step(1.0 / FPS)
    t = frames / FPS
    h = small_step(w)
    expected = v0 * np.exp(-k * t)
    assert g.velocities[0] == pytest.approx(expected, rel=t * h * k**2)
    # The direction never changes, the speed only falls.
    v = g.velocities[0]
    assert np.cross(v, v0) == pytest.approx(np.zeros(3), abs=1e-12)


def test_linear_drag_setting_slows_fast_grains_more_and_is_capped() -> None:
    # Blender's "Linear" multiplies |v|^2 (see above): F = -c2 |v| v, dv/dt = -(c2 / m) v^2
    # =>  v(t) = v0 / (1 + (c2 / m) v0 t). A setting above 2 acts as 2 (Blender's cap).
    m = 1600.0 * (2.0 * R) ** 3
    for setting, c in ((0.5 * m, 0.5 * m), (5.0, 2.0)):
        w, (g,) = grain_world([(0.0, 0.0, 0.0)])
        w.add_force_field("DRAG", linear_drag=setting, quadratic_drag=0.0)
        v0 = 4.0
        w.velocities[0] = (v0, 0.0, 0.0)
        for _ in range(24):
            w.step(1.0 / FPS)
        t, h = 1.0, small_step(w)
        expected = v0 / (1.0 + c / m * v0 * t)
        # Local error of the linearised implicit step ~ h^2 (c v / m)^2 v per step: at most t h (c v0/m)^2 v0.
        assert g.velocities[0, 0] == pytest.approx(expected, abs=t * h * (c / m * v0) ** 2 * v0)


def test_vortex_gives_tangential_motion() -> None:
    # POINT-shaped vortex (Blender's "old vortex"): F = normalize(z x r) * strength * |r| * falloff,
    # tangential to circles around the field's Z axis, counter-clockwise for strength > 0.
    w, (g,) = grain_world([(1.0, 0.0, 0.0)])
    w.add_force_field("VORTEX", strength=0.3, shape="POINT")
    m = 1600.0 * (2.0 * R) ** 3
    dt = 1e-3
    w.step(dt)
    vy = 0.3 * 1.0 / m * dt
    # Within the frame the grain moves by ~vy dt, turning the force by that angle: |v_x| <~ vy^2 dt.
    assert g.velocities[0] == pytest.approx([0.0, vy, 0.0], abs=1e-6 * vy)
    # The PLANE (new) vortex spins grains around its axis: angular momentum about Z grows, counter-clockwise.
    w2, _grains = grain_world([(1.0, 0.0, 0.2), (-0.5, 0.5, 0.0), (0.0, -0.8, 0.4)])
    w2.add_force_field("VORTEX", strength=1.0, transform=translation(0.0, 0.0, 0.0))
    for _ in range(12):
        w2.step(1.0 / FPS)
    x, v = w2.positions, w2.velocities
    lz = x[:, 0] * v[:, 1] - x[:, 1] * v[:, 0]
    assert np.all(lz > 0.0)
    # Tangential dominates radial motion for every grain.
    radial = np.abs(np.einsum("ij,ij->i", x[:, :2], v[:, :2])) / np.linalg.norm(x[:, :2], axis=1)
    assert np.all(np.abs(lz) / np.linalg.norm(x[:, :2], axis=1) > radial)


def flag_deflection(strength: float) -> float:
    """Mean downwind (+Y) displacement of a vertical flag pinned along one edge, averaged over the
    second half of 3 s of wind (m)."""
    v, f = grid_mesh(0.5, 11)  # in XY, Z = 0
    verts = np.stack([v[:, 0], np.zeros(len(v)), v[:, 1] + 1.0], axis=1)  # stand it up in XZ
    pinned = np.flatnonzero(verts[:, 0] <= verts[:, 0].min() + 1e-9)
    w = World(radius=0.01, substeps=4, iterations=4)
    flag = w.add_cloth(verts, f, mass=0.05, pinned=pinned)
    wind = np.eye(4)
    wind[:3, :3] = [[1, 0, 0], [0, 0, 1], [0, -1, 0]]  # columns are the axes: Z axis -> +Y
    w.add_force_field("WIND", transform=wind, strength=strength)
    shifts = []
    for frame in range(72):
        w.step(1.0 / FPS)
        if frame >= 36:
            shifts.append(float(np.mean(flag.vertex_positions[:, 1] - verts[:, 1])))
    assert np.all(np.isfinite(flag.vertex_positions))
    return float(np.mean(shifts))


def test_flag_in_wind_deflects_downwind_more_with_stronger_wind() -> None:
    # Blender's cloth wind (wind_factor 0): 0.02 N per m^2 per unit strength along the wind, so the
    # 0.5 m flag of 0.05 kg (0.2 kg/m^2) feels a = 0.1 S m/s^2 against g: it leans downwind by about
    # atan(0.1 S / g) (S = 40: 22 degrees, S = 160: 58). No wind: it hangs in its plane.
    calm = flag_deflection(0.0)
    breeze = flag_deflection(40.0)
    gale = flag_deflection(160.0)
    assert abs(calm) < 1e-9
    assert breeze > 0.03
    assert gale > breeze + 0.05
    assert gale < 0.25  # never past flying flat


def test_cloth_feels_blenders_force_per_area() -> None:
    # implicit_blender.cc, SIM_mass_spring_force_face_extern: a vertex gets 0.02 * (its third of the
    # triangles' area) * E, so a free, weightless cloth of area A and mass M in a uniform Wind of
    # strength S accelerates at a = 0.02 S A / M (here 0.02 * 50 * 0.25 / 0.5 = 0.5 m/s^2): v = a t.
    v, f = grid_mesh(0.5, 6)
    w = World(radius=0.01, gravity=(0.0, 0.0, 0.0), substeps=2, iterations=2)
    sheet = w.add_cloth(v, f, mass=0.5, air_viscosity=0.0)  # the field's push alone (no air drag)
    w.add_force_field("WIND", strength=50.0)  # along +Z, the same everywhere (PLANE shape, power 0)
    for _ in range(12):
        w.step(1.0 / FPS)
    a = 0.02 * 50.0 * 0.25 / 0.5
    assert sheet.velocities[:, 2] == pytest.approx(np.full(len(v), a * 0.5), rel=1e-9)


def test_wind_is_a_force_along_its_axis_with_flow_as_drag() -> None:
    # effect.cc PFIELD_WIND: F = strength * falloff * z_axis, minus flow * falloff * v (Flow): a grain of
    # mass m tends to S / flow. Implicit steps: v_n = (S / flow) (1 - (1 + h k)^-n), k = flow / m,
    # within t h k^2 (S / flow) of the exact (S / flow)(1 - exp(-k t)).
    density = 20.0
    w, (g,) = grain_world([(0.0, 0.0, 0.0)], density=density)
    strength, flow = 0.06, 0.02
    wind = np.eye(4)
    wind[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]  # Z axis -> +X
    w.add_force_field("WIND", transform=wind, strength=strength, flow=flow)
    m = density * (2.0 * R) ** 3
    speeds = []
    for _ in range(24):
        w.step(1.0 / FPS)
        speeds.append(g.velocities[0, 0])
    t, h, k = 1.0, small_step(w), flow / m
    terminal = strength / flow
    assert g.velocities[0, 0] == pytest.approx(terminal * (1.0 - np.exp(-k * t)), abs=t * h * k**2 * terminal)
    assert np.all(np.diff(speeds) > 0.0)
    assert max(speeds) < terminal
    assert np.abs(g.velocities[0, 1:]).max() < 1e-12


def test_rigid_body_gets_the_fields_force_as_a_whole() -> None:
    # Bullet applies an effector to a rigid body's centre: a = F / M for the whole body, no spin.
    w = World(radius=R, gravity=(0.0, 0.0, 0.0))
    v, f = box_mesh((0.4, 0.2, 0.2))
    body = w.add_rigid(v, f, density=500.0)
    w.add_force_field("FORCE", strength=3.0, shape="PLANE", transform=translation(0.0, 0.0, -2.0))
    for _ in range(12):
        w.step(1.0 / FPS)
    a = 3.0 / body.mass
    vel = body.velocities
    assert vel[:, 2] == pytest.approx(np.full(len(vel), a * 0.5), rel=1e-6)
    assert np.abs(vel[:, :2]).max() < 1e-9


def test_field_weight_zero_disables_and_scales() -> None:
    w, (a, b, c) = grain_world([(0.0, 0.0, 1.0), (1.0, 0.0, 1.0), (2.0, 0.0, 1.0)])
    w.add_force_field("FORCE", strength=1.0, shape="PLANE")
    w.set_field_weight(b, 0.0)
    w.set_field_weight(c, 2.0)
    assert w.field_weight(a) == 1.0
    assert w.field_weight(b) == 0.0
    for _ in range(6):
        w.step(1.0 / FPS)
    assert np.all(b.velocities == 0.0)
    assert np.all(b.positions == [[1.0, 0.0, 1.0]])
    assert a.velocities[0, 2] > 0.0
    assert c.velocities[0, 2] == pytest.approx(2.0 * a.velocities[0, 2], rel=1e-12)
    other = World(radius=R).add_granular(np.zeros((1, 3)))
    with pytest.raises(SimulationInputError):
        w.set_field_weight(other, 1.0)
    with pytest.raises(SimulationInputError):
        w.set_field_weight(a, -1.0)


def test_per_kind_weights_and_sources_as_blenders_effector_weights() -> None:
    # effect.cc effector_falloff: the falloff is multiplied by weights->weight[0] (All) times
    # weights->weight[field type]; with an effector collection only its fields act (effectors_new).
    w, (a, b, c) = grain_world([(0.0, 0.0, 1.0), (1.0, 0.0, 1.0), (2.0, 0.0, 1.0)])
    w.add_force_field("FORCE", strength=1.0, shape="PLANE", name="push")
    w.add_force_field("WIND", strength=1.0, name="gust")  # also along +Z
    w.set_field_weight(b, 0.0, kind="WIND")  # the jelly of issue 23: Wind weight 0
    w.set_field_weight(b, 3.0)  # All: scales the Force only, since Wind is 0
    w.set_field_sources(c, ["gust"])  # c's collection holds the wind only
    assert w.field_weight(b) == 3.0
    for _ in range(6):
        w.step(1.0 / FPS)
    m = 1600.0 * (2.0 * R) ** 3
    t = 6 / FPS
    assert a.velocities[0, 2] == pytest.approx(2.0 / m * t, rel=1e-9)  # Force + Wind, 1 N each
    assert b.velocities[0, 2] == pytest.approx(3.0 / m * t, rel=1e-9)  # 3 x Force, no Wind
    assert c.velocities[0, 2] == pytest.approx(1.0 / m * t, rel=1e-9)  # Wind only
    w.set_field_sources(c, None)
    with pytest.raises(SimulationInputError):
        w.set_field_weight(a, 1.0, kind="MAGNET")


def test_turbulence_is_deterministic_bounded_and_seeded() -> None:
    def run(seed: int) -> tuple[np.ndarray, World]:
        rng = np.random.default_rng(3)
        w = World(radius=R, gravity=(0.0, 0.0, 0.0))
        w.add_granular(rng.uniform(-1.0, 1.0, size=(60, 3)) * 2.0)
        w.add_force_field("TURBULENCE", strength=0.5, size=0.7, seed=seed)
        w.add_force_field("WIND", strength=2.0, noise=1.5, seed=seed, shape="POINT")
        for _ in range(6):
            w.step(1.0 / FPS)
        return w.positions.copy(), w

    first, w = run(7)
    again, _ = run(7)
    other, _ = run(8)
    assert np.array_equal(first, again)  # bit-identical run to run
    assert not np.array_equal(first, other)
    # Resuming from a snapshot is bit-identical too (the noise depends on the world's time).
    snap = w.state()
    w.step(1.0 / FPS)
    after = w.positions.copy()
    w.set_state(snap)
    w.step(1.0 / FPS)
    assert np.array_equal(after, w.positions)
    # Blender's turbulence is in [0, 1] (the force then in [-strength, strength]) and averages 1/2;
    # its three components are independent noises.
    p = np.ascontiguousarray(np.random.default_rng(0).uniform(-20.0, 20.0, size=(3, 20000)))
    components = turbulence(p, 5)
    for t in components:
        assert t.min() >= 0.0
        assert t.max() <= 1.0
        assert abs(t.mean() - 0.5) < 0.02
    assert abs(np.corrcoef(components[0], components[1])[0, 1]) < 0.1
    # Value noise: in [0, 1), continuous (a small step changes it a little), the lattice values hashed.
    (n,) = value_noise(p, [5])
    assert n.min() >= 0.0
    assert n.max() < 1.0
    (n2,) = value_noise(p + 1e-6, [5])
    assert np.abs(n2 - n).max() < 1e-5
    lattice = np.ascontiguousarray(np.unique(np.floor(p), axis=1))  # distinct lattice points
    (at_lattice,) = value_noise(lattice, [5])
    assert np.array_equal(at_lattice, value_noise(lattice, [5])[0])
    assert np.unique(at_lattice).size == at_lattice.size  # no two lattice points hash alike


def test_a_moved_field_acts_from_its_new_pose() -> None:
    # set_transform moves the field between steps: a POINT Force pushes away from its origin.
    w, (g,) = grain_world([(0.0, 0.0, 0.0)])
    field = w.add_force_field("FORCE", strength=1.0, transform=translation(-1.0, 0.0, 0.0))
    w.step(1e-3)
    assert g.velocities[0, 0] > 0.0
    field.set_transform(translation(1.0, 0.0, 0.0))
    field.configure(strength=3.0)
    w.velocities[...] = 0.0
    w.step(1e-3)
    assert g.velocities[0, 0] < 0.0
    w.remove_force_field(field)
    assert w.force_fields == []


def test_bad_field_input_raises() -> None:
    w = World(radius=R)
    with pytest.raises(SimulationInputError, match="kind"):
        w.add_force_field("MAGNET")
    with pytest.raises(SimulationInputError, match="unknown force field setting"):
        w.add_force_field("WIND", speed=3.0)
    with pytest.raises(SimulationInputError, match="falloff_power"):
        w.add_force_field("FORCE", falloff_power=-1.0)
    with pytest.raises(SimulationInputError, match="transform"):
        w.add_force_field("FORCE", transform=np.zeros((4, 4)))
    with pytest.raises(SimulationInputError, match="strength"):
        w.add_force_field("FORCE", strength=float("nan"))


def test_a_field_pushes_poured_liquid_by_its_live_mass() -> None:
    # Issue 25 item 9: fields act on liquids as on grains, the liquid one object of the mass it has now.
    # An inflow reserves slots for all it will pour (Fluid.emit); those free slots weigh nothing. Four
    # live particles of a 40-slot emitter, 1 m apart (no neighbours within the kernel: no pressure, no
    # viscosity), in a PLANE Force field: each gets a = F / (4 m), v = a t (semi-implicit Euler is exact in
    # v for a constant force). Before, the 36 free slots counted: a ten times weaker push.
    w = World(radius=R, gravity=(0.0, 0.0, 0.0), substeps=4, iterations=4)
    fluid = w.add_fluid(np.zeros((0, 3)), capacity=40)
    fluid.emit(np.array([(0.0, 0.0, 1.0), (1.0, 0.0, 1.0), (0.0, 1.0, 1.0), (1.0, 1.0, 1.0)]))
    strength = 0.5
    w.add_force_field("FORCE", transform=np.eye(4), strength=strength, shape="PLANE")
    m = 1000.0 * (2.0 * R) ** 3
    frames = 12
    for _ in range(frames):
        w.step(1.0 / FPS)
    live = fluid.velocities[fluid.active]
    assert live[:, 2] == pytest.approx(np.full(4, strength / (4 * m) * frames / FPS), rel=1e-9)
    assert np.all(fluid.velocities[~fluid.active] == 0.0)  # free slots stay parked
