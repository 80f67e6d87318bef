# SPDX-License-Identifier: GPL-3.0-or-later
"""Which object a simulated identity belongs to, after duplicating and deleting objects.

Blender's Duplicate (Shift+D), Duplicate Linked (Alt+D) and ``obj.copy()`` copy an object's custom
properties verbatim, so a copy arrives with the original's identity: its cache id
(``object.unified_particles_bake.uid``), its granular source's particle object (``particle_object``,
whose back-pointer ``source_object`` still names the original), and, for Alt+D and ``obj.copy()``, the
original's mesh datablock. Deleting one half of a granular pair leaves the other half behind.

:func:`repair` finds all of that and makes every simulated object its own again:

* a granular source whose particle object points back at another source is a copy: it gets its own
  particle object (a copy of the original's, refilled where the copy is at the next frame change) and a
  new cache id;
* a particle object whose source points at another particle object is a copy of the grains (the user
  duplicated the visible grains): it gets its own source (a hidden copy of the original's source);
* a particle object the user moved (the source is hidden, so one moves the grains) moves its source
  with it and goes back to the identity transform; the scene re-simulates from there;
* objects sharing a cache id: the original keeps it (see :func:`owner_key`), every copy gets a new one;
* an object the simulation writes into (cloth, particle objects) must be the only user of its mesh: a
  copy sharing it gets its own copy of the mesh (what Make Cloth also does: :func:`own_mesh`);
* a particle object whose source was deleted (or a source whose particle object was deleted) is removed
  with it; another source pointing at those grains adopts them instead; the liquid of a deleted Inflow
  stays with what it poured, and the inflow is kept out of the scene, pouring no more
  (``fluids.keep_deleted_inflow``);
* scenes sharing a scene id (Scene > New > Full Copy): the original keeps its id and bake, a copy gets a
  new id and no bake (:func:`scene_owner_key` decides, as :func:`owner_key` does for objects);
* an object carrying a bake that is not its scene's (appended from a baked file, copied from a baked
  scene) is freed as Free Bake frees it, and gets a new cache id (never while a bake runs).

"The original" is deterministic: for granular pairs, the source the grains point back at; otherwise
the object whose name matches the name recorded when its id was given (``uid_owner``), then the first
in natural name order ("Cube" before "Cube.001", "Cube.9" before "Cube.10").

It runs from the depsgraph update handler (right after the duplicate or delete), from the frame
handler before the scene is read, and when a bake begins. It is idempotent and cheap when nothing is
wrong. Imports ``bake_marks`` (Free Bake of one object, and of a copy), ``fluids`` (deleted inflows),
``granular``, ``liquid_surface``
(its modifier tells a liquid in messages), ``runtime``,
``mesh_io``, ``cachefiles`` and ``rna``; not a registered module.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix

from . import cachefiles as cf
from . import fluids, granular, liquid_surface, mesh_io, runtime
from .bake_marks import free_copy, free_object
from .rna import object_bake, object_settings, scene_bake, scene_settings

_GUARD: list[bool] = [False]
# Counts of objects, meshes and objects in scenes at the last repair from the depsgraph handler: a
# duplicate, a copy linked into a scene or a delete (which may only unlink) changes one of them.
_LAST_COUNTS: list[tuple[int, ...]] = [()]

_DIGITS = re.compile(r"(\d+)")
# A particle object whose transform differs from the identity by more than this was moved by the user.
_MOVED_TOLERANCE = 1e-6


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort key of a name with its numbers compared as numbers ("Cube.9" before "Cube.10")."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


# Objects linked into a scene (``as_pointer()``), taken at the start of each step of a repair:
# ``Object.users_scene`` walks every collection, far too slow to ask for each object.
_SCENE_OBJECTS: set[int] = set()


def _local_objects() -> list[bpy.types.Object]:
    """Objects of this file (linked library data cannot be changed, and is not this file's to repair)."""
    return [o for o in bpy.data.objects if o.library is None]


def _scan_scenes() -> None:
    _SCENE_OBJECTS.clear()
    for scene in bpy.data.scenes:
        _SCENE_OBJECTS.update(o.as_pointer() for o in scene.objects)


def _in_scene(obj: bpy.types.Object | None) -> bool:
    return obj is not None and obj.as_pointer() in _SCENE_OBJECTS


def is_particle_object(obj: bpy.types.Object) -> bool:
    """A granular source's particle object (also once its source is gone)."""
    if object_settings(obj).source_object is not None:
        return True
    return any(
        m.type == "NODES"
        and isinstance(m, bpy.types.NodesModifier)
        and m.node_group is not None
        and m.node_group.name.endswith(granular.NODE_GROUP_SUFFIX)
        for m in obj.modifiers
    )


def _is_writer(obj: bpy.types.Object) -> bool:
    """The simulation writes vertex positions into this object's mesh."""
    return obj.type == "MESH" and (object_settings(obj).role in ("CLOTH", "SOFT") or is_particle_object(obj))


def owner_key(obj: bpy.types.Object) -> tuple[Any, ...]:
    """Order of objects sharing an identity: the first is the original."""
    recorded = str(object_bake(obj).uid_owner)
    return (recorded != obj.name, natural_key(obj.name))


def new_identity(obj: bpy.types.Object) -> None:
    """Give ``obj`` a fresh cache id, recorded as its own."""
    settings = object_bake(obj)
    settings.uid = cf.new_uid()
    settings.uid_owner = obj.name


def object_users(mesh: bpy.types.Mesh) -> list[bpy.types.Object]:
    return [o for o in bpy.data.objects if o.data == mesh]


def own_mesh(obj: bpy.types.Object) -> bool:
    """Give ``obj`` its own copy of its mesh if other objects use it too; True if it did."""
    mesh = obj.data
    if not isinstance(mesh, bpy.types.Mesh) or len(object_users(mesh)) <= 1:
        return False
    obj.data = mesh.copy()
    return True


@contextlib.contextmanager
def _guard() -> Iterator[bool]:
    """True inside if this is the outermost repair (a repair never re-enters itself)."""
    if _GUARD[0]:
        yield False
        return
    _GUARD[0] = True
    try:
        yield True
    finally:
        _GUARD[0] = False


def repair_if_changed() -> list[str]:
    """:func:`repair` if objects or meshes were added or removed since the last call (the depsgraph
    handler runs on every change, even a mouse move while grabbing: this keeps it cheap)."""
    if _counts() == _LAST_COUNTS[0]:
        return []
    try:
        return repair()
    finally:  # also after a failure: it is reported once, not at every update
        _LAST_COUNTS[0] = _counts()


def repair_scene(scene: bpy.types.Scene) -> list[str]:
    """Before ``scene`` is read (the frame handler): :func:`repair_if_changed`, or, when nothing was added
    or removed, :func:`repair` only if one of the scene's simulated objects needs it (a cloth mesh with
    other users, grains that were moved or do not point back): one pass over the scene's objects, like
    the simulation's own."""
    if _counts() != _LAST_COUNTS[0]:
        return repair_if_changed()
    for obj in scene.objects:
        settings = object_settings(obj)
        role = settings.role
        if role in ("CLOTH", "SOFT") and obj.data is not None and obj.data.users > 1:
            return repair()
        if role in granular.PARTICLE_ROLES:
            grains = settings.particle_object
            if grains is None or object_settings(grains).source_object != obj:
                return repair()
            if grains.data is not None and grains.data.users > 1:
                return repair()
            if grains.parent is None and not object_bake(grains).baked_output and _moved(grains):
                return repair()
    return []


def _moved(grains: bpy.types.Object) -> bool:
    basis = grains.matrix_basis
    return any(
        abs(basis[i][j] - (1.0 if i == j else 0.0)) > _MOVED_TOLERANCE for i in range(4) for j in range(4)
    )


def _counts() -> tuple[int, ...]:
    return (len(bpy.data.objects), len(bpy.data.meshes), *(len(s.objects) for s in bpy.data.scenes))


def forget() -> None:
    """A new file: the next depsgraph update checks it."""
    _LAST_COUNTS[0] = ()


def repair() -> list[str]:
    """Make every simulated object's identity its own (see the module doc); what was done, for a user."""
    with _guard() as outermost:
        if not outermost:
            return []
        messages: list[str] = []
        copies: set[str] = set()  # names of the objects found to be copies
        try:
            messages += _separate_scenes()
            _scan_scenes()
            messages += _remove_orphans()
            _scan_scenes()
            messages += _separate_granular_copies(copies)
            _scan_scenes()
            _follow_moved_grains()
            messages += _separate_uids(copies)
            messages += _separate_meshes(copies)
            messages += _unbake_copies(copies)
            messages += _unbake_foreign()
        finally:
            _SCENE_OBJECTS.clear()
        return messages


# ------------------------------------------------------------------------------------- scene copies
def scene_owner_key(scene: bpy.types.Scene) -> tuple[Any, ...]:
    """Order of scenes sharing an id: the first is the original (as :func:`owner_key` for objects)."""
    return (str(scene_bake(scene).uid_owner) != scene.name, natural_key(scene.name))


def _separate_scenes() -> list[str]:
    """Scenes sharing a scene id (Scene > New > Full Copy, Linked Copy, Copy Settings copy the scene's bake
    state verbatim): the original keeps its id and its bake; every copy gets a new id and no bake (a bake
    or Free Bake of the copy would otherwise delete the original's files). The copy's objects, copies of
    baked objects, are unbaked by :func:`_unbake_copies` and :func:`_unbake_foreign`."""
    messages: list[str] = []
    groups: dict[str, list[bpy.types.Scene]] = {}
    for scene in bpy.data.scenes:
        uid = str(scene_bake(scene).uid)
        if uid and scene.library is None:
            groups.setdefault(uid, []).append(scene)
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=scene_owner_key)
        original = members[0]
        if scene_bake(original).uid_owner != original.name:
            scene_bake(original).uid_owner = original.name  # renamed since: record the name now
        for copy in members[1:]:
            state = scene_bake(copy)
            state.uid = cf.new_uid()
            state.uid_owner = copy.name
            state.is_baking = False  # a copy made while the original bakes is not being baked
            if not state.baked and not state.bake_id:
                continue
            state.baked = False
            state.settings_hash = ""
            state.bake_id = ""
            state.cache_folder = ""
            state.cache_folder_absolute = ""
            state.status = ""
            state.error = ""
            scene_settings(copy).is_baked = False
            runtime.invalidate(copy, None)
            messages.append(
                f"Scene '{copy.name}' is a copy of '{original.name}': it is not baked (its objects simulate "
                "live); bake it to give it its own bake"
            )
    return messages


