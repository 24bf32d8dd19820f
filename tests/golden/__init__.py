"""The recall behaviour golden: a fixed corpus, fixed queries, the full responses pinned in JSON.

Regenerate deliberately (it prints the diff first): ``python -m tests.golden.regenerate``.
"""
