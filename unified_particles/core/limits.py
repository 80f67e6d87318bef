# SPDX-License-Identifier: GPL-3.0-or-later
"""The size limits of a world: memory per particle and the fill's sampling grid.

:class:`ParticleBudget` holds a world's particle radius and memory limit and refuses a body that would
break a limit, with a message that names the smallest particle radius that keeps every limit
(``World.check_capacity`` / ``World.check_fill``, and the builder before each ``add_*``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from numpy.typing import ArrayLike

from . import geometry
from .errors import SimulationInputError

# Rough peak bytes per particle during a step (state, model, candidate pairs and temporaries).
BYTES_PER_PARTICLE = 1200
# Physical memory assumed where the OS does not tell (bytes).
FALLBACK_PHYSICAL_MEMORY = 8e9
# Default memory_limit as a fraction of physical memory (SolverSettings.memory_limit = None).
DEFAULT_MEMORY_FRACTION = 0.5


def physical_memory() -> float:
    """The machine's physical memory, bytes (``FALLBACK_PHYSICAL_MEMORY`` where the OS does not tell)."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return FALLBACK_PHYSICAL_MEMORY


@dataclass
class ParticleBudget:
    """A world's particle radius (m) and memory limit (bytes, ``BYTES_PER_PARTICLE`` per particle)."""

    radius: float
    memory_limit: float

    def check_capacity(self, particle_count: int, new_particles: int, what: str = "this") -> None:
        """Raise SimulationInputError if ``new_particles`` more than ``particle_count`` would not fit in
        the memory limit; the message names the memory needed and the smallest radius that fits."""
        total = particle_count + int(new_particles)
        need = total * BYTES_PER_PARTICLE
        if need > self.memory_limit:
            allowed = max(self.memory_limit / BYTES_PER_PARTICLE - particle_count, 1.0)
            suggested = self.radius * (max(new_particles, 1) / allowed) ** (1.0 / 3.0)
            raise SimulationInputError(
                f"{what} would make {total:,} particles (about {need / 1e9:.1f} GB while stepping), "
                f"more than the memory limit of {self.memory_limit / 1e9:.1f} GB; "
                f"use a particle radius of at least {suggested:.4g} m (now {self.radius:.4g} m) "
                "or fewer/smaller objects"
            )

    def check_fill(
        self,
        particle_count: int,
        vertices: ArrayLike,
        faces: ArrayLike,
        what: str = "this",
        max_count: float | None = None,
        unit: str = "particles",
        *,
        radius: float | None = None,
        rigid: bool = False,
    ) -> None:
        """Raise SimulationInputError if filling this mesh next to ``particle_count`` particles breaks the
        memory limit, the sampling grid (``geometry.MAX_SAMPLE_GRID_NODES``) or ``max_count``; the
        message names every limit broken and the smallest radius that keeps all of them
        (``geometry.smallest_fill_radius``, with the estimate the fill itself uses). ``radius``: the
        body's own particle radius, metres (None: the world's)."""
        now = self.radius if radius is None else float(radius)
        spacing = 2.0 * now
        measure = geometry.fill_measure(vertices, faces)
        # A rigid body's fill (geometry.sample_rigid) has its own grid and a surface layer.
        count = measure.rigid_count(spacing) if rigid else measure.count(spacing)
        nodes = measure.rigid_grid_nodes(spacing) if rigid else measure.grid_nodes(spacing)
        total = particle_count + count
        need = total * BYTES_PER_PARTICLE
        allowed = max(self.memory_limit / BYTES_PER_PARTICLE - particle_count, 1.0)
        reasons = []
        if need > self.memory_limit:
            reasons.append(
                f"would make {total:,} particles (about {need / 1e9:.1f} GB while stepping), "
                f"more than the memory limit of {self.memory_limit / 1e9:.1f} GB"
            )
        if max_count is not None and count > max_count:
            reasons.append(f"would hold about {count:,} {unit} (at most {int(max_count):,})")
        if nodes > geometry.MAX_SAMPLE_GRID_NODES:
            limit_nodes = geometry.MAX_SAMPLE_GRID_NODES
            reasons.append(f"needs a grid of {nodes:,} candidate particles to fill (limit {limit_nodes:,})")
        if not reasons:
            return
        limit = allowed if max_count is None else min(allowed, float(max_count))
        suggested = geometry.smallest_fill_radius(measure, max_count=limit, rigid=rigid)
        raise SimulationInputError(
            f"{what} {' and '.join(reasons)}; use a particle radius of at least {suggested:.4g} m "
            f"(now {now:.4g} m) or fewer/smaller objects"
        )
