"""Every bad input raises SimulationInputError with an actionable message."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.primitives import box_mesh, grid_mesh

BOX = box_mesh((0.5, 0.5, 0.5))
NAN = float("nan")


def test_is_a_value_error() -> None:
    assert issubclass(SimulationInputError, ValueError)


@pytest.mark.parametrize("radius", [0.0, -1.0, NAN, float("inf"), "big"])
def test_bad_radius(radius: object) -> None:
    with pytest.raises(SimulationInputError, match="radius"):
        World(radius=radius)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"gravity": (0, NAN, 0)},
        {"gravity": (0, 0)},
        {"substeps": 0},
        {"iterations": 1.5},
        {"relaxation": 3.0},
        {"restitution": 1.5},
        {"damping": -1.0},
        {"max_speed": 0.0},
        {"collision_margin": NAN},
        {"unknown_setting": 1},
    ],
)
def test_bad_world_settings(kwargs: dict[str, object]) -> None:
    with pytest.raises(SimulationInputError):
        World(radius=0.1, **kwargs)  # type: ignore[arg-type]


def test_unknown_setting_lists_known_ones() -> None:
    with pytest.raises(SimulationInputError, match="static_friction_scale"):
        World(radius=0.1, stiffness=1.0)


def test_nan_and_shape_errors_in_bodies() -> None:
    w = World(radius=0.1)
    v, f = BOX
    bad = v.copy()
    bad[0, 0] = NAN
    with pytest.raises(SimulationInputError):
        w.add_rigid(bad, f)
    with pytest.raises(SimulationInputError):
        w.add_rigid(v, f + 100)  # out-of-range indices
    with pytest.raises(SimulationInputError):
        w.add_granular(np.zeros((0, 3)))
    with pytest.raises(SimulationInputError):
        w.add_granular([[0.0, float("inf"), 0.0]])
    with pytest.raises(SimulationInputError):
        w.add_granular(np.zeros((4, 2)))
    with pytest.raises(SimulationInputError):
        w.add_cloth(*grid_mesh(1.0, 3), mass=-1.0)
    with pytest.raises(SimulationInputError):
        w.add_cloth(*grid_mesh(1.0, 3), pinned=[100])
    with pytest.raises(SimulationInputError):
        w.add_granular([[0.0, 0.0, 0.0]], cohesion=2.0)
    with pytest.raises(SimulationInputError):
        w.add_rigid(v, f, density=0.0)
    with pytest.raises(SimulationInputError):
        w.add_rigid(v, f, friction=NAN)
    with pytest.raises(SimulationInputError):
        w.add_collider_plane(normal=(0, 0, 0))
    with pytest.raises(SimulationInputError):
        w.add_collider_mesh(v, f, transform=np.zeros((4, 4)))
    assert w.particle_count == 0, "nothing half-added"


def test_flat_mesh_as_rigid_says_use_cloth() -> None:
    w = World(radius=0.05)
    with pytest.raises(SimulationInputError, match="cloth"):
        w.add_rigid(*grid_mesh(1.0, 5))


def test_too_many_particles_refused_before_allocating() -> None:
    w = World(radius=1e-4)  # a 1 m cube would be 1.25e11 particles
    with pytest.raises(SimulationInputError, match="radius of at least") as err:
        w.add_rigid(*box_mesh((1.0, 1.0, 1.0)))
    assert "GB" in str(err.value)
    small = World(radius=0.05, memory_limit=1e6)
    with pytest.raises(SimulationInputError, match="particles"):
        small.add_granular(np.random.default_rng(0).random((5000, 3)))


def test_bad_step_and_transform() -> None:
    w = World(radius=0.1)
    for dt in (0.0, -1.0, NAN):
        with pytest.raises(SimulationInputError):
            w.step(dt)
    col = w.add_collider_mesh(*BOX)
    with pytest.raises(SimulationInputError):
        col.set_transform(np.full((4, 4), NAN))
    with pytest.raises(SimulationInputError):
        col.set_transform(np.eye(3))
