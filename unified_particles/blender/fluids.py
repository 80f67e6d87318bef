# SPDX-License-Identifier: GPL-3.0-or-later
"""Fluids in Blender: the particle object of a Fluid or Inflow object, inflow emission, outflow drains.

Roles (``object.unified_particles.role``):

* **FLUID**: the mesh's volume is filled with fluid particles on the rest-density lattice
  (``core.fill_mesh_with_fluid``). As with grains, the source is hidden and ``<source> Fluid``, a
  vertex-only mesh (one vertex per particle, float POINT attribute ``radius``), shows the fluid through
  the *Liquid Surface* Geometry Nodes modifier (:mod:`.liquid_surface`).
* **INFLOW**: the object pours fluid from its volume every frame between its start and end frames,
  at ``flow_velocity`` m/s along one of its local axes (default local -Z: an unrotated object pours
  straight down, like a tap), following its animation; keyframed motion of the object adds its own
  velocity at each emitted point (``transforms.keyed_point_velocities``). Its fluid has a particle
  object of its own.
  The object itself stays visible as a wireframe and is hidden in renders.
* **OUTFLOW**: fluid inside the object (its evaluated mesh, where its animation puts it) is removed at
  the end of every frame. Shown as a wireframe, hidden in renders.

Fixed particle count. A point cache (PC2, MDD) and the frame cache's snapshots need the same number of
points in every frame, so an inflow's fluid is added with all the slots it will ever fill
(``World.add_fluid(capacity=...)``: :attr:`InflowPlan.capacity`), and a removed particle only becomes
inactive. Inactive particles (not yet emitted, or drained) are written at ``z = PARK_Z`` in the
particle object's space, far below the scene; the liquid surface group deletes every point below
``liquid_surface.INACTIVE_BELOW_Z``, so a baked file replays correctly without the add-on.

Inflow emission (:class:`InflowPlan`). The inflow's volume is sampled once, at the start frame, on a
lattice of spacing 2r aligned with its flow axis (the two other axes follow the object's own axes, so
a box or a cylinder is sampled as a clean block). Each lattice column along the flow axis is one
nozzle; its front-most node is where fluid leaves the volume. The flow has travelled
``D(n) = (n - first + 1) v dt`` metres by the end of frame n (the sum of v_f dt over frames first..n where
Flow Velocity is keyframed: each frame pours at its keyed speed), so layer m (one particle per column)
has crossed the front when ``2 r m < D(n)``: frame n emits layers ``L(n - 1) <= m < L(n)`` with
``L(n) = ceil(D(n) / 2r)``, placed ``D(n - 1) - 2 r m`` behind the front (inside the volume), so
that after the frame's step every layer sits exactly 2r behind the one before. The count depends on the
frame number only, so re-simulating any frame emits the same particles. Emission happens in the
step into frame n, for ``first = max(start, scene start + 1) <= n <= last = min(end, scene end)``.
A point with a live particle closer than r is skipped that frame (a covered nozzle does not stack
particles), so the count is an upper bound that a free-flowing inflow meets exactly.

Imports ``granular``, ``liquid_surface``, ``mesh_io``, ``rna``, ``transforms`` (F-curves) and the core;
not a registered module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ..core import Fluid, SimulationInputError, World, fill_mesh_with_fluid, geometry
from ..core.fluid import KERNEL_RADII
from ..core.surface_kernels import flat_surface_shift, smoothed_centres
from . import granular, liquid_surface, mesh_io
from .mesh_io import FloatArray, IntArray
from .rna import context_scene, frame_seconds, mesh_of, object_settings, scene_settings
from .transforms import fcurves, keyed_matrix, keyed_point_velocities

# Local z of an inactive particle in its particle object (written live and baked; never given to the
# core). A point cache blends a slot's samples linearly between frames (Blender's Mesh Cache at
# subframes: motion blur), so a slot poured (or drained) within a frame sits at (1 - t) PARK_Z + t z at
# the fraction t of the frame; PARK_Z is deep enough (INACTIVE_BELOW_Z / PARK_Z = 1e-7, under the
# fraction float32 tells from a whole frame: 7.6e-6 at frame 100) that it stays below the liquid
# surface's threshold, and is deleted, at every subframe except the live frame itself. At 200 km (before
# issue 25) it rose above the threshold half-way through the frame and Cycles drew it streaking from
# 100 km below into the pour. Its square (1e24 m^2) still fits float32.
PARK_Z = -1.0e12
assert PARK_Z <= 1.0e7 * liquid_surface.INACTIVE_BELOW_Z
# Roles with a fluid body and a particle object; roles shown as wireframe helpers (hidden in renders).
FLUID_ROLES = ("FLUID", "INFLOW")
HELPER_ROLES = ("INFLOW", "OUTFLOW")
OBJECT_SUFFIX = " Fluid"
# Refuse to fill one fluid object (or reserve for one inflow) more particles than this.
MAX_FLUID_PARTICLES_PER_OBJECT = 2_000_000
# Flow directions in the inflow's local axes.
FLOW_AXES: dict[str, tuple[float, float, float]] = {
    "POS_X": (1.0, 0.0, 0.0),
    "NEG_X": (-1.0, 0.0, 0.0),
    "POS_Y": (0.0, 1.0, 0.0),
    "NEG_Y": (0.0, -1.0, 0.0),
    "POS_Z": (0.0, 0.0, 1.0),
    "NEG_Z": (0.0, 0.0, -1.0),
}
# Rounding guard of the layer count: D / 2r a hair above an integer (float32 settings) is that integer.
_LAYER_EPS = 1e-6
# The Flow Velocity property (properties.py: its minimum, m/s) as an F-curve data path.
FLOW_VELOCITY_PATH = "unified_particles.flow_velocity"
MIN_FLOW_VELOCITY = 0.001
_TINY_LENGTH = 1e-12
# Pair distances computed at once when checking emission points against live particles.
_PAIR_CHUNK = 1 << 20


def add_fluid_body(
    world: World,
    points: FloatArray,
    settings: Any,
    name: str,
    capacity: int | None = None,
    initial_velocity: Any = (0.0, 0.0, 0.0),
) -> Fluid:
    """``World.add_fluid`` with the liquid of a Fluid or Inflow object's settings."""
    return world.add_fluid(
        points,
        density=float(settings.density),
        viscosity=float(settings.viscosity),
        cohesion=float(settings.fluid_cohesion),
        adhesion=float(settings.adhesion),
        vorticity=float(settings.vorticity),
        name=name,
        initial_velocity=tuple(initial_velocity),
        capacity=capacity,
    )


