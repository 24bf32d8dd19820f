"""reconstruct's policy: the constants of grouping, quoting and allocation, in one place; its version is POLICY
(the answer's policy field), so changing a constant is a new version, not a new module."""

from __future__ import annotations

POLICY = "v2"  # v2: only an episode of at most a session's span bundles the memories inside it

# Bundling keys, strongest first: an item's independence_reason is the strongest key among its members.
KEYS = ("msg_id", "episode", "adjacent", "relation", "chain")

# The bounds a caller may ask for (larger values are lowered to these, and bounds says so).
MAX_HOPS = 5
MAX_EVIDENCE = 100

# Blocks within a record are ranked by two lists fused by reciprocal rank with this constant.
RRF_K = 60

# The revision of a text, as get_contents checks it: this many hex digits of its SHA-256.
REVISION_DIGITS = 12
