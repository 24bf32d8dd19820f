"""Pure text functions: the FTS expression, exclusion and the question's parts."""

from cuedrecall.text.exclusion import PREFIX_FLOOR, is_excluded, normalize_exclusions
from cuedrecall.text.fts import build_fts_expression
from cuedrecall.text.parts import (
    MAX_PARTS,
    NORMALIZATION,
    Part,
    PartKind,
    QuestionParts,
    identifier_like_parts,
    normalize,
    question_parts,
)

__all__ = [
    "MAX_PARTS",
    "NORMALIZATION",
    "PREFIX_FLOOR",
    "Part",
    "PartKind",
    "QuestionParts",
    "build_fts_expression",
    "identifier_like_parts",
    "is_excluded",
    "normalize",
    "normalize_exclusions",
    "question_parts",
]
