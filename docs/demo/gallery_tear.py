"""Gallery still of issue 27 item 3: a curtain torn by a ball (``make_gallery.py --only curtain``).

A curtain hangs from its top edge (Pin Group), Tear Strain set in the cloth panel; a steel ball thrown at
it rips through. Built with the sidebar's operators and baked, as a user would.
"""

from __future__ import annotations

import bpy
from make_demo import active, assign, material, new_file, run, stage, thickness


def curtain() -> int:
    """A 1.6 x 1.8 m curtain pinned along its top, a steel ball thrown through it. Returns the frame."""
    new_file(radius=0.02, frames=18, substeps=8, iterations=2)
    stage(camera=(3.2, -3.6, 1.5), target=(0.0, 0.0, 1.1), lens=40.0)
    bpy.ops.mesh.primitive_grid_add(
        x_subdivisions=40, y_subdivisions=45, size=1.0, location=(0.0, 0.0, 1.2), rotation=(1.5708, 0.0, 0.0)
    )
    curtain = active()
    curtain.name = "Curtain"
    curtain.scale = (1.6, 1.8, 1.0)
    bpy.ops.object.transform_apply(location=False, rotation=True, scale=True)
    top = [v.index for v in curtain.data.vertices if v.co.z > 0.899]
    curtain.vertex_groups.new(name="Rod").add(top, 1.0, "REPLACE")
    assign(curtain, material("Velvet", (0.45, 0.05, 0.08), 0.8))
    run("make_cloth", curtain)
    run("apply_preset", curtain, preset="COTTON")
    s = curtain.unified_particles
    s.pin_group = "Rod"
    s.tear_strain = 0.1  # Tear Strain in the cloth panel
    # The split copies welded again where the curtain is whole (smooth shading, one solid sheet).
    curtain.modifiers.new("Weld", "WELD").merge_threshold = 0.001
    thickness(curtain, 0.006)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(0.1, -1.4, 1.0), segments=32, ring_count=16)
    ball = assign(active(), material("Steel", (0.8, 0.8, 0.82), 0.25))
    bpy.ops.object.shade_smooth()
    ball.data.materials[0].node_tree.nodes["Principled BSDF"].inputs["Metallic"].default_value = 1.0
    run("make_rigid", ball)
    run("apply_preset", ball, preset="STEEL")
    ball.unified_particles.initial_velocity = (0.0, 7.0, 1.0)
    return 18  # the ball through, the curtain ripped open behind it
