# SPDX-License-Identifier: GPL-3.0-or-later
"""Cost before work: how many particles a scene makes, the memory they take and the time per frame.

Make and Convert report it (issue 23, item 7), so a file that would become 200,000 particles at seconds
per frame says so before the first frame, with a particle radius that would be fast enough.

The time is a model, t = machine x (overhead + sum over bodies of particles x cost of the kind) x budget,
with the cost per particle of each kind measured by ``make bench`` (docs/performance.md, 2-core EPYC,
4 substeps x 4 iterations) and ``machine`` this computer's speed relative to that one: a tiny timing
(one frame of 1,728 grains, ~0.1 s) run once per Blender session, the first time an estimate is made.
Expect it within a factor of two: contacts, sleeping and colliders change the real figure.

Imports ``mesh_io``, ``rna``, ``settings_ui`` and the core.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import bpy
import numpy as np

from ..core import SimulationInputError, World
from ..core.geometry import estimate_interior_count, fill_measure
from ..core.limits import BYTES_PER_PARTICLE
from ..core.sizes import rigid_radius
from . import mesh_io, sizes
from .rna import object_settings, scene_settings
from .settings_ui import world_keywords

# Solver time per particle and frame at 4 substeps x 4 iterations, microseconds, on the benchmark machine.
US_PER_PARTICLE = {
    "RIGID": 18.0,  # issue 23's domino file: 199,000 particles at 3.6 s per frame (S2's loose pile: 7.5)
    "CLOTH": 7.1,  # S1: 4,225 vertices, 30.1 ms
    "SOFT": 300.0,  # a 4,096-particle jelly block: 1.29 s a frame (rigid: 111 ms), on a shared CPU
    "GRANULAR": 11.0,  # S4: 100k grains, 536 ms, then about doubled by the grain support pass (README)
    "FLUID": 112.0,  # S7: 10k particles, 1,125 ms
    "INFLOW": 112.0,
}
# Per frame whatever the size (NumPy call overhead, reading the scene), ms, and per simulated object.
OVERHEAD_MS = 5.0
OVERHEAD_PER_OBJECT_MS = 0.5
# The budget the figures above were measured at (substeps x iterations).
REFERENCE_BUDGET = 16
# The calibration scene (12^3 grains on a plane, one frame) took this long on the benchmark machine, ms.
REFERENCE_CALIBRATION_MS = 66.0
# Bytes one particle takes in one cached frame (positions and velocities, float64).
CACHE_BYTES_PER_PARTICLE = 48
# Above this per frame, the report suggests a faster setting.
SLOW_FRAME_MS = 1000.0
# ... aiming for this.
TARGET_FRAME_MS = 250.0
# Re-estimates of a suggested radius (each counts every object's particles again, O(faces)).
SUGGESTION_REFINEMENTS = 4
# Roles filled with particles on a grid of spacing 2r (their count scales as 1 / r^3).
VOLUME_ROLES = ("RIGID", "SOFT", "GRANULAR", "FLUID")

_machine_factor: float | None = None


def machine_factor() -> float:
    """This computer's solver time relative to the benchmark machine's (1: as fast), measured once."""
    global _machine_factor
    if _machine_factor is None:
        side = np.arange(12) * 0.1
        grains = np.stack(np.meshgrid(side, side, side, indexing="ij"), -1).reshape(-1, 3)
        grains[:, 2] += 0.06  # a grain radius and a bit above the plane
        best = math.inf
        for _ in range(2):
            world = World(radius=0.05)
            world.add_granular(grains, density=1600.0)
            world.add_collider_plane(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0))
            world.step(1.0 / 24.0)  # warm up (first-step allocations)
            start = time.perf_counter()
            world.step(1.0 / 24.0)
            best = min(best, (time.perf_counter() - start) * 1000.0)
        _machine_factor = float(np.clip(best / REFERENCE_CALIBRATION_MS, 0.25, 8.0))
    return _machine_factor


@dataclass
class Cost:
    """What a scene will cost: particles per object, and the totals."""

    particles: dict[str, int] = field(default_factory=dict)  # object name -> particle count
    kinds: dict[str, str] = field(default_factory=dict)  # object name -> role
    radii: dict[str, float] = field(default_factory=dict)  # object name -> its particle radius, m
    fitted: set[str] = field(default_factory=set)  # rigid bodies whose radius fits their thinnest side
    ms_per_frame: float = 0.0
    solver_bytes: int = 0
    cache_bytes_per_frame: int = 0
    cache_frames: int = 0  # frames the live cache keeps at its memory limit
    frames: int = 0
    suggestion: str = ""

    @property
    def total(self) -> int:
        return sum(self.particles.values())

    def counts(self, names: list[str]) -> str:
        """Each named object's particles and their radius, e.g. "Wall: 1,204 particles of 2 cm"; a rigid body
        thinner than the scene's radius allows says its radius was fitted (``core.sizes.rigid_radius``)."""
        return ", ".join(
            f"{name}: {self.particles.get(name, 0):,} particles of {self.radii.get(name, 0.0) * 100.0:.3g} cm"
            + (" (fitted to its thinnest side)" if name in self.fitted else "")
            for name in names
        )

    def summary(self) -> str:
        """One line: particles, memory, time per frame on this machine (and a suggestion when slow)."""
        text = (
            f"{self.total:,} particles, {self.solver_bytes / 2**20:,.0f} MiB to simulate, "
            f"~{_time_text(self.ms_per_frame)} per frame on this computer "
            f"(~{_time_text(self.ms_per_frame * self.frames)} for {self.frames} frames)"
        )
        if self.frames > self.cache_frames:
            text += f"; the live cache keeps {self.cache_frames} of {self.frames} frames (Memory Limit)"
        return f"{text}. {self.suggestion}" if self.suggestion else text


