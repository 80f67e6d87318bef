"""Baking, as a user does it: make objects, save, Bake, reopen without the add-on, render, Free Bake.

One small scene holds every output: a rigid box baked to keyframes and one to a point cache, a cloth
baked to a point cache and one to shape keys, and grains (point cache before the spheres' Geometry
Nodes). Scenes are tiny (big particles, 8 frames) so each test takes a second or two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from .conftest import PACKAGE, REPO
from .helpers import add_cube, add_plane, run_op, small_scene, view3d_override

FRAMES = 8


def bake_module() -> ModuleType:
    import importlib

    return importlib.import_module(PACKAGE + ".blender.bake")


def cachefiles() -> ModuleType:
    import importlib

    return importlib.import_module(PACKAGE + ".blender.cachefiles")


def add_grid(bpy: ModuleType, location: tuple[float, float, float]) -> Any:
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=location)
    return bpy.context.active_object


def build_scene(bpy: ModuleType) -> dict[str, Any]:
    """Every role and output: {'rigid_keys', 'rigid_pc2', 'cloth_pc2', 'cloth_keys', 'grains', 'points'}."""
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    ground = add_plane(bpy, size=8.0)
    run_op(bpy, "make_collider", ground)
    objs = {
        "rigid_keys": add_cube(bpy, 0.4, (0.0, 0.0, 0.6), rotation=(0.4, 0.3, 0.2)),
        "rigid_pc2": add_cube(bpy, 0.4, (0.0, 1.5, 0.6), rotation=(0.1, 0.5, 0.0)),
    }
    run_op(bpy, "make_rigid", objs["rigid_keys"], objs["rigid_pc2"])
    objs["rigid_pc2"].unified_particles_bake.rigid_output = "PC2"
    objs["cloth_pc2"] = add_grid(bpy, (1.5, 0.0, 0.5))
    objs["cloth_keys"] = add_grid(bpy, (1.5, 1.5, 0.5))
    run_op(bpy, "make_cloth", objs["cloth_pc2"], objs["cloth_keys"])
    objs["cloth_keys"].unified_particles_bake.cloth_output = "SHAPE_KEYS"
    objs["grains"] = add_cube(bpy, 0.6, (-1.5, 0.0, 0.8))
    run_op(bpy, "make_granular", objs["grains"])
    objs["points"] = objs["grains"].unified_particles.particle_object
    assert objs["points"] is not None
    # A camera and a light so the reopened file can render a frame.
    bpy.ops.object.camera_add(location=(6.0, -6.0, 4.0), rotation=(1.1, 0.0, 0.8))
    scene.camera = bpy.context.active_object
    bpy.ops.object.light_add(type="SUN", location=(0.0, 0.0, 5.0))
    scene.frame_set(1)
    return {"scene": scene, **objs}


def evaluated_local(bpy: ModuleType, obj: Any, without_nodes: bool = False) -> np.ndarray:
    """Vertex positions of the evaluated object (modifiers applied; optionally Geometry Nodes off)."""
    nodes = [m for m in obj.modifiers if m.type == "NODES"] if without_nodes else []
    for m in nodes:
        m.show_viewport = False
    try:
        depsgraph = bpy.context.evaluated_depsgraph_get()
        obj_eval = obj.evaluated_get(depsgraph)
        mesh = obj_eval.to_mesh()
        flat = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", flat)
        obj_eval.to_mesh_clear()
    finally:
        for m in nodes:
            m.show_viewport = True
    return flat.reshape(-1, 3)


def shown(bpy: ModuleType, names: dict[str, str]) -> dict[str, np.ndarray]:
    """What the scene shows at the current frame, per object (rigid keyframes also as a matrix)."""
    out: dict[str, np.ndarray] = {}
    for key, name in names.items():
        obj = bpy.data.objects[name]
        if key == "rigid_keys":
            out[key] = np.array([*obj.location, *obj.rotation_quaternion], dtype=np.float32)
            out[key + "_matrix"] = np.array([list(r) for r in obj.matrix_world], dtype=np.float64)
        else:
            out[key] = evaluated_local(bpy, obj, without_nodes=(key == "points"))
    return out


def playback(bpy: ModuleType, names: dict[str, str]) -> dict[str, np.ndarray]:
    """What the baked scene shows at every frame: per-object arrays (frames, ...)."""
    scene = bpy.context.scene
    out: dict[str, list[np.ndarray]] = {}
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        for key, value in shown(bpy, names).items():
            out.setdefault(key, []).append(value)
    return {k: np.array(v) for k, v in out.items()}


NAMES = ("rigid_keys", "rigid_pc2", "cloth_pc2", "cloth_keys", "points")


def object_snapshot(bpy: ModuleType, obj: Any) -> dict[str, Any]:
    """Everything a bake could change on an object, for bit-for-bit comparisons."""
    data: dict[str, Any] = {
        "matrix_basis": [tuple(r) for r in obj.matrix_basis],
        "matrix_world": [tuple(r) for r in obj.matrix_world],
        "rotation_mode": obj.rotation_mode,
        "transform": [
            tuple(getattr(obj, p)) for p in ("location", "rotation_euler", "rotation_quaternion", "scale")
        ],
        "modifiers": [(m.name, m.type, m.show_viewport, m.show_render) for m in obj.modifiers],
        "animation": None if obj.animation_data is None else repr(obj.animation_data.action),
        "hide": (obj.hide_render, obj.hide_viewport),
    }
    if obj.type == "MESH":
        mesh = obj.data
        flat = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.attributes["position"].data.foreach_get("vector", flat)
        data["positions"] = flat.tobytes()
        data["attributes"] = sorted((a.name, a.domain, a.data_type) for a in mesh.attributes)
        data["shape_keys"] = mesh.shape_keys is not None
    return data


def cache_dir(scene: Any) -> Path:
    import bpy

    return Path(bpy.path.abspath(scene.unified_particles.cache_directory))


def cache_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.pc2"))}


# ------------------------------------------------------------------------------------------------------


REOPEN_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import bpy, addon_utils
    blend, expected_path, render_path = sys.argv[1:4]
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
    loaded = [m.__name__ for m in addon_utils.modules() if "unified_particles" in m.__name__]
    enabled = [a.module for a in bpy.context.preferences.addons if "unified_particles" in a.module]
    assert not enabled and not hasattr(bpy.types.Scene, "unified_particles"), (loaded, enabled)
    expected = np.load(expected_path, allow_pickle=False)
    names = json.loads(str(expected["names"]))
    scene = bpy.context.scene
    mismatches = []
    for frame in range(1, int(expected["frames"]) + 1):
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for key, name in names.items():
            obj = bpy.data.objects[name]
            if key == "rigid_keys":
                value = np.array([*obj.location, *obj.rotation_quaternion], dtype=np.float32)
            else:
                nodes = [m for m in obj.modifiers if m.type == "NODES"]
                for m in nodes:
                    m.show_viewport = False
                depsgraph = bpy.context.evaluated_depsgraph_get()
                ev = obj.evaluated_get(depsgraph)
                mesh = ev.to_mesh()
                value = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
                mesh.vertices.foreach_get("co", value)
                value = value.reshape(-1, 3)
                ev.to_mesh_clear()
                for m in nodes:
                    m.show_viewport = True
            want = expected[key][frame - 1]
            if value.shape != want.shape or value.tobytes() != want.tobytes():
                mismatches.append((key, frame))
    scene.frame_set(5)
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 4
    scene.render.resolution_x = scene.render.resolution_y = 64
    scene.render.resolution_percentage = 100
    scene.render.filepath = render_path
    bpy.ops.render.render(write_still=True)
    print("RESULT " + json.dumps({"mismatches": mismatches}))
    """
)


