"""The render-farm command line parses its arguments without importing Blender."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from unified_particles import farm


def test_frame_ranges() -> None:
    assert farm.parse_frames("1:250") == (1, 250)
    assert farm.parse_frames("7") == (7, 7)
    for bad in ("10:1", "a:b", "1:2:3", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            farm.parse_frames(bad)


def test_help_does_not_import_bpy() -> None:
    code = (
        "import sys; sys.modules['bpy'] = None\n"
        "from unified_particles import farm\n"
        "try:\n"
        "    farm.main(['--help'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--frames" in out.stdout
