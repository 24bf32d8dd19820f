"""One spelling for comparing names: what makes two declared names, or a name and a query, the same."""

from __future__ import annotations

import unicodedata

MAX_NAME = 256  # characters of a name, alias or predicate after trimming


def normalize_name(text: str) -> str:
    """NFKC, case-folded, every run of whitespace one space, trimmed.

    NFKC runs again after case folding: folding can leave a sequence NFKC composes
    (a letter followed by a combining mark), and a second pass over the result must
    change nothing, or a stored form would not equal the same name normalized later.
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())
