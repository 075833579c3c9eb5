"""glTF 2.0 accessor component and element types, and the compression extensions by name.

A leaf module: the document reader (:mod:`.gltf_document`) and the codec modules it calls
(:mod:`.meshopt_streams`, :mod:`.draco_decoding`) all read these tables, so they live below all
three.

References
----------
.. [1] Khronos, glTF 2.0 specification, "Accessors" (``componentType`` and ``type``).
.. [2] Khronos, ``EXT_meshopt_compression`` and ``KHR_meshopt_compression`` (buffer views),
   ``KHR_draco_mesh_compression`` (primitives).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "COMPONENTS_OF_TYPE",
    "COMPONENT_DTYPES",
    "COMPONENT_TYPE_OF",
    "COMPRESSION_EXTENSIONS",
    "DRACO_EXTENSION",
    "MESHOPT_EXTENSIONS",
    "TYPE_OF_COMPONENTS",
    "element_size",
]

#: numpy dtype of each accessor ``componentType``.
COMPONENT_DTYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
COMPONENT_TYPE_OF = {np.dtype(v): k for k, v in COMPONENT_DTYPES.items()}
COMPONENTS_OF_TYPE = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
TYPE_OF_COMPONENTS = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 9: "MAT3", 16: "MAT4"}
#: Buffer-view compression: the KHR extension and the vendor extension it grew from.
MESHOPT_EXTENSIONS = ("EXT_meshopt_compression", "KHR_meshopt_compression")
DRACO_EXTENSION = "KHR_draco_mesh_compression"
#: Geometry compression extensions (their data is decoded on reading).
COMPRESSION_EXTENSIONS = {DRACO_EXTENSION, *MESHOPT_EXTENSIONS}


def element_size(accessor: dict) -> int:
    """Bytes of one element of an accessor (its components packed, no stride)."""
    return np.dtype(COMPONENT_DTYPES[accessor["componentType"]]).itemsize * COMPONENTS_OF_TYPE[accessor["type"]]
