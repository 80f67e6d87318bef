"""Bake cache files without Blender: PC2 layout, atomic streaming, sidecars, safe names, snapshots."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from unified_particles.blender import cachefiles as cf
from unified_particles.core import World
from unified_particles.core.state import Snapshot


def test_module_imports_without_bpy() -> None:
    code = (
        "import sys; sys.modules['bpy'] = None\n"
        "import unified_particles.blender.cachefiles as c\n"
        "assert 'bpy' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print(c.PC2_HEADER_SIZE)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "32"


def test_pc2_header_is_blenders_layout(tmp_path: Path) -> None:
    samples = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    path = tmp_path / "a.pc2"
    cf.write_pc2(path, samples, start_frame=7)
    raw = path.read_bytes()
    assert raw[:32] == struct.pack("<12siiffi", b"POINTCACHE2\0", 1, 5, 7.0, 1.0, 2)
    assert len(raw) == 32 + 2 * 5 * 12
    body = np.frombuffer(raw[32:], dtype="<f4").reshape(2, 5, 3)
    np.testing.assert_array_equal(body, samples)
    info, data = cf.read_pc2(path)
    assert info == cf.PC2Info(5, 7.0, 1.0, 2)
    np.testing.assert_array_equal(data, samples)
    np.testing.assert_array_equal(cf.read_pc2_frame(path, 1), samples[1])


def test_pc2_writer_streams_then_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "cloth.pc2"
    cf.write_pc2(path, np.zeros((3, 4, 3), np.float32))
    old = path.read_bytes()
    writer = cf.PC2Writer(path, 4)
    for k in range(5):
        writer.write(np.full((4, 3), k, np.float64))
        assert path.read_bytes() == old, "target must not change before close()"
    writer.close()
    info, data = cf.read_pc2(path)
    assert info.n_samples == 5
    assert data.dtype == np.float32
    np.testing.assert_array_equal(data[:, 0, 0], np.arange(5, dtype=np.float32))
    assert not writer.partial_path.exists()


def test_failed_writer_leaves_previous_file_intact(tmp_path: Path) -> None:
    path = tmp_path / "cloth.pc2"
    cf.write_pc2(path, np.ones((2, 4, 3), np.float32))
    old = path.read_bytes()

    def failing_bake() -> None:
        with cf.PC2Writer(path, 4) as writer:
            writer.write(np.zeros((4, 3)))
            raise RuntimeError("simulation failed")

    with pytest.raises(RuntimeError):
        failing_bake()
    assert path.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cloth.pc2"]


def test_writer_rejects_wrong_shapes_and_nan(tmp_path: Path) -> None:
    writer = cf.PC2Writer(tmp_path / "x.pc2", 4)
    with pytest.raises(cf.CacheError):
        writer.write(np.zeros((3, 3)))
    bad = np.zeros((4, 3))
    bad[1, 1] = np.nan
    with pytest.raises(cf.CacheError):
        writer.write(bad)
    writer.discard()
    assert list(tmp_path.iterdir()) == []


def test_resume_partial_stream_is_bit_identical(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    frames = rng.normal(size=(10, 6, 3)).astype(np.float32)
    whole = tmp_path / "whole.pc2"
    cf.write_pc2(whole, frames)

    resumed = tmp_path / "resumed.pc2"
    writer = cf.PC2Writer(resumed, 6)
    for sample in frames[:7]:
        writer.write(sample)
    writer.close(commit=False)  # interrupted after 7 frames, snapshot was taken after 5
    assert not resumed.exists()
    writer = cf.PC2Writer(resumed, 6, keep_samples=5)
    for sample in frames[5:]:
        writer.write(sample)
    writer.close()
    assert resumed.read_bytes() == whole.read_bytes()


def test_truncated_pc2_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.pc2"
    cf.write_pc2(path, np.zeros((3, 4, 3), np.float32))
    with open(path, "r+b") as handle:
        handle.truncate(32 + 12 * 4 * 2)
    with pytest.raises(cf.CacheError, match="truncated"):
        cf.read_pc2(path)
    (tmp_path / "junk.pc2").write_bytes(b"x" * 64)
    with pytest.raises(cf.CacheError, match="not a PC2"):
        cf.read_pc2_header(tmp_path / "junk.pc2")


@pytest.mark.parametrize("uid", ["../evil", "a/b", "", ".hidden", "a" * 65, "x.y", "C:\\x", "ok\n"])
def test_unsafe_ids_cannot_escape_the_folder(tmp_path: Path, uid: str) -> None:
    with pytest.raises(cf.CacheError):
        cf.cache_file(tmp_path, uid, ".pc2")


def test_cache_file_names_come_from_the_id(tmp_path: Path) -> None:
    uid = cf.new_uid()
    path = cf.cache_file(tmp_path, uid, ".pc2")
    assert path == (tmp_path / f"{uid}.pc2").resolve()
    with pytest.raises(cf.CacheError):
        cf.cache_file(tmp_path, uid, "/../x")
    assert cf.new_uid() != uid


def test_sidecar_detects_stale_and_mismatched_caches(tmp_path: Path) -> None:
    uid = cf.new_uid()
    pc2 = cf.cache_file(tmp_path, uid, ".pc2")
    cf.write_pc2(pc2, np.zeros((10, 4, 3), np.float32), start_frame=1)
    h = cf.settings_hash({"radius": 0.1, "substeps": 4})
    side = cf.make_sidecar(
        uid=uid, kind="CLOTH", output="PC2", frame_start=1, frame_end=10, n_points=4, settings=h
    )
    cf.write_json(cf.cache_file(tmp_path, uid, ".json"), side)
    side = cf.read_json(cf.cache_file(tmp_path, uid, ".json"))
    good = dict(uid=uid, settings=h, n_points=4, frame_start=1, frame_end=10, pc2_path=pc2)
    assert cf.check_sidecar(side, **good) == []  # type: ignore[arg-type]

    stale = cf.settings_hash({"substeps": 8, "radius": 0.1})
    assert any("stale" in p for p in cf.check_sidecar(side, **{**good, "settings": stale}))  # type: ignore[arg-type]
    assert cf.check_sidecar(side, **{**good, "n_points": 5})  # type: ignore[arg-type]
    assert cf.check_sidecar(side, **{**good, "frame_end": 20})  # type: ignore[arg-type]
    cf.write_pc2(pc2, np.zeros((9, 4, 3), np.float32))
    assert any("9 frames" in p for p in cf.check_sidecar(side, **good))  # type: ignore[arg-type]
    pc2.unlink()
    assert any("missing" in p for p in cf.check_sidecar(side, **good))  # type: ignore[arg-type]
    assert cf.check_sidecar({**side, "format_version": 99}, uid=uid)


def test_settings_hash_is_order_independent() -> None:
    assert cf.settings_hash({"a": 1, "b": [1.0, 2.0]}) == cf.settings_hash({"b": (1.0, 2.0), "a": 1})
    assert cf.settings_hash({"a": 1}) != cf.settings_hash({"a": 2})


def test_atomic_file_keeps_old_content_on_error(tmp_path: Path) -> None:
    path = tmp_path / "bake.json"
    cf.write_json(path, {"v": 1})

    def failing_write() -> None:
        with cf.atomic_file(path, "w") as handle:
            handle.write("{broken")
            raise KeyError("boom")

    with pytest.raises(KeyError):
        failing_write()
    assert cf.read_json(path) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["bake.json"]


def _stepped_world_snapshot() -> Snapshot:
    """A snapshot of a small world mid-fall: grains over a plane, a few frames in."""
    world = World(radius=0.1)
    grid = np.stack(np.meshgrid(np.arange(3.0), np.arange(3.0), [0.0]), axis=-1).reshape(-1, 3)
    world.add_granular(0.2 * grid + np.array([0.0, 0.0, 0.5]))
    world.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))
    for _ in range(3):
        world.step(1 / 24)
    return world.state()


def test_snapshots_round_trip_bit_identically_without_pickle(tmp_path: Path) -> None:
    state = _stepped_world_snapshot()
    path = tmp_path / "snap.npz"
    cf.save_snapshot(path, state.to_arrays(), {"frame": 12})
    meta, arrays = cf.load_snapshot(path)
    assert meta == {"frame": 12}
    back = Snapshot.from_arrays(arrays)
    assert isinstance(back, Snapshot)
    for name, array in state.to_arrays().items():
        restored = np.asarray(back.to_arrays()[name])
        assert restored.dtype == array.dtype, name
        assert restored.tobytes() == array.tobytes(), name
    assert back.time == state.time
    assert isinstance(back.time, float)
    assert back.frame == state.frame == 3
    assert isinstance(back.frame, int)
    assert back.positions.tobytes() == state.positions.tobytes()
    assert back.velocities.tobytes() == state.velocities.tobytes()


def test_snapshots_refuse_objects(tmp_path: Path) -> None:
    with pytest.raises(cf.CacheError):
        cf.save_snapshot(tmp_path / "s.npz", {"x": np.array([object()])}, {})
    # A file holding an object array (i.e. a pickle) is refused on load.
    with open(tmp_path / "evil.npz", "wb") as handle:
        np.savez(handle, __meta__=np.array("{}"), x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(cf.CacheError):
        cf.load_snapshot(tmp_path / "evil.npz")


def test_atomic_files_get_the_permissions_of_a_plain_open(tmp_path: Path) -> None:
    """Caches on shared farm storage must be readable by other users, not 0600 like mkstemp's files."""
    plain = tmp_path / "plain.json"
    plain.write_text("{}")
    cf.write_json(tmp_path / "sidecar.json", {"frames": 1})
    assert (tmp_path / "sidecar.json").stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
