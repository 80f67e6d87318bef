"""Gallery scene of a splash with whitewater (issue 25); water poured into a glass is gallery_pour.py.

Registered in ``SCENES`` of make_gallery.py; the function builds the scene with the add-on's operators as
a user would and returns the frame to render. Smooth Surface (the default) and Whitewater on, rendered at
``still_size`` (1280 x 720, read by make_gallery.py).

    UP_EXTENSION_ZIP=dist/unified_particles-0.1.0.zip .venv/bin/python docs/demo/make_gallery.py --only splash
"""

from __future__ import annotations

import bpy
from make_demo import active, assign, new_file, run, stage, tank, water_material

SIZE = (1280, 720)


def splash() -> int:
    """A block of water dropped into a pool in a tank (r = 2.5 cm), with whitewater: frame 16."""
    new_file(radius=0.025, frames=16)
    stage(camera=(1.0, -1.15, 1.25), target=(0.0, 0.0, 0.12), lens=32.0)
    half = 0.4
    tank(half, half, 0.22)
    liquids = []
    for name, size, location in (
        ("Pool", (2 * half - 0.01, 2 * half - 0.01, 0.15), (0.0, 0.0, 0.075)),
        ("Drop", (0.24, 0.24, 0.24), (0.1, 0.05, 0.5)),
    ):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=location)
        obj = assign(active(), water_material())
        obj.name = name
        obj.scale = size
        bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
        obj.unified_particles.whitewater = True
        liquids.append(obj)
    run("make_fluid", *liquids)
    return 16


splash.still_size = SIZE  # type: ignore[attr-defined]
