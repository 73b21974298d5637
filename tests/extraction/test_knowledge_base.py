"""``tacred kb`` on mention files written here in the format ``tacred extract`` writes: every field lands in a real
DuckDB file, loading twice adds nothing, JSON Lines and Parquet shards load alike, triples group surface forms by
the documented normalisation, the SQL of docs/knowledge-base.md answers as it says, and a bad record names its file
and line and leaves the database as it was."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO, run_in_process

duckdb = pytest.importorskip("duckdb")

DOCS = {
    "d1": "Maria Lopez, the chief executive of Acme Holdings, spoke on Monday. She joined in 2001.",
    "d2": "Yesterday MARIA  LOPEZ left Globex Corp after a decade.",
    "d3": "Analysts said maria lopez of Acme Holdings would stay.",
    "d4": "John Smith works at Initech in Austin.",
}
# (doc, subject, relation, object, probability); every mention in the document's first sentence
FACTS = [
    ("d1", "Maria Lopez", "per:employee_of", "Acme Holdings", 0.9),
    ("d1", "Acme Holdings", "org:top_members/employees", "Maria Lopez", 0.8),
    ("d2", "MARIA  LOPEZ", "per:employee_of", "Globex Corp", 0.6),
    ("d3", "maria lopez", "per:employee_of", "Acme Holdings", 0.7),
    ("d4", "John Smith", "per:employee_of", "Initech", 0.95),
    ("d4", "Initech", "org:city_of_headquarters", "Austin", 0.55),
]
TYPES = {"Acme Holdings": "ORGANIZATION", "Globex Corp": "ORGANIZATION", "Initech": "ORGANIZATION", "Austin": "CITY"}


def mention(doc: str, subject: str, relation: str, obj: str, probability: float) -> dict:
    text = DOCS[doc]
    sentence_end = text.find(". ") + 1 or len(text)

    def argument(words: str) -> dict:
        start = text.index(words)
        return {"text": words, "start": start, "end": start + len(words), "type": TYPES.get(words, "PERSON")}

    return {"doc_id": doc, "sentence": 0, "sentence_text": text[:sentence_end], "subject": argument(subject),
            "object": argument(obj), "relation": relation, "probability": probability,
            "evidence": {"orders": ["subject-object"], "probabilities": [probability]}}


MENTIONS = [mention(*fact) for fact in FACTS]


def write_jsonl(path: Path, records: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def extracted(tmp_path: Path) -> Path:
    """An extraction folder: two shards of mentions and the run's other files, which are not mentions."""
    out = tmp_path / "extracted"
    write_jsonl(out / "parts" / "part-a.jsonl", MENTIONS[:3])
    write_jsonl(out / "parts" / "part-b.jsonl", MENTIONS[3:])
    write_jsonl(out / "bad.jsonl", [{"id": "d9", "source": "corpus.jsonl", "reason": "not UTF-8 text"}])
    (out / "done").mkdir()
    (out / "done" / "part-a.json").write_text(json.dumps({"documents": ["d1", "d2"]}), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps({"documents": 5}), encoding="utf-8")
    return out


def table(db: Path, sql: str) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        result = con.execute(sql)
        columns = [d[0] for d in result.description]
        return [dict(zip(columns, row, strict=True)) for row in result.fetchall()]
    finally:
        con.close()


def test_every_field_of_every_mention_lands_once_however_often_it_is_loaded(extracted, tmp_path):
    db = tmp_path / "kb.duckdb"
    first = run_in_process("kb", str(extracted), "--db", str(db))
    assert "6 mention record(s) from 2 file(s): 6 new, 0 already in the knowledge base" in first.stderr
    assert f"{db} now holds 6 mention(s) and 5 triple(s)" in first.stderr
    rows = table(db, "SELECT * FROM mentions ORDER BY doc_id, relation")
    expected = sorted(MENTIONS, key=lambda m: (m["doc_id"], m["relation"]))
    for row, m in zip(rows, expected, strict=True):
        assert (row["doc_id"], row["sentence"], row["sentence_text"]) == (m["doc_id"], 0, m["sentence_text"])
        for role in ("subject", "object"):
            assert row[role] == m[role]["text"] and DOCS[m["doc_id"]][row[f"{role}_start"]:row[f"{role}_end"]] == row[role]
            assert row[f"{role}_type"] == m[role]["type"]
        assert (row["relation"], row["probability"]) == (m["relation"], m["probability"])
        assert json.loads(row["evidence"]) == m["evidence"] and row["source"].endswith(".jsonl")
    again = run_in_process("kb", str(extracted / "parts"), str(extracted / "parts" / "part-a.jsonl"), "--db", str(db))
    assert "6 mention record(s) from 2 file(s): 0 new, 6 already" in again.stderr  # a file named twice is read once
    assert table(db, "SELECT count(*) AS n FROM mentions") == [{"n": 6}]
    # a re-extraction of one mention with another probability replaces it
    write_jsonl(tmp_path / "rerun.jsonl", [{**MENTIONS[4], "probability": 0.5}])
    run_in_process("kb", str(tmp_path / "rerun.jsonl"), "--db", str(db))
    assert table(db, "SELECT probability FROM mentions WHERE doc_id = 'd4' AND relation = 'per:employee_of'") == [
        {"probability": 0.5}]
    assert table(db, "SELECT count(*) AS n FROM mentions") == [{"n": 6}]


