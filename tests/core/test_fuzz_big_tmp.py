"""Property-based fuzzing of the core (issue 6): random meshes, points and settings either simulate
with finite numbers or raise ``SimulationInputError`` (a blow-up is its subclass
``SimulationDivergedError``); nothing else - no IndexError, no MemoryError, no NaN left in the state."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from unified_particles.core import SimulationDivergedError, SimulationInputError, World
from unified_particles.core.primitives import box_mesh, grid_mesh

# Refuse worlds beyond ~2,000 particles quickly instead of simulating them (keeps examples fast).
MEMORY_LIMIT = 2.5e6
FUZZ = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf, 1e7, -1e9, 0.0, 1e-12])
COORDINATE = st.one_of(st.floats(-1.5, 1.5, allow_nan=False), SPECIAL)


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` nine times in ten, else ``bad`` (so most examples get past the input checks)."""
    return st.integers(0, 9).flatmap(lambda k: bad if k == 0 else good)


@st.composite
def soups(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Random triangle soups: any vertex count, indices sometimes out of range, special coordinates."""
    n = draw(st.integers(0, 14))
    coordinate = COORDINATE if draw(st.booleans()) else st.floats(-1.5, 1.5, allow_nan=False)
    vertices = np.array(draw(st.lists(st.tuples(coordinate, coordinate, coordinate), min_size=n, max_size=n)))
    index = mostly(st.integers(0, max(n - 1, 0)), st.integers(-1, n))
    faces = np.array(draw(st.lists(st.tuples(index, index, index), max_size=20)), dtype=np.int64)
    return vertices.reshape(n, 3), faces.reshape(-1, 3)


@st.composite
def damaged_boxes(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Boxes as users have them: any size and pose, jittered, with holes, slivers and repeated faces."""
    size = np.array(draw(st.tuples(*[st.floats(0.02, 1.5)] * 3)))
    vertices, faces = box_mesh(size, draw(st.tuples(*[st.floats(-1.0, 2.0)] * 3)))
    angle = draw(st.floats(-np.pi, np.pi))
    c, s = np.cos(angle), np.sin(angle)
    vertices = vertices @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]).T
    jitter = draw(st.floats(0.0, 0.3))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    vertices = vertices + jitter * rng.standard_normal(vertices.shape) * size.min()
    keep = rng.random(len(faces)) > draw(st.floats(0.0, 0.6))  # holes: an open mesh
    faces = faces[keep]
    extra = draw(st.lists(st.tuples(*[st.integers(0, 7)] * 3), max_size=4))  # slivers, repeats
    faces = np.concatenate([faces, np.array(extra, dtype=np.int64).reshape(-1, 3)])
    if draw(st.integers(0, 7)) == 0:
        vertices[draw(st.integers(0, 7)), draw(st.integers(0, 2))] = draw(SPECIAL)
    return vertices, faces


def meshes() -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    return st.one_of(soups(), damaged_boxes(), damaged_boxes())


SETTINGS = st.fixed_dictionaries(
    {
        "radius": mostly(st.floats(0.03, 0.6), st.sampled_from([0.0, -0.1, np.nan, np.inf])),
        "substeps": mostly(st.integers(1, 3), st.just(0)),
        "iterations": st.integers(1, 3),
    },
    optional={
        "relaxation": st.floats(0.05, 2.1, allow_nan=False),
        "restitution": st.floats(0.0, 1.05, allow_nan=False),
        "damping": st.floats(-0.5, 50.0, allow_nan=False),
        "max_speed": st.floats(0.0, 1e5, allow_nan=False),
        "sleep_threshold": st.floats(0.0, 5.0, allow_nan=False),
        "shock_propagation": st.floats(0.0, 20.0, allow_nan=False),
        "stabilization_iterations": st.integers(0, 3),
        "max_mass_ratio": st.floats(0.9, 1e4, allow_nan=False),
        "static_friction_scale": st.floats(0.0, 3.0, allow_nan=False),
        "collision_margin": st.floats(0.0, 0.5, allow_nan=False),
    },
)
MATERIAL = st.fixed_dictionaries(
    {},
    optional={
        "friction": mostly(st.floats(0.0, 2.0), st.floats(-1.0, -0.01)),
        "density": mostly(st.floats(1.0, 1e5), st.sampled_from([0.0, -10.0, np.nan])),
    },
)


