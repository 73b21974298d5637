"""A knowledge base in one DuckDB file: every mention `tacred extract` wrote (loaded idempotently), and the triples
they support (subject, relation, object by normalised surface form) with their count, probabilities and evidence."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.extraction.mention_files import mention_files, read_mention_file

if TYPE_CHECKING:
    import duckdb

ROWS_PER_INSERT = 20_000
KEY = ("doc_id", "sentence", "subject_start", "subject_end", "object_start", "object_end", "relation")

# the one normalisation of a surface form, kept in the database so that queries use it too: Unicode NFC, lower case,
# every run of white space (tabs, line breaks, no-break spaces) as one space, no space at either end
SURFACE_KEY = r"""CREATE OR REPLACE MACRO surface_key(t) AS
    trim(regexp_replace(lower(nfc_normalize(t)), '[\s\pZ]+', ' ', 'g'))"""

MENTIONS = """CREATE TABLE IF NOT EXISTS mentions (
    mention_id VARCHAR NOT NULL,
    doc_id VARCHAR NOT NULL, sentence INTEGER NOT NULL, sentence_text VARCHAR NOT NULL,
    subject VARCHAR NOT NULL, subject_start INTEGER NOT NULL, subject_end INTEGER NOT NULL,
    subject_type VARCHAR NOT NULL,
    object VARCHAR NOT NULL, object_start INTEGER NOT NULL, object_end INTEGER NOT NULL, object_type VARCHAR NOT NULL,
    relation VARCHAR NOT NULL, probability DOUBLE NOT NULL, evidence JSON,
    subject_key VARCHAR NOT NULL, object_key VARCHAR NOT NULL, source VARCHAR NOT NULL,
    PRIMARY KEY (doc_id, sentence, subject_start, subject_end, object_start, object_end, relation))"""

# one row per (subject, relation, object) by surface key and type; the name shown is the entity's most frequent
# surface form over every mention of it (ties: the first in code-point order)
TRIPLES = """CREATE OR REPLACE TABLE triples AS
WITH forms AS (
    SELECT subject_key AS key, subject AS form FROM mentions
    UNION ALL SELECT object_key, object FROM mentions),
names AS (
    SELECT key, first(form ORDER BY n DESC, form) AS name
    FROM (SELECT key, form, count(*) AS n FROM forms GROUP BY key, form) GROUP BY key)
SELECT s.name AS subject, t.subject_type, t.relation, o.name AS object, t.object_type,
       t.mentions, t.documents, t.best_probability, t.mean_probability, t.best_mention_id, t.doc_ids, t.mention_ids,
       t.subject_key, t.object_key
FROM (
    SELECT subject_key, subject_type, relation, object_key, object_type,
           count(*) AS mentions, count(DISTINCT doc_id) AS documents,
           max(probability) AS best_probability, round(avg(probability), 6) AS mean_probability,
           first(mention_id ORDER BY probability DESC, mention_id) AS best_mention_id,
           list(DISTINCT doc_id ORDER BY doc_id) AS doc_ids, list(mention_id ORDER BY mention_id) AS mention_ids
    FROM mentions GROUP BY subject_key, subject_type, relation, object_key, object_type) AS t
JOIN names AS s ON s.key = t.subject_key
JOIN names AS o ON o.key = t.object_key
ORDER BY t.mentions DESC, t.best_probability DESC, t.subject_key, t.relation, t.object_key"""

INSERT = """INSERT OR REPLACE INTO mentions
SELECT mention_id, doc_id, sentence, sentence_text, subject, subject_start, subject_end, subject_type,
       object, object_start, object_end, object_type, relation, probability, evidence,
       surface_key(subject), surface_key(object), source
FROM incoming"""


@dataclass(frozen=True)
class LoadSummary:
    """What one load did: records read, mentions new to the database, and the totals after it."""

    files: int
    records: int
    new: int
    mentions: int
    triples: int

    def line(self, db: str | Path) -> str:
        again = self.records - self.new
        return (f"{self.records} mention record(s) from {self.files} file(s): {self.new} new, {again} already in "
                f"the knowledge base; {db} now holds {self.mentions} mention(s) and {self.triples} triple(s)")


def mention_id(row: dict[str, Any]) -> str:
    """A short stable id of a mention, from its key (document, sentence, both spans, relation)."""
    key = json.dumps([row[k] for k in KEY], ensure_ascii=False)
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]


def connect(db: str | Path, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """The DuckDB database ``db`` (created when missing, unless ``read_only``)."""
    import duckdb

    return duckdb.connect(str(db), read_only=read_only)


def _chunks(files: list[Path]) -> Iterator[list[dict[str, Any]]]:
    """Checked rows of every file, deduplicated by key within each chunk (the last record of a key wins, as a later
    load of the same mention replaces the stored one)."""
    chunk: dict[tuple, dict[str, Any]] = {}
    for path in files:
        for row in read_mention_file(path):
            row["mention_id"] = mention_id(row)
            row["source"] = str(path)
            chunk[tuple(row[k] for k in KEY)] = row
            if len(chunk) >= ROWS_PER_INSERT:
                yield list(chunk.values())
                chunk = {}
    if chunk:
        yield list(chunk.values())


def load_mentions(db: str | Path, paths: Iterable[str | Path]) -> LoadSummary:
    """Add the mentions of ``paths`` (files or folders, :func:`mention_files`) to the knowledge base ``db`` and rebuild
    its triples, in one transaction: a bad record leaves the database as it was. Loading the same files again adds
    nothing (a mention's key is its document, sentence, both spans and relation; a later record replaces it)."""
    import pyarrow as pa

    files = mention_files(paths)
    con = connect(db)

    def run(sql: str) -> list[tuple]:
        return con.execute(sql).fetchall()  # DuckDB wants each result read before the next statement

    try:
        run("BEGIN TRANSACTION")
        run(SURFACE_KEY)
        run(MENTIONS)
        before = run("SELECT count(*) FROM mentions")[0][0]
        records = 0
        for chunk in _chunks(files):
            records += len(chunk)
            con.register("incoming", pa.Table.from_pylist(chunk))
            run(INSERT)
            con.unregister("incoming")
        run(TRIPLES)
        mentions = run("SELECT count(*) FROM mentions")[0][0]
        triples = run("SELECT count(*) FROM triples")[0][0]
        run("COMMIT")
    except BaseException:
        run("ROLLBACK")
        raise
    finally:
        con.close()
    return LoadSummary(len(files), records, mentions - before, mentions, triples)


def query(db: str | Path, sql: str) -> tuple[list[str], list[tuple]]:
    """The column names and rows of ``sql`` run on the knowledge base ``db`` (read-only)."""
    con = connect(db, read_only=True)
    try:
        result = con.execute(sql)
        return [d[0] for d in result.description or []], result.fetchall()
    finally:
        con.close()
