"""Duplicating and deleting simulated objects, as users do it: Shift+D, Alt+D, ``obj.copy()``, X.

A copy arrives with the original's identity (cache id, granular particle object, for Alt+D the mesh);
``identity.repair`` (run by the depsgraph handler right after the operator, by the frame handler before the
scene is read, and by the bake) gives it its own. Also: a failed bake puts back exactly what it found,
Free Bake removes the files of objects deleted since the bake, and deleting either half of a granular
object removes the other half.
"""

from __future__ import annotations

import errno
import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import PACKAGE
from .helpers import add_cube, add_plane, run_op, select_only, small_scene, view3d_override, world_positions

FRAMES = 6


def module(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.blender.{name}")


def duplicate(bpy: ModuleType, *objects: Any, linked: bool = False, offset: Any = (0, 0, 0)) -> list[Any]:
    """Shift+D (or Alt+D) and move by ``offset``, as in the 3D View; returns the new objects.

    Shift+D is Duplicate followed by an interactive Move. Headless, the Move (``transform.translate``, also
    inside ``duplicate_move``) crashes bpy 4.2, so the copies selected after Duplicate are moved by setting
    their location, as the Move does once the depsgraph handler has seen the duplicate."""
    before = set(bpy.data.objects)
    select_only(bpy, *objects)
    with bpy.context.temp_override(**view3d_override(bpy)):
        assert bpy.ops.object.duplicate(linked=linked) == {"FINISHED"}
    for obj in bpy.context.selected_objects:
        obj.location = [a + b for a, b in zip(obj.location, offset, strict=True)]
    bpy.context.view_layer.update()
    return sorted(set(bpy.data.objects) - before, key=lambda o: o.name)


def delete(bpy: ModuleType, *objects: Any) -> None:
    """X > Delete in the 3D View."""
    select_only(bpy, *objects)
    with bpy.context.temp_override(**view3d_override(bpy)):
        assert bpy.ops.object.delete() == {"FINISHED"}


def add_grid(bpy: ModuleType, location: tuple[float, float, float]) -> Any:
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=location)
    return bpy.context.active_object


def granular_scene(bpy: ModuleType) -> tuple[Any, Any, Any]:
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    ground = add_plane(bpy, size=20.0)
    run_op(bpy, "make_collider", ground)
    source = add_cube(bpy, 0.6, (0.0, 0.0, 0.8))
    assert run_op(bpy, "make_granular", source) == {"FINISHED"}
    grains = source.unified_particles.particle_object
    assert grains is not None
    return scene, source, grains


def pairs(bpy: ModuleType) -> dict[str, str]:
    """Granular source name -> its particle object's name, checking both pointers agree."""
    out = {}
    for obj in bpy.data.objects:
        grains = obj.unified_particles.particle_object
        if grains is not None:
            assert grains.unified_particles.source_object == obj, (obj.name, grains.name)
            out[obj.name] = grains.name
    return out


def uids(objects: list[Any]) -> list[str]:
    return [o.unified_particles_bake.uid for o in objects]


def cache_folder(scene: Any) -> Path:
    return Path(module("bake").cache_folder(scene)[0])


def mesh_cache_modifiers(obj: Any) -> list[Any]:
    return [m for m in obj.modifiers if m.type == "MESH_CACHE"]


