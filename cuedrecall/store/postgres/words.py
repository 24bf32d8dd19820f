"""The word arm's words on PostgreSQL, made by SQLite's own word index (porter over unicode61).

Rule (docs/storage.md, "The word arm on PostgreSQL"): a memory's ``words`` column
holds exactly the tokens SQLite's ``memories_words`` index makes of its content, at
their positions, and ``word_len`` counts them; a question's words are stemmed the
same way. PostgreSQL has neither tokenizer (its english configuration stems with
snowball and drops stop words), and imitating them would drift, so the tokens come
from FTS5 itself: an in-memory FTS5 table per thread with the index's tokenizer,
read back through ``fts5vocab``. Both backends then match, count and rank the same
words.

``word_tokens`` holds the same tokens in order, repeats kept: the arm counts a
word's tf there (``array_positions``), one pass over a short array in C, where the
tsvector would have to be unnested lexeme by lexeme and joined (schema step 7).

PostgreSQL's own limits apply to ``words``, the column the arm matches on: a
position past 16,383 counts as 16,383 (a phrase that far in may match where its
words are not adjacent), and a token longer than 2,047 bytes is left out (still in
``word_tokens`` and counted in ``word_len``, as FTS5 counts it). A tsvector keeps
at most 256 positions of a lexeme; tf, read from ``word_tokens``, has no such cap.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from functools import lru_cache

TOKENIZER = "porter unicode61"  # the SQLite word index's (store/sqlite/schema.py, memories_words)
MAX_POSITION = 16383  # PostgreSQL's highest tsvector position
MAX_POSITIONS = 256  # positions a tsvector keeps for one lexeme
MAX_LEXEME_BYTES = 2047  # the longest lexeme a tsvector takes

_local = threading.local()


def _fts() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table with the word index's tokenizer, and its per-token view."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=True)
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _local.conn = conn
    return conn


def tokens(texts: Sequence[str]) -> list[list[str]]:
    """Each text's tokens, in order, as SQLite's word index makes them (stop words and short words kept)."""
    if not texts:
        return []
    conn = _fts()
    out: list[list[tuple[int, str]]] = [[] for _ in texts]
    with conn:
        conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(texts))
        for doc, term, offset in conn.execute("SELECT doc, term, offset FROM v"):
            out[doc].append((offset, term))
        conn.execute("DELETE FROM t")
    return [[term for _, term in sorted(found)] for found in out]


@lru_cache(maxsize=8192)
def word_tokens(word: str) -> tuple[str, ...]:
    """One query word's tokens (usually one stem; none for a word of separators only), cached."""
    return tuple(tokens([word])[0])


def quoted(lexeme: str) -> str:
    """A lexeme as a quoted tsvector / tsquery literal (quotes and backslashes doubled)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def word_column(found: Sequence[str]) -> tuple[str, int, list[str]]:
    """(the ``words`` tsvector literal, ``word_len``, ``word_tokens``) of a text's tokens."""
    positions: dict[str, list[int]] = {}
    for place, token in enumerate(found, start=1):
        kept = positions.setdefault(token, [])
        if len(kept) < MAX_POSITIONS:
            at = min(place, MAX_POSITION)
            if not kept or kept[-1] != at:
                kept.append(at)
    literal = " ".join(
        f"{quoted(token)}:{','.join(map(str, at))}"
        for token, at in positions.items()
        if len(token.encode("utf-8")) <= MAX_LEXEME_BYTES
    )
    return literal, len(found), list(found)


def word_columns(texts: Sequence[str]) -> list[tuple[str, int, list[str]]]:
    """``word_column`` of each text."""
    return [word_column(found) for found in tokens(texts)]


WORD_COLUMNS = ("words", "word_len", "word_tokens")  # the memories' columns the application writes with the content


def content_words(content: str) -> dict[str, object]:
    """The ``WORD_COLUMNS`` of one memory's content, by name."""
    return dict(zip(WORD_COLUMNS, word_column(tokens([content])[0])))


def any_of(words: Sequence[str]) -> str | None:
    """The tsquery literal matching a row that holds any of the words, as FTS5's ``"w1" OR "w2"`` does (a word of
    several tokens as their phrase); None when no word has a token."""
    parts = []
    for word in words:
        found = word_tokens(word)
        if found:
            phrase = " <-> ".join(quoted(token) for token in found)
            parts.append(f"({phrase})" if len(found) > 1 else phrase)
    return " | ".join(parts) if parts else None


def query_lexemes(words: Sequence[str]) -> list[str]:
    """The lexemes a word query ranks on, one a token of each word in order (a stem two words share is ranked
    twice, as FTS5 scores each quoted word of an OR on its own)."""
    return [token for word in words for token in word_tokens(word)]
