# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake cache files: PC2 point caches, JSON sidecars, solver snapshots. No bpy here.

Everything a bake writes to disk goes through this module, so it can be tested (and read by
render-farm tools) without Blender.

* **PC2** (``<uid>.pc2``): the point-cache format that Blender's built-in Mesh Cache modifier
  plays. Little-endian header ``struct.pack("<12siiffi", b"POINTCACHE2\\0", 1, n_points,
  start_frame, sample_rate, n_samples)`` followed by ``n_samples x n_points x 3`` float32.
  :class:`PC2Writer` streams one frame at a time into a temporary file next to the target and
  moves it into place with :func:`os.replace` only when complete, so a reader never sees a
  half-written cache and an interrupted bake never damages the previous one.
* **Sidecar** (``<uid>.json``): format version, frames, counts and a hash of the settings the
  cache was made with, so a stale or mismatched cache is detected (:func:`check_sidecar`) and
  reported instead of played silently.
* **Snapshots** (``*.npz``): solver states saved with :func:`numpy.savez` and read back with
  ``allow_pickle=False``. Nothing in this package is ever loaded with pickle.

File names come from a stable per-object id (a UUID string stored on the object), never from
the object's name: renaming an object keeps its cache, and a name cannot escape the cache folder.

Why it sits in ``blender/`` though it imports no bpy: it is the bake's file layer, and only the bake
(``blender/bake/``) writes these files; keeping no bpy here is what lets tests and farm tools read
a bake's files without Blender. It is a base module of the Blender layer (imports NumPy only).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

FORMAT_VERSION = 1
"""Version of the sidecar/cache layout; bump when the meaning of a file changes."""

PC2_MAGIC = b"POINTCACHE2\0"
PC2_HEADER = struct.Struct("<12siiffi")
"""magic, file version (1), points, start frame, sample rate, samples."""
PC2_HEADER_SIZE = PC2_HEADER.size  # 32 bytes

_UID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
TEMP_PREFIX = ".up-tmp-"


class CacheError(ValueError):
    """A cache file is missing, malformed, stale or does not match the scene."""


# --------------------------------------------------------------------------------------------------------
# Names and paths


def new_uid() -> str:
    """A fresh stable id for an object (32 lowercase hex digits)."""
    return uuid.uuid4().hex


def safe_stem(uid: str) -> str:
    """The file stem for an object id; rejects anything that is not a plain id (no separators, no dots)."""
    if not isinstance(uid, str) or not _UID_RE.fullmatch(uid):
        raise CacheError(f"invalid cache id {uid!r}: expected letters, digits, '-' or '_' (max 64)")
    return uid


def cache_file(folder: str | os.PathLike[str], uid: str, suffix: str) -> Path:
    """``folder/<uid><suffix>``, guaranteed to lie inside ``folder``."""
    if not re.fullmatch(r"(\.[a-z0-9]{1,8}){1,2}", suffix):
        raise CacheError(f"invalid cache file suffix {suffix!r}")
    root = Path(folder).resolve()
    path = (root / (safe_stem(uid) + suffix)).resolve()
    if path.parent != root:
        raise CacheError(f"cache file {path} would leave the cache folder {root}")
    return path


def settings_hash(settings: Mapping[str, Any]) -> str:
    """A stable SHA-256 of JSON-serialisable settings (key order does not matter)."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# --------------------------------------------------------------------------------------------------------
# Atomic writes


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[Any]]:
    """Write ``path`` through a temporary file in the same folder, moved into place on success only.

    On an exception the temporary file is removed and ``path`` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=target.suffix, dir=target.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; give the file the permissions a plain open() would (umask applied),
        # so other users of a shared farm folder can read the cache.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: str | os.PathLike[str], data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented JSON, atomically."""
    with atomic_file(path, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True, default=_json_default)
        handle.write("\n")


