"""Real Blender (bpy from PyPI) with the built extension installed by Blender's own installer.

``import bpy`` works once per process, so one Blender serves the whole session:
the zip is installed and enabled once, and each test starts from an empty
factory scene. Tests that need a fresh process (reopening files without the
add-on) use ``run_blender`` to run a script in a subprocess.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "bl_ext.user_default.unified_particles"

# Keep Blender's user config and caches out of the user's home (must precede `import bpy`).
_USER_DIR = tempfile.mkdtemp(prefix="up-blender-user-")
os.environ["BLENDER_USER_RESOURCES"] = _USER_DIR
os.environ["XDG_CACHE_HOME"] = os.path.join(_USER_DIR, "cache")


def extension_zip() -> Path:
    """The built zip: from ``make`` (UP_EXTENSION_ZIP) or built now with ``make extension``."""
    env_zip = os.environ.get("UP_EXTENSION_ZIP")
    if env_zip:
        return Path(env_zip)
    subprocess.run(["make", "-s", "extension"], cwd=REPO, check=True)
    zips = sorted((REPO / "dist").glob("unified_particles-*.zip"))
    assert zips, "make extension wrote no zip"
    return zips[-1]


def blender_env() -> dict[str, str]:
    """Environment for Blender subprocesses: same isolated user folder as this session."""
    return dict(os.environ)


@pytest.fixture(scope="session")
def bpy_module() -> ModuleType:
    import bpy

    zip_path = extension_zip()
    result = bpy.ops.extensions.package_install_files(
        filepath=str(zip_path), repo="user_default", enable_on_install=True
    )
    assert result == {"FINISHED"}, result
    assert PACKAGE in bpy.context.preferences.addons, "the extension did not enable"
    return bpy


@pytest.fixture
def bpy_clean(bpy_module: ModuleType) -> ModuleType:
    """An empty scene with the add-on enabled, as after File > New > General with nothing in it."""
    bpy = bpy_module
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    if PACKAGE not in bpy.context.preferences.addons:
        import addon_utils

        addon_utils.enable(PACKAGE, default_set=True)
    return bpy


def addon_module(name: str) -> Any:
    """The installed add-on's module ``name`` (e.g. ``"blender.simulation"``), to read its state."""
    return importlib.import_module(f"{PACKAGE}.{name}")


def run_blender_without_addon(
    script: str, *args: str, timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with ``args`` (``sys.argv[1:]``) in a fresh Blender that has never seen the add-on (an
    empty user folder): what a render farm or a colleague without the extension opens a file in."""
    env = dict(os.environ)
    fresh = tempfile.mkdtemp(prefix="up-no-addon-")
    env["BLENDER_USER_RESOURCES"] = fresh
    env["XDG_CACHE_HOME"] = os.path.join(fresh, "cache")
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# The start of a script that replays a bake in a Blender without the add-on (``run_blender_without_addon``):
# open the file, check the add-on is absent, and read an object's evaluated vertices. Prepend it to the
# test's own lines: ``run_blender_without_addon(REPLAY_HEAD + script, blend, ...)``.
REPLAY_HEAD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import bpy


    def open_without_addon(blend):
        bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
        assert not hasattr(bpy.types.Scene, "unified_particles")


    # (local vertex positions, flat float32; face count) as evaluated now. nodes=False hides Geometry Nodes
    # modifiers first: the baked points, before the nodes draw them as tubes or spheres.
    def evaluated_vertices(obj, nodes=True):
        for m in obj.modifiers:
            if m.type == "NODES":
                m.show_viewport = nodes
        ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        mesh = ev.to_mesh()
        co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        faces = len(mesh.polygons)
        ev.to_mesh_clear()
        return co, faces
    """
)


def run_blender(script: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh Python with bpy (a new Blender), sharing the user folder."""
    return subprocess.run(
        [sys.executable, "-c", script],
        env=blender_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
