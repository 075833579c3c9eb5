"""The batch-based optimizer of paper 001 (Kerbl et al. 2018, Algorithm 2), one module per seam.

* :mod:`.batch_optimizer`: :func:`optimize_batch` for one profile, its coefficients and options, and
  the work after the order is found (16-bit fix, direct-mapped renumbering, final prediction);
* :mod:`.state`, :mod:`.queue`, :mod:`.fibheap_reference`, :mod:`.select`, :mod:`.batch_fit`,
  :mod:`.steps`, :mod:`.dual_graph`, :mod:`.layout`: the parts of the compiled loop;
* :mod:`.boundary16`: the 16-bit boundary post-process (paper 001 sec. 4);
* :mod:`.aux`: the auxiliary memories that let one run of Algorithm 2 weigh other GPUs' reuse
  (used by :mod:`meshopt_batch.optimizers.portable`, the order for a target of several profiles).

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting
the Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).  (Paper 001: Algorithms 1-2, eq. 1-2, sec. 4.)
"""

from .batch_optimizer import DEFAULT_COEFFICIENTS, DEFAULT_OPTIONS, NO_DISTANCE_COEFFICIENTS, optimize_batch

__all__ = ["DEFAULT_COEFFICIENTS", "DEFAULT_OPTIONS", "NO_DISTANCE_COEFFICIENTS", "optimize_batch"]
