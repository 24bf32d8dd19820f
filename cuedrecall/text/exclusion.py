"""Exclusion of records whose content the caller already holds (exclude_contents)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# Below this length an entry must equal the content; at or above it, a prefix match in
# either direction excludes, so a truncated preview still excludes its full record.
PREFIX_FLOOR = 32


def _normal(text: str) -> str:
    """The form contents and entries are compared in: stripped and lower-cased."""
    return text.strip().lower()


def normalise_exclusions(items: Sequence[str]) -> tuple[str, ...]:
    """The caller's exclusion entries, normalised, empty ones dropped."""
    return tuple(entry for entry in map(_normal, items) if entry)


def is_excluded(content: str, exclusions: Iterable[str]) -> bool:
    """Whether content matches an entry of normalise_exclusions' output."""
    text = _normal(content)
    if not text:
        return False  # an empty record is never excluded, whatever the entries
    for entry in exclusions:
        if len(entry) < PREFIX_FLOOR:
            if text == entry:
                return True
        elif text.startswith(entry) or entry.startswith(text):
            return True
    return False