def shown_points(points: FloatArray, active: np.ndarray, radius: float, smooth: bool) -> FloatArray:
    """The points a fluid's particle object shows: its world ``points`` (N, 3), with Smooth Surface
    the live ones moved to Yu and Turk's smoothed centres (``core.surface_kernels.smoothed_centres``,
    H = the liquid's kernel radius, among this fluid's live particles only). Written as the object's
    vertices (live and baked), so a bake replays the smooth surface without the add-on."""
    out = np.array(points, dtype=np.float64, copy=True)
    live = np.flatnonzero(np.asarray(active, dtype=bool))
    if smooth and len(live) > 1:
        out[live] = smoothed_centres(out[live], KERNEL_RADII * float(radius))
    return out


def surface_shift(settings: Any) -> float:
    """How far (particle radii) the liquid surface moves out along its normal: Smooth Surface pulls a flat
    top's centres that far into the liquid (``core.surface_kernels.flat_surface_shift``), so the surface
    stays where the liquid's volume ends."""
    return flat_surface_shift(KERNEL_RADII) if bool(settings.surface_smooth) else 0.0


def park_inactive(local: FloatArray, active: np.ndarray) -> FloatArray:
    """``local`` (N, 3) with the rows of inactive particles moved to ``z = PARK_Z`` (x, y kept)."""
    out = np.array(local, dtype=np.float64, copy=True)
    out[~np.asarray(active, dtype=bool), 2] = PARK_Z
    return out


