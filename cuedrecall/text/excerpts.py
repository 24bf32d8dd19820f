"""Excerpts: the passages of a long record that match the query, each widened to the context that governs it.

A record too long for its preview shows the blocks that share the most of the
query's trigrams, each extended to whole sentences and to the clause a qualifier
("however", "ただし", ...) attaches it to, taken best first while they fit the
budget and shown in text order joined by " … ". The blocks are the divider's, or
the ones given (a record's stored block set). The basis says how the blocks were
found and chosen: ``lexical`` (divided now, chosen by the query's words),
``blocks`` (the given blocks, chosen by the query's words, with any block named
``first`` put before them all), or ``start`` when the record is one block or
nothing in it matches (then the excerpt is its beginning).

Pure: the caller reads any stored blocks and passes them in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cuedrecall.text.blocks import Span, divide
from cuedrecall.text.parts import normalize

EXCERPT_CHARS = 800
CONTEXT_CHARS = 1478  # the most a block's governing context may span
SEPARATOR = " … "

_ENDS = tuple("。！？．.!?…")
_QUALIFIERS = re.compile(
    r"^\s*(?:ただし|但し|しかし|だが|ですが|なお|とはいえ|一方|他方|代わりに|except\b|however\b|but\s|although\b|"
    r"though\b|unless\b|instead\b|on the other hand\b|that said\b|caveat\b|note that\b|provided that\b|"
    r"in fact\b|actually\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Excerpt:
    text: str
    basis: str  # "lexical" | "blocks" | "start"


def excerpt(
    text: str, query: str, budget: int = EXCERPT_CHARS, spans: Sequence[Span] | None = None, first: int | None = None
) -> Excerpt:
    """The excerpt of ``text`` for ``query`` within ``budget`` characters (separators included).

    ``spans``: the blocks to choose from (they must partition ``text``: see ``partitions``); None divides the
    text now. ``first``: the index of a given block that ranks before every other (the block a search reached);
    its passage is always shown, cut to its own block when its whole context does not fit. Ignored without
    ``spans`` or when out of range.
    """
    basis = "lexical" if spans is None else "blocks"
    spans = divide(text) if spans is None else list(spans)
    lead = first if basis == "blocks" and first is not None and 0 <= first < len(spans) else None
    ranked = _ranked(text, spans, query) if len(spans) > 1 else []
    if lead is not None and len(spans) > 1:
        ranked = [lead, *(index for index in ranked if index != lead)]
    if not ranked:
        return Excerpt(_start(text, spans, budget), "start")
    taken: list[tuple[int, int]] = []
    for index in ranked:
        start_block, end_block = governing(text, spans, index)
        piece = (spans[start_block].start, spans[end_block].end)
        if index == lead and _length(text, [piece]) > budget:
            piece = (spans[index].start, spans[index].end)  # the reached block alone, without its context
        if any(piece[0] < end and start < piece[1] for start, end in taken):
            continue
        if _length(text, [*taken, piece]) <= budget:
            taken.append(piece)
        elif index == lead:
            break  # the reached block alone is over budget: shown cut to fit, below
    if not taken:  # even the best passage's context is over budget: its own block, cut to fit
        best = spans[ranked[0]]
        return Excerpt(text[best.start : best.end][:budget].strip(), basis)
    return Excerpt(joined(text, taken), basis)


def partitions(text: str, spans: Sequence[Span]) -> bool:
    """Whether the spans cover ``text`` exactly, in order, none empty: the blocks ``excerpt`` may be given."""
    position = 0
    for span in spans:
        if span.start != position or span.end <= span.start:
            return False
        position = span.end
    return position == len(text) and bool(spans)


def governing(text: str, spans: list[Span], index: int) -> tuple[int, int]:
    """The block range that governs block ``index``: whole sentences, with any qualifier's clause (``governs``)."""
    first, last, _ = governs(text, spans, index)
    return first, last


def governs(text: str, spans: list[Span], index: int) -> tuple[int, int, bool]:
    """The block range that governs block ``index``, and whether the rule was satisfied within CONTEXT_CHARS.

    Backwards first: while the block before does not end a sentence, or the range
    starts with a qualifier, take it in; then forwards while the range does not end
    a sentence or the next block opens with a qualifier. An extension past
    CONTEXT_CHARS is not made, and the range is then reported incomplete.
    """
    first = last = index
    while True:
        if first > 0 and (not _ends_sentence(text, spans[first - 1]) or _qualified(text, spans[first])):
            candidate = (first - 1, last)
        elif last + 1 < len(spans) and (not _ends_sentence(text, spans[last]) or _qualified(text, spans[last + 1])):
            candidate = (first, last + 1)
        else:
            return first, last, True
        if spans[candidate[1]].end - spans[candidate[0]].start > CONTEXT_CHARS:
            return first, last, False
        first, last = candidate


def _ends_sentence(text: str, span: Span) -> bool:
    return text[span.start : span.end].rstrip().endswith(_ENDS)


def _qualified(text: str, span: Span) -> bool:
    return bool(_QUALIFIERS.match(text[span.start : span.end]))


def trigrams(text: str) -> set[str]:
    """The text's distinct character trigrams after normalizing (case, width, spacing): what passages share with
    a query."""
    flat = normalize(text)
    return {flat[i : i + 3] for i in range(len(flat) - 2) if flat[i : i + 3].strip()}


def shared_trigrams(wanted: set[str], text: str) -> int:
    """How many of ``wanted`` (a query's ``trigrams``) the text holds: ``len(wanted & trigrams(text))``, found
    by substring tests rather than by building the text's own set (a record's blocks are read on every quote)."""
    flat = normalize(text)
    return sum(1 for gram in wanted if gram in flat)


def _ranked(text: str, spans: list[Span], query: str) -> list[int]:
    """Block indexes sharing at least half as many of the query's trigrams as the best block does, most shared
    first (ties: text order). A block that shares only a common word with the query does not crowd out the rest."""
    wanted = trigrams(query)
    if not wanted:
        return []
    shared = [(shared_trigrams(wanted, text[s.start : s.end]), i) for i, s in enumerate(spans)]
    best = max(count for count, _ in shared)
    return [i for count, i in sorted(shared, key=lambda item: (-item[0], item[1])) if count and 2 * count >= best]


def _length(text: str, pieces: list[tuple[int, int]]) -> int:
    return len(joined(text, pieces))


def joined(text: str, pieces: list[tuple[int, int]]) -> str:
    """The pieces in text order, touching ones merged, joined by the separator."""
    return SEPARATOR.join(text[start:end].strip() for start, end in merged(pieces))


def merged(pieces: list[tuple[int, int]]) -> list[list[int]]:
    """The [start, end) pieces in text order, overlapping or touching ones merged into one."""
    out: list[list[int]] = []
    for start, end in sorted(pieces):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def _start(text: str, spans: list[Span], budget: int) -> str:
    """The record's first blocks that fit the budget (at least the start of the first)."""
    end = 0
    for span in spans:
        if span.end > budget:
            break
        end = span.end
    return (text[:end] if end else text[:budget]).strip()