def _time_text(ms: float) -> str:
    if ms < 1000.0:
        return f"{ms:.0f} ms"
    if ms < 120_000.0:
        return f"{ms / 1000.0:.1f} s"
    return f"{ms / 60_000.0:.0f} min"


def object_radius(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float) -> float:
    """``obj``'s particle radius, m: its own Particle Size (``blender/sizes.py``), else the scene's ``radius``
    (also where Auto cannot fit a flat mesh: Make refuses that object with the reason)."""
    try:
        own = sizes.object_radius(obj, depsgraph)
    except SimulationInputError:
        own = None
    if own is None and obj.type == "MESH" and object_settings(obj).role == "RIGID":
        # The core fits a rigid body thinner than the scene's radius allows (core.sizes.rigid_radius).
        local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
        if len(tris):
            vertices = mesh_io.transform_points(mesh_io.matrix_to_numpy(obj.matrix_world), local)
            return rigid_radius(fill_measure(vertices, tris).extent, radius)
    return radius if own is None else own


def particle_count(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float) -> int:
    """Particles ``obj`` makes in its role at ``radius`` (an estimate for filled volumes, O(faces));
    grains with a Size Spread are filled at their largest, radius (1 + spread)."""
    role = object_settings(obj).role
    if obj.type != "MESH":
        return 0
    if role == "CLOTH":
        return len(obj.data.vertices)  # type: ignore[union-attr]
    if role not in VOLUME_ROLES:
        return 0  # colliders, inflows (their particles are poured later), outflows
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    if len(tris) == 0:
        return 0
    vertices = mesh_io.transform_points(mesh_io.matrix_to_numpy(obj.matrix_world), local)
    if role == "RIGID":  # the fitted grid and surface layer of core.geometry.sample_rigid
        measure = fill_measure(vertices, tris)
        if getattr(object_settings(obj), "fill", "SOLID") == "SHELL":  # its outer layer only (shell_of)
            return measure.shell_count(2.0 * radius)
        return measure.rigid_count(2.0 * radius)
    spread = float(object_settings(obj).size_spread) if role == "GRANULAR" else 0.0
    return estimate_interior_count(vertices, tris, 2.0 * radius * (1.0 + spread))