def _drawn(particle_object: bpy.types.Object | None) -> tuple[str, str]:
    """What a particle object draws and what its source is, for messages: a liquid (it has the Liquid
    Surface modifier) or grains (issue 25: messages about liquids spoke of grains)."""
    liquid = particle_object is not None and liquid_surface.MODIFIER_NAME in particle_object.modifiers
    return ("liquid", "liquid's source object") if liquid else ("grains", "granular object")


# ------------------------------------------------------------------------------------------ deleted
def _remove_orphans() -> list[str]:
    """Grains whose source was deleted, and sources whose grains were deleted, go with them.

    Deleting an object in Blender only unlinks it when something else still points at it, and the two
    halves of a granular pair point at each other: the deleted half stays in ``bpy.data``, outside every
    scene. Another source in a scene pointing at orphaned grains adopts them instead."""
    messages: list[str] = []
    for grains in [o for o in _local_objects() if is_particle_object(o)]:
        source = object_settings(grains).source_object
        if _in_scene(grains) and _in_scene(source):
            continue
        if _in_scene(grains) and fluids.is_kept_inflow(source, grains):
            kept = fluids.keep_deleted_inflow(source, grains)  # a deleted inflow: what it poured stays
            if kept is not None:
                messages += kept
                continue
        if _in_scene(grains):
            claimants = sorted(
                (
                    o
                    for o in _local_objects()
                    if o != grains
                    and _in_scene(o)
                    and object_settings(o).particle_object == grains
                    and object_settings(o).role in granular.PARTICLE_ROLES
                ),
                key=owner_key,
            )
            if claimants:
                object_settings(grains).source_object = claimants[0]
                continue
            messages.append(f"'{grains.name}' removed: its {_drawn(grains)[1]} was deleted")
            granular.delete_particle_object(grains)
        elif source is not None and object_settings(source).particle_object == grains:
            # The visible grains were deleted: the granular object they drew goes with them.
            name = grains.name
            granular.delete_particle_object(grains)
            object_settings(source).particle_object = None
            if _in_scene(source):
                messages.append(f"'{source.name}' removed: its grains '{name}' were deleted")
                bpy.data.objects.remove(source)
            elif source.users == 0:
                bpy.data.objects.remove(source)
        elif not grains.users:
            granular.delete_particle_object(grains)
    # A deleted source that is still in bpy.data (its grains pointed at it) and nothing uses now.
    for source in [o for o in _local_objects() if not _in_scene(o) and o.users == 0]:
        if object_settings(source).role in granular.PARTICLE_ROLES:
            bpy.data.objects.remove(source)
    return messages