# ------------------------------------------------------------------------------------------ item 1
@pytest.mark.parametrize("linked", [False, True], ids=["shift_d", "alt_d"])
def test_duplicated_granular_object_gets_its_own_grains_ids_and_bake(
    bpy_clean: ModuleType, tmp_path: Path, linked: bool
) -> None:
    bpy = bpy_clean
    scene, source, grains = granular_scene(bpy)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "dup.blend"))  # gives the cache ids
    # The user sees only the grains: duplicating them duplicates the granular object.
    new = duplicate(bpy, grains, linked=linked, offset=(3.0, 0.0, 0.0))
    assert len(new) == 2, new  # the grains the user duplicated, and the hidden source made for them
    copy_grains = next(o for o in new if o.unified_particles.source_object is not None)
    found = pairs(bpy)
    assert found[source.name] == grains.name
    copy_source = copy_grains.unified_particles.source_object
    assert copy_source is not None
    assert copy_source != source
    assert found[copy_source.name] == copy_grains.name
    assert copy_grains.data != grains.data, "the copy's grains have their own mesh"
    assert copy_source.unified_particles.role == "GRANULAR"
    assert copy_source.hide_render
    assert not copy_source.visible_get()
    assert len(set(uids([source, copy_source]))) == 2
    assert all(uids([source, copy_source]))

    # Live: two piles, each where its object is.
    scene.frame_set(1)
    scene.frame_set(FRAMES)
    assert scene.unified_particles.last_error == ""
    x_original = world_positions(grains)[:, 0].mean()
    x_copy = world_positions(copy_grains)[:, 0].mean()
    assert abs(x_original) < 0.5, x_original
    assert abs(x_copy - 3.0) < 0.5, x_copy

    # Bake: one Mesh Cache modifier on each particle object, one cache file each.
    scene.frame_set(1)
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert len(mesh_cache_modifiers(grains)) == 1
    assert len(mesh_cache_modifiers(copy_grains)) == 1
    assert mesh_cache_modifiers(grains)[0].filepath != mesh_cache_modifiers(copy_grains)[0].filepath
    assert len(list(cache_folder(scene).glob("*.pc2"))) == 2
    assert run_op(bpy, "free_bake") == {"FINISHED"}

    # Clear on the copy removes the copy's grains only.
    assert run_op(bpy, "clear", copy_grains) == {"FINISHED"}
    assert grains.name in bpy.data.objects
    assert pairs(bpy) == {source.name: grains.name}


