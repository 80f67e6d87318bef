# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators of the sidebar tab: make selected meshes rigid, cloth, granular, colliders, fluid, inflows or
outflows; clear; reset.

``unified_particles.bake`` and ``unified_particles.free_bake`` are in ``bake/operators.py``.
Every operator acts on all selected mesh objects, reports problems with ``report({'ERROR'}, ...)`` and
returns ``{'CANCELLED'}`` without changing anything, and can be undone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty

from ..core import SimulationInputError, World
from ..core.geometry import as_vertices, fill_measure
from ..core.sizes import rigid_radius
from . import (
    cloth_result,
    cost,
    fluids,
    granular,
    hair,
    identity,
    mesh_io,
    rope,
    scene_reader,
    simulation,
    sizes,
    whitewater,
    writeback,
)
from .bake_marks import free_object
from .materials import PRESET_ITEMS, PRESETS, apply_preset
from .mesh_io import REST_ATTRIBUTE, FloatArray
from .rna import (
    OperatorResult,
    context_scene,
    mesh_of,
    object_settings,
    register_classes,
    scene_settings,
    unregister_classes,
)
from .transforms import rigid_rest_matrix

# A mesh thinner than this fraction of its size is flat (no volume).
FLAT_TOLERANCE = 1e-6


def _object_mode_poll(cls: type, context: bpy.types.Context) -> bool:
    if context.scene is None:
        cls.poll_message_set("No active scene")  # type: ignore[attr-defined]
        return False
    if context.mode != "OBJECT":
        cls.poll_message_set("Switch to Object Mode first")  # type: ignore[attr-defined]
        return False
    return True


def _selected_meshes(context: bpy.types.Context) -> list[bpy.types.Object]:
    """Selected meshes; a selected particle object stands for its (hidden, unselectable) source."""
    objects: list[bpy.types.Object] = []
    for obj in context.selected_objects:
        target = _owner(obj)
        if target is not None and target.type == "MESH" and target not in objects:
            objects.append(target)
    return objects


def _owner(obj: bpy.types.Object | None) -> bpy.types.Object | None:
    """The object whose settings apply: a particle object's source, else the object itself."""
    if obj is None:
        return None
    source = object_settings(obj).source_object
    return source if source is not None else obj


@contextlib.contextmanager
def _rest_shape(obj: bpy.types.Object) -> Iterator[None]:
    """While inside, a mesh the simulation has moved (a played cloth) shows its rest shape, the shape a
    new role will be built from; its simulated shape is put back after."""
    mesh = mesh_of(obj) if obj.type == "MESH" else None
    rest = None if mesh is None else mesh_io.read_float_vector_attribute(mesh, REST_ATTRIBUTE)
    if mesh is None or rest is None or len(rest) != len(mesh.vertices):
        yield
        return
    shown = mesh_io.read_positions(mesh)
    mesh_io.write_positions(mesh, rest)
    try:
        yield
    finally:
        mesh_io.write_positions(mesh, shown)


# Roles whose particles collide with each other's (core/depenetration.py caps their separation speed).
_BODY_ROLES = ("RIGID", "CLOTH", "SOFT", "GRANULAR")