def test_bake_plays_back_exactly_without_the_addon_and_renders(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    objs = build_scene(bpy)
    scene = objs["scene"]
    names = {k: objs[k].name for k in NAMES}

    # The live simulation first: the bake must show exactly what it showed.
    live: dict[str, list[Any]] = {"cloth_pc2": [], "rigid_keys": [], "rigid_pc2": []}
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        live["cloth_pc2"].append(evaluated_local(bpy, objs["cloth_pc2"]))
        live["rigid_keys"].append(np.array([list(r) for r in objs["rigid_keys"].matrix_world]))
        live["rigid_pc2"].append(np.array([list(r) for r in objs["rigid_pc2"].matrix_world]))
    scene.frame_set(1)
    rigid_pc2_rest = np.array([list(r) for r in objs["rigid_pc2"].matrix_world])
    rigid_pc2_local = evaluated_local(bpy, objs["rigid_pc2"]).astype(np.float64)

    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    state = scene.unified_particles_bake
    assert state.baked
    assert not state.outdated
    assert scene.unified_particles.is_baked
    assert bake_module().check_bake(scene) == []

    # Outputs where the user expects them.
    cloth = objs["cloth_pc2"]
    assert cloth.modifiers[0].type == "MESH_CACHE"
    assert cloth.modifiers[0].filepath.startswith("//unified_particles_cache/")
    assert objs["rigid_pc2"].modifiers[-1].type == "MESH_CACHE"
    points = objs["points"]
    kinds = [m.type for m in points.modifiers]
    assert kinds.index("MESH_CACHE") < kinds.index("NODES")
    assert objs["rigid_keys"].animation_data.action is not None
    assert objs["rigid_keys"].rotation_mode == "QUATERNION"
    key = objs["cloth_keys"].data.shape_keys
    assert key is not None
    assert len(key.key_blocks) == FRAMES + 1
    files = sorted(p.name for p in cache_dir(scene).iterdir())
    uids = {objs[k].unified_particles_bake.uid for k in ("cloth_pc2", "rigid_pc2", "points")}
    assert files == sorted(
        [f"{u}.pc2" for u in uids]
        + [f"{u}.json" for u in uids]
        + [f"{objs[k].unified_particles_bake.uid}.json" for k in ("rigid_keys", "cloth_keys")]
    )

    rest = objs["cloth_pc2"].data.vertices[0].co.copy()
    shown = playback(bpy, names)
    assert objs["cloth_pc2"].data.vertices[0].co == rest, "baked objects are not simulated live"
    # Baked = live simulation: cloth bit for bit, rigid matrices to float32 precision.
    np.testing.assert_array_equal(shown["cloth_pc2"], np.array(live["cloth_pc2"]))
    np.testing.assert_allclose(shown["rigid_keys_matrix"], np.array(live["rigid_keys"]), atol=2e-6)
    for frame in range(FRAMES):
        moved = rigid_pc2_local @ (np.linalg.inv(rigid_pc2_rest) @ live["rigid_pc2"][frame])[:3, :3].T
        moved += (np.linalg.inv(rigid_pc2_rest) @ live["rigid_pc2"][frame])[:3, 3]
        np.testing.assert_allclose(shown["rigid_pc2"][frame], moved, atol=2e-6)
    assert not np.array_equal(shown["cloth_pc2"][0], shown["cloth_pc2"][-1]), "the cloth should move"
    assert not np.array_equal(shown["points"][0], shown["points"][-1]), "the grains should fall"
    assert not np.array_equal(shown["cloth_keys"][0], shown["cloth_keys"][-1])
    # The shape-key cloth sees the same physics as a point-cache cloth would (same mesh, other place).
    quats = shown["rigid_keys"][:, 3:]
    assert np.all(np.einsum("ij,ij->i", quats[1:], quats[:-1]) > 0), "quaternions stay in one hemisphere"
    # Point caches hold exactly what plays.
    cf = cachefiles()
    _, data = cf.read_pc2(cache_dir(scene) / f"{cloth.unified_particles_bake.uid}.pc2")
    np.testing.assert_array_equal(data, shown["cloth_pc2"])

    expected = tmp_path / "expected.npz"
    np.savez(expected, names=np.array(json.dumps(names)), frames=np.array(FRAMES), **shown)
    bpy.ops.wm.save_mainfile()

    # A fresh Blender that has never seen the add-on (empty user folder) reopens and renders the file.
    env = dict(os.environ)
    fresh = tempfile.mkdtemp(prefix="up-no-addon-")
    env["BLENDER_USER_RESOURCES"] = fresh
    env["XDG_CACHE_HOME"] = os.path.join(fresh, "cache")
    render = tmp_path / "frame.png"
    proc = subprocess.run(
        [sys.executable, "-c", REOPEN_SCRIPT, str(blend), str(expected), str(render)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    log = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, log
    assert lines, log
    assert json.loads(lines[-1][7:]) == {"mismatches": []}
    assert render.is_file()
    image = bpy.data.images.load(str(render))
    pixels = np.array(image.pixels[:]).reshape(-1, 4)
    assert pixels[:, :3].std() > 0.01, "the render should show something"


def test_free_bake_restores_objects_bit_for_bit(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    objs = build_scene(bpy)
    scene = objs["scene"]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "free.blend"))
    watched = [o for o in scene.objects if o.type == "MESH"]
    before = {o.name: object_snapshot(bpy, o) for o in watched}
    n_actions, n_keys = len(bpy.data.actions), len(bpy.data.shape_keys)

    assert run_op(bpy, "bake") == {"FINISHED"}
    assert any(object_snapshot(bpy, o) != before[o.name] for o in watched)
    folder = cache_dir(scene)
    assert any(folder.glob("*.pc2"))

    assert run_op(bpy, "free_bake") == {"FINISHED"}
    after = {o.name: object_snapshot(bpy, o) for o in watched}
    for name in before:
        assert after[name] == before[name], name
    assert len(bpy.data.actions) == n_actions
    assert sum(1 for k in bpy.data.shape_keys if k.users) == n_keys
    assert not folder.exists() or not any(folder.iterdir()), "the cache files are gone"
    assert not scene.unified_particles_bake.baked
    assert not scene.unified_particles.is_baked
    # Live simulation works again after freeing.
    scene.frame_set(3)
    moved = evaluated_local(bpy, objs["cloth_pc2"])
    assert moved.tobytes() != before[objs["cloth_pc2"].name]["positions"]


def test_clear_on_a_baked_object_removes_its_bake_output(bpy_clean: ModuleType, tmp_path: Path) -> None:
    """Clear stops simulating an object: it must not keep playing its keyframes or point cache."""
    bpy = bpy_clean
    objs = build_scene(bpy)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "clear.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    rigid, cloth = objs["rigid_keys"], objs["cloth_pc2"]
    assert rigid.animation_data is not None
    assert rigid.animation_data.action is not None
    assert any(m.type == "MESH_CACHE" for m in cloth.modifiers)

    assert run_op(bpy, "clear", rigid, cloth) == {"FINISHED"}
    assert rigid.unified_particles.role == "NONE"
    assert cloth.unified_particles.role == "NONE"
    assert rigid.animation_data is None or rigid.animation_data.action is None
    assert not any(m.type == "MESH_CACHE" for m in cloth.modifiers)
    scene = objs["scene"]
    scene.frame_set(1)
    start = [tuple(r) for r in rigid.matrix_world]
    scene.frame_set(FRAMES)
    assert [tuple(r) for r in rigid.matrix_world] == start, "a cleared object stays where it is"


def test_cancel_keeps_previous_bake_and_resume_is_bit_identical(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    bpy = bpy_clean
    bake = bake_module()
    objs = build_scene(bpy)
    scene = objs["scene"]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "resume.blend"))
    names = {k: objs[k].name for k in NAMES}
    assert run_op(bpy, "bake") == {"FINISHED"}
    reference_files = cache_bytes(cache_dir(scene))
    reference = playback(bpy, names)
    reference_state = object_snapshot(bpy, objs["rigid_keys"])

    job = bake.BakeJob(scene)
    job.begin()
    for _ in range(3):
        assert not job.step()
    job.cancel()
    assert "cancelled after frame 4" in scene.unified_particles_bake.status
    assert scene.unified_particles_bake.baked
    assert cache_bytes(cache_dir(scene)) == reference_files
    assert object_snapshot(bpy, objs["rigid_keys"]) == reference_state
    for key, value in playback(bpy, names).items():
        np.testing.assert_array_equal(value, reference[key], err_msg=key)

    # Bake again: continues after frame 4, and ends bit-identical to the uninterrupted bake.
    job = bake.bake_scene(scene)
    assert job.resumed_from == 4
    assert cache_bytes(cache_dir(scene)) == reference_files
    for key, value in playback(bpy, names).items():
        np.testing.assert_array_equal(value, reference[key], err_msg=key)
    assert not any(p.name.startswith(".up-staging") for p in cache_dir(scene).iterdir())


def test_failed_bake_keeps_previous_bake(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    bake = bake_module()
    objs = build_scene(bpy)
    scene = objs["scene"]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "fail.blend"))
    names = {k: objs[k].name for k in NAMES}
    assert run_op(bpy, "bake") == {"FINISHED"}
    reference_files = cache_bytes(cache_dir(scene))
    reference = playback(bpy, names)

    class Failing(bake.LiveSource):  # type: ignore[name-defined,misc]
        def advance(self, scene: Any, frame: int) -> None:
            if frame == 5:
                raise FloatingPointError("solver blew up")
            super().advance(scene, frame)

    scene.unified_particles.substeps = 3  # a new bake with other settings fails half way
    assert scene.unified_particles_bake.outdated
    runtime = sys.modules[f"{PACKAGE}.blender.runtime"]
    previous = runtime.bake_source_factory
    runtime.bake_source_factory = Failing
    try:
        with pytest.raises(RuntimeError, match="solver blew up"):
            run_op(bpy, "bake")
    finally:
        runtime.bake_source_factory = previous
    state = scene.unified_particles_bake
    assert "solver blew up" in state.error
    assert state.baked
    assert not state.is_baking
    assert cache_bytes(cache_dir(scene)) == reference_files
    for key, value in playback(bpy, names).items():
        np.testing.assert_array_equal(value, reference[key], err_msg=key)