# ------------------------------------------------------------------------------------------- copies
def _link_like(obj: bpy.types.Object, like: bpy.types.Object) -> None:
    for collection in like.users_collection:
        if obj.name not in collection.objects:
            collection.objects.link(obj)


def _hide(obj: bpy.types.Object) -> None:
    obj.hide_render = True
    with contextlib.suppress(RuntimeError):  # not in the current view layer
        obj.hide_set(True)


def _separate_granular_copies(copies: set[str]) -> list[str]:
    messages: list[str] = []
    objects = [o for o in _local_objects() if _in_scene(o)]
    # A copied source: its grains point back at another source.
    for source in sorted(objects, key=lambda o: natural_key(o.name)):
        settings = object_settings(source)
        grains = settings.particle_object
        if grains is None or settings.role not in granular.PARTICLE_ROLES:
            continue
        original = object_settings(grains).source_object
        if original is None or original == source or not _in_scene(original):
            continue
        copy = grains.copy()
        if isinstance(grains.data, bpy.types.Mesh):
            copy.data = grains.data.copy()
            copy.data.name = granular.particle_object_name(source)
        copy.name = granular.particle_object_name(source)
        _link_like(copy, source)
        object_settings(copy).source_object = source
        settings.particle_object = copy
        new_identity(source)
        object_bake(copy).uid = object_bake(source).uid
        copies.update((source.name, copy.name))
        # The grains are refilled from the copy where it is at the next frame change.
        for scene in source.users_scene:
            runtime.invalidate(scene, None)
        messages.append(
            f"'{source.name}' is a copy of '{original.name}': it now has its own "
            f"{_drawn(copy)[0]} '{copy.name}'"
        )
    # Copied grains: their source points at other grains.
    for grains in sorted(objects, key=lambda o: natural_key(o.name)):
        if not is_particle_object(grains):
            continue
        source = object_settings(grains).source_object
        if source is None or not _in_scene(source):
            continue
        owned = object_settings(source).particle_object
        if owned == grains:
            continue
        if owned is None or not _in_scene(owned):
            object_settings(source).particle_object = grains  # the source lost its own: adopt these
            continue
        new_source = source.copy()
        if isinstance(source.data, bpy.types.Mesh):
            new_source.data = source.data.copy()
        _link_like(new_source, grains)
        new_source.matrix_world = source.matrix_world  # moved with the grains by _follow_moved_grains
        object_settings(new_source).particle_object = grains
        object_settings(grains).source_object = new_source
        new_identity(new_source)
        object_bake(grains).uid = object_bake(new_source).uid
        copies.update((grains.name, new_source.name))
        _hide(new_source)
        messages.append(
            f"'{grains.name}' is a copy of '{owned.name}': it now has its own {_drawn(grains)[1]} "
            f"'{new_source.name}'"
        )
    return messages


