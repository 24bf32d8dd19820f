"""The SQLite schema as forward-only migrations; ``schema_version`` records each step applied."""

from __future__ import annotations

import sqlite3

from cuedrecall.store.sqlite.busy import WRITE_WAIT_S, begin_write


def _logged_as(table: str, kind: str) -> str:
    """Triggers that log any change of ``table`` as one change_log entry of ``kind`` (row 0), so every process's
    cached copy of the table follows a change made by any of them, as the vector index does."""
    return "".join(
        f"""
        CREATE TRIGGER {table}_log_{event.lower()} AFTER {event} ON {table} BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('{kind}', 0);
        END;"""
        for event in ("INSERT", "UPDATE", "DELETE")
    )


def _mirrored_by(index: str) -> str:
    """Triggers that keep an external-content FTS5 ``index`` of memories.content in step with the rows (insert,
    delete, and an update that changes the text)."""
    return f"""
        CREATE TRIGGER {index}_insert AFTER INSERT ON memories BEGIN
            INSERT INTO {index}(rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER {index}_delete AFTER DELETE ON memories BEGIN
            INSERT INTO {index}({index}, rowid, content) VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER {index}_update AFTER UPDATE OF content ON memories
        WHEN old.content IS NOT new.content BEGIN
            INSERT INTO {index}({index}, rowid, content) VALUES ('delete', old.id, old.content);
            INSERT INTO {index}(rowid, content) VALUES (new.id, new.content);
        END;"""


def _graph_forgets(table: str, kind: str) -> str:
    """A trigger by which a deleted record of ``table`` (refs ``kind``:<id>) takes its mentions and every relation
    naming it as subject, object or anchor."""
    return f"""
        CREATE TRIGGER {table}_graph_delete AFTER DELETE ON {table} BEGIN
            DELETE FROM entity_mentions WHERE ref = '{kind}:' || old.id;
            DELETE FROM relations WHERE subject_kind = '{kind}' AND subject_id = old.id;
            DELETE FROM relations WHERE object_kind = '{kind}' AND object_id = old.id;
            DELETE FROM relations WHERE anchor_ref = '{kind}:' || old.id;
        END;"""


