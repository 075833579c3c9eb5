"""meshopt-batch: predict, measure and minimise GPU vertex-shader work for triangle meshes.

The public API (the same functions the command line calls)::

    from meshopt_batch import load_mesh, predict, optimize, optimize_file, save_mesh
    mesh = load_mesh("bunny.ply")
    predict(mesh.triangles, mesh.vertex_count, profile="nvidia_gl").asr   # paper 001, Algorithm 1
    result = optimize(mesh)                       # one order for every GPU family ("portable")
    save_mesh(result.apply(mesh), "bunny_portable.ply")
    optimize_file("asset.glb", "shipped.glb")     # a whole file, its document kept

Names are imported lazily so that ``import meshopt_batch`` stays fast.
"""

from importlib import import_module

from meshopt_batch.support.kernel_cache import install as _install_kernel_cache

__version__ = "0.1.0"
_install_kernel_cache()  # every kernel defined from here on loads compiled from the package; loads no numba

_EXPORTS = {
    "predict": "meshopt_batch.model.prediction",
    "Prediction": "meshopt_batch.model.prediction",
    "Profile": "meshopt_batch.model.profiles",
    "get_profile": "meshopt_batch.model.profiles",
    "builtin_profile_names": "meshopt_batch.model.profiles",
    "Mesh": "meshopt_batch.geometry.mesh_record",
    "load_mesh": "meshopt_batch.io",
    "load_meshes": "meshopt_batch.io",
    "save_mesh": "meshopt_batch.io",
    "optimize": "meshopt_batch.optimizers",
    "OptimizeResult": "meshopt_batch.optimizers",
    "optimize_file": "meshopt_batch.assets.file_optimization",
    "AssetReport": "meshopt_batch.assets.file_optimization",
    "Target": "meshopt_batch.model.targets",
    "get_target": "meshopt_batch.model.targets",
    "codec_bits": "meshopt_batch.vertices.index_codec",
    "vertex_faces": "meshopt_batch.geometry.mesh_topology",
    "valence": "meshopt_batch.geometry.mesh_topology",
    "face_adjacency": "meshopt_batch.geometry.mesh_topology",
    "MeshoptBatchError": "meshopt_batch.support.errors",
    "MeshError": "meshopt_batch.support.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'meshopt_batch' has no attribute {name!r}")
