"""Rewrite the recall golden, deliberately: print what changes, then write the file.

    python -m tests.golden.regenerate          # print the full diff and rewrite
    python -m tests.golden.regenerate --check  # print the diff only; exit 1 when it differs

A changed golden belongs in a commit that says why the behaviour changed.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python tests/golden/regenerate.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tests.golden"

from .cases import GOLDEN_FILE, diff_text, differences, generate, load, save


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    with tempfile.TemporaryDirectory() as workdir:
        actual = generate(Path(workdir))
    expected = load()
    changed = differences(expected, actual)
    if not changed:
        print(f"{GOLDEN_FILE}: unchanged ({len(actual)} cases)")
        return 0
    print(diff_text(expected, actual, changed, first=None))
    print(f"\n{len(changed)} of {len(actual)} cases differ: {', '.join(changed)}")
    if check:
        return 1
    save(actual)
    print(f"rewrote {GOLDEN_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
