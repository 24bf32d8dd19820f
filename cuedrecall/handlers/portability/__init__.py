"""Export to and import from JSONL: one header line, then one record a line.

Export writes ``cuedrecall-export/1``, or ``/2`` when the agent has declared a
graph or folders. Import reads those and CPersona's ``cpersona-export/1.0``, ``1.1``
and ``1.2`` (CPersona 2.6), so one import moves a CPersona user over: its records,
its declared graph (entities, aliases, mentions, relations) and its folders, every
count checked against the header (see ``formats`` and ``declared``).

Files live in one folder. A tool caller's path is taken inside the export folder
(``CPERSONA_EXPORT_DIR``, default ``exports/`` beside the database): nothing
outside it is read or written, through ``..``, an absolute path or a symbolic
link, and never the database's own files. A refused path gets the same answer
whether or not something exists there. Only the operator's command line
(``cuedrecall import`` / ``export``) passes ``anywhere=True``, a Python keyword no
tool caller can send, to take any path (see ``paths``).

One concern a module: ``paths`` (the export folder, confinement, reading and
writing files), ``formats`` (the file formats), ``declared`` (the graph and folder
records: checked, carried, written), ``export`` (``export_jsonl``) and ``importer``
(``import_jsonl`` and the rules an import keeps).
"""

from __future__ import annotations

from cuedrecall.handlers.portability.export import export_jsonl
from cuedrecall.handlers.portability.formats import FORMAT, VERSIONS
from cuedrecall.handlers.portability.importer import import_jsonl

__all__ = ["FORMAT", "VERSIONS", "export_jsonl", "import_jsonl"]
