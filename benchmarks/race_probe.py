"""The export folder under a racing local user, at scale: symlink swaps during export and import, planted files.

A thread swaps ``exchange/sub`` between a real folder and a symbolic link to the
database's own folder, as fast as it can, while export, overwrite, dry-run import
and import name paths under ``sub/``; then backups are made onto destinations where
a ``.partial`` file or a symbolic link was planted first. What must hold
(SECURITY.md, the export folder): no file is written outside the folder, no file
outside it is read, the live database is never replaced, and a backup never
writes through a planted file. Run ``python -m benchmarks.race_probe --attempts
5000``; the report says how many swaps raced the calls and how many rules broke.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cuedrecall.api import Memory
from cuedrecall.config import Settings

AGENT = "alice"


class Swapper:
    """Swaps ``folder/sub`` between a real folder and a symbolic link to ``target`` until stopped, resting
    ``rest`` seconds after each swap (a real folder most of the time, so calls get far enough to be raced)."""

    def __init__(self, folder: Path, target: Path, rest: float = 0.001) -> None:
        self.sub, self.parked, self.target = folder / "sub", folder / ".parked", target
        self.rest = rest
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                os.rename(self.sub, self.parked)
                os.symlink(self.target, self.sub)
                time.sleep(0.0002)
                os.unlink(self.sub)
                os.rename(self.parked, self.sub)
                self.swaps += 1
                if self.rest:
                    time.sleep(self.rest)
            except OSError:
                continue  # a call's temp file or rename got in the way: swap again

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        if self.sub.is_symlink():
            self.sub.unlink()
        if self.parked.exists():
            os.rename(self.parked, self.sub)


def export_file(agent: str, content: str) -> str:
    lines = (
        {"_type": "header", "version": "cuedrecall-export/1", "agent_id": agent, "memory_count": 1},
        {"_type": "memory", "agent_id": agent, "content": content},
    )
    return "".join(json.dumps(line) + "\n" for line in lines)


def swap_race(root: Path, attempts: int) -> dict[str, Any]:
    """Export, overwrite, dry-run import and import under ``sub/`` while the swapper races them."""
    folder, db_folder = root / "exchange", root / "db"
    folder.mkdir(parents=True)
    db_folder.mkdir()
    settings = Settings.from_env(
        {},
        embedding_mode="hash",
        export_dir=str(folder),
        block_build_enabled=False,
        block_retrieval_enabled=False,
        calibrate_on_growth=False,
    )
    broken: list[str] = []
    with Memory(db_folder / "m.db", settings=settings, background=False) as memory:
        memory.store(agent_id=AGENT, message={"content": "what the database holds"})
        (db_folder / "victim.jsonl").write_text(export_file(AGENT, "read from outside the folder"), "utf-8")
        (folder / "sub").mkdir()
        (folder / "sub" / "victim.jsonl").write_text(export_file(AGENT, "read from inside"), "utf-8")
        before = {p.name for p in db_folder.iterdir() if not p.name.startswith("m.db-")}
        inode = (db_folder / "m.db").stat().st_ino
        started = time.perf_counter()
        served = 0  # calls answered ok (the others were refused, naming the path): both count as raced
        with Swapper(folder, db_folder) as swapper:
            for attempt in range(attempts):
                answers = (
                    memory.export_memories(agent_id=AGENT, output_path=f"sub/x{attempt % 50}.jsonl", overwrite=True),
                    memory.export_memories(agent_id=AGENT, output_path="sub/m.db", overwrite=True),
                    memory.import_memories(input_path="sub/victim.jsonl", target_agent_id="copy", dry_run=True),
                    memory.import_memories(input_path="sub/victim.jsonl", target_agent_id="copy"),
                )
                served += sum(answer.get("ok") is not False for answer in answers)
        seconds = time.perf_counter() - started
        after = {p.name for p in db_folder.iterdir() if not p.name.startswith("m.db-")}
        if after != before:
            broken.append(f"written outside the folder: {sorted(after - before)}")
        if (db_folder / "m.db").stat().st_ino != inode:
            broken.append("the live database was replaced")
        copied = [m["content"] for m in memory.list_memories(agent_id="copy", limit=500)["memories"]]
        if "read from outside the folder" in copied:
            broken.append("an import read a file outside the folder")
    return {
        "attempts": attempts,
        "calls": 4 * attempts,
        "served": served,
        "swaps": swapper.swaps,
        "seconds": round(seconds, 1),
        "broken": broken,
    }


def planted_backups(root: Path, rounds: int) -> dict[str, Any]:
    """Backups onto destinations where a world-writable ``.partial`` or a symbolic link was planted first."""
    from cuedrecall.cli import main as cli

    db = root / "live.db"
    settings = Settings.from_env(
        {}, embedding_mode="hash", block_build_enabled=False, block_retrieval_enabled=False, calibrate_on_growth=False
    )
    with Memory(db, settings=settings, background=False) as memory:
        memory.store(agent_id=AGENT, message={"content": "the secret the backup copies"})
    victim = root / "victim.txt"
    broken: list[str] = []
    for n in range(rounds):
        victim.write_text("untouched", "utf-8")
        dest = root / f"copy{n}.db"
        partial = dest.with_name(dest.name + ".partial")
        if n % 2:
            partial.symlink_to(victim)
        else:
            partial.write_text("", "utf-8")
            partial.chmod(0o666)
        with contextlib.redirect_stdout(io.StringIO()):
            cli(["backup", str(db), str(dest)])
        if victim.read_text("utf-8") != "untouched":
            broken.append(f"round {n}: the backup wrote through a planted link")
        if dest.exists() and dest.stat().st_mode & 0o077:
            broken.append(f"round {n}: the backup is readable by others ({oct(dest.stat().st_mode & 0o777)})")
        if not partial.is_symlink() and partial.exists() and partial.stat().st_size > 0:
            broken.append(f"round {n}: the backup went into the planted partial file")
    return {"rounds": rounds, "broken": broken}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.race_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=2000, help="rounds of the four racing calls")
    parser.add_argument("--backups", type=int, default=40, help="backups onto planted destinations")
    parser.add_argument("--out", type=Path, default=None, help="write the report (markdown) here")
    args = parser.parse_args(argv)
    was = os.umask(0)  # the worst case: files would be world-readable unless the server sets their mode itself
    try:
        with tempfile.TemporaryDirectory() as tmp:
            race = swap_race(Path(tmp) / "race", args.attempts)
            (Path(tmp) / "backups").mkdir()
            backups = planted_backups(Path(tmp) / "backups", args.backups)
    finally:
        os.umask(was)
    report = "\n".join(
        [
            "# The export folder and backups under a racing local user",
            "",
            f"Command: `python -m benchmarks.race_probe --attempts {args.attempts} --backups {args.backups}`"
            " (umask 000).",
            "",
            "| probe | calls | answered ok | swaps raced | seconds | rules broken |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
            f"| symlink swap during export/overwrite/dry-run/import | {race['calls']:,} | {race['served']:,} | "
            f"{race['swaps']:,} | {race['seconds']} | {len(race['broken'])} |",
            f"| backups onto a planted `.partial` or link | {backups['rounds']} | - | - | - | "
            f"{len(backups['broken'])} |",
            "",
            *(f"- {line}" for line in race["broken"] + backups["broken"]),
        ]
    )
    print(report)
    if args.out is not None:
        args.out.write_text(report + "\n", encoding="utf-8")
    return 1 if race["broken"] or backups["broken"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