def _follow_moved_grains() -> None:
    """A granular object is moved by moving its grains (the source is hidden): the source follows.

    A particle object is made at the identity transform (its points are in world space). If the user
    moved it (or duplicated and moved it), the source takes that move, the grains go back to identity
    with their points moved instead (what the viewport shows does not change), and the scene re-simulates
    so the grains are filled where the source now is. Baked grains are left alone (their cache plays in
    the particle object's space)."""
    identity = Matrix.Identity(4)
    for grains in _local_objects():
        source = object_settings(grains).source_object
        if source is None or object_settings(source).particle_object != grains or grains.parent is not None:
            continue
        if not _in_scene(grains) or object_bake(grains).baked_output:
            continue
        if not _moved(grains):
            continue
        basis = grains.matrix_basis.copy()
        source.matrix_world = basis @ source.matrix_world
        if isinstance(grains.data, bpy.types.Mesh):
            mesh = grains.data
            points = mesh_io.read_positions(mesh)
            mesh_io.write_positions(
                mesh, mesh_io.transform_points(mesh_io.matrix_to_numpy(basis), points.astype(np.float64))
            )
            mesh_io.remove_attribute(mesh, mesh_io.REST_ATTRIBUTE)
        grains.matrix_basis = identity
        grains.matrix_world = identity  # now, not at the next evaluation: the refill reads it
        for scene in grains.users_scene:
            runtime.invalidate(scene, None)