# Each step runs once, in order, inside one transaction with its version stamp.
MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT NOT NULL,
            project_id TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL DEFAULT '',
            msg_id TEXT NOT NULL DEFAULT '',
            content TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT '{}',
            source_id TEXT NOT NULL DEFAULT '',
            timestamp TEXT NOT NULL,
            ts_epoch REAL,
            metadata TEXT NOT NULL DEFAULT '{}',
            embedding BLOB,
            embedding_model TEXT NOT NULL DEFAULT '',
            locked INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );
        CREATE INDEX idx_memories_isolation ON memories(agent_id, project_id, channel, id);
        CREATE INDEX idx_memories_msg_id ON memories(agent_id, msg_id) WHERE msg_id != '';
        CREATE INDEX idx_memories_content ON memories(agent_id, content);
        CREATE INDEX idx_memories_time ON memories(agent_id, ts_epoch);

        CREATE TABLE episodes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT NOT NULL,
            project_id TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL DEFAULT '',
            summary TEXT NOT NULL,
            keywords TEXT NOT NULL DEFAULT '',
            start_time TEXT,
            end_time TEXT,
            ts_epoch REAL,
            resolved INTEGER NOT NULL DEFAULT 0,
            embedding BLOB,
            embedding_model TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        );
        CREATE INDEX idx_episodes_isolation ON episodes(agent_id, project_id, channel, id);
        CREATE INDEX idx_episodes_time ON episodes(agent_id, ts_epoch);

        CREATE TABLE profiles (
            agent_id TEXT NOT NULL,
            user_id TEXT NOT NULL DEFAULT '',
            content TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (agent_id, user_id)
        );

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, content='memories', content_rowid='id', tokenize='trigram');
        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            summary, keywords, content='episodes', content_rowid='id', tokenize='trigram');

        """
        + _mirrored_by("memories_fts")
        + """
        CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
            INSERT INTO episodes_fts(rowid, summary, keywords) VALUES (new.id, new.summary, new.keywords);
        END;
        CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
            INSERT INTO episodes_fts(episodes_fts, rowid, summary, keywords)
            VALUES ('delete', old.id, old.summary, old.keywords);
        END;
        CREATE TRIGGER episodes_fts_update AFTER UPDATE OF summary, keywords ON episodes
        WHEN old.summary IS NOT new.summary OR old.keywords IS NOT new.keywords BEGIN
            INSERT INTO episodes_fts(episodes_fts, rowid, summary, keywords)
            VALUES ('delete', old.id, old.summary, old.keywords);
            INSERT INTO episodes_fts(rowid, summary, keywords) VALUES (new.id, new.summary, new.keywords);
        END;

        -- The change log lets every process's vector index catch up with writes
        -- made by any connection, without rebuilding (docs/storage.md#sqlite-the-default).
        CREATE TABLE change_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            row_id INTEGER NOT NULL
        );
        CREATE TRIGGER memories_log_insert AFTER INSERT ON memories BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('mem', new.id);
        END;
        CREATE TRIGGER memories_log_delete AFTER DELETE ON memories BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('mem', old.id);
        END;
        CREATE TRIGGER memories_log_update AFTER UPDATE OF
            embedding, agent_id, project_id, channel, source_id, ts_epoch ON memories BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('mem', new.id);
        END;
        CREATE TRIGGER episodes_log_insert AFTER INSERT ON episodes BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('ep', new.id);
        END;
        CREATE TRIGGER episodes_log_delete AFTER DELETE ON episodes BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('ep', old.id);
        END;
        CREATE TRIGGER episodes_log_update AFTER UPDATE OF
            embedding, agent_id, project_id, channel, ts_epoch ON episodes BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('ep', new.id);
        END;
        """,
    ),
]

MIGRATIONS.append(
    (
        2,
        """
        -- Per-term document counts, read to leave out terms FTS5's bm25 weighs at zero.
        CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row');
        CREATE VIRTUAL TABLE episodes_vocab USING fts5vocab(episodes_fts, 'row');
        """,
    )
)

MIGRATIONS.append(
    (
        3,
        """
        -- Calibrated gate thresholds and precision overrides live with the data: they are
        -- written in the data's transactions and travel with the file. Each threshold keeps
        -- the fingerprint (embedding model, scoring version) it was measured under.
        CREATE TABLE calibration (
            agent_id TEXT NOT NULL,
            signal TEXT NOT NULL,
            value REAL NOT NULL,
            embedding_model TEXT NOT NULL,
            scoring_version TEXT NOT NULL,
            PRIMARY KEY (agent_id, signal)
        );
        CREATE TABLE recall_precision (
            agent_id TEXT PRIMARY KEY,
            beta REAL NOT NULL
        );
        """
        + _logged_as("calibration", "cal")
        + _logged_as("recall_precision", "cal")
        + """
        """,
    )
)

MIGRATIONS.append(
    (
        4,
        """
        -- A record's text divided into blocks (text/blocks.py), each embedded: sign bits (one bit a
        -- dimension, MSB first) and an int8 code (round(v * 127 / max|v|)). A record that divides
        -- into fewer than two blocks has one marker row instead (block 0, no bits, no code): it is
        -- done, with nothing to search. The record's isolation axes are copied so the block arm
        -- filters without a join; text_hash is of the text the blocks divide.
        CREATE TABLE blocks (
            kind TEXT NOT NULL,
            record_id INTEGER NOT NULL,
            block INTEGER NOT NULL,
            start_char INTEGER NOT NULL,
            end_char INTEGER NOT NULL,
            forced INTEGER NOT NULL DEFAULT 0,
            text_hash TEXT NOT NULL,
            model TEXT NOT NULL,
            bits BLOB,
            codes BLOB,
            agent_id TEXT NOT NULL,
            project_id TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL DEFAULT '',
            source_id TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (kind, record_id, block)
        );
        CREATE INDEX idx_blocks_axes ON blocks(agent_id, project_id, channel);

        -- A record deleted takes its blocks; a record's text changed leaves its blocks describing
        -- another text, so they go too (the writer queues a new build); a record moved to other
        -- axes takes its blocks along.
        CREATE TRIGGER memories_blocks_delete AFTER DELETE ON memories BEGIN
            DELETE FROM blocks WHERE kind = 'mem' AND record_id = old.id;
        END;
        CREATE TRIGGER memories_blocks_text AFTER UPDATE OF content ON memories
        WHEN old.content IS NOT new.content BEGIN
            DELETE FROM blocks WHERE kind = 'mem' AND record_id = new.id;
        END;
        CREATE TRIGGER memories_blocks_axes AFTER UPDATE OF agent_id, project_id, channel, source_id ON memories
        WHEN old.agent_id IS NOT new.agent_id OR old.project_id IS NOT new.project_id
            OR old.channel IS NOT new.channel OR old.source_id IS NOT new.source_id BEGIN
            UPDATE blocks SET agent_id = new.agent_id, project_id = new.project_id, channel = new.channel,
                source_id = new.source_id
            WHERE kind = 'mem' AND record_id = new.id;
        END;
        CREATE TRIGGER episodes_blocks_delete AFTER DELETE ON episodes BEGIN
            DELETE FROM blocks WHERE kind = 'ep' AND record_id = old.id;
        END;
        CREATE TRIGGER episodes_blocks_text AFTER UPDATE OF summary ON episodes
        WHEN old.summary IS NOT new.summary BEGIN
            DELETE FROM blocks WHERE kind = 'ep' AND record_id = new.id;
        END;
        CREATE TRIGGER episodes_blocks_axes AFTER UPDATE OF agent_id, project_id, channel ON episodes
        WHEN old.agent_id IS NOT new.agent_id OR old.project_id IS NOT new.project_id
            OR old.channel IS NOT new.channel BEGIN
            UPDATE blocks SET agent_id = new.agent_id, project_id = new.project_id, channel = new.channel
            WHERE kind = 'ep' AND record_id = new.id;
        END;

        -- Every process's block index follows the blocks table through the change log: one entry
        -- per record and event ('blk:mem' / 'blk:ep' with the record's id), written by the row of
        -- block 0, which every block set has and every change of a set touches.
        CREATE TRIGGER blocks_log_insert AFTER INSERT ON blocks WHEN new.block = 0 BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('blk:' || new.kind, new.record_id);
        END;
        CREATE TRIGGER blocks_log_delete AFTER DELETE ON blocks WHEN old.block = 0 BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('blk:' || old.kind, old.record_id);
        END;
        CREATE TRIGGER blocks_log_update AFTER UPDATE ON blocks WHEN new.block = 0 BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('blk:' || new.kind, new.record_id);
        END;

        -- The persisted queue of background work. A task is due once not_before has passed and
        -- nobody holds it: a claim lasts until claimed_until, so the work of a process that died
        -- holding one resumes when the claim runs out.
        CREATE TABLE tasks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL DEFAULT '{}',
            attempts INTEGER NOT NULL DEFAULT 0,
            not_before REAL NOT NULL DEFAULT 0,
            claimed_until REAL NOT NULL DEFAULT 0,
            last_error TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
        );
        CREATE INDEX idx_tasks_kind ON tasks(kind);
        """,
    )
)

MIGRATIONS.append(
    (
        5,
        """
        -- A profile change is logged like any other, so a process caches an agent's profile until any
        -- connection changes one (a warm recall then reads no profile row).
        """
        + _logged_as("profiles", "prof")
        + """
        """,
    )
)

MIGRATIONS.append(
    (
        6,
        """
        -- The associative layer (graph/): entities an agent declares, their other names, the records that
        -- mention them and relations between entities and records. Every name keeps its written form beside
        -- its normalised one (graph/names.py), which is what comparisons read. No foreign keys: the
        -- triggers below keep the graph in step with the rows it names.
        CREATE TABLE entities (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT NOT NULL,
            project_id TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            normalized TEXT NOT NULL,
            declared_by TEXT NOT NULL DEFAULT 'agent',
            created_at TEXT NOT NULL,
            UNIQUE (agent_id, project_id, channel, normalized)
        );

        -- An alias has no scope of its own: it follows its entity's. That one alias names one entity
        -- per scope is the declaring code's rule (graph/declare.py), not a constraint.
        CREATE TABLE entity_aliases (
            entity_id INTEGER NOT NULL,
            alias TEXT NOT NULL,
            normalized TEXT NOT NULL,
            PRIMARY KEY (entity_id, normalized)
        );
        CREATE INDEX idx_entity_aliases_normalized ON entity_aliases(normalized);

        CREATE TABLE entity_mentions (
            entity_id INTEGER NOT NULL,
            ref TEXT NOT NULL,
            declared_by TEXT NOT NULL DEFAULT 'agent',
            created_at TEXT NOT NULL,
            PRIMARY KEY (entity_id, ref)
        );
        CREATE INDEX idx_entity_mentions_ref ON entity_mentions(ref);

        -- An endpoint is (kind, id): kind 'entity', 'mem' or 'ep'. The predicate is stored normalised.
        CREATE TABLE relations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT NOT NULL,
            project_id TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL DEFAULT '',
            subject_kind TEXT NOT NULL,
            subject_id INTEGER NOT NULL,
            predicate TEXT NOT NULL,
            object_kind TEXT NOT NULL,
            object_id INTEGER NOT NULL,
            anchor_ref TEXT NOT NULL DEFAULT '',
            declared_by TEXT NOT NULL DEFAULT 'agent',
            declared_at TEXT NOT NULL,
            UNIQUE (agent_id, project_id, channel, subject_kind, subject_id, predicate, object_kind, object_id,
                    anchor_ref)
        );
        CREATE INDEX idx_relations_subject ON relations(subject_kind, subject_id);
        CREATE INDEX idx_relations_object ON relations(object_kind, object_id);
        CREATE INDEX idx_relations_anchor ON relations(anchor_ref);

        -- An entity deleted takes its aliases, its mentions and every relation naming it; a record deleted
        -- takes its mentions and every relation naming it as subject, object or anchor. A changed text
        -- leaves the graph as it is: what was declared about a record stays declared.
        CREATE TRIGGER entities_graph_delete AFTER DELETE ON entities BEGIN
            DELETE FROM entity_aliases WHERE entity_id = old.id;
            DELETE FROM entity_mentions WHERE entity_id = old.id;
            DELETE FROM relations WHERE subject_kind = 'entity' AND subject_id = old.id;
            DELETE FROM relations WHERE object_kind = 'entity' AND object_id = old.id;
        END;
        """
        + _graph_forgets("memories", "mem")
        + _graph_forgets("episodes", "ep")
        + """

        -- Whether an agent has a graph at all is cached per process (an empty graph costs a reader
        -- nothing): a change of entities or relations by any connection is logged so every cache follows.
        """
        + _logged_as("entities", "graph")
        + _logged_as("relations", "graph")
        + """
        """,
    )
)


MIGRATIONS.append(
    (
        7,
        """
        -- The memories' text as stemmed words (porter over unicode61), for the word arm: a question's
        -- "moved" finds "moving", and a whole word outranks a trigram inside another word. Filled from
        -- the rows already stored, then kept by triggers like memories_fts.
        CREATE VIRTUAL TABLE memories_words USING fts5(
            content, content='memories', content_rowid='id', tokenize='porter unicode61');
        INSERT INTO memories_words(memories_words) VALUES ('rebuild');
        """
        + _mirrored_by("memories_words")
        + """
        """,
    )
)


MIGRATIONS.append(
    (
        8,
        """
        -- The isolation columns keyed by row id, for the full-text arms: an FTS5 match yields row ids of
        -- every agent, and checking each one's scope in these narrow indexes instead of the wide rows
        -- (text, vector) keeps the cost of other agents' rows small (store/sqlite/arms.py reads them by name).
        CREATE INDEX idx_memories_scope ON memories(id, agent_id, project_id, channel, source_id, ts_epoch);
        CREATE INDEX idx_episodes_scope ON episodes(id, agent_id, project_id, channel, ts_epoch);
        """,
    )
)

MIGRATIONS.append(
    (
        9,
        """
        -- Declared folders (store/sql/folders.py): a hierarchy an agent declared under a project, and the records
        -- filed in it, at most one folder a record. Kept so that a CPersona 2.6.14 export's folders survive
        -- import and our export; nothing on the recall path reads them. parent_id 0 is the project itself.
        CREATE TABLE folders (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id TEXT NOT NULL,
            project_id TEXT NOT NULL DEFAULT '',
            parent_id INTEGER NOT NULL DEFAULT 0,
            name TEXT NOT NULL,
            normalized TEXT NOT NULL,
            declared_by TEXT NOT NULL DEFAULT 'agent',
            created_at TEXT NOT NULL,
            UNIQUE (agent_id, project_id, parent_id, normalized)
        );
        CREATE TABLE folder_members (
            ref TEXT PRIMARY KEY,
            folder_id INTEGER NOT NULL,
            declared_by TEXT NOT NULL DEFAULT 'agent',
            declared_at TEXT NOT NULL
        );
        CREATE INDEX idx_folder_members_folder ON folder_members(folder_id);

        -- A record deleted leaves its folder; a folder deleted takes its filings.
        CREATE TRIGGER memories_unfile AFTER DELETE ON memories BEGIN
            DELETE FROM folder_members WHERE ref = 'mem:' || old.id;
        END;
        CREATE TRIGGER episodes_unfile AFTER DELETE ON episodes BEGIN
            DELETE FROM folder_members WHERE ref = 'ep:' || old.id;
        END;
        CREATE TRIGGER folders_unfile AFTER DELETE ON folders BEGIN
            DELETE FROM folder_members WHERE folder_id = old.id;
        END;
        """,
    )
)

MIGRATIONS.append(
    (
        10,
        """
        -- A change of what the full-text arms read (a memory's content, an episode's summary or keywords) is
        -- logged too, so that one change-log entry names everything any arm reads: a helper thread's read
        -- transaction that sees the same entry as a recall's snapshot reads the same rows
        -- (docs/storage.md#arms-beside-each-other).
        DROP TRIGGER memories_log_update;
        CREATE TRIGGER memories_log_update AFTER UPDATE OF
            embedding, agent_id, project_id, channel, source_id, ts_epoch, content ON memories BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('mem', new.id);
        END;
        DROP TRIGGER episodes_log_update;
        CREATE TRIGGER episodes_log_update AFTER UPDATE OF
            embedding, agent_id, project_id, channel, ts_epoch, summary, keywords ON episodes BEGIN
            INSERT INTO change_log(kind, row_id) VALUES ('ep', new.id);
        END;
        """,
    )
)

LATEST_VERSION = MIGRATIONS[-1][0]


def current_version(conn: sqlite3.Connection) -> int:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        "version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (datetime('now')))"
    )
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return row[0] or 0


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every step newer than the database; returns the version reached.

    Each step re-reads the version inside its write transaction: two processes opening one new file at
    once both see version 0 first, and the one that waited for the lock must skip what the other applied."""
    version = current_version(conn)
    for step, script in MIGRATIONS:
        if step <= version:
            continue
        begin_write(conn, WRITE_WAIT_S)
        try:
            if current_version(conn) < step:
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_version(version) VALUES (?)", (step,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        version = step
    return version


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (triggers contain inner semicolons)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    return out
