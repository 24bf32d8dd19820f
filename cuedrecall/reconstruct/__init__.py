"""reconstruct: a recall's records grouped into items, each quoted within a character budget.

One module per step, in the order ``process`` calls them: ``resolve`` (count and
budget), ``bundle`` (stage 2), the walk (``graph.walk``, stage 3), ``structure``
(stage 4), ``quotes``, ``allocate`` and ``envelope``.
"""
