# SPDX-License-Identifier: GPL-3.0-or-later
"""Frame path, stage 3: the only writer of Blender data. Shows the World's state on the objects, and
undoes that; makes what the reader needs before it reads, and what it read for, after.

* rigid -> the object's ``matrix_world`` (its mesh untouched);
* cloth -> the mesh's vertex positions (local space, before modifiers); a cloth with shape keys or
  deforming modifiers keeps its rest shape and shows its result after them (``cloth_result``);
* granular -> the vertices of the particle object;
* fluid, inflow -> the vertices of the particle object, inactive particles (not yet poured, or drained)
  parked far below (``fluids.PARK_Z``), where the liquid surface deletes them.

Rest data (a rigid object's ``rest_matrix``/``has_rest``, the ``REST_ATTRIBUTE`` point attribute of a
mesh) exists exactly while an object is displaced by the simulation: :func:`write_back` writes it when an
object leaves its start pose and drops it when the start frame is shown, so an object at its start
pose carries no stale copy. :func:`restore_objects` puts objects back from it (Reset, Clear).

Around the reader (stage 1, which only reads), called by the frame cache:

* :func:`prepare_build`, before the World is built: a deformed cloth's result modifier (its deformed
  shape is read from it), and a constrained rigid body's animation pose (see below);
* :func:`show_fills`, after it: the particle object of each granular, fluid and inflow source, made or
  refilled with the points the reader filled it with (``Entry.fill``), is the start state;
* :func:`show_animation_poses`, before each frame's read: the object of a constrained kinematic body
  gets its animation's typed transform back (write-back put the simulated pose there), so that
  Blender's evaluation, which the reader reads, places it as its animation and constraints do.

Imports ``scene_reader`` (for :class:`~.scene_reader.Entry` and the simulated objects) and the base
modules.
"""

from __future__ import annotations

from collections.abc import Iterable

import bpy
import numpy as np

from ..core import World
from . import cloth_result, fluids, granular, mesh_io, runtime, scene_reader, tear_mesh, whitewater
from .mesh_io import REST_ATTRIBUTE
from .rna import mesh_of, object_settings
from .scene_reader import Entry
from .transforms import (
    animation_values,
    basis_matrix,
    basis_values,
    own_animation,
    parent_frame,
    rest_transform_values,
    set_transform_values,
    transform_values,
)

# A rigid object farther than this from where write-back put it was moved by the user.
MOVED_RTOL, MOVED_ATOL = 1e-5, 1e-6


def write_back(world: World, entries: list[Entry], at_rest: bool) -> None:
    """Show the world's current state on the objects of ``entries``; ``at_rest``: the start frame."""
    for entry in entries:
        target = bpy.data.objects.get(entry.target)
        if target is None:
            continue
        if entry.kind == "RIGID":
            assert entry.rest_matrix is not None
            _write_rigid(target, entry, at_rest)
        elif entry.deformed:  # the result goes after the deformers; the mesh keeps its rest shape
            if at_rest:
                cloth_result.show_simulated(target, None)
            else:
                inverse = np.linalg.inv(mesh_io.matrix_to_numpy(target.matrix_world))
                cloth_result.show_simulated(
                    target, mesh_io.transform_points(inverse, entry.body.vertex_positions)
                )
            entry.last_written = mesh_io.read_positions(mesh_of(target)).astype(np.float32)
        elif entry.kind in ("CLOTH", "GRANULAR", "ROPE", "HAIR", *fluids.FLUID_ROLES):
            assert entry.rest_local is not None
            mesh = mesh_of(target)
            if at_rest:
                local = entry.rest_local
                mesh_io.remove_attribute(mesh, REST_ATTRIBUTE)
            else:
                world_positions = (
                    tear_mesh.cloth_positions(
                        entry
                    )  # a tearing cloth: each render vertex where its corner is
                    if entry.kind == "CLOTH"
                    else np.asarray(world.positions)[entry.body.indices]
                )
                inverse = np.linalg.inv(mesh_io.matrix_to_numpy(target.matrix_world))
                local = mesh_io.transform_points(inverse, world_positions)
                if entry.kind in fluids.FLUID_ROLES:
                    active = world.particle_active[entry.body.indices]
                    source = bpy.data.objects.get(entry.name)
                    smooth = source is not None and bool(object_settings(source).surface_smooth)
                    shown = fluids.shown_points(world_positions, active, world.radius, smooth)
                    local = fluids.park_inactive(mesh_io.transform_points(inverse, shown), active)
                if mesh_io.read_float_vector_attribute(mesh, REST_ATTRIBUTE) is None:
                    mesh_io.write_float_vector_attribute(mesh, REST_ATTRIBUTE, entry.rest_local)
            mesh_io.write_positions(mesh, local)
            entry.last_written = np.asarray(local, dtype=np.float32)
        if entry.whitewater is not None:  # the liquid's spray, foam and bubbles
            source = bpy.data.objects.get(entry.name)
            foam = None if source is None else object_settings(source).whitewater_object
            if foam is not None:
                whitewater.write(foam, entry.whitewater)