def read_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError as exc:
        raise CacheError(f"missing cache file {path}") from exc
    except (OSError, ValueError) as exc:
        raise CacheError(f"unreadable cache file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise CacheError(f"unreadable cache file {path}: not a JSON object")
    return data


# --------------------------------------------------------------------------------------------------------
# PC2


def pc2_header(n_points: int, n_samples: int, start_frame: float = 1.0, sample_rate: float = 1.0) -> bytes:
    return PC2_HEADER.pack(
        PC2_MAGIC, 1, int(n_points), float(start_frame), float(sample_rate), int(n_samples)
    )


@dataclasses.dataclass(frozen=True)
class PC2Info:
    n_points: int
    start_frame: float
    sample_rate: float
    n_samples: int


def read_pc2_header(path: str | os.PathLike[str]) -> PC2Info:
    with open(path, "rb") as handle:
        raw = handle.read(PC2_HEADER_SIZE)
    if len(raw) != PC2_HEADER_SIZE:
        raise CacheError(f"{path}: too short for a PC2 header")
    magic, version, n_points, start, rate, n_samples = PC2_HEADER.unpack(raw)
    if magic != PC2_MAGIC or version != 1:
        raise CacheError(f"{path}: not a PC2 point cache (bad header)")
    if n_points < 0 or n_samples < 0:
        raise CacheError(f"{path}: corrupt PC2 header")
    expected = PC2_HEADER_SIZE + n_points * n_samples * 12
    actual = os.path.getsize(path)
    if actual != expected:
        raise CacheError(f"{path}: {actual} bytes, header promises {expected} (truncated or corrupt)")
    return PC2Info(n_points, start, rate, n_samples)


def read_pc2(path: str | os.PathLike[str]) -> tuple[PC2Info, np.ndarray]:
    """Header and all samples as a float32 array (n_samples, n_points, 3)."""
    info = read_pc2_header(path)
    data = np.fromfile(path, dtype="<f4", offset=PC2_HEADER_SIZE)
    return info, data.reshape(info.n_samples, info.n_points, 3)


def read_pc2_frame(path: str | os.PathLike[str], sample: int) -> np.ndarray:
    """One sample (n_points, 3) float32, read without loading the whole file."""
    info = read_pc2_header(path)
    if not 0 <= sample < info.n_samples:
        raise CacheError(f"{path}: sample {sample} outside 0..{info.n_samples - 1}")
    count = info.n_points * 3
    data = np.fromfile(path, dtype="<f4", count=count, offset=PC2_HEADER_SIZE + sample * count * 4)
    return data.reshape(info.n_points, 3)


class PC2Writer:
    """Streams frames into a PC2 file; the target appears (atomically) only on :meth:`close`.

    ``resume=True`` continues a partial temporary file left by an interrupted writer (see
    :attr:`partial_path`), keeping its first ``keep_samples`` samples.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        n_points: int,
        start_frame: float = 1.0,
        sample_rate: float = 1.0,
        *,
        partial_path: str | os.PathLike[str] | None = None,
        keep_samples: int = 0,
    ) -> None:
        self.path = Path(path)
        self.n_points = int(n_points)
        self.start_frame = float(start_frame)
        self.sample_rate = float(sample_rate)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.partial_path = (
            Path(partial_path) if partial_path is not None else self.path.with_name(self.path.name + ".part")
        )
        self.n_samples = 0
        if keep_samples > 0:
            info = _read_partial_header(self.partial_path)
            if info.n_points != self.n_points:
                raise CacheError(f"{self.partial_path}: {info.n_points} points, expected {self.n_points}")
            available = (os.path.getsize(self.partial_path) - PC2_HEADER_SIZE) // (12 * self.n_points or 1)
            if available < keep_samples:
                raise CacheError(f"{self.partial_path}: {available} samples, cannot resume at {keep_samples}")
            self._file: IO[bytes] | None = open(self.partial_path, "r+b")  # noqa: SIM115 (closed in close())
            self._file.truncate(PC2_HEADER_SIZE + keep_samples * 12 * self.n_points)
            self._file.seek(0, os.SEEK_END)
            self.n_samples = keep_samples
        else:
            self._file = open(self.partial_path, "wb")  # noqa: SIM115 (closed in close())
            self._file.write(pc2_header(self.n_points, 0, self.start_frame, self.sample_rate))

    def write(self, points: np.ndarray) -> None:
        """Append one sample: (n_points, 3) positions, stored as little-endian float32."""
        if self._file is None:
            raise CacheError("PC2 writer already closed")
        array = np.ascontiguousarray(points, dtype="<f4")
        if array.shape != (self.n_points, 3):
            raise CacheError(f"PC2 sample has shape {array.shape}, expected ({self.n_points}, 3)")
        if not np.isfinite(array).all():
            raise CacheError("PC2 sample contains NaN or infinite positions")
        self._file.write(array.tobytes())
        self.n_samples += 1

    def flush(self) -> None:
        """Make the partial file durable and its header consistent (for resuming after a crash)."""
        if self._file is None:
            return
        self._file.seek(0)
        self._file.write(pc2_header(self.n_points, self.n_samples, self.start_frame, self.sample_rate))
        self._file.seek(0, os.SEEK_END)
        self._file.flush()

    def close(self, commit: bool = True) -> None:
        """Finish the header and move the file into place (``commit``), or just leave the partial."""
        if self._file is None:
            return
        self.flush()
        if commit:
            os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        if commit:
            os.replace(self.partial_path, self.path)

    def discard(self) -> None:
        """Close and delete the partial file; the target is untouched."""
        if self._file is not None:
            self._file.close()
            self._file = None
        with contextlib.suppress(OSError):
            os.unlink(self.partial_path)

    def __enter__(self) -> PC2Writer:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close(commit=True)
        else:
            self.discard()


def _read_partial_header(path: Path) -> PC2Info:
    with open(path, "rb") as handle:
        raw = handle.read(PC2_HEADER_SIZE)
    if len(raw) != PC2_HEADER_SIZE:
        raise CacheError(f"{path}: too short for a PC2 header")
    magic, version, n_points, start, rate, n_samples = PC2_HEADER.unpack(raw)
    if magic != PC2_MAGIC or version != 1:
        raise CacheError(f"{path}: not a PC2 point cache (bad header)")
    return PC2Info(n_points, start, rate, n_samples)


def write_pc2(path: str | os.PathLike[str], samples: np.ndarray, start_frame: float = 1.0) -> None:
    """Write all samples (n_samples, n_points, 3) at once, atomically."""
    samples = np.asarray(samples)
    with PC2Writer(path, samples.shape[1], start_frame) as writer:
        for sample in samples:
            writer.write(sample)


# --------------------------------------------------------------------------------------------------------
# Sidecars


def make_sidecar(
    *,
    uid: str,
    kind: str,
    output: str,
    frame_start: int,
    frame_end: int,
    n_points: int,
    settings: str,
    object_name: str = "",
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The sidecar of one object's cache: what it holds and which settings made it."""
    data: dict[str, Any] = {
        "format": "unified_particles.cache",
        "format_version": FORMAT_VERSION,
        "uid": safe_stem(uid),
        "kind": kind,
        "output": output,
        "frame_start": int(frame_start),
        "frame_end": int(frame_end),
        "frames": int(frame_end) - int(frame_start) + 1,
        "n_points": int(n_points),
        "settings_hash": settings,
        "object_name": object_name,
    }
    if extra:
        data.update(extra)
    return data


def check_sidecar(
    sidecar: Mapping[str, Any],
    *,
    uid: str | None = None,
    settings: str | None = None,
    n_points: int | None = None,
    frame_start: int | None = None,
    frame_end: int | None = None,
    pc2_path: str | os.PathLike[str] | None = None,
) -> list[str]:
    """Problems that make a cache unusable for the current scene (empty list: the cache is good)."""
    problems: list[str] = []
    if sidecar.get("format") != "unified_particles.cache":
        return ["not a Unified Particles cache sidecar"]
    if sidecar.get("format_version") != FORMAT_VERSION:
        problems.append(
            f"cache format version {sidecar.get('format_version')} (this version reads {FORMAT_VERSION})"
        )
    if uid is not None and sidecar.get("uid") != uid:
        problems.append(f"cache belongs to object id {sidecar.get('uid')}, not {uid}")
    if settings is not None and sidecar.get("settings_hash") != settings:
        problems.append("settings changed since the bake (cache is stale)")
    if n_points is not None and sidecar.get("n_points") != n_points:
        problems.append(f"cache has {sidecar.get('n_points')} points, the object has {n_points}")
    if frame_start is not None and sidecar.get("frame_start") != frame_start:
        problems.append(f"cache starts at frame {sidecar.get('frame_start')}, expected {frame_start}")
    if frame_end is not None and sidecar.get("frame_end") != frame_end:
        problems.append(f"cache ends at frame {sidecar.get('frame_end')}, expected {frame_end}")
    if pc2_path is not None:
        try:
            info = read_pc2_header(pc2_path)
        except (CacheError, OSError) as exc:
            problems.append(str(exc) if isinstance(exc, CacheError) else f"missing point cache {pc2_path}")
        else:
            if info.n_points != sidecar.get("n_points") or info.n_samples != sidecar.get("frames"):
                problems.append(
                    f"point cache holds {info.n_samples} frames x {info.n_points} points, sidecar says "
                    f"{sidecar.get('frames')} x {sidecar.get('n_points')}"
                )
    return problems


# --------------------------------------------------------------------------------------------------------
# Solver snapshots (resumable bakes)


def save_snapshot(
    path: str | os.PathLike[str], arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]
) -> None:
    """Save named arrays (``Snapshot.to_arrays()``) and JSON metadata to ``path`` (.npz), atomically,
    without pickle."""
    if "__meta__" in arrays:
        raise CacheError("state field named __meta__")
    for name, array in arrays.items():
        if not name.isidentifier():
            raise CacheError(f"cannot snapshot state field {name!r}")
        if np.asarray(array).dtype == object:
            raise CacheError(f"state field {name!r} is not numeric (would need pickle)")
    meta_text = json.dumps(dict(meta), sort_keys=True, default=_json_default)
    with atomic_file(path, "wb") as handle:
        np.savez(handle, __meta__=np.array(meta_text), **dict(arrays))


def load_snapshot(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Metadata and arrays of a snapshot (``allow_pickle=False``: object arrays are refused)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: np.array(data[name]) for name in data.files}
    except FileNotFoundError as exc:
        raise CacheError(f"missing snapshot {path}") from exc
    except (OSError, ValueError) as exc:
        raise CacheError(f"unreadable snapshot {path}: {exc}") from exc
    meta_array = arrays.pop("__meta__", None)
    if meta_array is None:
        raise CacheError(f"{path}: snapshot without metadata")
    meta = json.loads(str(meta_array))
    return meta, arrays


# --------------------------------------------------------------------------------------------------------
# Folder housekeeping


def remove_files(paths: list[Path]) -> None:
    """Delete files; ones already gone are fine."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def remove_tree(path: str | os.PathLike[str]) -> None:
    shutil.rmtree(path, ignore_errors=True)


def remove_dir_if_empty(path: str | os.PathLike[str]) -> None:
    """Remove a folder if it is empty (OSError: it is not empty, or is gone, or not ours to remove)."""
    with contextlib.suppress(OSError):
        os.rmdir(path)