def _start_overlaps(context: bpy.types.Context, made: list[bpy.types.Object]) -> list[str]:
    """A message for every pair of bodies (one of them just made) that overlap where they start: their
    world bounding boxes cross by more than a particle radius on every axis (nested shells,
    interpenetrating props; bodies merely touching are not named). The solver pushes them apart at
    most Max Separation Speed fast (core/depenetration.py)."""
    scene = context_scene(context)
    settings = scene_settings(scene)
    radius = float(settings.particle_radius)
    cap = float(getattr(settings, "max_depenetration_speed", 1.0))  # a declared (generated) setting
    bodies = [o for o in scene_reader.simulated_objects(scene) if object_settings(o).role in _BODY_ROLES]
    boxes: dict[str, tuple[mesh_io.FloatArray, mesh_io.FloatArray]] = {}
    for obj in bodies:
        try:
            points, _ = _world_mesh(obj, context)
        except Exception:  # not buildable: Make or the simulation reports it
            continue
        if len(points):
            boxes[obj.name] = (points.min(axis=0), points.max(axis=0))
    made_names = {o.name for o in made}
    # A body inside a Shell's cavity (its box inset by the walls, 2r) does not touch it.
    shells = [o.name for o in bodies if getattr(object_settings(o), "fill", "SOLID") == "SHELL"]
    cavities = {n: (boxes[n][0] + 2.0 * radius, boxes[n][1] - 2.0 * radius) for n in shells if n in boxes}
    out = []
    names = sorted(boxes)
    for k, a in enumerate(names):
        for b in names[k + 1 :]:  # a loop over objects, not particles
            if a not in made_names and b not in made_names:
                continue
            (lo_a, hi_a), (lo_b, hi_b) = boxes[a], boxes[b]
            nested = [(i, o) for i, o in ((a, b), (b, a)) if o in cavities]
            if any(
                np.all(boxes[i][0] >= cavities[o][0]) and np.all(boxes[i][1] <= cavities[o][1])
                for i, o in nested
            ):
                continue
            if np.all(np.minimum(hi_a, hi_b) - np.maximum(lo_a, lo_b) > radius):
                out.append(
                    f"{a!r} and {b!r} overlap where they start: they are pushed apart at most "
                    f"{cap:g} m/s (Max Separation Speed)"
                )
    return out


def _world_mesh(
    obj: bpy.types.Object, context: bpy.types.Context
) -> tuple[mesh_io.FloatArray, mesh_io.IntArray]:
    """The object's evaluated mesh in world space, as the simulation will build it: at its rest pose."""
    with _rest_shape(obj):
        depsgraph = context.evaluated_depsgraph_get()
        local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
        matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
        if object_settings(obj).has_rest:
            matrix = rigid_rest_matrix(obj)
    return mesh_io.transform_points(matrix, local), tris


def _geometry_problem(obj: bpy.types.Object, context: bpy.types.Context) -> str | None:
    """Why ``obj``'s mesh cannot be simulated in any role (no vertices, NaN/inf or absurd coordinates)."""
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf input is reported just below
        vertices, _ = _world_mesh(obj, context)
    if len(vertices) == 0:
        return f"{obj.name!r} has no vertices: add geometry to it or select another object"
    try:
        as_vertices(vertices)
    except SimulationInputError as exc:
        return f"{obj.name!r}: {exc}"
    return None


def _is_flat(vertices: mesh_io.FloatArray) -> bool:
    if len(vertices) == 0:
        return True
    size = float(max(vertices.max(axis=0) - vertices.min(axis=0)))
    return mesh_io.thickness(vertices) <= FLAT_TOLERANCE * max(size, 1e-12)


def release(obj: bpy.types.Object) -> None:
    """Undo what the simulation did to ``obj`` (rest pose, hidden source, particle object)."""
    writeback.restore_objects([obj])
    cloth_result.remove_result(obj)
    if object_settings(obj).particle_object is not None or object_settings(obj).role == "GRANULAR":
        granular.remove_particle_object(obj)
    if object_settings(obj).whitewater_object is not None:
        whitewater.remove_object(obj)  # a liquid's whitewater
    fluids.restore_helper(obj)  # an inflow's or outflow's wireframe display