def test_triples_group_surface_forms_by_the_documented_normalisation(extracted, tmp_path):
    db = tmp_path / "kb.duckdb"
    run_in_process("kb", str(extracted), "--db", str(db))
    triples = table(db, "SELECT * FROM triples")
    acme = [t for t in triples if t["relation"] == "per:employee_of" and t["object"] == "Acme Holdings"]
    assert len(acme) == 1, "'Maria Lopez' and 'maria lopez' are one subject"
    t = acme[0]
    assert (t["subject"], t["subject_type"], t["object_type"]) == ("Maria Lopez", "PERSON", "ORGANIZATION")
    assert (t["mentions"], t["documents"], t["doc_ids"]) == (2, 2, ["d1", "d3"])
    assert t["best_probability"] == 0.9 and t["mean_probability"] == pytest.approx(0.8)
    assert len(t["mention_ids"]) == 2 and t["best_mention_id"] in t["mention_ids"]
    best = table(db, f"SELECT doc_id FROM mentions WHERE mention_id = '{t['best_mention_id']}'")
    assert best == [{"doc_id": "d1"}]
    globex = next(t for t in triples if t["object"] == "Globex Corp")
    assert globex["subject"] == "Maria Lopez"  # 'MARIA  LOPEZ' shown by its key's most frequent form
    assert triples[0] == t, "the most supported triple first"
    keys = table(db, "SELECT surface_key(' MARIA \t\u00a0LOPEZ\n') AS k, surface_key('E\u0301cole') = 'école' AS nfc")
    assert keys == [{"k": "maria lopez", "nfc": True}]


