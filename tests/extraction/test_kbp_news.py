"""The KBP37 model's output that docs/extraction.md shows is what `tacred extract` writes for the page's own news
sentences: every record's document, sentence text and argument offsets point into docs/results/kbp37/news.txt, each
fact once, and the page's table lists records of the file."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO

NEWS = REPO / "docs" / "results" / "kbp37" / "news.txt"
OUTPUT = REPO / "docs" / "results" / "kbp37" / "news_extracted.jsonl"


def records() -> list[dict]:
    return [json.loads(line) for line in OUTPUT.read_text(encoding="utf-8").splitlines()]


def test_every_record_points_into_the_news_sentences():
    lines = NEWS.read_text(encoding="utf-8").splitlines()
    found = records()
    assert len(found) == 30
    for record in found:
        path, number = record["doc_id"].rsplit(":", 1)
        assert path == "docs/results/kbp37/news.txt"
        text = lines[int(number) - 1]
        assert record["sentence_text"] in text
        for role in ("subject", "object"):
            arg = record[role]
            assert text[arg["start"]:arg["end"]] == arg["text"], (record["doc_id"], arg)
        assert "(e1,e2)" not in record["relation"] and "(e2,e1)" not in record["relation"]  # directions resolved
        orders = record["evidence"]["orders"]
        assert abs(record["probability"] - sum(o["probability"] for o in orders) / 2) < 1e-5  # the stated mean
    facts = [(r["doc_id"], r["subject"]["start"], r["object"]["start"]) for r in found]
    pairs = [(d, min(a, b), max(a, b)) for d, a, b in facts]
    assert len(set(pairs)) == len(pairs)  # one fact per pair of mentions


def test_the_page_table_shows_records_of_the_file():
    page = (REPO / "docs" / "extraction.md").read_text(encoding="utf-8")
    section = page.split("## A KBP relation model on news text", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([\d.]+) \|$", section, flags=re.M)
    assert len(rows) == 20
    shown = {(int(r["doc_id"].rsplit(":", 1)[1]), r["subject"]["text"], r["relation"], r["object"]["text"],
              f"{r['probability']:.2f}") for r in records()}
    for line, subject, relation, obj, probability in rows:
        assert (int(line), subject.strip(), relation.strip(), obj.strip(), probability) in shown
