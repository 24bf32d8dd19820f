"""Cleaning caller text before it is stored."""

from __future__ import annotations

import re

# "[Memory from ...]" annotations are what a recall showed an agent; stored back, they would echo forever.
_ANNOTATION = re.compile(r"\[Memory from [^\]]*\]\s*")


def sanitise(text: str, cap: int) -> tuple[str, bool]:
    """Drop ``[Memory from ...]`` annotations, trim, cut to the cap; also says whether it cut."""
    clean = _ANNOTATION.sub("", text).strip()
    return clean[:cap], len(clean) > cap
