"""Vertex processing around a triangle order: welding, first-use numbering, never worse.

* :mod:`.weld`: vertices equal by value merged into one;
* :mod:`.vertex_fetch`: vertices numbered in the order the index buffers first use them;
* :mod:`.vertex_set`: one vertex buffer and the index buffers drawn from it, welded, ordered,
  renumbered and judged against the input on every profile of the target;
* :mod:`.index_codec`: an order's size under meshoptimizer's index codec.
"""
