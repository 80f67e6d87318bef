"""The core is pure NumPy: it imports in a Python that has no bpy."""

from __future__ import annotations

import subprocess
import sys


def test_core_imports_without_bpy() -> None:
    # A child interpreter where `import bpy` fails, as in any Python without Blender.
    code = (
        "import sys; sys.modules['bpy'] = None\n"
        "import unified_particles.core as core\n"
        "assert 'bpy' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print(core.SimulationInputError.__mro__[1].__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ValueError"
