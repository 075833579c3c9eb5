"""Meshes and their connectivity: the mesh record, vertex-face adjacency, transforms.

* :mod:`.mesh_record`: :class:`Mesh`, an immutable record of positions, triangles and attributes;
* :mod:`.mesh_topology`: vertex -> faces (CSR), valence, face adjacency;
* :mod:`.mesh_transform`: model matrices applied to positions and normals.
"""