def _write_rigid(target: bpy.types.Object, entry: Entry, at_rest: bool) -> None:
    """Place a rigid object where the simulation has it, keeping the user's transform decomposition.

    Blender decomposes an assigned ``matrix_world`` its own way (a scale of (-1, 1, 1) comes back as
    (-1, -1, -1) with X rotated 180 degrees), so the typed location/rotation/scale are written here: at the
    start frame exactly the values the user typed, elsewhere the values of the new pose with the sign
    pattern of the typed scale, in the object's rotation mode. ``matrix_world`` is assigned first so it
    is right at once (before the next depsgraph evaluation).
    """
    assert entry.rest_matrix is not None
    settings = object_settings(target)
    if at_rest:
        matrix = entry.rest_matrix
        if settings.has_rest:
            mode, values = rest_transform_values(target)
            target.matrix_world = mesh_io.numpy_to_matrix(matrix)
            if mode == target.rotation_mode:
                set_transform_values(target, mode, values)
            settings.has_rest = False
        # else: the object shows its typed transform already; writing it could only change its last bits
    else:
        matrix = np.asarray(entry.body.transform, dtype=np.float64) @ entry.rest_matrix
        if not settings.has_rest:
            # The typed transform before the simulation moves the object; for one moved by its own
            # animation, what the animation gave at the start frame (it has changed the typed one since).
            mode, values = entry.rest_values or transform_values(target)
            settings.rest_matrix = [float(v) for v in entry.rest_matrix.reshape(-1)]
            settings.rest_transform = values
            settings.rest_rotation_mode = mode
            settings.has_rest = True
        _, rest = rest_transform_values(target)
        _, now = transform_values(target)
        like = [*now[:7], *rest[7:]]  # rotation: closest to the last one; scale: the typed sign pattern
        frame = parent_frame(target)
        basis = np.linalg.solve(frame, matrix) if target.parent is not None else matrix
        values = basis_values(target, basis, target.rotation_mode, like)
        target.matrix_world = mesh_io.numpy_to_matrix(matrix)
        set_transform_values(target, target.rotation_mode, values)
    entry.last_written = np.array(matrix, dtype=np.float64)


def user_edited_rest(entries: list[Entry]) -> bool:
    """True if a simulated object was moved or its mesh edited since the last write-back."""
    for entry in entries:
        obj = bpy.data.objects.get(entry.target)
        if obj is None or entry.last_written is None:
            continue
        if entry.kind == "RIGID" and entry.own_animation:
            continue  # its animation moves it on every frame change, not the user
        if entry.kind == "RIGID":
            current = mesh_io.matrix_to_numpy(obj.matrix_world)
            if not np.allclose(current, entry.last_written, rtol=MOVED_RTOL, atol=MOVED_ATOL):
                return True
        elif entry.kind == "CLOTH":
            mesh = mesh_of(obj)
            if len(mesh.vertices) != len(entry.last_written):
                return True
            current32 = mesh_io.read_positions(mesh).astype(np.float32)
            if not np.array_equal(current32, entry.last_written):
                return True
    return False


def adopt_user_edits(entries: list[Entry]) -> None:
    """The user changed objects at the start frame: their current pose becomes the rest pose."""
    for entry in entries:
        obj = bpy.data.objects.get(entry.target)
        if obj is None:
            continue
        if entry.kind == "RIGID":
            object_settings(obj).has_rest = False
            runtime.REST_MEMORY.pop(entry.name, None)
        elif entry.kind == "CLOTH":
            mesh_io.remove_attribute(mesh_of(obj), REST_ATTRIBUTE)


def restore_objects(objects: list[bpy.types.Object]) -> None:
    """Put objects back as they were before the simulation moved them and forget the rest data.

    A rigid object gets back exactly the location/rotation/scale the user typed.
    """
    for obj in objects:
        s = object_settings(obj)
        if s.has_rest:
            if s.rest_rotation_mode:
                mode, values = rest_transform_values(obj)
                now = parent_frame(obj) @ basis_matrix(obj, mode, values)
                obj.matrix_world = mesh_io.numpy_to_matrix(now)  # right at once, before the depsgraph runs
                if mode == obj.rotation_mode:
                    set_transform_values(obj, mode, values)
            else:  # rest data of an older version: a world matrix
                obj.matrix_world = mesh_io.numpy_to_matrix(np.asarray(s.rest_matrix).reshape(4, 4))
            s.has_rest = False
        if isinstance(obj.data, bpy.types.Mesh) and obj.data.attributes.get(cloth_result.SIMULATED_ATTRIBUTE):
            cloth_result.show_simulated(obj, None)  # a deformed cloth: its deformed mesh shows again
        if isinstance(obj.data, bpy.types.Mesh):
            rest = mesh_io.read_float_vector_attribute(obj.data, REST_ATTRIBUTE)
            if rest is not None:
                mesh_io.write_positions(obj.data, rest)
            mesh_io.remove_attribute(obj.data, REST_ATTRIBUTE)


