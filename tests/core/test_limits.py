"""Fill limits agree with the radius their messages suggest (memory, sampling grid, a count limit)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World, geometry
from unified_particles.core import world as world_module
from unified_particles.core.primitives import box_mesh, uv_sphere_mesh


def suggested(message: str) -> float:
    found = re.search(r"radius of at least ([\d.e+-]+) m", message)
    assert found, message
    return float(found.group(1))


def test_a_1m_cube_at_1mm_is_limited_by_the_grid_and_the_suggestion_is_the_smallest_that_fits() -> None:
    v, f = box_mesh((1.0, 1.0, 1.0))
    with pytest.raises(SimulationInputError, match="candidate particles") as info:
        World(radius=0.001).check_fill(v, f, "'Cube' as a rigid body")
    radius = suggested(str(info.value))
    assert radius == geometry.smallest_fill_radius(v, f) == 0.003449
    measure = geometry.fill_measure(v, f)
    for r in (radius, float(np.float32(radius))):  # as typed, and as a Blender property stores it
        assert measure.grid_nodes(2.0 * r) <= geometry.MAX_SAMPLE_GRID_NODES
    assert measure.grid_nodes(2.0 * 0.003448) > geometry.MAX_SAMPLE_GRID_NODES  # 4 digits, rounded up
    World(radius=radius).check_fill(v, f)


@pytest.mark.slow
@pytest.mark.parametrize("mesh", ["box", "sphere", "open"])
def test_the_suggested_radius_builds(monkeypatch: pytest.MonkeyPatch, mesh: str) -> None:
    monkeypatch.setattr(geometry, "MAX_SAMPLE_GRID_NODES", 4000)
    if mesh == "box":
        v, f = box_mesh((1.0, 0.5, 0.3))
    else:
        v, f = uv_sphere_mesh(0.5)
        if mesh == "open":
            f = f[: len(f) - 8]  # a hole: the estimate is the grid itself
    w = World(radius=0.005)
    with pytest.raises(SimulationInputError, match="candidate particles") as info:
        w.add_rigid(v, f, name="Thing")
    assert "'Thing' as a rigid body" in str(info.value)
    assert w.particle_count == 0
    radius = suggested(str(info.value))
    body = World(radius=radius).add_rigid(v, f)
    assert len(body.indices) >= 1


def test_memory_and_count_limits_suggest_a_radius_that_keeps_both(monkeypatch: pytest.MonkeyPatch) -> None:
    v, f = uv_sphere_mesh(1.0)
    limit = 3000 * world_module.BYTES_PER_PARTICLE
    w = World(radius=0.01, memory_limit=limit)
    with pytest.raises(SimulationInputError, match="memory limit") as info:
        w.check_fill(v, f, "'Ball' as grains", max_count=1000, unit="grains")
    message = str(info.value)
    assert "would hold about" in message
    radius = suggested(message)
    count = geometry.estimate_interior_count(v, f, 2.0 * radius)
    assert count <= 1000
    World(radius=radius, memory_limit=limit).check_fill(v, f, max_count=1000)
    grains = geometry.fill_mesh_with_grains(v, f, radius)
    assert len(grains) <= 1.1 * 1000


def test_estimate_and_measure_agree() -> None:
    v, f = box_mesh((2.0, 1.0, 0.5))
    measure = geometry.fill_measure(v, f)
    for spacing in (0.5, 0.1, 0.03):
        assert geometry.estimate_interior_count(v, f, spacing) == measure.count(spacing)
        assert measure.grid_nodes(spacing) >= measure.count(spacing)
    samples = geometry.sample_interior(v, f, 0.1)
    assert len(samples.points) == geometry.estimate_interior_count(v, f, 0.1)