def test_parquet_shards_load_like_json_lines(extracted, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    folder = tmp_path / "parquet"
    folder.mkdir()
    records = [{**m, "evidence": json.dumps(m["evidence"])} for m in MENTIONS[:3]]  # evidence as JSON text
    pq.write_table(pa.Table.from_pylist(records), folder / "part-a.parquet")
    mixed = tmp_path / "mixed.duckdb"
    run_in_process("kb", str(folder / "part-a.parquet"), str(extracted / "parts" / "part-b.jsonl"), "--db", str(mixed))
    plain = tmp_path / "plain.duckdb"
    run_in_process("kb", str(extracted), "--db", str(plain))
    columns = "* EXCLUDE (source)"
    assert table(mixed, f"SELECT {columns} FROM mentions ORDER BY mention_id") == table(
        plain, f"SELECT {columns} FROM mentions ORDER BY mention_id")
    assert table(mixed, "SELECT * FROM triples") == table(plain, "SELECT * FROM triples")


def doc_sql(name: str) -> str:
    text = (REPO / "docs" / "knowledge-base.md").read_text(encoding="utf-8")
    found = re.findall(rf"<!-- sql: {re.escape(name)} -->\n```sql\n(.*?)```", text, re.S)
    assert len(found) == 1, f"docs/knowledge-base.md: one sql block named {name}"
    return found[0]


def test_the_documented_queries_answer_as_the_page_says(extracted, tmp_path):
    db = tmp_path / "kb.duckdb"
    run_in_process("kb", str(extracted), "--db", str(db))
    employers = run_in_process("kb", "--db", str(db), "--query", doc_sql("employers"))
    rows = [json.loads(line) for line in employers.stdout.splitlines()]
    assert [(r["employer"], r["relation"], r["mentions"], r["best_probability"]) for r in rows] == [
        ("Acme Holdings", "per:employee_of", 2, 0.9),
        ("Acme Holdings", "org:top_members/employees", 1, 0.8),
        ("Globex Corp", "per:employee_of", 1, 0.6),
    ]
    top = table(db, doc_sql("most-supported"))
    assert (top[0]["subject"], top[0]["object"], top[0]["mentions"]) == ("Maria Lopez", "Acme Holdings", 2)
    assert top[0]["evidence"] == MENTIONS[0]["sentence_text"]  # the sentence of the best mention (0.9)
    assert [t["mentions"] for t in top] == sorted((t["mentions"] for t in top), reverse=True) and len(top) == 5
    evidence = table(db, doc_sql("evidence"))
    assert [(e["doc_id"], e["probability"]) for e in evidence] == [("d1", 0.8)]


@pytest.mark.parametrize(("line", "problem"), [
    ("{not json", "line 2: not a JSON object"),
    ('["a list"]', "line 2: expected a JSON object, found list"),
    (json.dumps({k: v for k, v in MENTIONS[0].items() if k != "relation"}), "line 2: no 'relation' field"),
    (json.dumps({**MENTIONS[0], "subject": {**MENTIONS[0]["subject"], "end": 0}}), "line 2: subject offsets [0, 0)"),
    (json.dumps({**MENTIONS[0], "probability": 1.5}), "line 2: 'probability' must lie in [0, 1], found 1.5"),
    (json.dumps({**MENTIONS[0], "sentence": "0"}), "line 2: 'sentence' must be an integer"),
    (json.dumps({**MENTIONS[0], "object": {"text": "x", "start": 0, "end": 1}}), "line 2: no 'object.type' field"),
])
def test_a_bad_record_names_its_file_and_line_and_the_database_stays_as_it_was(extracted, tmp_path, line, problem):
    db = tmp_path / "kb.duckdb"
    run_in_process("kb", str(extracted), "--db", str(db))
    bad = tmp_path / "bad-shard.jsonl"
    bad.write_text(json.dumps(MENTIONS[0] | {"doc_id": "d7"}) + "\n" + line + "\n", encoding="utf-8")
    ran = run_in_process("kb", str(bad), "--db", str(db), check=False)
    assert ran.status == 2
    assert ran.stderr.startswith(f"tacred kb: error: {bad}, {problem}"), ran.stderr
    assert table(db, "SELECT count(*) AS n FROM mentions") == [{"n": 6}]  # not even d7's good first line


def test_wrong_paths_and_nothing_to_do_are_one_line_errors(tmp_path):
    db = str(tmp_path / "kb.duckdb")
    for args, message in [
        ((str(tmp_path / "missing"),), "missing: no such file or folder"),
        ((str(tmp_path),), "no mention files (*.jsonl, *.parquet) in this folder"),
        ((), "nothing to do"),
    ]:
        ran = run_in_process("kb", *args, "--db", db, check=False)
        assert ran.status == 2 and message in ran.stderr and len(ran.stderr.splitlines()) == 1, ran.stderr
    ran = run_in_process("kb", "--db", db, "--query", "SELECT * FROM mentions", check=False)
    assert ran.status == 2 and "tacred kb: error:" in ran.stderr  # no database there yet


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_an_extraction_folder_loads_whole_into_the_knowledge_base(checkpoint, tmp_path, fmt, nlp):
    """``tacred extract --output`` then ``tacred kb`` on that folder: every mention of its shards, and only those."""
    corpus = tmp_path / "news.jsonl"
    write_jsonl(corpus, [{"id": d, "text": text} for d, text in DOCS.items()])
    out = tmp_path / "out"
    run_in_process("extract", str(corpus), "--ckpt_path", str(checkpoint), "--output", str(out), "--format", fmt,
                   "--chunk_size", "2", "--threshold", "-50", "--no_signatures")  # every pair a relation
    relations = json.loads((out / "summary.json").read_text())["relations"]
    assert relations > 0
    db = tmp_path / "kb.duckdb"
    ran = run_in_process("kb", str(out), "--db", str(db))
    assert f"{relations} mention record(s) from " in ran.stderr
    stored = table(db, "SELECT doc_id, subject, subject_start, subject_end, object, relation FROM mentions")
    assert len(stored) == relations and {r["doc_id"] for r in stored} <= set(DOCS)
    assert all(DOCS[r["doc_id"]][r["subject_start"]:r["subject_end"]] == r["subject"] for r in stored)