# ------------------------------------------------------------------------------ particle objects
def _world_mesh(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> tuple[FloatArray, IntArray]:
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    return mesh_io.transform_points(matrix, local), mesh_io.oriented_triangles(matrix, tris)


def fluid_points(
    obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float, world: World | None = None
) -> FloatArray:
    """World-space fluid particle centres filling the evaluated mesh of a Fluid object (limits checked
    first: memory with the particles of ``world`` if given, sampling grid, particles per object)."""
    vertices, tris = _world_mesh(obj, depsgraph)
    if len(tris) == 0:
        raise SimulationInputError(f"{obj.name!r} has no faces to fill with fluid")
    granular.check_fill(obj, vertices, tris, radius, world, MAX_FLUID_PARTICLES_PER_OBJECT, "particles")
    try:
        points = np.asarray(fill_mesh_with_fluid(vertices, tris, radius)).reshape(-1, 3)
    except SimulationInputError as exc:
        raise SimulationInputError(f"{obj.name!r} cannot hold fluid: {exc}") from None
    if len(points) == 0:
        raise SimulationInputError(
            f"{obj.name!r} is too small to hold a fluid particle of radius {radius:g} m; "
            "make it bigger or lower the particle radius"
        )
    return points


def apply_surface(source: bpy.types.Object) -> None:
    """Give the particle object of a Fluid or Inflow object its liquid surface, as the source's settings
    say (surface kind, resolution, smoothing, the source's material)."""
    settings = object_settings(source)
    target = settings.particle_object
    if target is None or target.type != "MESH":
        return
    liquid_surface.ensure_liquid_surface(
        target,
        granular.source_material(source),
        surface="SPHERES" if settings.fluid_surface == "SPHERES" else "MESH",
        resolution=float(settings.surface_resolution),
        smoothing=int(settings.surface_smoothing),
        centre_shift=surface_shift(settings),
    )


def set_points(
    obj: bpy.types.Object, points_world: FloatArray, active: np.ndarray, radius: float, smooth: bool = False
) -> None:
    """Make the particle object's mesh the points ``points_world`` (inactive ones parked; ``smooth``:
    the live ones smoothed, :func:`shown_points`)."""
    inverse = np.linalg.inv(mesh_io.matrix_to_numpy(obj.matrix_world))
    shown = shown_points(points_world, active, radius, smooth)
    local = park_inactive(mesh_io.transform_points(inverse, shown), active)
    mesh_io.set_point_cloud(mesh_of(obj), local, radius)


def create_fluid_object(
    source: bpy.types.Object, role: str, points_world: FloatArray, active: np.ndarray, radius: float
) -> bpy.types.Object:
    """Create ``<source> Fluid``, the particle object of a Fluid or Inflow object ``source``.

    A Fluid source is hidden (its particles take its place); an Inflow stays visible as a wireframe
    (see :func:`show_as_helper`). The particle object gets the liquid surface modifier."""
    name = source.name + OBJECT_SUFFIX
    mesh = bpy.data.meshes.new(name)
    obj = bpy.data.objects.new(name, mesh)
    collections = list(source.users_collection) or [context_scene(bpy.context).collection]
    for collection in collections:
        collection.objects.link(obj)
    settings = object_settings(source)
    set_points(obj, points_world, active, radius, bool(settings.surface_smooth))
    object_settings(obj).source_object = source
    settings.particle_object = obj
    if role == "FLUID":
        if settings.role not in FLUID_ROLES:  # not a re-creation: remember the user's setting
            settings.source_hidden_render = source.hide_render
        source.hide_render = True
        source.hide_set(True)
    else:
        show_as_helper(source)
    apply_surface(source)
    return obj


def show_as_helper(obj: bpy.types.Object) -> None:
    """An inflow or outflow: drawn as a wireframe and hidden in renders (the user's settings are kept
    and given back by :func:`restore_helper`)."""
    settings = object_settings(obj)
    if settings.role not in HELPER_ROLES and not settings.source_display_type:
        settings.source_hidden_render = obj.hide_render
        settings.source_display_type = obj.display_type
    obj.hide_render = True
    obj.display_type = "WIRE"


def restore_helper(obj: bpy.types.Object) -> None:
    """Undo :func:`show_as_helper` (Clear, or another role)."""
    settings = object_settings(obj)
    if not settings.source_display_type:
        return
    obj.display_type = settings.source_display_type
    obj.hide_render = settings.source_hidden_render
    settings.source_display_type = ""


def flow_range(
    settings: Any, scene: bpy.types.Scene, frames: tuple[int, int] | None = None
) -> tuple[int, int]:
    """First and last frame an inflow emits in: its own range (``frames`` if given, else its Start and
    End Frame) inside the scene's, after the start frame (the state the simulation is built with)."""
    start, end = frames if frames is not None else (int(settings.flow_start), int(settings.flow_end))
    return max(int(start), int(scene.frame_start) + 1), min(int(end), int(scene.frame_end))


# ----------------------------------------------------------------------------------- inflows
@dataclass
class InflowPlan:
    """Where and how much fluid an inflow emits, frame by frame (see the module doc)."""

    to_local: FloatArray  # (3, 4): flow-frame coordinates (x, y, u) -> the inflow object's local space
    columns: FloatArray  # (C, 2) x, y of each nozzle column, metres
    front: FloatArray  # (C,) u of each column's front-most lattice node, metres
    axis_local: FloatArray  # (3,) flow direction in the object's local axes
    spacing: float  # 2r, metres
    speed: float  # m/s (at the first frame)
    first: int  # first frame emitting
    last: int  # last frame emitting
    dt: float  # seconds per frame
    # (last - first + 1,) Flow Velocity in each emitting frame, m/s, where it is keyframed (None: ``speed``)
    speeds: FloatArray | None = None

    def speed_at(self, frame: int) -> float:
        """Flow Velocity in ``frame`` (its keyframed value, clamped to the emitting frames), m/s."""
        if self.speeds is None:
            return self.speed
        return float(self.speeds[min(max(int(frame), self.first), self.last) - self.first])

    def travelled(self, frame: int) -> float:
        """D(frame), metres the flow has travelled by the end of ``frame``: the sum of v dt over frames."""
        n = min(int(frame), self.last) - self.first + 1
        if n <= 0:
            return 0.0
        if self.speeds is None:
            return n * self.speed * self.dt
        return float(self.speeds[:n].sum()) * self.dt

    def layers(self, frame: int) -> int:
        """Layers emitted by the end of ``frame``: ceil(D / 2r), D = the distance the flow has travelled."""
        d = self.travelled(frame)
        if d <= 0.0:
            return 0
        return math.ceil(d / self.spacing - _LAYER_EPS)

    @property
    def capacity(self) -> int:
        """Particles emitted over the whole frame range: the slots to reserve."""
        return self.layers(self.last) * len(self.columns)

    def count(self, frame: int) -> int:
        """Particles emitted in the step into ``frame``."""
        return (self.layers(frame) - self.layers(frame - 1)) * len(self.columns)

    def emission(self, frame: int, matrix: FloatArray) -> tuple[FloatArray, FloatArray]:
        """World positions (P, 3) and velocity (3,) of the particles emitted in the step into ``frame``,
        with the inflow object at world ``matrix``."""
        begin, end = self.layers(frame - 1), self.layers(frame)
        m = np.asarray(matrix, dtype=np.float64)
        direction = m[:3, :3] @ self.axis_local
        length = float(np.linalg.norm(direction))
        velocity = self.speed_at(frame) * direction / length if length > _TINY_LENGTH else np.zeros(3)
        if end <= begin:
            return np.zeros((0, 3)), velocity
        travelled = self.travelled(frame - 1)  # D(frame - 1)
        offsets = travelled - self.spacing * np.arange(begin, end, dtype=np.float64)  # <= 0: behind the front
        n_layers, n_cols = len(offsets), len(self.columns)
        flow = np.empty((n_layers, n_cols, 3))
        flow[:, :, 0:2] = self.columns[None, :, :]
        flow[:, :, 2] = self.front[None, :] + offsets[:, None]
        flow = flow.reshape(-1, 3)
        local = flow @ self.to_local[:, :3].T + self.to_local[:, 3]
        return mesh_io.transform_points(m, local), velocity


def _flow_frame(matrix: FloatArray, axis_local: FloatArray) -> FloatArray:
    """(3, 3) orthonormal columns e1, e2, a: ``a`` the flow direction in world space, e1 and e2 along the
    object's other local axes as far as possible (so a box's lattice is aligned with the box)."""
    basis = np.asarray(matrix, dtype=np.float64)[:3, :3]
    a = basis @ axis_local
    if np.linalg.norm(a) <= _TINY_LENGTH:
        raise SimulationInputError("the inflow is scaled to zero along its flow axis")
    a = a / np.linalg.norm(a)
    k = int(np.argmax(np.abs(axis_local)))
    e1 = basis[:, (k + 1) % 3] - np.dot(basis[:, (k + 1) % 3], a) * a
    if np.linalg.norm(e1) <= _TINY_LENGTH:  # degenerate scale: any perpendicular direction
        e1 = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 = e1 / np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(a, e1), a])