# ------------------------------------------------------------------------------- around the reader
def prepare_build(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    """Before the reader builds the World: what it reads from must be there.

    A deformed cloth (shape keys, deforming modifiers) gets its result modifier and shows its deformed
    mesh (the reader reads the deformed shape of the start frame from the modifier); a cloth no longer
    deformed loses it (back to writing into the mesh). A constrained rigid body's object takes its
    animation's typed transform (:func:`show_animation_poses`)."""
    changed = False
    posed: list[tuple[bpy.types.Object, tuple[str, list[float]] | None]] = []
    for obj in scene_reader.simulated_objects(scene):
        role = object_settings(obj).role
        if obj.type != "MESH":
            continue
        if role == "CLOTH" and cloth_result.is_deformed(obj):
            changed = cloth_result.ensure_result_modifier(obj) or changed
            cloth_result.show_simulated(obj, None)
        elif role == "CLOTH":
            cloth_result.remove_result(obj)
            if object_settings(obj).tear_strain > 0.0:  # tearing: triangles with their own vertices
                changed = tear_mesh.unweld(obj) or changed
        elif role == "RIGID":
            posed.append((obj, None))
    if changed:
        depsgraph.update()
    _show_poses(posed)


def show_fills(entries: list[Entry], radius: float) -> None:
    """After the reader built the World: each granular, fluid or inflow source's particle object shows
    the points it was filled with (made if it has none), as its rest state, and its entry learns it.

    Grains become a ``<source> Grains`` object (:mod:`.granular`), liquids a ``<source> Fluid`` object
    with its liquid surface (:mod:`.fluids`; inactive slots parked). ``radius``: the particle radius, m."""
    for entry in entries:
        source = bpy.data.objects.get(entry.name)
        if entry.fill is None or source is None:
            continue
        points, active = entry.fill
        target = object_settings(source).particle_object
        grain_radius = radius if entry.radii is None else entry.radii  # its own sizes (blender/sizes.py)
        if entry.kind in ("GRANULAR", "ROPE", "HAIR") and target is None:
            target = granular.create_particle_object(source, points, grain_radius)
        elif entry.kind in ("GRANULAR", "ROPE", "HAIR"):
            granular.update_particle_object(target, points, grain_radius)
        elif target is None:
            target = fluids.create_fluid_object(source, entry.kind, points, active, radius)
        else:
            fluids.set_points(target, points, active, radius, bool(object_settings(source).surface_smooth))
            fluids.apply_surface(source)  # the source's material now
        mesh = mesh_of(target)
        mesh_io.remove_attribute(mesh, REST_ATTRIBUTE)  # the fresh fill is the rest state
        entry.target = target.name
        entry.rest_local = mesh_io.read_positions(mesh)
        entry.fill = None
        if entry.kind in fluids.FLUID_ROLES:
            _show_whitewater(source, entry, radius)


def _show_whitewater(source: bpy.types.Object, entry: Entry, radius: float) -> None:
    """A liquid's whitewater object: made or resized when Whitewater is on, removed when it is off."""
    settings = object_settings(source)
    if entry.whitewater is not None:
        whitewater.write(
            whitewater.ensure_object(source, entry.whitewater.capacity, radius), entry.whitewater
        )
    elif settings.whitewater_object is not None:
        whitewater.remove_object(source)


def show_animation_poses(entries: list[Entry]) -> None:
    """Before a frame's read: every kinematic body with Animated on whose object has constraints shows
    its animation's typed transform (animated channels as Blender evaluated them, the others as at the
    start frame), so Blender's evaluation places it as its animation and constraints do."""
    posed: list[tuple[bpy.types.Object, tuple[str, list[float]] | None]] = []
    for entry in entries:
        if entry.kind != "RIGID" or not entry.kinematic or entry.rest_matrix is None:
            continue
        obj = bpy.data.objects.get(entry.name)
        if obj is not None and bool(object_settings(obj).animated):
            posed.append((obj, entry.rest_values))
    _show_poses(posed)


def _show_poses(objects: Iterable[tuple[bpy.types.Object, tuple[str, list[float]] | None]]) -> None:
    """Give each constrained object with an animation of its own its animation's typed transform
    (``rest_values``: the typed transform at the start frame; None: the stored rest transform), then
    evaluate the view layer once."""
    layer = bpy.context.view_layer
    written = False
    for obj, rest_values in objects:
        if not len(obj.constraints) or not own_animation(obj):
            continue
        mode, values = animation_values(obj, rest_values)
        if mode == obj.rotation_mode and layer is not None:
            set_transform_values(obj, mode, values)
            written = True
    if written:
        assert layer is not None
        layer.update()