def _separate_uids(copies: set[str]) -> list[str]:
    """Objects sharing a cache id: the original keeps it, every copy gets a new one."""
    messages: list[str] = []
    groups: dict[str, list[bpy.types.Object]] = {}
    for obj in _local_objects():
        uid = str(object_bake(obj).uid)
        if uid and _in_scene(obj) and object_settings(obj).role != "NONE":
            groups.setdefault(uid, []).append(obj)
    for members in groups.values():
        members.sort(key=owner_key)
        original = members[0]
        if object_bake(original).uid_owner != original.name:
            object_bake(original).uid_owner = original.name  # renamed since: record the name now
        for copy in members[1:]:
            new_identity(copy)
            copies.add(copy.name)
            grains = object_settings(copy).particle_object
            if grains is not None:
                object_bake(grains).uid = object_bake(copy).uid
                copies.add(grains.name)  # its output (a baked Mesh Cache) was the original's too
            messages.append(f"'{copy.name}' is a copy of '{original.name}': it now has its own cache id")
    return messages


def _separate_meshes(copies: set[str]) -> list[str]:
    """An object the simulation writes into must be the only user of its mesh."""
    messages: list[str] = []
    users: dict[int, list[bpy.types.Object]] = {}
    for obj in _local_objects():
        if isinstance(obj.data, bpy.types.Mesh):
            users.setdefault(obj.data.as_pointer(), []).append(obj)
    for members in users.values():
        writers = [o for o in members if _in_scene(o) and _is_writer(o)]
        if len(members) <= 1 or not writers:
            continue
        writers.sort(key=lambda o: (o.name in copies, owner_key(o)))
        keeper = writers[0]
        for obj in writers[1:]:
            copies.add(obj.name)
            mesh = obj.data
            assert isinstance(mesh, bpy.types.Mesh)
            obj.data = mesh.copy()
            messages.append(
                f"'{obj.name}' shared its mesh '{mesh.name}' with '{keeper.name}': it now has its own "
                f"copy '{obj.data.name}'"
            )
    return messages


def _unbake_copies(copies: set[str]) -> list[str]:
    """A copy of a baked object starts unbaked: its outputs were the original's (a shared action would pin
    it on top of the original, and Free Bake would put it back where the original was). The scene's bake
    is Outdated (it has a new object): bake again to bake the copy too."""
    messages: list[str] = []
    for name in sorted(copies):
        obj = bpy.data.objects.get(name)
        if obj is None or not object_bake(obj).baked_output:
            continue
        free_copy(obj)
        messages.append(f"'{name}' is a copy of a baked object: bake again to bake it too")
    return messages


def _unbake_foreign() -> list[str]:
    """An object carrying a bake that is not its scene's (appended from a baked file, or its scene's bake
    was dropped because the scene is a copy) would play that cache while the live simulation runs under it:
    it is freed, exactly as Free Bake frees it, and gets a new cache id (the files stay the other bake's).
    Never while a bake runs (its objects are between two bakes then)."""
    scenes = [s for s in bpy.data.scenes if s.library is None]
    if any(scene_bake(s).is_baking for s in scenes):
        return []
    bakes: dict[int, list[str | None]] = {}  # object -> the bake ids of its scenes (None: not baked)
    for scene in scenes:
        state = scene_bake(scene)
        bake_id = str(state.bake_id) if state.baked else None
        for obj in scene.objects:
            bakes.setdefault(obj.as_pointer(), []).append(bake_id)
    messages: list[str] = []
    for obj in _local_objects():
        settings = object_bake(obj)
        ids = bakes.get(obj.as_pointer())
        if not settings.baked_output or ids is None:
            continue
        own = str(settings.bake_id)
        if any(state_id is not None and (not own or not state_id or own == state_id) for state_id in ids):
            continue  # its scene's bake (or one made before objects recorded their bake's id)
        free_object(obj)
        source = object_settings(obj).source_object
        if source is not None and object_settings(source).particle_object == obj:
            new_identity(source)
            settings.uid = object_bake(source).uid
        else:
            new_identity(obj)
        for scene in obj.users_scene:
            runtime.invalidate(scene, None)
        messages.append(f"'{obj.name}' carried a bake of another file or scene: it simulates here now")
    return messages