def inflow_plan(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph,
    radius: float,
    scene: bpy.types.Scene,
    frames: tuple[int, int] | None = None,
) -> InflowPlan:
    """The emission plan of an Inflow object as it is now (the simulation builds at the start frame);
    ``frames``: its start and end frame if not its settings' (Make Inflow, before it sets them).

    Raises ``SimulationInputError`` naming the object: no faces, flat, smaller than one particle, a
    sampling grid or particle count over the limits, or a frame range that emits nothing."""
    s = object_settings(obj)
    spacing = 2.0 * float(radius)
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    if len(tris) == 0:
        raise SimulationInputError(f"{obj.name!r} has no faces: an inflow needs a volume to pour from")
    vertices = geometry.as_vertices(mesh_io.transform_points(matrix, local))
    tris = mesh_io.oriented_triangles(matrix, tris)
    axis_local = np.asarray(FLOW_AXES.get(str(s.flow_axis), FLOW_AXES["NEG_Z"]), dtype=np.float64)
    try:
        frame_axes = _flow_frame(matrix, axis_local)
    except SimulationInputError as exc:
        raise SimulationInputError(f"{obj.name!r}: {exc}") from None
    centre = 0.5 * (vertices.min(axis=0) + vertices.max(axis=0))
    q = (vertices - centre) @ frame_axes
    lo, hi = q.min(axis=0), q.max(axis=0)
    counts = np.maximum(np.floor((hi - lo) / spacing + _LAYER_EPS).astype(np.int64), 1)
    nodes = int(np.prod(counts))
    if nodes > geometry.MAX_SAMPLE_GRID_NODES:
        raise SimulationInputError(
            f"{obj.name!r} needs a grid of {nodes:,} candidate particles to sample its volume "
            f"(limit {geometry.MAX_SAMPLE_GRID_NODES:,}); raise the particle radius or make it smaller"
        )
    axes = [(np.arange(c) - 0.5 * (c - 1)) * spacing + 0.5 * (lo[k] + hi[k]) for k, c in enumerate(counts)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    inside = (geometry.winding_number(vertices, tris, centre + grid @ frame_axes.T) >= 0.5).reshape(*counts)
    column_mask = inside.any(axis=2)
    if not column_mask.any():
        thin = "is flat" if (hi[2] - lo[2]) < spacing else "is thinner than one particle"
        raise SimulationInputError(
            f"{obj.name!r} {thin}: an inflow pours from its volume, so give it a volume at least "
            f"{spacing:g} m (one particle diameter) across, or lower the particle radius"
        )
    ix, iy = np.nonzero(column_mask)
    front_index = counts[2] - 1 - np.argmax(inside[ix, iy, ::-1], axis=1)
    inverse = np.linalg.inv(matrix)
    to_local = np.empty((3, 4))
    to_local[:, :3] = inverse[:3, :3] @ frame_axes
    to_local[:, 3] = inverse[:3, :3] @ centre + inverse[:3, 3]
    first, last = flow_range(s, scene, frames)
    plan = InflowPlan(
        to_local=to_local,
        columns=np.column_stack([axes[0][ix], axes[1][iy]]),
        front=axes[2][front_index],
        axis_local=axis_local,
        spacing=spacing,
        speed=float(s.flow_velocity),
        first=first,
        last=last,
        dt=frame_seconds(scene),
        speeds=keyed_flow_velocity(obj, first, last),
    )
    if plan.capacity == 0:
        raise SimulationInputError(
            f"{obj.name!r} emits no fluid: its frames do not overlap the scene's frames after the start, "
            f"{int(scene.frame_start) + 1}-{int(scene.frame_end)}; set its Start and End Frame inside them"
        )
    if plan.capacity > MAX_FLUID_PARTICLES_PER_OBJECT:
        raise SimulationInputError(
            f"{obj.name!r} would emit {plan.capacity:,} particles over frames {first}-{last} (at most "
            f"{MAX_FLUID_PARTICLES_PER_OBJECT:,}); lower the flow velocity, shorten its frame range or "
            "raise the particle radius"
        )
    return plan


def flow_velocity_curves(obj: bpy.types.Object) -> list[Any]:
    """The keyframed F-curves of the object's Flow Velocity (drivers are not followed)."""
    return [c for c in fcurves(obj) if c.data_path == FLOW_VELOCITY_PATH and len(c.keyframe_points)]


def keyed_flow_velocity(obj: bpy.types.Object, first: int, last: int) -> FloatArray | None:
    """(last - first + 1,) Flow Velocity, m/s, of each emitting frame from its keyframes (at least the
    property's minimum), or None if it is not keyframed. Read once when the simulation is built, so every
    frame emits from its own keyed speed and the slots reserved cover the whole pour (before issue 25 the
    start frame's speed was kept for the whole pour)."""
    curves = flow_velocity_curves(obj)
    if not curves or last < first:
        return None
    frames = range(int(first), int(last) + 1)
    return np.array([max(float(curves[0].evaluate(f)), MIN_FLOW_VELOCITY) for f in frames], dtype=np.float64)


def flow_velocity_signature(obj: bpy.types.Object) -> Any:
    """Flow Velocity for the change detector: its keys (frame, value) if keyframed, else its value (the
    keyed value at the current frame changes with the frame, which is not a change of the settings)."""
    keys = [[float(k.co[0]), float(k.co[1])] for c in flow_velocity_curves(obj) for k in c.keyframe_points]
    return keys if keys else float(object_settings(obj).flow_velocity)


# ------------------------------------------------------------------------------ deleted inflows
# ID property of a deleted inflow: the frame it was deleted at (its pour was stopped there once).
DELETED_AT = "unified_particles_deleted_at"


def is_kept_inflow(source: bpy.types.Object | None, liquid: bpy.types.Object) -> bool:
    """``source`` is the Inflow whose liquid is ``liquid`` (kept if deleted: :func:`keep_deleted_inflow`)."""
    return (
        source is not None
        and object_settings(source).role == "INFLOW"
        and object_settings(source).particle_object == liquid
    )


def keep_deleted_inflow(source: bpy.types.Object, liquid: bpy.types.Object) -> list[str] | None:
    """An Inflow ``source`` deleted while its liquid stays in a scene (issue 25: deleting an inflow removed
    everything it had poured, from every frame, silently): its liquid stays, and so does the inflow itself,
    outside every scene (Blender keeps a deleted object in the file while the liquid's ``source_object``
    points at it), simulated as before (:func:`kept_inflows`) up to the frame it was deleted at, and
    pouring no more after it: its End Frame becomes that frame, once (a baked scene keeps its bake and End
    Frame). Returns the message for the user the first time, [] after; None (not kept: the liquid goes
    with it) if it was deleted before it poured anything. Deleting the liquid too removes both; Undo
    brings the inflow back as it was."""
    if source.get(DELETED_AT) is not None:
        return []
    scenes = list(liquid.users_scene)
    current = getattr(bpy.context, "scene", None)
    scene = current if current in scenes else scenes[0]
    frame = int(scene.frame_current)
    settings = object_settings(source)
    if frame < flow_range(settings, scene)[0]:
        return None
    source[DELETED_AT] = frame
    if not scene_settings(scene).is_baked and int(settings.flow_end) > frame:
        settings.flow_end = frame
    return [
        f"'{source.name}' deleted: the liquid it poured until frame {frame} stays in '{liquid.name}' "
        "(it pours no more); delete that too to remove the liquid"
    ]


def kept_inflows(scene: bpy.types.Scene, in_layer: set[str] | None) -> list[bpy.types.Object]:
    """Inflows deleted from ``scene`` whose liquid is still in it (in the view layer's ``in_layer`` names if
    given): simulated as the scene's (:func:`keep_deleted_inflow`)."""
    kept = []
    for liquid in scene.objects:
        source = object_settings(liquid).source_object
        if (
            source is not None
            and source.name not in scene.objects
            and is_kept_inflow(source, liquid)
            and (in_layer is None or liquid.name in in_layer)
        ):
            kept.append(source)
    return kept


def check_inflow_capacity(obj: bpy.types.Object, plan: InflowPlan, world: World) -> None:
    """Refuse an inflow whose reserved particles do not fit in the memory limit (with ``world``'s)."""
    try:
        world.check_capacity(plan.capacity, f"{obj.name!r} (an inflow reserving {plan.capacity:,} particles)")
    except SimulationInputError as exc:
        text = str(exc).replace("or fewer/smaller objects", "or lower its flow velocity or frame range")
        raise SimulationInputError(text) from None


def parked_points(matrix: FloatArray, count: int) -> FloatArray:
    """``count`` world points for an inflow's empty slots (below its origin; written parked anyway)."""
    origin = np.asarray(matrix, dtype=np.float64)[:3, 3]
    points = np.repeat(origin[None, :], count, axis=0)
    points[:, 2] = PARK_Z
    return points


def unblocked(points: FloatArray, others: FloatArray, distance: float) -> np.ndarray:
    """(P,) bool: which ``points`` have none of ``others`` closer than ``distance`` (the candidates are
    those in the points' bounding box grown by ``distance``; chunked pairwise distances)."""
    keep = np.ones(len(points), dtype=bool)
    if not len(points) or not len(others):
        return keep
    lo, hi = points.min(axis=0) - distance, points.max(axis=0) + distance
    near = others[np.all((others >= lo) & (others <= hi), axis=1)]
    step = max(1, _PAIR_CHUNK // len(points))
    for start in range(0, len(near), step):
        diff = points[:, None, :] - near[None, start : start + step, :]
        keep &= np.einsum("pkc,pkc->pk", diff, diff).min(axis=1) >= distance * distance
    return keep


def emit_inflows(
    world: World, entries: Sequence[Any], frame: int, depsgraph: bpy.types.Depsgraph | None
) -> None:
    """Before the step into ``frame``: every inflow emits its particles of that frame from where its
    object is now (its animation at the current frame). A point with a live particle (liquid, a body)
    closer than half the spacing is blocked and skipped this frame, so a submerged or covered nozzle
    never stacks particles on top of others. Emission stops when the reserved slots are full (only
    past the frame range the slots were reserved for, or never with blocked points)."""
    inflows = [e for e in entries if e.kind == "INFLOW" and e.emitter is not None]
    if not inflows:
        return
    occupied = world.positions[world.particle_active]
    for entry in inflows:
        obj = bpy.data.objects.get(entry.name)
        if obj is None:
            continue
        matrix = mesh_io.evaluated_matrix_world(obj, depsgraph)
        if obj.get(DELETED_AT) is not None:  # kept out of the scene, where Blender no longer animates it
            keyed = keyed_matrix(obj, frame, depsgraph)
            matrix = matrix if keyed is None else keyed
        points, velocity = entry.emitter.emission(frame, matrix)
        if not len(points):
            continue
        points = points[unblocked(points, occupied, 0.5 * entry.emitter.spacing)]
        free = entry.body.capacity - entry.body.count
        if free > 0 and len(points):
            points = points[:free]
            # A moving nozzle throws its liquid with its own motion too (a hose swung, a tap carried).
            carried = keyed_point_velocities(obj, frame, entry.emitter.dt, points, depsgraph)
            entry.body.emit(points, velocity[None, :] + carried)


@dataclass
class Outflow:
    """An outflow: its evaluated mesh's signed distance volume in its local space (built once, at the
    start frame: a mesh the outflow's modifiers deform later is not followed, its transform is) and the
    mesh's bounding box there."""

    volume: geometry.SDFVolume
    lower: FloatArray  # (3,) local bounding box of the mesh
    upper: FloatArray

    @classmethod
    def from_mesh(cls, local: FloatArray, triangles: IntArray, matrix: FloatArray, radius: float) -> Outflow:
        """The outflow of a mesh (local vertices and triangles) whose object is at world ``matrix``: the
        volume's cells are about one particle radius in world space."""
        scale = float(np.linalg.norm(np.asarray(matrix, dtype=np.float64)[:3, :3], axis=0).max())
        cell = float(radius) / max(scale, _TINY_LENGTH)
        vertices = np.asarray(local, dtype=np.float64)
        volume = geometry.SDFVolume.from_mesh(vertices, triangles, cell)
        return cls(volume, vertices.min(axis=0), vertices.max(axis=0))


def drain_outflows(world: World, entries: Sequence[Any], depsgraph: bpy.types.Depsgraph | None) -> None:
    """After a step: remove the fluid inside every outflow (signed distance < 0 where its object is now),
    testing only live fluid particles inside the outflow's bounding box."""
    outflows = [e for e in entries if e.kind == "OUTFLOW" and isinstance(e.body, Outflow)]
    fluids = [e.body for e in entries if e.kind in FLUID_ROLES]
    if not outflows or not fluids:
        return
    positions, active = world.positions, world.particle_active
    for entry in outflows:
        obj = bpy.data.objects.get(entry.name)
        if obj is None:
            continue
        outflow: Outflow = entry.body
        inverse = np.linalg.inv(mesh_io.evaluated_matrix_world(obj, depsgraph))
        for body in fluids:
            live = np.flatnonzero(active[body.indices])
            local = mesh_io.transform_points(inverse, positions[body.indices[live]])
            near = np.flatnonzero(np.all((local >= outflow.lower) & (local <= outflow.upper), axis=1))
            if not near.size:
                continue
            distance, _ = outflow.volume.query(local[near])
            inside = live[near[distance < 0.0]]
            if inside.size:
                body.remove(inside)
                active[body.indices[inside]] = False