class _MakeOperator(bpy.types.Operator):
    """Common part of the Make operators."""

    bl_options = {"REGISTER", "UNDO"}
    role = "NONE"

    report_cost: BoolProperty(  # type: ignore[valid-type]
        name="Report Cost",
        description="Report the scene's particle count, memory and time per frame (Convert reports it once)",
        default=True,
        options={"HIDDEN", "SKIP_SAVE"},
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _object_mode_poll(cls, context)

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        """Why ``obj`` cannot take this role (None if it can)."""
        return None

    def setup_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> None:
        """Give ``obj`` the role (after every object passed ``check_object``)."""
        object_settings(obj).role = self.role

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        objects = _selected_meshes(context)
        if not objects:
            self.report({"ERROR"}, "Select one or more mesh objects first")
            return {"CANCELLED"}
        for obj in objects:
            try:
                problem = _geometry_problem(obj, context) or self.check_object(context, obj)
            except Exception as exc:
                problem = f"{obj.name!r}: {exc}"
            if problem:
                self.report({"ERROR"}, problem)
                return {"CANCELLED"}
        for obj in objects:
            if object_settings(obj).role != self.role:
                release(obj)
            try:
                self.setup_object(context, obj)
            except Exception as exc:
                self.report({"ERROR"}, f"{obj.name!r}: {exc}")
                return {"CANCELLED"}
        context_scene(context).render.use_lock_interface = True  # live simulation during render runs safely
        simulation.invalidate(context_scene(context), None)
        names = ", ".join(o.name for o in objects)
        scene = context_scene(context)
        estimate = ""
        if self.report_cost:  # cost before work: what the scene will take (blender/cost.py)
            found = cost.estimate(
                scene, scene_reader.simulated_objects(scene), context.evaluated_depsgraph_get()
            )
            if self.role in ("RIGID", "CLOTH", "GRANULAR"):  # each object's particles (its own size)
                names = found.counts([o.name for o in objects])
            estimate = f". Scene: {found.summary()}"
        self.report({"INFO"}, f"{self.role.title()}: {names}{estimate}")
        for warning in _start_overlaps(context, objects):
            self.report({"WARNING"}, warning)
        return {"FINISHED"}


def _own_radius(context: bpy.types.Context, obj: bpy.types.Object) -> float:
    """``obj``'s particle radius, metres: its own Particle Size (``blender/sizes.py``) or the scene's."""
    own = sizes.object_radius(obj, context.evaluated_depsgraph_get())
    return float(scene_settings(context_scene(context)).particle_radius) if own is None else own


class UNIFIED_PARTICLES_OT_make_rigid(_MakeOperator):
    """Simulate the selected meshes as rigid bodies made of particles"""

    bl_idname = "unified_particles.make_rigid"
    bl_label = "Make Rigid"
    role = "RIGID"

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        vertices, tris = _world_mesh(obj, context)
        if len(tris) == 0 or _is_flat(vertices):
            return (
                f"{obj.name!r} is flat and has no volume: make it cloth or a collider, or give it thickness"
            )
        # Refuse a body that could never be simulated at this radius now, not at the next frame.
        # Every limit the first frame checks (memory, sampling grid), with a suggestion that keeps them all.
        try:
            radius = _own_radius(context, obj)
            if not sizes.has_own_size(obj):  # the radius the core fits a thin body to (sizes.rigid_radius)
                radius = rigid_radius(fill_measure(vertices, tris).extent, radius)
            World(radius=radius).check_fill(vertices, tris, f"{obj.name!r} as a rigid body", rigid=True)
        except SimulationInputError as exc:
            return str(exc)
        return None


class UNIFIED_PARTICLES_OT_make_cloth(_MakeOperator):
    """Simulate the selected meshes as cloth: one particle per vertex"""

    bl_idname = "unified_particles.make_cloth"
    bl_label = "Make Cloth"
    role = "CLOTH"

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        mesh = mesh_of(obj)
        if len(mesh.polygons) == 0:
            return f"{obj.name!r} has no faces: cloth needs a surface"
        return None

    def setup_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> None:
        # The simulation writes into the mesh: a mesh shared with other objects (Alt+D) is copied first.
        if identity.own_mesh(obj):
            self.report({"INFO"}, f"{obj.name!r} shared its mesh with other objects: it now has its own copy")
        super().setup_object(context, obj)
        if cloth_result.is_deformed(obj):  # shape keys or deformers: the result goes after them
            cloth_result.ensure_result_modifier(obj)


class UNIFIED_PARTICLES_OT_make_soft(_MakeOperator):
    """Simulate the selected meshes as soft bodies: particles inside, held by overlapping clusters"""

    bl_idname = "unified_particles.make_soft"
    bl_label = "Make Soft Body"
    role = "SOFT"

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        vertices, tris = _world_mesh(obj, context)
        if len(tris) == 0 or _is_flat(vertices):
            return f"{obj.name!r} is flat and has no volume: make it cloth, or give it thickness"
        radius = float(scene_settings(context_scene(context)).particle_radius)
        try:
            World(radius=radius).check_fill(vertices, tris, f"{obj.name!r} as a soft body")
        except SimulationInputError as exc:
            return str(exc)
        return None

    def setup_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> None:
        # The simulation writes into the mesh: a mesh shared with other objects (Alt+D) is copied first.
        if identity.own_mesh(obj):
            self.report({"INFO"}, f"{obj.name!r} shared its mesh with other objects: it now has its own copy")
        super().setup_object(context, obj)


class UNIFIED_PARTICLES_OT_make_granular(_MakeOperator):
    """Fill the selected meshes with grains (the mesh is hidden, a particle object shows the grains)"""

    bl_idname = "unified_particles.make_granular"
    bl_label = "Make Granular"
    role = "GRANULAR"

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        vertices, tris = _world_mesh(obj, context)
        if len(tris) == 0 or _is_flat(vertices):
            return f"{obj.name!r} is flat and has no volume to fill with grains"
        # Fill now, so that a refusal (too small, too many grains) happens before anything changed.
        try:
            with _rest_shape(obj):
                self._points[obj.name] = scene_reader.grain_points(
                    obj,
                    context.evaluated_depsgraph_get(),
                    _own_radius(context, obj),
                    spread=float(object_settings(obj).size_spread),
                )
        except SimulationInputError as exc:
            return str(exc)  # names the object already
        return None

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        self._points: dict[str, mesh_io.FloatArray] = {}
        try:
            return super().execute(context)
        finally:
            self._points = {}

    def setup_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> None:
        radius = _own_radius(context, obj)
        points = self._points[obj.name]
        if object_settings(obj).particle_object is None:
            granular.create_particle_object(obj, points, radius)
        else:
            granular.update_particle_object(object_settings(obj).particle_object, points, radius)
        super().setup_object(context, obj)
        if object_settings(obj).density == 1000.0:
            object_settings(obj).density = 1600.0  # a sand-like default rather than water


class _MakeStrandOperator(bpy.types.Operator):
    """Make Rope and Make Hair: objects whose particles lie along their curves, shown by a point object."""

    bl_options = {"REGISTER", "UNDO"}
    role = ""
    select_hint = ""  # what to select, for the message when nothing fitting is selected

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _object_mode_poll(cls, context)

    def problem(self, obj: bpy.types.Object) -> str | None:
        """Why ``obj`` cannot take this role, or None."""
        raise NotImplementedError

    def sample(
        self, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float
    ) -> tuple[FloatArray, float]:
        """The particles ``obj`` will have, (P, 3), checked before anything changes, and their radius (m);
        raises SimulationInputError."""
        raise NotImplementedError

    def adopt(self, obj: bpy.types.Object, size: float) -> None:
        """Settings an object gets when it takes the role, after its old role was released."""

    def made(self, obj: bpy.types.Object) -> None:
        """What follows once ``obj`` has the role (made again, too)."""

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        objects = [o for o in (_owner(s) for s in context.selected_objects) if o is not None]
        objects = list(dict.fromkeys(objects))
        if not objects:
            self.report({"ERROR"}, f"Select one or more {self.select_hint} first")
            return {"CANCELLED"}
        scene = context_scene(context)
        radius = float(scene_settings(scene).particle_radius)
        depsgraph = context.evaluated_depsgraph_get()
        made = {}
        for obj in objects:
            problem = self.problem(obj)
            if problem is not None:
                self.report({"ERROR"}, problem)
                return {"CANCELLED"}
            try:
                made[obj.name] = self.sample(obj, depsgraph, radius)
            except SimulationInputError as exc:
                self.report({"ERROR"}, f"{obj.name!r}: {exc}" if repr(obj.name) not in str(exc) else str(exc))
                return {"CANCELLED"}
        for obj in objects:
            points, size = made[obj.name]
            if object_settings(obj).role != self.role:
                release(obj)
                self.adopt(obj, size)
            object_settings(obj).role = self.role
            self.made(obj)
            target = object_settings(obj).particle_object
            if target is None:
                granular.create_particle_object(obj, points, size)
            else:
                granular.update_particle_object(target, points, size)
        scene.render.use_lock_interface = True
        simulation.invalidate(scene, None)
        count = sum(len(points) for points, _ in made.values())
        self.report(
            {"INFO"}, f"{self.role.title()}: {', '.join(o.name for o in objects)} ({count} particles)"
        )
        return {"FINISHED"}


class UNIFIED_PARTICLES_OT_make_rope(_MakeStrandOperator):
    """Simulate the selected curves or edge-only meshes as ropes: particles one diameter apart along them"""

    bl_idname = "unified_particles.make_rope"
    bl_label = "Make Rope"
    role = "ROPE"
    select_hint = "curves (or meshes of edges)"

    def problem(self, obj: bpy.types.Object) -> str | None:
        if rope.can_be_rope(obj):
            return None
        return f"{obj.name!r} is not a curve or a mesh of edges only: it cannot be a rope"

    def sample(
        self, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float
    ) -> tuple[FloatArray, float]:
        return World(radius=radius).add_rope(rope.rope_points(obj, depsgraph)).positions, radius


class UNIFIED_PARTICLES_OT_make_hair(_MakeStrandOperator):
    """Simulate the selected Curves (hair) objects: every point a particle, the roots riding on the surface"""

    bl_idname = "unified_particles.make_hair"
    bl_label = "Make Hair"
    role = "HAIR"
    select_hint = "Curves (hair) objects"

    def problem(self, obj: bpy.types.Object) -> str | None:
        return (
            None
            if hair.can_be_hair(obj)
            else f"{obj.name!r} is not a Curves (hair) object: it cannot be hair"
        )

    def sample(
        self, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float
    ) -> tuple[FloatArray, float]:
        pts, counts = hair.strand_points(obj)
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        inner = np.ones(len(seg), bool)
        inner[np.cumsum(counts)[:-1] - 1] = False
        # A hair's particles: half its point spacing (touching along the strand), at most the scene's.
        size = min(radius, 0.5 * float(seg[inner].mean())) if inner.any() else radius
        return hair.add_hair(World(radius=radius), obj, depsgraph, size).positions, size

    def adopt(self, obj: bpy.types.Object, size: float) -> None:
        settings = object_settings(obj)
        settings.size_mode = "VALUE"
        settings.particle_size = size
        settings.density = 1300.0  # hair keratin, kg/m^3

    def made(self, obj: bpy.types.Object) -> None:
        surface = hair.surface_of(obj)
        if object_settings(surface).role == "NONE":  # the hair lies on its surface and collides with it
            object_settings(surface).role = "COLLIDER"


class UNIFIED_PARTICLES_OT_make_collider(_MakeOperator):
    """Make the selected meshes obstacles: static, or moving with their animation"""

    bl_idname = "unified_particles.make_collider"
    bl_label = "Make Collider"
    role = "COLLIDER"

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        _, tris = _world_mesh(obj, context)
        if len(tris) == 0:
            return f"{obj.name!r} has no faces to collide with"
        return None

    def setup_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> None:
        vertices, _ = _world_mesh(obj, context)
        # A static flat mesh (a ground plane) has no inside for a distance volume: use an infinite
        # plane. Infinite planes are static, so a flat mesh that moves (keyframes, parent,
        # constraints, drivers) stays a mesh collider and follows its animation.
        moves = obj.animation_data is not None or obj.parent is not None or len(obj.constraints) > 0
        object_settings(obj).collider_shape = "PLANE" if _is_flat(vertices) and not moves else "MESH"
        super().setup_object(context, obj)


def _fluid_roles_before(obj: bpy.types.Object) -> bool:
    return object_settings(obj).role in fluids.FLUID_ROLES


class UNIFIED_PARTICLES_OT_make_fluid(_MakeOperator):
    """Fill the selected meshes with liquid (the mesh is hidden, a particle object shows the liquid)"""

    bl_idname = "unified_particles.make_fluid"
    bl_label = "Make Fluid"
    role = "FLUID"

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        vertices, tris = _world_mesh(obj, context)
        if len(tris) == 0 or _is_flat(vertices):
            return f"{obj.name!r} is flat and has no volume to fill with liquid"
        # Fill now, so that a refusal (too small, too many particles) happens before anything changed.
        radius = scene_settings(context_scene(context)).particle_radius
        try:
            with _rest_shape(obj):
                self._points[obj.name] = fluids.fluid_points(obj, context.evaluated_depsgraph_get(), radius)
        except SimulationInputError as exc:
            return str(exc)  # names the object already
        return None

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        self._points: dict[str, mesh_io.FloatArray] = {}
        try:
            return super().execute(context)
        finally:
            self._points = {}

    def setup_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> None:
        radius = scene_settings(context_scene(context)).particle_radius
        points = self._points[obj.name]
        everything = np.ones(len(points), dtype=bool)
        fresh = not _fluid_roles_before(obj)
        if object_settings(obj).particle_object is None:
            fluids.create_fluid_object(obj, "FLUID", points, everything, radius)
        else:
            fluids.set_points(object_settings(obj).particle_object, points, everything, radius)
        super().setup_object(context, obj)
        if fresh:  # a liquid's material, not what the object had as a rigid body or grains
            apply_preset(object_settings(obj), "WATER")


class UNIFIED_PARTICLES_OT_make_inflow(_MakeOperator):
    """Make the selected meshes pour liquid from their volume every frame (along their local -Z by default)"""

    bl_idname = "unified_particles.make_inflow"
    bl_label = "Make Inflow"
    role = "INFLOW"

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        vertices, tris = _world_mesh(obj, context)
        if len(tris) == 0 or _is_flat(vertices):
            return f"{obj.name!r} is flat: an inflow pours from its volume, so give it thickness"
        scene = context_scene(context)
        radius = float(scene_settings(scene).particle_radius)
        # A new inflow pours over the scene's frames (setup_object sets them).
        frames = (scene.frame_start, scene.frame_end) if object_settings(obj).role != "INFLOW" else None
        try:
            with _rest_shape(obj):
                plan = fluids.inflow_plan(obj, context.evaluated_depsgraph_get(), radius, scene, frames)
            fluids.check_inflow_capacity(obj, plan, World(radius=radius))
        except SimulationInputError as exc:
            return str(exc)
        self._plans[obj.name] = plan
        return None

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        self._plans: dict[str, fluids.InflowPlan] = {}
        try:
            return super().execute(context)
        finally:
            self._plans = {}

    def setup_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> None:
        scene = context_scene(context)
        radius = scene_settings(scene).particle_radius
        settings = object_settings(obj)
        fresh = settings.role != "INFLOW"
        capacity = self._plans[obj.name].capacity
        points = fluids.parked_points(mesh_io.matrix_to_numpy(obj.matrix_world), capacity)
        free = np.zeros(capacity, dtype=bool)
        if settings.particle_object is None:
            fluids.create_fluid_object(obj, "INFLOW", points, free, radius)
        else:
            fluids.set_points(settings.particle_object, points, free, radius)
        fluids.show_as_helper(obj)
        if fresh:
            settings.flow_start, settings.flow_end = scene.frame_start, scene.frame_end
            if not _fluid_roles_before(obj):
                settings.role = self.role  # a preset applies to its own role only
                apply_preset(settings, "WATER")
        super().setup_object(context, obj)


class UNIFIED_PARTICLES_OT_make_outflow(_MakeOperator):
    """Make the selected meshes drains: liquid inside them is removed every frame"""

    bl_idname = "unified_particles.make_outflow"
    bl_label = "Make Outflow"
    role = "OUTFLOW"

    def check_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> str | None:
        vertices, tris = _world_mesh(obj, context)
        if len(tris) == 0 or _is_flat(vertices):
            return f"{obj.name!r} is flat: an outflow removes the liquid inside it, so give it a volume"
        return None

    def setup_object(self, context: bpy.types.Context, obj: bpy.types.Object) -> None:
        fluids.show_as_helper(obj)
        super().setup_object(context, obj)


class UNIFIED_PARTICLES_OT_clear(bpy.types.Operator):
    """Stop simulating the selected objects and put them back as they were"""

    bl_idname = "unified_particles.clear"
    bl_label = "Clear"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _object_mode_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        objects = [o for o in _selected_meshes(context) if object_settings(o).role != "NONE"]
        if not objects:
            self.report({"ERROR"}, "Select one or more simulated objects first")
            return {"CANCELLED"}
        simulation.reset(context_scene(context))  # everything back to rest, so the rest can be rebuilt
        for obj in objects:
            # A cleared object must not keep playing its bake: drop the bake's modifiers/keys/keyframes.
            free_object(obj)
            if object_settings(obj).particle_object is not None:
                free_object(object_settings(obj).particle_object)
            release(obj)
            object_settings(obj).role = "NONE"
        simulation.invalidate(context_scene(context), None)
        self.report({"INFO"}, f"Cleared: {', '.join(o.name for o in objects)}")
        return {"FINISHED"}


class UNIFIED_PARTICLES_OT_reset(bpy.types.Operator):
    """Put every simulated object back to its start and forget the simulated frames"""

    bl_idname = "unified_particles.reset"
    bl_label = "Reset Simulation"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _object_mode_poll(cls, context)

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        simulation.reset(context_scene(context))
        self.report({"INFO"}, "Simulation reset")
        return {"FINISHED"}


class UNIFIED_PARTICLES_OT_apply_preset(bpy.types.Operator):
    """Set the material of the selected objects to a preset"""

    bl_idname = "unified_particles.apply_preset"
    bl_label = "Apply Preset"
    bl_options = {"REGISTER", "UNDO"}

    preset: EnumProperty(name="Preset", items=PRESET_ITEMS)  # type: ignore[valid-type]

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        obj = _owner(context.object)
        roles = ("RIGID", "CLOTH", "SOFT", "GRANULAR", "FLUID", "INFLOW")
        if obj is None or object_settings(obj).role not in roles:
            cls.poll_message_set(
                "The active object must be rigid, cloth, a soft body, granular, fluid or an inflow"
            )  # type: ignore[attr-defined]
            return False
        return True

    @classmethod
    def description(cls, context: bpy.types.Context, properties: bpy.types.OperatorProperties) -> str:
        for ident, label, role, values in PRESETS:
            if ident == properties.preset:
                shown = ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in values.items())
                return f"{role.title()} preset {label}: {shown}"
        return "Apply a material preset"

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        candidates = [*context.selected_objects, context.object]
        objects = {owner for owner in map(_owner, candidates) if owner is not None}
        changed = [
            o.name
            for o in sorted(objects, key=lambda o: o.name)
            if apply_preset(object_settings(o), self.preset)
        ]
        if not changed:
            self.report({"ERROR"}, "No selected object has the role this preset is for")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Preset applied to {', '.join(changed)}")
        return {"FINISHED"}


classes: tuple[type, ...] = (
    UNIFIED_PARTICLES_OT_make_rigid,
    UNIFIED_PARTICLES_OT_make_cloth,
    UNIFIED_PARTICLES_OT_make_soft,
    UNIFIED_PARTICLES_OT_make_granular,
    UNIFIED_PARTICLES_OT_make_collider,
    UNIFIED_PARTICLES_OT_make_rope,
    UNIFIED_PARTICLES_OT_make_hair,
    UNIFIED_PARTICLES_OT_make_fluid,
    UNIFIED_PARTICLES_OT_make_inflow,
    UNIFIED_PARTICLES_OT_make_outflow,
    UNIFIED_PARTICLES_OT_clear,
    UNIFIED_PARTICLES_OT_reset,
    UNIFIED_PARTICLES_OT_apply_preset,
)


def register() -> None:
    register_classes(classes)


def unregister() -> None:
    unregister_classes(classes)