def test_duplicated_granular_source_and_python_copy_get_their_own_grains(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene, source, grains = granular_scene(bpy)
    source.hide_set(False)  # Alt+H, then Shift+D on the source itself
    copy_source = duplicate(bpy, source, offset=(0.0, 3.0, 0.0))[0]
    copy_grains = copy_source.unified_particles.particle_object
    assert copy_grains is not None
    assert copy_grains != grains
    assert pairs(bpy) == {source.name: grains.name, copy_source.name: copy_grains.name}
    # A copy made in Python, linked into the scene.
    py_copy = source.copy()
    py_copy.location = (0.0, -3.0, 0.8)
    scene.collection.objects.link(py_copy)
    scene.frame_set(1)  # the frame handler reads the scene: the copy is sorted out first
    found = pairs(bpy)
    assert len(found) == 3
    assert len(set(found.values())) == 3
    assert len(set(uids([source, copy_source, py_copy]))) == 3
    scene.frame_set(FRAMES)
    assert scene.unified_particles.last_error == ""
    y = {name: world_positions(bpy.data.objects[g])[:, 1].mean() for name, g in found.items()}
    assert abs(y[source.name]) < 0.5, y
    assert abs(y[copy_source.name] - 3.0) < 0.5, y
    assert abs(y[py_copy.name] + 3.0) < 0.5, y

    # Clear on a copy made a moment ago (no depsgraph update in between) leaves the original's grains.
    scene.frame_set(1)
    fresh = source.copy()
    scene.collection.objects.link(fresh)
    assert fresh.unified_particles.particle_object == grains
    assert run_op(bpy, "clear", fresh) == {"FINISHED"}
    assert grains.name in bpy.data.objects
    assert pairs(bpy)[source.name] == grains.name
    assert fresh.unified_particles.role == "NONE"


def test_copies_keep_the_original_deterministically(bpy_clean: ModuleType) -> None:
    """The original keeps its cache id, whatever the copies are called."""
    bpy = bpy_clean
    small_scene(bpy)
    cube = add_cube(bpy, 0.4, (0.0, 0.0, 1.0))
    run_op(bpy, "make_rigid", cube)
    module("bake").ensure_uids(bpy.context.scene)
    uid = cube.unified_particles_bake.uid
    copy = cube.copy()
    copy.name = "Aaa copy"  # sorts before the original
    bpy.context.scene.collection.objects.link(copy)
    bpy.context.view_layer.update()  # the depsgraph handler runs
    assert cube.unified_particles_bake.uid == uid
    assert copy.unified_particles_bake.uid not in ("", uid)


def test_copy_of_a_baked_object_starts_unbaked(bpy_clean: ModuleType, tmp_path: Path) -> None:
    """A copy does not keep playing (or pinned by) the original's keyframes, shape keys or point cache."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    ground = add_plane(bpy, size=20.0)
    run_op(bpy, "make_collider", ground)
    rigid = add_cube(bpy, 0.4, (0.0, 0.0, 1.0))
    run_op(bpy, "make_rigid", rigid)
    cloth = add_grid(bpy, (2.0, 0.0, 1.0))
    run_op(bpy, "make_cloth", cloth)
    cloth.unified_particles_bake.cloth_output = "SHAPE_KEYS"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "baked.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    scene.frame_set(1)
    rigid_rest = [tuple(r) for r in rigid.matrix_world]
    copies = [duplicate(bpy, rigid, offset=(0.0, 3.0, 0.0))[0], duplicate(bpy, cloth, linked=True)[0]]
    for copy in copies:
        assert copy.unified_particles_bake.baked_output == ""
        assert not mesh_cache_modifiers(copy)
        assert copy.animation_data is None or copy.animation_data.action is None
        assert copy.data.shape_keys is None
    assert rigid.unified_particles_bake.baked_output == "KEYFRAMES"
    assert cloth.data.shape_keys is not None
    assert abs(copies[0].matrix_world[1][3] - 3.0) < 1e-6, "the copy moves where the user puts it"
    assert scene.unified_particles_bake.outdated
    assert run_op(bpy, "free_bake") == {"FINISHED"}
    assert [tuple(r) for r in rigid.matrix_world] == rigid_rest
    assert abs(copies[0].matrix_world[1][3] - 3.0) < 1e-6, "Free Bake leaves the copy where it is"
    folder = cache_folder(scene)
    assert not folder.exists() or not any(folder.iterdir())


# ------------------------------------------------------------------------------------------ item 2
def test_linked_duplicate_cloth_gets_its_own_mesh(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    cloth = add_grid(bpy, (0.0, 0.0, 1.0))
    assert run_op(bpy, "make_cloth", cloth) == {"FINISHED"}
    copy = duplicate(bpy, cloth, linked=True, offset=(3.0, 0.0, 0.0))[0]
    assert copy.data != cloth.data
    assert copy.data.users == 1
    assert cloth.data.users == 1
    assert copy.unified_particles.role == "CLOTH"
    scene.frame_set(1)
    rest_cloth, rest_copy = world_positions(cloth), world_positions(copy)
    scene.frame_set(FRAMES)
    assert scene.unified_particles.last_error == ""
    fall_cloth = rest_cloth[:, 2].mean() - world_positions(cloth)[:, 2].mean()
    fall_copy = rest_copy[:, 2].mean() - world_positions(copy)[:, 2].mean()
    assert fall_cloth > 0.01
    assert abs(fall_copy - fall_cloth) < 1e-4
    np.testing.assert_allclose(
        world_positions(copy)[:, 0].mean() - world_positions(cloth)[:, 0].mean(), 3.0, atol=1e-4
    )

    # Make Cloth on a mesh shared with another object: the cloth gets its own copy, the other keeps it.
    plain = add_grid(bpy, (0.0, 3.0, 1.0))
    twin = duplicate(bpy, plain, linked=True, offset=(3.0, 0.0, 0.0))[0]
    shared = plain.data
    assert twin.data == shared
    assert run_op(bpy, "make_cloth", plain) == {"FINISHED"}
    assert twin.data == shared
    assert plain.data != shared
    assert plain.data.users == 1


def test_cloths_made_to_share_a_mesh_bake_to_shape_keys(bpy_clean: ModuleType, tmp_path: Path) -> None:
    """A mesh shared without adding an object (``obj.data = other.data``): the bake separates them."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    first, second = add_grid(bpy, (0.0, 0.0, 1.0)), add_grid(bpy, (2.0, 0.0, 1.0))
    run_op(bpy, "make_cloth", first, second)
    second.data = first.data
    for obj in (first, second):
        obj.unified_particles_bake.cloth_output = "SHAPE_KEYS"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shared.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert first.data != second.data
    assert first.data.shape_keys is not None
    assert second.data.shape_keys is not None
    assert first.data.shape_keys != second.data.shape_keys
    assert run_op(bpy, "free_bake") == {"FINISHED"}
    assert first.data.shape_keys is None
    assert second.data.shape_keys is None
    scene.frame_set(FRAMES)
    assert scene.unified_particles.last_error == ""


def object_state(obj: Any) -> dict[str, Any]:
    """Everything a bake could change on an object."""
    state: dict[str, Any] = {
        "matrix_basis": [tuple(r) for r in obj.matrix_basis],
        "rotation_mode": obj.rotation_mode,
        "modifiers": [(m.name, m.type) for m in obj.modifiers],
        "action": obj.animation_data.action.name
        if obj.animation_data and obj.animation_data.action
        else None,
        "data": obj.data.name if obj.data else None,
        "props": {
            k: str(getattr(obj.unified_particles, k))
            for k in ("role", "particle_object", "source_object", "has_rest")
        },
        "rest_matrix": tuple(obj.unified_particles.rest_matrix),
        "bake": {k: getattr(obj.unified_particles_bake, k) for k in ("uid", "baked_output", "restore")},
    }
    if obj.type == "MESH":
        mesh = obj.data
        flat = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.attributes["position"].data.foreach_get("vector", flat)
        state["positions"] = flat.tobytes()
        state["attributes"] = sorted(a.name for a in mesh.attributes)
        keys = mesh.shape_keys
        state["shape_keys"] = [kb.name for kb in keys.key_blocks] if keys is not None else None
    return state


def file_state(bpy: ModuleType, scene: Any) -> dict[str, Any]:
    folder = cache_folder(scene)
    files = {}
    if folder.exists():
        files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    bake_state = scene.unified_particles_bake
    return {
        "objects": {o.name: object_state(o) for o in bpy.data.objects},
        "actions": sorted(a.name for a in bpy.data.actions),
        "keys": sorted(k.name for k in bpy.data.shape_keys if k.users),
        "meshes": sorted(m.name for m in bpy.data.meshes if m.users),
        "bake": (
            bake_state.baked,
            bake_state.bake_id,
            bake_state.settings_hash,
            scene.unified_particles.is_baked,
        ),
        "files": files,
    }


def _assert_same(after: dict[str, Any], before: dict[str, Any]) -> None:
    """``after == before``, naming the first object and field that differ."""
    for name in sorted(set(before["objects"]) | set(after["objects"])):
        assert name in before["objects"], f"{name} is new"
        assert name in after["objects"], f"{name} is gone"
        for key, value in before["objects"][name].items():
            assert after["objects"][name][key] == value, (name, key)
    for key in before:
        assert after[key] == before[key], key


def linked_cloth_scene(bpy: ModuleType) -> tuple[Any, Any, Any]:
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    cloth = add_grid(bpy, (0.0, 0.0, 1.0))
    run_op(bpy, "make_cloth", cloth)
    copy = duplicate(bpy, cloth, linked=True, offset=(0.0, 2.0, 0.0))[0]
    for obj in (cloth, copy):
        obj.unified_particles_bake.cloth_output = "SHAPE_KEYS"
    rigid = add_cube(bpy, 0.4, (2.0, 0.0, 1.0))
    run_op(bpy, "make_rigid", rigid)
    sand = add_cube(bpy, 0.5, (-2.0, 0.0, 1.0))
    run_op(bpy, "make_granular", sand)
    return scene, cloth, copy


@pytest.mark.parametrize("previous_bake", [False, True], ids=["first_bake", "rebake"])
def test_failed_bake_puts_back_exactly_what_it_found(
    bpy_clean: ModuleType, tmp_path: Path, previous_bake: bool
) -> None:
    bpy = bpy_clean
    scene, cloth, copy = linked_cloth_scene(bpy)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "fail.blend"))
    scene.frame_set(1)
    if previous_bake:
        assert run_op(bpy, "bake") == {"FINISHED"}
        assert cloth.data.shape_keys is not None
        assert copy.data.shape_keys is not None
        assert cloth.data.shape_keys != copy.data.shape_keys
        scene.unified_particles.substeps = 3  # the next bake has other settings
    before = file_state(bpy, scene)
    job = module("bake.job")
    runtime = module("runtime")
    bake = module("bake")

    # 1. The simulation fails half way through the frames.
    class Failing(bake.LiveSource):  # type: ignore[misc,name-defined]
        def advance(self, scene: Any, frame: int) -> None:
            if frame == 4:
                raise FloatingPointError("solver blew up")
            super().advance(scene, frame)

    runtime.bake_source_factory = Failing
    try:
        with pytest.raises(RuntimeError, match="solver blew up"):
            run_op(bpy, "bake")
    finally:
        runtime.bake_source_factory = None
    _assert_same(file_state(bpy, scene), before)

    # 2. Writing the outputs fails half way: the second cloth's shape keys, after a few keys were made.
    real = job.apply_shape_keys
    calls: list[str] = []

    def failing_apply(obj: Any, samples: Any, n_frames: int, frame_start: int) -> Any:
        calls.append(obj.name)

        def sample(i: int) -> Any:
            if len(calls) == 2 and i == 3:
                raise OSError(errno.EIO, "disk error", "cache.pc2")
            return samples(i)

        return real(obj, sample, n_frames, frame_start)

    job.apply_shape_keys = failing_apply
    try:
        with pytest.raises(RuntimeError, match="disk error"):
            run_op(bpy, "bake")
    finally:
        job.apply_shape_keys = real
    assert calls[:2] == [cloth.name, copy.name]  # (then the previous bake's keys are put back)
    _assert_same(file_state(bpy, scene), before)
    state = scene.unified_particles_bake
    assert "previous bake is unchanged" in state.error
    assert not state.is_baking

    # The live simulation (or the previous bake) still plays, and a bake now succeeds.
    if not previous_bake:
        scene.frame_set(FRAMES)
        assert scene.unified_particles.last_error == ""
        scene.frame_set(1)
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert run_op(bpy, "free_bake") == {"FINISHED"}