def simulate(world: World, frames: int = 2) -> None:
    """Step and check that the state is finite after every frame that did not raise."""
    for _ in range(frames):
        world.step(1 / 24)
        assert np.all(np.isfinite(world.positions))
        assert np.all(np.isfinite(world.velocities))


def check(build: Any) -> None:
    """Run ``build(holder)`` (creates a world in ``holder``, adds bodies, steps).

    Any outcome but finite numbers or SimulationInputError is a failure; after a blow-up
    (SimulationDivergedError) the world must have kept a finite state and still step.
    """
    holder: list[World] = []
    message = "ok"
    try:
        build(holder)
    except SimulationInputError as exc:
        message = str(exc)
        if isinstance(exc, SimulationDivergedError):
            event("diverged")
            world = holder[0]
            assert np.all(np.isfinite(world.positions))
            assert np.all(np.isfinite(world.velocities))
        else:
            event("refused")
    else:
        event("simulated")
    assert message, "an empty message does not help the user"


@FUZZ
@given(
    mesh=meshes(),
    role=st.sampled_from(["rigid", "cloth", "granular", "collider"]),
    world=SETTINGS,
    material=MATERIAL,
)
def test_random_meshes_simulate_finitely_or_raise_simulation_input_error(
    mesh: tuple[np.ndarray, np.ndarray], role: str, world: dict[str, Any], material: dict[str, Any]
) -> None:
    vertices, faces = mesh

    def build(holder: list[World]) -> None:
        w = World(memory_limit=MEMORY_LIMIT, **world)
        holder.append(w)
        w.add_collider_plane(point=(0.0, 0.0, -2.0))
        friction = material.get("friction", 0.5)
        if role == "rigid":
            w.add_rigid(vertices, faces, density=material.get("density", 1000.0), friction=friction)
        elif role == "cloth":
            w.add_cloth(vertices, faces, friction=friction, pinned=faces[:1, 0] if len(faces) else None)
        elif role == "granular":
            w.add_granular(vertices, density=material.get("density", 1600.0), friction=friction)
        else:
            w.add_collider_mesh(vertices, faces, friction=friction)
            w.add_granular(np.array([[0.0, 0.0, 2.0]]))
        simulate(w)

    check(build)


@FUZZ
@given(world=SETTINGS, material=MATERIAL, drop=st.floats(-0.5, 3.0), tilt=st.floats(-3.2, 3.2))
def test_random_settings_on_a_mixed_scene_simulate_finitely_or_raise(
    world: dict[str, Any], material: dict[str, Any], drop: float, tilt: float
) -> None:
    def build(holder: list[World]) -> None:
        w = World(memory_limit=MEMORY_LIMIT, **world)
        holder.append(w)
        w.add_collider_plane(normal=(np.sin(tilt), 0.0, np.cos(tilt)))
        v, f = box_mesh((0.7, 0.5, 0.4), (0.0, 0.0, drop))
        w.add_rigid(v, f, **material)
        gv, gf = grid_mesh(1.2, 6, (0.1, 0.0, drop + 0.5))
        w.add_cloth(gv, gf, friction=material.get("friction", 0.5), self_collision=True)
        w.add_granular(np.array([[0.0, 0.0, drop + 1.0], [0.05, 0.0, drop + 1.2]]), cohesion=0.5)
        cv, cf = box_mesh((1.0, 1.0, 0.2), (2.0, 0.0, 0.0))
        collider = w.add_collider_mesh(cv, cf)
        simulate(w, 1)
        moved = np.eye(4)
        moved[:3, 3] = (-1.5, 0.0, drop)  # an animated collider jumps into the objects
        collider.set_transform(moved)
        simulate(w, 2)

    check(build)


@FUZZ
@given(
    scale=st.floats(1e-4, 1e5),
    radius=st.floats(1e-4, 10.0),
    shape=st.sampled_from(["box", "sheet", "points"]),
)
def test_any_size_against_any_radius_fits_or_is_refused_quickly(
    scale: float, radius: float, shape: str
) -> None:
    """Particle counts from a tiny object to a huge one: refused by the estimate, never allocated."""

    def build(holder: list[World]) -> None:
        w = World(radius=radius, memory_limit=MEMORY_LIMIT)
        holder.append(w)
        if shape == "box":
            v, f = box_mesh((scale, scale, scale))
            w.add_rigid(v, f)
        elif shape == "sheet":
            v, f = grid_mesh(scale, 8)
            w.add_cloth(v, f)
        else:
            w.add_granular(np.random.default_rng(0).random((50, 3)) * scale)
        simulate(w, 1)

    check(build)
