"""meshoptimizer from Python: which binding does what, and why there are two (three with meshlets).

meshoptimizer (Arseny Kapoulkine's C++ library) reaches this project through two PyPI bindings,
each wrapping a part the other does not:

``meshoptimizer``
    The optimizers: ``optimize_vertex_cache`` (the order gltfpack ships, this project's reference
    and one of its window moves), its FIFO and strip variants and ``optimize_overdraw``.  Its
    extension module also carries the C library (:func:`c_library_path`), whose
    ``meshopt_optimizeVertexCache`` compiled code calls directly
    (:mod:`meshopt_batch.optimizers.portable.moves`).  It has no encoder for filtered vertex
    streams nor for the codec's levels.
``meshopt``
    The codecs of ``EXT_meshopt_compression`` / ``KHR_meshopt_compression``: vertex buffers with
    their levels and versions, index buffers and sequences, the filters.  Every compressed file is
    written and read with it, so the index-codec size the portable optimizer weighs
    (:mod:`meshopt_batch.vertices.index_codec`) is measured with it too: the size of the bytes
    that ship.
``almeshopt`` (optional, the ``compare`` extra)
    The meshlet builder and bounds, for the meshlet comparison only
    (:mod:`meshopt_batch.meshlets.meshoptimizer_meshlets`).

This module is the one place the first two are imported; the others take their functions from
here.

References
----------
Kapoulkine, A.  meshoptimizer (``meshopt_optimizeVertexCache``, ``meshopt_encodeIndexBuffer``,
``meshopt_encodeVertexBufferLevel``), https://github.com/zeux/meshoptimizer.
"""

from __future__ import annotations

import glob
import os

import meshopt as codecs
import meshoptimizer as optimizers

from .errors import MeshoptBatchError

__all__ = ["c_library_path", "codecs", "optimizers"]


def c_library_path() -> str:
    """The shared object of the ``meshoptimizer`` package that holds meshoptimizer's C functions.

    Raises
    ------
    MeshoptBatchError
        When the package's compiled library is not where the package is.
    """
    found = sorted(glob.glob(os.path.join(os.path.dirname(optimizers.__file__), "_meshoptimizer*")))
    if not found:
        raise MeshoptBatchError("the meshoptimizer package's compiled library was not found")
    return found[0]
