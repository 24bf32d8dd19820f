"""The block divider: a record's text cut into clause-sized spans that partition it exactly.

Offline and deterministic. Cuts fall at blank lines, newlines and sentence ends
(a full-width 。．！？ anywhere; . ! ? followed by whitespace or the end), never
inside a fenced code block or a balanced pair of brackets or quotes. A span still
longer than ``MAX_BLOCK_CHARS`` is split at its last weak boundary (a comma,
semicolon or colon, else whitespace) that keeps at least half the allowance, else
cut hard. Commas are never ordinary cuts: a clause list stays one block.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

MAX_BLOCK_CHARS = 739

# Every opener with its closer; an opener never closed protects nothing.
PAIRS = {"「": "」", "『": "』", "（": "）", "(": ")", "［": "］", "[": "]", "【": "】", "《": "》", "〈": "〉"}
_CLOSERS = {closer: opener for opener, closer in PAIRS.items()}

# A cut is made at the end of each match; the spaces after a sentence stay with it.
_CUTS = re.compile(r"\n[ \t]*\n|\n|[。．！？]+|[.!?]+(?:[ \t]+|(?=\s|$))")
_FENCE = re.compile(r"^[ \t]*```", re.M)
_WEAK = (re.compile(r"[,、，;；:：]+[ \t]*"), re.compile(r"\s+"))


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    forced: bool = False  # cut by length, not at a structural boundary

    def text(self, source: str) -> str:
        return source[self.start : self.end]


def divide(text: str) -> list[Span]:
    """The text's blocks, in order: their concatenation is the text, none longer than MAX_BLOCK_CHARS."""
    if not text:
        return []
    protected = _protected(text)
    cuts = [m.end() for m in _CUTS.finditer(text) if 0 < m.end() < len(text) and not _inside(m.end(), protected)]
    bounds = [0, *_kept(text, sorted(set(cuts))), len(text)]
    spans: list[Span] = []
    for start, end in itertools.pairwise(bounds):
        spans += _bounded(text, start, end)
    return spans


def _kept(text: str, cuts: list[int]) -> list[int]:
    """The cuts that leave no block of whitespace alone: whitespace joins the block before it (the first
    block's leading whitespace stays with it)."""
    kept: list[int] = []
    for cut in cuts:
        if text[kept[-1] if kept else 0 : cut].strip():
            kept.append(cut)
        elif kept:
            kept[-1] = cut
    if kept and not text[kept[-1] :].strip():
        kept.pop()
    return kept


def _protected(text: str) -> list[tuple[int, int]]:
    """(open, close) positions no cut may fall strictly inside: fenced code, then balanced pairs."""
    return _fences(text) + _pairs(text)


def _fences(text: str) -> list[tuple[int, int]]:
    """A fence runs from its opening line to the end of its closing line; an unclosed one runs to the end."""
    starts = [m.start() for m in _FENCE.finditer(text)]
    regions = []
    for opening, closing in zip(starts[::2], [*starts[1::2], None]):
        end = len(text) if closing is None else _line_end(text, closing)
        regions.append((opening, end))
    return regions


def _line_end(text: str, position: int) -> int:
    newline = text.find("\n", position)
    return len(text) if newline < 0 else newline + 1


def _pairs(text: str) -> list[tuple[int, int]]:
    """Balanced bracket and quote pairs; a closer matches the nearest open opener of its kind."""
    stack: list[tuple[str, int]] = []
    regions = []
    for position, char in enumerate(text):
        if char in PAIRS:
            stack.append((char, position))
        elif char in _CLOSERS:
            for depth in range(len(stack) - 1, -1, -1):
                if stack[depth][0] == _CLOSERS[char]:
                    regions.append((stack[depth][1], position + 1))
                    del stack[depth:]  # openers above it were never closed: ignored
                    break
    return regions


def _inside(cut: int, regions: list[tuple[int, int]]) -> bool:
    return any(start < cut < end for start, end in regions)


def _bounded(text: str, start: int, end: int) -> list[Span]:
    """One structural span, split by length where it is too long; every piece but the last is marked forced."""
    pieces = []
    while end - start > MAX_BLOCK_CHARS:
        cut = _weak_cut(text, start) or start + MAX_BLOCK_CHARS
        pieces.append(Span(start, cut, forced=True))
        start = cut
    return [*pieces, Span(start, end)]


def _weak_cut(text: str, start: int) -> int | None:
    """The last weak boundary leaving a first piece of at least half the allowance, punctuation before spaces."""
    low, high = start + (MAX_BLOCK_CHARS + 1) // 2, start + MAX_BLOCK_CHARS
    window = text[start:high]
    for pattern in _WEAK:
        ends = [start + m.end() for m in pattern.finditer(window) if low <= start + m.end() <= high]
        if ends:
            return ends[-1]
    return None
