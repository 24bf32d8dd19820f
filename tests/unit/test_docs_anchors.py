"""Every citation of the design names a page of docs/ and a heading of it that exist.

The code, the tests and the benchmarks cite the design as ``docs/NAME.md`` or
``docs/NAME.md#anchor`` (docs/README.md). This test finds every such reference in
cuedrecall/, tests/, benchmarks/, README.md and SECURITY.md (and every relative
link between the pages of docs/), and checks that the page exists and that the
anchor is one GitHub makes for a heading of that page: lower case, spaces to
hyphens, punctuation other than hyphens and underscores dropped, a repeated
heading numbered ``-1``, ``-2`` ...

It also checks that nothing in cuedrecall/, tests/ or benchmarks/ still cites the
design documents that lived outside the repository (a clone does not hold them):
no path into the sibling folder, no numbered section of them.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

ROOT = REPO_ROOT
DOCS = ROOT / "docs"
SCANNED_DIRS = ("cuedrecall", "tests", "benchmarks")
SCANNED_FILES = ("README.md", "SECURITY.md")
TEXT_SUFFIXES = {".py", ".md", ".json", ".txt", ".toml", ".cfg", ".ini", ".html", ".js", ".css", ".jsonl", ".sh"}
MAX_BYTES = 2_000_000  # larger files are data (a vendored tokenizer), not prose
SKIPPED_PARTS = {"__pycache__", ".peer", "data"}  # build output, the installed peer, packaged data files

# docs/NAME.md, then an optional #anchor. The name may follow a "/" or "(" (a link from README.md). A quoted
# value that is the reference alone ("docs/a.md", a source id in test data) is data, not a citation.
REFERENCE = re.compile(r"(?<![\w.-])docs/([A-Za-z0-9_.-]+\.md)(?:#([A-Za-z0-9_%-]+))?")
QUOTED_ALONE = re.compile(r"""(["'])docs/[A-Za-z0-9_.-]+\.md\1""")
# A markdown link inside docs/: [text](page.md#anchor), [text](page.md) or [text](#anchor).
DOCS_LINK = re.compile(r"\]\((?!https?:|\.\./|/)([A-Za-z0-9_.-]+\.md)?(?:#([A-Za-z0-9_%-]+))?\)")

# What must not be cited any more, built so this file does not cite it itself.
_SIBLING = "../" + "shared"
FORBIDDEN = (
    _SIBLING,  # a path into the sibling folder a clone does not hold
    "shared/" + "spec/",
    "shared/" + "reference/",
    "spec " + "§",  # "spec §2.6"
    "reference " + "§",  # "reference §3.12"
    "DESIGN" + ".md",
    "recall-process" + "-v0",  # the old specification's file name
)
SECTION_NUMBER = re.compile("\u00a7" + r"\s*\d")  # "§2.6": a numbered section of a document not in the repository


def _text_files(base: Path) -> list[Path]:
    if base.is_file():
        return [base]
    found = []
    for path in sorted(base.rglob("*")):
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        if SKIPPED_PARTS & set(path.relative_to(ROOT).parts[1:-1]) or path.stat().st_size > MAX_BYTES:
            continue
        found.append(path)
    return found


def _scanned() -> list[Path]:
    files: list[Path] = []
    for name in (*SCANNED_DIRS, *SCANNED_FILES):
        files += _text_files(ROOT / name)
    return files


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in ("L", "N", "M"))
    return kept.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every anchor of a markdown page's headings (ATX headings outside fenced code), duplicates numbered."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not match:
            continue
        base = github_anchor(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return frozenset(out)


def _references() -> list[tuple[str, str, str | None]]:
    """(where, page name, anchor or None) for every docs/ reference in the scanned files and inside docs/."""
    refs = []
    me = Path(__file__).resolve()
    for path in _scanned():
        if path.resolve() == me:  # this file names the form, docs/NAME.md, in its own words
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for match in REFERENCE.finditer(QUOTED_ALONE.sub("", line)):
                refs.append((f"{path.relative_to(ROOT)}:{number}", match.group(1), match.group(2)))
    for page in sorted(DOCS.glob("*.md")):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for match in DOCS_LINK.finditer(line):
                name, anchor = match.group(1) or page.name, match.group(2)
                if match.group(1) or anchor:
                    refs.append((f"{page.relative_to(ROOT)}:{number}", name, anchor))
    return refs


def test_the_anchor_rule_is_githubs() -> None:
    assert github_anchor("The time cue (`cued-v0.3`)") == "the-time-cue-cued-v03"
    assert github_anchor("Gate relief (`relief-v1`)") == "gate-relief-relief-v1"
    assert github_anchor("A cue for today is not used") == "a-cue-for-today-is-not-used"
    assert github_anchor("SQLite, the default") == "sqlite-the-default"
    assert github_anchor("request and config") == "request-and-config"
    assert github_anchor("Stale conflicts (stale-v1)") == "stale-conflicts-stale-v1"


def test_docs_are_cited_at_all() -> None:
    # the scan itself works: the code cites the recall process, and README.md links the index
    refs = _references()
    assert any(name == "recall-process.md" and anchor for _, name, anchor in refs)
    assert any(where.startswith("README.md") and name == "README.md" for where, name, _ in refs)


def test_every_cited_page_and_heading_exists() -> None:
    broken = []
    for where, name, anchor in _references():
        page = DOCS / name
        if not page.is_file():
            broken.append(f"{where}: docs/{name} does not exist")
        elif anchor is not None and anchor.lower() not in anchors(page):
            broken.append(f"{where}: docs/{name} has no heading with anchor #{anchor}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("base", SCANNED_DIRS)
def test_nothing_cites_the_design_outside_the_repository(base: str) -> None:
    me = Path(__file__).resolve()
    found = []
    for path in _text_files(ROOT / base):
        if path.resolve() == me:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            hits = [word for word in FORBIDDEN if word in line]
            if SECTION_NUMBER.search(line):
                hits.append("a numbered section (\u00a7)")
            if hits:
                found.append(f"{path.relative_to(ROOT)}:{number}: {', '.join(hits)}")
    assert not found, "cite docs/NAME.md#heading instead:\n" + "\n".join(found)
