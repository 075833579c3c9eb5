"""Whole files: read, weld, order each buffer, renumber, judge, write.

* :mod:`.file_optimization`: :func:`optimize_file` for any format this library reads, and its
  report;
* :mod:`.gltf_optimization`: a glTF document's vertex sets ordered on the machine's cores, then
  written back into the document;
* :mod:`.gltf_delivery`: how a glTF goes out (compressed as it came, or as asked) and what that
  costs in bytes.
"""
