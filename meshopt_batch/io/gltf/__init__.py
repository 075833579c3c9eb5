"""glTF 2.0: reading, checking, decoding, patching and writing documents.

Reading: :mod:`.glb_container` (GLB chunks, data URIs, external files), :mod:`.document_checks`
(types, references and sizes), :mod:`.gltf_document` (JSON, buffers, accessor arrays),
:mod:`.gltf_reader` (a mesh per triangle primitive, the scene graph), :mod:`.draw_census` (the
primitives grouped by the vertex data they share), :mod:`.draco_decoding` and
:mod:`.meshopt_streams` (compressed data decoded).

Writing: :mod:`.gltf_writer` (a new document from meshes), :mod:`.source_rewriting` (meshes
written back into a source document's structure, for ``save_mesh(source=)``),
:mod:`.byte_patching` (an optimized document's changed bytes patched in place),
:mod:`.stream_grouping` and :mod:`.compressed_views` (buffer views regrouped and compressed),
:mod:`.file_packaging` (the files written, external ones kept external).  :mod:`.gltf_types`
holds the accessor types every one of them uses.
"""
