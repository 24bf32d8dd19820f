"""The associative layer: entities, their aliases, the records that mention them and declared relations.

Beside ``recall/`` (layer 2): it reads and writes through the ``Store`` protocol and
knows nothing of the tools above it. Recall itself never reads the graph; reconstruct
does, through ``cues.query_cues``, ``walk.walk`` and ``relations.record_relations``.
"""
