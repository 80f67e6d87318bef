# SPDX-License-Identifier: GPL-3.0-or-later
"""Headless bake of a saved .blend, in place: for render farms (Flamenco, Deadline) and scripts.

With Blender as a Python module (``pip install bpy``), from a folder where ``unified_particles`` is
importable (the repository, or ``pip install``-ed)::

    python -m unified_particles.farm scene.blend --frames 1:250

With a Blender that has the extension installed and enabled::

    blender -b scene.blend --python-exit-code 1 --python-expr \\
        "import bpy; bpy.ops.unified_particles.bake(); bpy.ops.wm.save_mainfile()"

(add ``use_custom_range=True, frame_start=1, frame_end=250`` to the operator call for a custom range).
Both simulate the scene's objects, write the bake (keyframes and shape keys into the .blend, PC2 files
into the scene's cache folder, relative to the .blend) and save the .blend. Render nodes then need only
the .blend and its cache folder, not the add-on. An interrupted farm bake continues where it stopped
when the same command runs again. The exit code is non-zero when the bake fails; the previous bake (if
any) is then left as it was.

Importing this module does not import ``bpy``: Blender is loaded by :func:`main`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any


def parse_frames(text: str) -> tuple[int, int]:
    """``"1:250"`` -> (1, 250); a single number bakes one frame."""
    parts = text.split(":")
    try:
        if len(parts) == 1:
            start = end = int(parts[0])
        elif len(parts) == 2:
            start, end = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END (e.g. 1:250), got {text!r}") from None
    if end < start:
        raise argparse.ArgumentTypeError(f"frame range {text!r} ends before it starts")
    return start, end


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m unified_particles.farm",
        description="Bake the Unified Particles simulation of a saved .blend in place (headless).",
    )
    parser.add_argument(
        "blend", nargs="?", help=".blend file to bake and save (default: the file Blender has open)"
    )
    parser.add_argument(
        "--frames", type=parse_frames, default=None, help="START:END (default: the scene's frame range)"
    )
    parser.add_argument("--scene", default=None, help="scene name (default: the file's active scene)")
    parser.add_argument("--no-save", action="store_true", help="bake but do not save the .blend")
    return parser


def _bake_module(bpy: ModuleType) -> tuple[ModuleType, bool]:
    """The bake module of the registered add-on (the installed extension, or this package, registered
    now: then the second value is True and the caller unregisters it before exiting)."""
    registered_here = False
    if not hasattr(bpy.types.Scene, "unified_particles_bake"):
        from . import register

        register()
        registered_here = True
    cls: Any = getattr(bpy.types, "UNIFIED_PARTICLES_OT_bake", None)
    # The operator lives in <package>.blender.bake.operators; its package is the bake API.
    module_name = getattr(cls, "__module__", "").rpartition(".")[0]
    if module_name in sys.modules and hasattr(sys.modules[module_name], "bake_scene"):
        return sys.modules[module_name], registered_here
    from .blender import bake

    return bake, registered_here


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    import bpy

    bake, registered_here = _bake_module(bpy)
    try:
        return _run(bpy, bake, args)
    finally:
        if registered_here:
            # Blender 4.2 as a Python module crashes at exit while add-on classes are still registered.
            from . import unregister

            unregister()


def _run(bpy: ModuleType, bake: ModuleType, args: argparse.Namespace) -> int:
    if args.blend:
        path = Path(args.blend).resolve()
        if not path.is_file():
            print(f"error: no such .blend file: {path}", file=sys.stderr)
            return 2
        bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    if not bpy.data.filepath:
        print("error: give the .blend file to bake (the open file is not saved)", file=sys.stderr)
        return 2
    scene = bpy.data.scenes.get(args.scene) if args.scene else bpy.context.scene
    if scene is None:
        print(f"error: no scene named {args.scene!r}", file=sys.stderr)
        return 2
    start, end = args.frames if args.frames else (scene.frame_start, scene.frame_end)
    if bake.ensure_uids(scene) and not args.no_save:
        # Stable cache ids must be in the file before baking, so a killed job resumes when run again.
        bpy.ops.wm.save_mainfile()
    began = time.perf_counter()
    last_print = [0.0]

    def progress(job: Any) -> None:
        now = time.perf_counter()
        if now - last_print[0] >= 2.0 or job.frame == job.frame_end:
            last_print[0] = now
            print(job.status_text().replace(" (Esc to cancel)", ""), flush=True)

    try:
        job = bake.bake_scene(scene, start, end, progress=progress)
    except Exception as exc:
        # The bake keeps a readable message (disk full, blow-up, ...) in the scene's bake state.
        print(f"error: bake failed: {scene.unified_particles_bake.error or exc}", file=sys.stderr)
        return 1
    if not args.no_save:
        bpy.ops.wm.save_mainfile()
    resumed = f", resumed after frame {job.resumed_from}" if job.resumed_from is not None else ""
    print(
        f"Baked {bpy.data.filepath} scene {scene.name!r} frames {start}-{end} "
        f"in {time.perf_counter() - began:.1f} s{resumed}",
        flush=True,
    )
    if job.warning:
        print(f"warning: {job.warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
