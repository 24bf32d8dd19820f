"""Exclusion of records whose content the caller already holds (exclude_contents)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence

# Below this length an entry must equal the content; at or above it, a prefix match in
# either direction excludes, so a truncated preview still excludes its full record.
PREFIX_FLOOR = 32
# recall-bounds-v1 (recall/bounds.py records it): the entries one recall applies, the first ones given.
# A caller holds a conversation's worth of texts, not a store's; past this an entry is not applied.
MAX_EXCLUSIONS = 1_000


class Exclusions(tuple[str, ...]):
    """Normalized entries, with the lookups that make a check cost a few probes, not one per entry."""

    left_out: int
    _exact: frozenset[str]  # the entries shorter than PREFIX_FLOOR: only equality excludes
    _long: list[str]  # the others, sorted: a prefix match in either direction excludes
    _by_length: set[int]  # the lengths among _long, for probing the text's prefixes
    _long_set: frozenset[str]

    def __new__(cls, entries: Iterable[str], left_out: int = 0) -> Exclusions:
        self = super().__new__(cls, entries)
        self.left_out = left_out
        self._exact = frozenset(entry for entry in self if len(entry) < PREFIX_FLOOR)
        self._long = sorted(entry for entry in self if len(entry) >= PREFIX_FLOOR)
        self._by_length = {len(entry) for entry in self._long}
        self._long_set = frozenset(self._long)
        return self

    def holds(self, text: str) -> bool:
        """Whether a normalized, non-empty text matches an entry (the rule of ``is_excluded``)."""
        if text in self._exact:
            return True
        if any(text[:n] in self._long_set for n in self._by_length if n <= len(text)):
            return True  # an entry is a prefix of the text
        i = bisect_left(self._long, text)  # the first entry >= text: the one that starts with it, if any does
        return i < len(self._long) and self._long[i].startswith(text)


def _normal(text: str) -> str:
    """The form contents and entries are compared in: stripped and lower-cased."""
    return text.strip().lower()


def normalize_exclusions(items: Sequence[str]) -> Exclusions:
    """The caller's exclusion entries, normalized, empty ones dropped, the first ``MAX_EXCLUSIONS`` kept."""
    entries = tuple(entry for entry in map(_normal, items) if entry)
    return Exclusions(entries[:MAX_EXCLUSIONS], max(0, len(entries) - MAX_EXCLUSIONS))


def is_excluded(content: str, exclusions: Iterable[str]) -> bool:
    """Whether content matches an entry of normalize_exclusions' output."""
    text = _normal(content)
    if not text:
        return False  # an empty record is never excluded, whatever the entries
    if isinstance(exclusions, Exclusions):
        return exclusions.holds(text)
    for entry in exclusions:
        if len(entry) < PREFIX_FLOOR:
            if text == entry:
                return True
        elif text.startswith(entry) or entry.startswith(text):
            return True
    return False