# ------------------------------------------------------------------------------------------ item 3
def test_free_bake_removes_the_files_of_deleted_objects(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    cloths = [add_grid(bpy, (0.0, 0.0, 1.0)), add_grid(bpy, (2.0, 0.0, 1.0)), add_grid(bpy, (4.0, 0.0, 1.0))]
    run_op(bpy, "make_cloth", *cloths)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "free.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    folder = cache_folder(scene)
    assert len(list(folder.glob("*.pc2"))) == 3

    # Deleted, then baked again: the deleted object's files go with the new bake.
    delete(bpy, cloths[2])
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert len(list(folder.glob("*.pc2"))) == 2
    assert len(list(folder.glob("*.json"))) == 2

    # Deleted, then Free Bake: every file of this bake goes.
    delete(bpy, cloths[1])
    assert run_op(bpy, "free_bake") == {"FINISHED"}
    assert not folder.exists() or not any(folder.iterdir()), sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------------------------------ item 4
def test_deleting_a_granular_object_removes_its_grains(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene, source, grains = granular_scene(bpy)
    grains_name, source_name = grains.name, source.name
    scene.frame_set(3)
    # Delete the (hidden) source: unhide it (Alt+H) and delete it; the grains go with it.
    source.hide_set(False)
    with bpy.context.temp_override(**view3d_override(bpy)):
        bpy.ops.ed.undo_push(message="Before Delete")
    # In the UI the operator's undo step is pushed before the next depsgraph update runs the handler;
    # headless the update comes at the end of the operator call, so hold the handler back until the push.
    handlers = bpy.app.handlers.depsgraph_update_post
    ours = [h for h in handlers if h.__name__ == "on_depsgraph_update_post"]
    for handler in ours:
        handlers.remove(handler)
    try:
        delete(bpy, source)
        with bpy.context.temp_override(**view3d_override(bpy)):
            bpy.ops.ed.undo_push(message="Delete")
    finally:
        handlers.extend(ours)
    assert grains_name in bpy.data.objects, "not yet: the handler has not run"
    scene.frame_set(4)  # the first update after the delete (here a frame change)
    assert grains_name not in bpy.data.objects
    assert source_name not in bpy.data.objects
    assert scene.unified_particles.last_error == ""
    # Undo (Ctrl+Z) brings both back, paired; Redo deletes both again.
    with bpy.context.temp_override(**view3d_override(bpy)):
        assert bpy.ops.ed.undo() == {"FINISHED"}
    bpy.context.view_layer.update()
    scene = bpy.data.scenes[0]
    assert pairs(bpy) == {source_name: grains_name}
    assert bpy.data.objects[source_name].unified_particles.role == "GRANULAR"
    scene.frame_set(5)
    assert scene.unified_particles.last_error == ""
    assert pairs(bpy) == {source_name: grains_name}
    with bpy.context.temp_override(**view3d_override(bpy)):
        assert bpy.ops.ed.redo() == {"FINISHED"}
    scene = bpy.data.scenes[0]
    scene.frame_set(4)
    assert grains_name not in bpy.data.objects
    assert source_name not in bpy.data.objects

    # Delete the visible grains: the granular object they draw goes too (it would refill them otherwise).
    source = add_cube(bpy, 0.6, (0.0, 0.0, 0.8))
    run_op(bpy, "make_granular", source)
    grains = source.unified_particles.particle_object
    source_name, grains_name = source.name, grains.name
    delete(bpy, grains)
    assert source_name not in bpy.data.objects
    assert grains_name not in bpy.data.objects

    # Removed from Python: the grains go at the next frame change.
    source = add_cube(bpy, 0.6, (0.0, 0.0, 0.8))
    run_op(bpy, "make_granular", source)
    grains_name = source.unified_particles.particle_object.name
    bpy.data.objects.remove(source)
    scene.frame_set(5)
    assert grains_name not in bpy.data.objects
    assert scene.unified_particles.last_error == ""
    assert not [o for o in bpy.data.objects if o.unified_particles.role == "GRANULAR"]


# ------------------------------------------------------------------------------------------ item 5
def test_file_error_messages_name_the_cache_and_bake_panel() -> None:
    job = sys.modules.get(f"{PACKAGE}.blender.bake.job")
    if job is None:
        pytest.skip("needs the installed extension")
    for code in (errno.EACCES, errno.ENOTDIR):
        message = job.os_error_message(OSError(code, "x", "/some/path"))
        assert "(Cache and Bake panel)" in message
        assert "(Bake panel)" not in message
    docs = (Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md").read_text()
    assert "(Bake panel)" not in docs
