"""The SQL both backends share, written once against a ``Dialect`` (``dialect.py``): each module a mixin of the
backend stores, over their ``_read`` and transactions; what only one backend can say stays in its folder."""
