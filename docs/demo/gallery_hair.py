"""Gallery scene ``hair`` (issue 27): a fur ball turning on the spot, its hair a Curves object simulated with
Make Hair (roots on the ball's surface by their UV coordinates), baked and rendered as hair in Cycles.

Registered in ``SCENES`` of make_gallery.py; it builds the scene as a user would (Make Hair on a Curves
object whose Surface is the ball) and returns the frame to render.
"""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
from make_demo import active, assign, material, new_file, run, stage

STRANDS, POINTS, LENGTH = 700, 12, 0.22
FRAMES = 30


def _fur(ball: Any, rng: np.random.Generator) -> Any:
    """A Curves object of STRANDS strands growing along the ball's normals (a little combed down),
    attached to it through ``surface_uv_coordinate`` on its UV map."""
    mesh = ball.data
    mesh.calc_loop_triangles()
    tris = mesh.loop_triangles
    co = np.array([v.co[:] for v in mesh.vertices])
    uv = np.array([d.uv[:] for d in mesh.uv_layers["UVMap"].data])
    areas = np.array([t.area for t in tris])
    picks = rng.choice(len(tris), STRANDS, p=areas / areas.sum())
    bary = rng.dirichlet(np.ones(3), STRANDS)
    m = np.array([list(r) for r in ball.matrix_world])
    roots, dirs, uvs = [], [], []
    for k, b in zip(picks, bary, strict=True):
        t = tris[int(k)]
        roots.append(b @ co[list(t.vertices)])
        n = np.array(t.normal[:]) + np.array([0.0, 0.0, -0.6])  # combed down a little
        dirs.append(n / np.linalg.norm(n))
        uvs.append(b @ uv[list(t.loops)])
    root = np.array(roots) @ m[:3, :3].T + m[:3, 3]
    step = LENGTH / (POINTS - 1)
    pts = root[:, None] + step * np.arange(POINTS)[None, :, None] * np.array(dirs)[:, None]
    curves = bpy.data.hair_curves.new("Fur")
    curves.add_curves([POINTS] * STRANDS)
    curves.attributes["position"].data.foreach_set("vector", pts.astype(np.float32).ravel())
    radius = curves.attributes.new("radius", "FLOAT", "POINT")
    taper = np.tile(np.linspace(0.004, 0.0008, POINTS), STRANDS).astype(np.float32)
    radius.data.foreach_set("value", taper)
    curves.surface = ball
    curves.surface_uv_map = "UVMap"
    attr = curves.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE")
    attr.data.foreach_set("vector", np.array(uvs, dtype=np.float32).ravel())
    fur = bpy.data.objects.new("Fur", curves)
    bpy.context.scene.collection.objects.link(fur)
    hair_mat = bpy.data.materials.new("Fur")
    if bpy.app.version < (5, 0, 0):
        hair_mat.use_nodes = True
    nodes = hair_mat.node_tree.nodes
    for node in list(nodes):
        if node.type != "OUTPUT_MATERIAL":
            nodes.remove(node)
    bsdf = nodes.new("ShaderNodeBsdfHairPrincipled")
    for socket in bsdf.inputs:  # by name: which inputs a version shows depends on the parametrization
        if socket.name == "Color":
            socket.default_value = (0.32, 0.17, 0.07, 1.0)
        elif socket.name == "Roughness":
            socket.default_value = 0.35
    output = next(n for n in nodes if n.type == "OUTPUT_MATERIAL")
    hair_mat.node_tree.links.new(bsdf.outputs[0], output.inputs["Surface"])
    curves.materials.append(hair_mat)
    return fur


def hair() -> int:
    """A fur ball (0.35 m) turning 150 degrees about Z in 1.25 s and tilting, its 700 strands swinging out."""
    scene = new_file(radius=0.02, frames=FRAMES, substeps=8, iterations=2)
    stage(camera=(1.9, -2.2, 1.25), target=(0.0, 0.0, 0.6), lens=48.0)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.35, location=(0.0, 0.0, 0.6), segments=32, ring_count=16)
    ball = assign(active(), material("Skin", (0.55, 0.35, 0.25), 0.6))
    ball.name = "Ball"
    bpy.ops.object.shade_smooth()
    ball.rotation_euler = (0.0, 0.0, 0.0)
    ball.keyframe_insert("rotation_euler", frame=1)
    ball.rotation_euler = (math.radians(15.0), 0.0, math.radians(150.0))
    ball.keyframe_insert("rotation_euler", frame=FRAMES)
    scene.frame_set(1)
    fur = _fur(ball, np.random.default_rng(27))
    run("make_hair", fur)
    fur.unified_particles.hair_stiffness = 0.45
    fur.unified_particles.hair_damping = 1.0
    return FRAMES