def test_stale_and_mismatched_caches_are_reported(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    bake = bake_module()
    objs = build_scene(bpy)
    scene = objs["scene"]
    blend = tmp_path / "stale.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert bake.check_bake(scene) == []

    objs["cloth_pc2"].unified_particles.friction = 0.9
    assert scene.unified_particles_bake.outdated
    assert any("settings changed" in p for p in bake.check_bake(scene))
    objs["cloth_pc2"].unified_particles.friction = 0.5
    objs["cloth_pc2"].unified_particles_bake.cloth_output = "SHAPE_KEYS"
    assert scene.unified_particles_bake.outdated
    objs["cloth_pc2"].unified_particles_bake.cloth_output = "PC2"
    assert not scene.unified_particles_bake.outdated

    # Renaming keeps the cache (file names come from a stable id).
    objs["cloth_pc2"].name = "Renamed Cloth"
    assert bake.check_bake(scene) == []

    # A cache rewritten by another bake or truncated is detected when the file is opened.
    folder = cache_dir(scene)
    uid = objs["rigid_pc2"].unified_particles_bake.uid
    sidecar = json.loads((folder / f"{uid}.json").read_text())
    sidecar["bake_id"] = "0" * 32
    (folder / f"{uid}.json").write_text(json.dumps(sidecar))
    cloth_uid = objs["cloth_pc2"].unified_particles_bake.uid
    with open(folder / f"{cloth_uid}.pc2", "r+b") as handle:
        handle.truncate(100)
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    error = scene.unified_particles_bake.error
    assert "different bake" in error
    assert "truncated" in error
    assert "Renamed Cloth" in error


def test_changed_frame_range_is_noted_and_frames_outside_hold_the_nearest_baked_pose(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    bpy = bpy_clean
    bake = bake_module()
    objs = build_scene(bpy)
    scene = objs["scene"]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "range.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert bake.frame_range_note(scene) == ""
    names = {key: objs[key].name for key in NAMES}
    last = {key: value[-1] for key, value in playback(bpy, names).items()}

    scene.frame_end = FRAMES + 4
    note = bake.frame_range_note(scene)
    assert f"1-{FRAMES + 4}" in note
    assert f"baked 1-{FRAMES}" in note
    assert "Bake again" in note
    assert not scene.unified_particles_bake.outdated  # a note, not an error: the bake still plays
    # The Cache and Bake panel shows the note (the panel draws into a recorder of its labels).
    labels: list[str] = []

    class Layout:
        def __getattr__(self, name: str) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                if name == "label":
                    labels.append(kwargs.get("text", ""))
                return Layout()

            return call

    panels = sys.modules[f"{PACKAGE}.blender.panels"]
    panels._draw_bake(Layout(), SimpleNamespace(scene=scene, object=None))
    assert "Bake again to cover the new range." in " ".join(labels), labels  # wrapped into lines
    scene.frame_set(FRAMES + 3)
    for key, value in shown(bpy, names).items():
        np.testing.assert_array_equal(value, last[key], err_msg=key)
    scene.frame_end = FRAMES
    assert bake.frame_range_note(scene) == ""


def test_unsaved_file_bakes_to_a_temporary_folder_with_a_warning(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    objs = build_scene(bpy)
    scene = objs["scene"]
    assert not bpy.data.filepath
    job = bake_module().bake_scene(scene)
    assert "not saved" in job.warning
    folder = Path(scene.unified_particles_bake.cache_folder)
    assert folder.is_absolute()
    assert str(folder).startswith(tempfile.gettempdir())
    assert objs["cloth_pc2"].modifiers[0].filepath.startswith(str(folder))
    assert "not saved" in scene.unified_particles_bake.status
    bake_module().free_bake(scene)
    assert not folder.exists() or not any(folder.glob("*.pc2"))


def test_farm_command_bakes_a_saved_file_in_place(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    objs = build_scene(bpy)
    blend = tmp_path / "farm.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    cloth_name = objs["cloth_pc2"].name
    env = dict(os.environ)
    fresh = tempfile.mkdtemp(prefix="up-farm-")
    env["BLENDER_USER_RESOURCES"] = fresh
    env["XDG_CACHE_HOME"] = os.path.join(fresh, "cache")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "unified_particles.farm", str(blend), "--frames", "1:6"],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Baked" in proc.stdout
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    state = scene.unified_particles_bake
    assert state.baked
    assert (state.frame_start, state.frame_end) == (1, 6)
    cloth = bpy.data.objects[cloth_name]
    assert cloth.modifiers[0].type == "MESH_CACHE"
    assert bake_module().check_bake(scene) == []
    info, _ = cachefiles().read_pc2(cache_dir(scene) / f"{cloth.unified_particles_bake.uid}.pc2")
    assert info.n_samples == 6


def test_bake_operator_custom_range_as_in_a_blender_command_line(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    """What ``blender -b f.blend --python-expr "bpy.ops.unified_particles.bake(...)"`` runs."""
    bpy = bpy_clean
    objs = build_scene(bpy)
    scene = objs["scene"]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "range.blend"))
    result = bpy.ops.unified_particles.bake(use_custom_range=True, frame_start=3, frame_end=6)
    assert result == {"FINISHED"}
    state = scene.unified_particles_bake
    assert (state.frame_start, state.frame_end) == (3, 6)
    assert scene.frame_current == 1
    cloth = objs["cloth_pc2"]
    assert cloth.modifiers[0].frame_start == 3
    info, data = cachefiles().read_pc2(cache_dir(scene) / f"{cloth.unified_particles_bake.uid}.pc2")
    assert info.n_samples == 4
    # The simulation starts at the scene's start: the bake's first frame is frame 3 of that run.
    bpy.ops.unified_particles.free_bake()
    scene.frame_set(1)
    scene.frame_set(2)
    scene.frame_set(3)
    live3 = evaluated_local(bpy, cloth)
    np.testing.assert_array_equal(data[0], live3)
    action = objs["rigid_keys"].animation_data
    assert action is None or action.action is None


CRASH_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import bpy
    import unified_particles
    from unified_particles.blender import bake
    unified_particles.register()
    bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False)
    job = bake.BakeJob(bpy.context.scene)
    job.begin()
    for _ in range(int(sys.argv[2])):
        job.step()
    sys.stdout.flush()
    os._exit(0)  # killed mid-bake: no cancel, no save
    """
)


def test_killed_farm_bake_resumes_bit_identically(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    objs = build_scene(bpy)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    blend_a, blend_b = tmp_path / "a" / "f.blend", tmp_path / "b" / "f.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend_a))  # saving gives every simulated object its cache id
    assert objs["cloth_pc2"].unified_particles_bake.uid
    bpy.ops.wm.save_as_mainfile(filepath=str(blend_b), copy=True)
    rigid_name, cloth_name = objs["rigid_keys"].name, objs["cloth_keys"].name

    env = dict(os.environ)
    fresh = tempfile.mkdtemp(prefix="up-farm-")
    env["BLENDER_USER_RESOURCES"] = fresh
    env["XDG_CACHE_HOME"] = os.path.join(fresh, "cache")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")

    def run(*args: str, module: bool = True) -> str:
        cmd = [sys.executable, "-m", "unified_particles.farm", *args] if module else [sys.executable, *args]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return proc.stdout

    run(str(blend_a))  # uninterrupted reference
    run("-c", CRASH_SCRIPT, str(blend_b), "4", module=False)  # killed after frame 5
    out = run(str(blend_b))
    assert "resumed after frame 5" in out
    files_a = cache_bytes(blend_a.parent / "unified_particles_cache")
    files_b = cache_bytes(blend_b.parent / "unified_particles_cache")
    assert files_a
    assert files_a == files_b
    # Keyframes and shape keys written into the two files are identical too.
    values = []
    for blend in (blend_a, blend_b):
        bpy.ops.wm.open_mainfile(filepath=str(blend))
        rigid, cloth = bpy.data.objects[rigid_name], bpy.data.objects[cloth_name]
        blocks = cloth.data.shape_keys.key_blocks
        assert len(blocks) == FRAMES + 1
        shapes = np.empty(len(blocks[-1].points) * 3, dtype=np.float32)
        blocks[-1].points.foreach_get("co", shapes)
        motion = []
        for frame in range(1, FRAMES + 1):
            bpy.context.scene.frame_set(frame)
            motion.append([*rigid.location, *rigid.rotation_quaternion])
        values.append((np.array(motion, dtype=np.float32).tobytes(), shapes.tobytes()))
    assert values[0] == values[1]


def test_rebake_with_the_other_outputs_shows_the_same_motion(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    objs = build_scene(bpy)
    scene = objs["scene"]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "swap.blend"))
    names = {k: objs[k].name for k in NAMES}
    assert run_op(bpy, "bake") == {"FINISHED"}
    first = playback(bpy, names)

    # Swap every choice and bake again over the existing bake.
    objs["cloth_pc2"].unified_particles_bake.cloth_output = "SHAPE_KEYS"
    objs["cloth_keys"].unified_particles_bake.cloth_output = "PC2"
    objs["rigid_keys"].unified_particles_bake.rigid_output = "PC2"
    objs["rigid_pc2"].unified_particles_bake.rigid_output = "KEYFRAMES"
    assert scene.unified_particles_bake.outdated
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert not scene.unified_particles_bake.outdated
    assert objs["cloth_pc2"].data.shape_keys is not None
    assert not [m for m in objs["cloth_pc2"].modifiers if m.type == "MESH_CACHE"]
    assert objs["cloth_keys"].data.shape_keys is None
    assert objs["cloth_keys"].modifiers[0].type == "MESH_CACHE"
    assert objs["rigid_keys"].animation_data is None or objs["rigid_keys"].animation_data.action is None
    assert objs["rigid_keys"].rotation_mode != "QUATERNION"  # back to its own rotation mode
    assert objs["rigid_pc2"].animation_data.action is not None
    uids = {objs[k].unified_particles_bake.uid for k in ("cloth_keys", "rigid_keys", "points")}
    assert {p.stem for p in cache_dir(scene).glob("*.pc2")} == uids

    swapped = {
        "cloth_pc2": objs["cloth_keys"].name,
        "cloth_keys": objs["cloth_pc2"].name,
        "rigid_pc2": objs["rigid_keys"].name,
        "points": objs["points"].name,
    }
    second = playback(bpy, swapped)
    # Cloth: point cache and shape keys play the very same floats.
    np.testing.assert_array_equal(second["cloth_keys"], first["cloth_pc2"])
    np.testing.assert_array_equal(second["cloth_pc2"], first["cloth_keys"])
    np.testing.assert_array_equal(second["points"], first["points"])
    # Rigid: the keyframed box now moves its vertices instead, by the same motion.
    rest = first["rigid_keys_matrix"][0]
    local0 = second["rigid_pc2"][0].astype(np.float64)
    for frame in range(FRAMES):
        motion = np.linalg.inv(rest) @ first["rigid_keys_matrix"][frame]
        np.testing.assert_allclose(
            second["rigid_pc2"][frame], local0 @ motion[:3, :3].T + motion[:3, 3], atol=3e-6
        )


def test_parented_and_mirrored_rigid_keyframes_follow_the_simulation(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    ground = add_plane(bpy, size=8.0)
    run_op(bpy, "make_collider", ground)
    bpy.ops.object.empty_add(location=(0.5, -0.3, 0.2), rotation=(0.0, 0.0, 0.7))
    parent = bpy.context.active_object
    parent.scale = (1.5, 1.5, 1.5)
    child = add_cube(bpy, 0.3, (0.0, 0.0, 0.8), rotation=(0.3, 0.0, 0.2))
    child.parent = parent
    child.matrix_parent_inverse = parent.matrix_world.inverted()
    mirrored = add_cube(bpy, 0.4, (-1.5, 0.0, 0.8))
    mirrored.scale = (-1.0, 1.0, 1.0)
    run_op(bpy, "make_rigid", child, mirrored)
    scene.frame_set(1)
    live = []
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        live.append([np.array([list(r) for r in o.matrix_world]) for o in (child, mirrored)])
    scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "parent.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert child.parent == parent
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        for obj, want in zip((child, mirrored), live[frame - 1], strict=True):
            got = np.array([list(r) for r in obj.matrix_world])
            np.testing.assert_allclose(got, want, atol=5e-6, err_msg=f"{obj.name} frame {frame}")
    assert not np.allclose(live[0][0], live[-1][0]), "the parented box should fall"


def test_changed_scene_after_cancel_bakes_from_the_start(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    bake = bake_module()
    objs = build_scene(bpy)
    scene = objs["scene"]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "moved.blend"))
    job = bake.BakeJob(scene)
    job.begin()
    job.step()
    job.step()
    job.cancel()
    assert not scene.unified_particles_bake.baked
    assert not [m for m in objs["cloth_pc2"].modifiers if m.type == "MESH_CACHE"]
    assert objs["rigid_keys"].animation_data is None
    objs["rigid_keys"].location.x += 0.25  # not a setting, but the start state differs: no resume
    moved = np.array(objs["rigid_keys"].location)
    job = bake.bake_scene(scene)
    assert job.resumed_from is None
    assert scene.unified_particles_bake.baked
    scene.frame_set(1)
    np.testing.assert_allclose(np.array(objs["rigid_keys"].location), moved, atol=1e-6)


def test_cancelled_rebake_with_other_grain_count_keeps_previous_bake(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    bpy = bpy_clean
    bake = bake_module()
    objs = build_scene(bpy)
    scene = objs["scene"]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "count.blend"))
    names = {k: objs[k].name for k in NAMES}
    assert run_op(bpy, "bake") == {"FINISHED"}
    reference = playback(bpy, names)
    points = objs["points"]
    count = len(points.data.vertices)
    before = object_snapshot(bpy, points)

    scene.unified_particles.particle_radius = 0.13  # fewer, bigger grains
    job = bake.BakeJob(scene)
    job.begin()
    assert len(points.data.vertices) != count, "the new build refills the particle object"
    job.step()
    job.cancel()
    assert len(points.data.vertices) == count
    assert object_snapshot(bpy, points) == before
    for key, value in playback(bpy, names).items():
        np.testing.assert_array_equal(value, reference[key], err_msg=key)


def test_animated_collider_bakes_like_the_live_simulation(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    floor = add_cube(bpy, 2.0, (0.0, 0.0, -1.0))
    floor.keyframe_insert("location", frame=1)
    floor.location.z = -0.4
    floor.keyframe_insert("location", frame=FRAMES)
    run_op(bpy, "make_collider", floor)
    cloth = add_grid(bpy, (0.0, 0.0, 0.3))
    run_op(bpy, "make_cloth", cloth)
    live = []
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        live.append(evaluated_local(bpy, cloth))
    scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "animated.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        np.testing.assert_array_equal(evaluated_local(bpy, cloth), live[frame - 1], err_msg=f"frame {frame}")
    # The rising box carried the cloth up (free fall would have taken it below z = -0.1).
    assert live[-1][:, 2].min() + 0.3 > 0.2


@pytest.mark.parametrize("outputs", ["every_output", "keyframes_and_shape_keys"])
def test_save_as_into_another_folder_plays_and_never_deletes_the_first_files_cache(
    bpy_clean: ModuleType, tmp_path: Path, outputs: str
) -> None:
    """Bake v001/shot.blend, Save As v002/shot.blend and reopen: the bake plays on (Blender remapped the Mesh
    Cache paths), is checked against the files next to v001 (also a bake without any point cache, found
    by the folder it was written to), a cancelled bake in v002 puts that bake back as it played, and
    Free Bake in v002 takes the bake off v002's objects without deleting v001's files."""
    bpy = bpy_clean
    bake = bake_module()
    objs = build_scene(bpy)
    keys = list(NAMES)
    if outputs == "keyframes_and_shape_keys":
        objs["rigid_pc2"].unified_particles_bake.rigid_output = "KEYFRAMES"
        objs["cloth_pc2"].unified_particles_bake.cloth_output = "SHAPE_KEYS"
        assert run_op(bpy, "clear", objs["points"]) == {"FINISHED"}  # grains always bake to a point cache
        keys.remove("points")
    names = {k: objs[k].name for k in keys}
    (tmp_path / "v001").mkdir()
    (tmp_path / "v002").mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "v001" / "shot.blend"))
    assert run_op(bpy, "bake") == {"FINISHED"}
    v001_cache = tmp_path / "v001" / "unified_particles_cache"
    v001_files = {p.name: p.read_bytes() for p in v001_cache.iterdir()}
    assert len(v001_files) >= len(keys)
    reference = playback(bpy, names)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "v002" / "shot.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "v002" / "shot.blend"))
    scene = bpy.context.scene
    assert scene.unified_particles_bake.error == ""
    assert bake.check_bake(scene) == []
    for key, value in playback(bpy, names).items():
        np.testing.assert_array_equal(value, reference[key], err_msg=key)

    job = bake.BakeJob(scene)
    job.begin()
    assert not job.step()
    job.cancel()
    assert bake.check_bake(scene) == []
    for key, value in playback(bpy, names).items():
        np.testing.assert_array_equal(value, reference[key], err_msg=f"after a cancelled bake: {key}")

    scene.frame_set(1)
    assert run_op(bpy, "free_bake") == {"FINISHED"}
    assert not any(bpy.data.objects[n].unified_particles_bake.baked_output for n in names.values())
    assert {p.name: p.read_bytes() for p in v001_cache.iterdir()} == v001_files


def test_objects_appended_from_another_bake_into_a_baked_shot_are_unbaked(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    """A baked rigid (point cache) appended from a baked asset file into a baked shot carries the asset's
    bake, not the shot's: it is freed (as Free Bake frees it) with a new cache id, the shot's own objects
    keep their bake, and baking and freeing the shot never touch the asset's files."""
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    crate = add_cube(bpy, 0.4, (0.0, 0.0, 0.6))
    crate.name = "Crate"
    run_op(bpy, "make_rigid", crate)
    crate.unified_particles_bake.rigid_output = "PC2"
    before = object_snapshot(bpy, crate)
    (tmp_path / "library").mkdir()
    asset = tmp_path / "library" / "asset.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(asset))
    assert run_op(bpy, "bake") == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    asset_uid = crate.unified_particles_bake.uid
    asset_cache = tmp_path / "library" / "unified_particles_cache"
    asset_files = {p.name: p.read_bytes() for p in asset_cache.iterdir()}
    assert f"{asset_uid}.pc2" in asset_files

    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    scene = small_scene(bpy, radius=0.1, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    sheet = add_grid(bpy, (1.5, 0.0, 0.5))
    run_op(bpy, "make_cloth", sheet)
    assert run_op(bpy, "bake") == {"FINISHED"}
    shot_bake = scene.unified_particles_bake.bake_id
    with bpy.context.temp_override(**view3d_override(bpy)):
        assert bpy.ops.wm.append(directory=f"{asset}/Object/", files=[{"name": "Crate"}]) == {"FINISHED"}
    scene.frame_set(2)
    appended = bpy.data.objects["Crate"]
    assert appended.unified_particles_bake.baked_output == ""
    assert not [m for m in appended.modifiers if m.type == "MESH_CACHE"]
    assert appended.unified_particles_bake.uid not in ("", asset_uid)
    assert object_snapshot(bpy, appended) == before
    assert sheet.unified_particles_bake.baked_output == "PC2"  # the shot's own bake stays
    assert sheet.unified_particles_bake.bake_id == shot_bake
    scene.frame_set(1)
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert bake_module().check_bake(scene) == []
    assert run_op(bpy, "free_bake") == {"FINISHED"}
    assert {p.name: p.read_bytes() for p in asset_cache.iterdir()} == asset_files
