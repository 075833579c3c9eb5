"""The vertex-reuse model: GPU profiles, targets of several profiles, and Algorithm 1.

* :mod:`.profiles`: a GPU family as data (batch bounds, memory kind and size), built-in and
  parsed (``fifo:N``, ``lru:N``, ``+16bit``); :mod:`.profile_file` reads and writes one as JSON;
* :mod:`.targets`: the set of profiles one order is made for (``portable``);
* :mod:`.prediction`: :func:`predict` (paper 001, Algorithm 1) and its metrics;
* :mod:`.reuse_kernels`: Algorithm 1 compiled once per memory kind.

A new GPU is a profile (data) or, where its memory behaves like none here, a memory kind in
:mod:`.reuse_kernels`.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting the
Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2) (paper 001: Algorithm 1, sec. 3.3).
"""