def estimate(scene: bpy.types.Scene, objects: list[bpy.types.Object], depsgraph: bpy.types.Depsgraph) -> Cost:
    """The cost of simulating ``objects`` (the scene's simulated objects) with the scene's settings."""
    radius = float(scene_settings(scene).particle_radius)
    cost = _estimate_at(scene, objects, depsgraph, radius)
    cost.suggestion = _suggestion(
        cost, radius, lambda r: _estimate_at(scene, objects, depsgraph, r).ms_per_frame
    )
    return cost


def _estimate_at(
    scene: bpy.types.Scene, objects: list[bpy.types.Object], depsgraph: bpy.types.Depsgraph, radius: float
) -> Cost:
    """:func:`estimate` at the scene Particle Radius ``radius`` (m), without the suggestion."""
    settings = scene_settings(scene)
    cost = Cost()
    for obj in objects:
        cost.radii[obj.name] = object_radius(obj, depsgraph, radius)
        if cost.radii[obj.name] < radius and not sizes.has_own_size(obj):
            cost.fitted.add(obj.name)
        cost.particles[obj.name] = particle_count(obj, depsgraph, cost.radii[obj.name])
        cost.kinds[obj.name] = object_settings(obj).role
    keywords = world_keywords(settings)
    budget = int(keywords["substeps"]) * int(keywords["iterations"]) / REFERENCE_BUDGET
    solver_us = sum(n * US_PER_PARTICLE.get(cost.kinds[name], 0.0) for name, n in cost.particles.items())
    base = OVERHEAD_MS + OVERHEAD_PER_OBJECT_MS * len(objects) + solver_us / 1000.0
    cost.ms_per_frame = machine_factor() * base * budget
    cost.solver_bytes = cost.total * BYTES_PER_PARTICLE
    cost.cache_bytes_per_frame = cost.total * CACHE_BYTES_PER_PARTICLE
    cost.frames = max(int(scene.frame_end) - int(scene.frame_start) + 1, 1)
    limit = int(settings.cache_memory_limit) * 2**20
    cost.cache_frames = min(cost.frames, limit // max(cost.cache_bytes_per_frame, 1))
    return cost


def _suggestion(cost: Cost, radius: float, ms_at: Callable[[float], float]) -> str:
    """A setting that brings a slow scene near TARGET_FRAME_MS: a bigger particle radius for the volume
    fills (their count, and so their time, goes about as 1 / r^3), or fewer substeps x iterations.
    ``ms_at(r)``: the estimate at scene radius r; the radius is refined with it a few times, since a rigid
    body's fitted grid counts whole nodes per side (up to 28 % off 1 / r^3 at a dozen per side)."""
    if cost.ms_per_frame <= SLOW_FRAME_MS:
        return ""
    filled = sum(n for name, n in cost.particles.items() if cost.kinds[name] in VOLUME_ROLES)
    if filled > cost.total / 2:
        bigger = float(f"{radius * (cost.ms_per_frame / TARGET_FRAME_MS) ** (1.0 / 3.0):.3g}")
        best, best_off = bigger, math.inf
        for _ in range(SUGGESTION_REFINEMENTS):  # a few re-estimates, not a loop over particles
            ms = ms_at(bigger)
            off = abs(math.log(ms / TARGET_FRAME_MS))
            if off < best_off:
                best, best_off = bigger, off
            bigger = float(f"{bigger * (ms / TARGET_FRAME_MS) ** (1.0 / 3.0):.3g}")
        bigger = best
        return (
            f"Slow: a Particle Radius of {bigger:.3g} m (now {radius:.3g}) would take about a quarter second"
        )
    return "Slow: lower Substeps or Iterations, or simplify the cloth meshes"
