"""The word arm's query: a question's content words, for a stemmed full-text index (porter over unicode61).

The trigram index matches any three characters, so "the" in a question matches
"other" and "then", and a long word counts once per trigram. The word arm asks for
whole words instead, stemmed by the index ("moved" finds "moving"), and leaves out
the function words of English that carry nothing a record could be found by. Text
in scripts written without spaces (Japanese, Chinese) is left to the trigram arm.
"""

from __future__ import annotations

import re

from cuedrecall.text.fts import fts_expression

# Words too common in questions and records to find anything by: articles, pronouns, auxiliaries,
# prepositions, conjunctions and question words.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "ever",
        "many",
        "much",
        "may",
        "might",
        "must",
        "shall",
        "yet",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
    ]
)

_WORD = re.compile(r"[^\W_]+")
_NO_SPACES = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
MAX_WORDS = 32  # a pasted paragraph as a query: its first content words are enough (recall-bounds-v1)


def query_words(query: str) -> list[str]:
    """The query's distinct content words, lower-cased, in order (none for a question of function words only)."""
    return capped_words(query)[0]


def capped_words(query: str) -> tuple[list[str], int]:
    """The query's first ``MAX_WORDS`` distinct content words, and how many distinct ones that cap left out."""
    words = (word.lower() for word in _WORD.findall(query))
    kept = list(dict.fromkeys(w for w in words if len(w) > 1 and w not in STOP_WORDS and not _NO_SPACES.search(w)))
    return kept[:MAX_WORDS], max(0, len(kept) - MAX_WORDS)


def words_expression(words: list[str]) -> str:
    """The FTS5 expression: any of the words (each quoted, so the index's tokenizer stems it)."""
    return fts_expression(words)
