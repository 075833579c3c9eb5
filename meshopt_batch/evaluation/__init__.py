"""Comparing orders: the method x profile table and the orders shipped for a target.

* :mod:`.method_comparison`: every method on every profile, Table 1 of paper 001 in form;
* :mod:`.shipped_orders`: the orders ``optimize`` writes, judged on every GPU of a target
  against meshoptimizer's.
"""
