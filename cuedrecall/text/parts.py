"""The coverage ledger's parts: the words of a question, cut by script (docs/trace.md#the-coverage-ledger)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

PartKind = Literal["identifier", "katakana", "kanji"]

NORMALIZATION = "nfkc-lower"
MAX_PARTS = 32
MIN_PART = 2

# Alternatives are tried in this order at each position, so the first that matches wins.
# An identifier is "#" and digits (#354), or a run that starts and ends with a letter or
# digit with . _ / # - allowed inside (2.5.5a1, bug-218, a/b); single letters are matched
# so the scan steps over them, then dropped by the length rule.
_PART = re.compile(
    r"(?P<identifier>#[0-9]+|[a-z0-9](?:[a-z0-9._/#-]*[a-z0-9])?)"
    r"|(?P<katakana>[\u30a0-\u30ff]+)"
    r"|(?P<kanji>[\u4e00-\u9fff\u3005]+)"
)

# Marks that make an identifier part look like a name, version or path rather than a word.
_IDENTIFIER_MARK = re.compile(r"[0-9._/#-]")


@dataclass(frozen=True)
class Part:
    """One part of a question: its span in the normalized question and its kind."""

    start: int
    end: int
    kind: PartKind

    def text(self, normalized: str) -> str:
        """The part's characters, read back from the normalized question."""
        return normalized[self.start : self.end]


@dataclass(frozen=True)
class QuestionParts:
    """A question's parts in order of first appearance, at most MAX_PARTS of them."""

    normalized: str
    parts: tuple[Part, ...]
    omitted: int

    @property
    def texts(self) -> tuple[str, ...]:
        """The parts' characters, in order."""
        return tuple(part.text(self.normalized) for part in self.parts)


def normalize(text: str | None) -> str:
    """NFKC, then lower case; None is the empty string."""
    return unicodedata.normalize("NFKC", text or "").lower()


def _distinct_parts(normalized: str) -> Iterator[Part]:
    """Every part of a normalized text, left to right, each string once (first span)."""
    seen: set[str] = set()
    for match in _PART.finditer(normalized):
        kind = match.lastgroup
        start, end = match.span()
        word = match.group()
        if kind is None or end - start < MIN_PART or word in seen:
            continue
        seen.add(word)
        yield Part(start, end, kind)  # type: ignore[arg-type]  # group names are PartKinds


def question_parts(question: str | None) -> QuestionParts:
    """The question normalized and cut into parts, with how many went past the cap."""
    normalized = normalize(question)
    every = tuple(_distinct_parts(normalized))
    return QuestionParts(normalized, every[:MAX_PARTS], max(0, len(every) - MAX_PARTS))


def identifier_like_parts(query: str | None) -> tuple[str, ...]:
    """The identifier parts that carry a digit or . _ / # -, not plain words like hello."""
    normalized = normalize(query)
    # Not capped at MAX_PARTS: the cap bounds the ledger's size, not what a query names.
    return tuple(
        word
        for part in _distinct_parts(normalized)
        if part.kind == "identifier" and _IDENTIFIER_MARK.search(word := part.text(normalized))
    )
