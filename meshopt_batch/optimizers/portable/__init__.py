"""One triangle order for every GPU of a target (``portable``), made fast enough for a build step.

* :mod:`.portable_optimizer`: :func:`optimize_for_target`, the steps for one index buffer;
* :mod:`.starts`: the orders it starts from (batch candidates of paper 001's Algorithm 2 with
  auxiliary memories, meshoptimizer's order, breadth-first layers from :mod:`.layers`, 2^16
  blocks);
* :mod:`.candidates`: the candidate orders, each numbered and predicted once;
* :mod:`.objective`: the one objective, its caps and the choice;
* :mod:`.window_search`: the window search, one compiled loop, whose trials :mod:`.window_judge` answers
  exactly near each window and whose local orders come from :mod:`.moves`;
* :mod:`.tuning`: every tuned constant, with what it was tuned on.

References
----------
Kerbl, B., Kenzel, M., Ivanchenko, E., Schmalstieg, D., Steinberger, M. (2018).  Revisiting the
Vertex Cache: Understanding and Optimizing Vertex Processing on the modern GPU.  Proc. ACM
Comput. Graph. Interact. Tech. 1(2).
"""

from .portable_optimizer import optimize_for_target

__all__ = ["optimize_for_target"]
