"""Reading documents: every input form with its ids, lazily (standard input line by line), and every kind of bad
document reported with its id and reason instead of ending the read."""

from __future__ import annotations

import io
import json

import pytest

from tacred.extraction.documents import BadDocument, Document, InputFormatError, read_documents


def as_pairs(found):
    return [(d.id, d.text) if isinstance(d, Document) else (d.id, "BAD: " + d.reason) for d in found]


def test_text_files_and_folders_one_document_per_file_sorted_recursively(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.txt").write_text("Second.", encoding="utf-8")
    (tmp_path / "a.txt").write_text("\ufeffFirst.", encoding="utf-8")
    (tmp_path / ".hidden.txt").write_text("never read", encoding="utf-8")
    (tmp_path / "empty.txt").write_bytes(b"")
    found = as_pairs(read_documents([tmp_path]))
    assert found == [(str(tmp_path / "a.txt"), "First."), (str(tmp_path / "b" / "two.txt"), "Second."),
                     (str(tmp_path / "empty.txt"), "")]  # an empty file is a document that will yield nothing


def test_lines_mode_gives_one_document_per_non_blank_line_with_file_and_line_ids(tmp_path):
    path = tmp_path / "news.txt"
    path.write_bytes(b"One.\n\nTwo \xff.\nThree.\r\n")
    found = list(read_documents([path], lines=True))
    assert [d.id for d in found] == [f"{path}:1", f"{path}:3", f"{path}:4"]
    assert found[0] == Document(f"{path}:1", "One.") and found[2].text == "Three."
    assert isinstance(found[1], BadDocument) and found[1].source == f"{path}, line 3"
    assert found[1].reason == "not UTF-8 text (byte 0xff at offset 4)"


def test_json_lines_ids_texts_and_every_malformed_record(tmp_path):
    path = tmp_path / "docs.jsonl"
    rows = [json.dumps({"id": 7, "text": "Seven."}), json.dumps({"body": "no text key"}), "{not json",
            json.dumps(["a", "list"]), json.dumps({"text": "No id."}), "", json.dumps({"id": "n", "text": 3})]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    found = as_pairs(read_documents([path]))
    assert found[0] == ("7", "Seven.")
    assert found[1] == (f"{path}:2", "BAD: no 'text' string")
    assert found[2][0] == f"{path}:3" and found[2][1].startswith("BAD: not a JSON line (JSONDecodeError")
    assert found[3] == (f"{path}:4", "BAD: a JSON list, not an object")
    assert found[4] == (f"{path}:5", "No id.")
    assert found[5] == ("n", "BAD: a int as its 'text' string")
    other = as_pairs(read_documents([path], text_column="body", id_column="missing"))
    assert other[1] == (f"{path}:2", "no text key")


def test_parquet_rows_in_batches_with_its_columns(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tacred.extraction import documents

    monkeypatch.setattr(documents, "PARQUET_BATCH", 2)  # several batches from a small file
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"doc": ["d0", "d1", None, "d3", "d4"], "body": ["A.", None, "C.", "D\x00.", "E."]}), path)
    found = as_pairs(read_documents([path], text_column="body", id_column="doc"))
    assert found == [("d0", "A."), ("d1", "BAD: its 'body' is null"), (f"{path}:2", "C."),
                     ("d3", "BAD: binary data (a NUL character)"), ("d4", "E.")]
    with pytest.raises(InputFormatError, match=r"docs.parquet: no column 'text' \(it has body, doc; --text_column"):
        list(read_documents([path]))


class CountingStream(io.RawIOBase):
    """Standard input that counts the lines it has handed out."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines, self.given = lines, 0

    def __iter__(self):
        for line in self.lines:
            self.given += 1
            yield line


def test_standard_input_is_read_line_by_line_as_documents_are_taken():
    stream = CountingStream([f"Sentence {n}.\n".encode() for n in range(1000)])
    documents = read_documents(["-"], stdin=stream)
    first = next(documents)
    assert first == Document("<stdin>:1", "Sentence 0.") and stream.given == 1  # nothing read ahead
    assert sum(1 for _ in documents) == 999
    jsonl = CountingStream([b'{"id": "x", "text": "From JSON."}\n'])
    assert list(read_documents(["-"], stdin=jsonl, fmt="jsonl")) == [Document("x", "From JSON.")]


def test_over_long_binary_and_undecodable_documents_are_reported_not_raised(tmp_path):
    long_line = tmp_path / "long.txt"
    long_line.write_text("word " * 400_000 + "\nShort.\n", encoding="utf-8")  # a 2-million-character line
    found = as_pairs(read_documents([long_line], lines=True))
    assert found == [(f"{long_line}:1", "BAD: 2,000,000 characters, more than the limit of 1,000,000 (--max_chars)"),
                     (f"{long_line}:2", "Short.")]
    garbage = tmp_path / "garbage.dat"
    garbage.write_bytes(bytes(range(1, 32)) * 50)  # control bytes, valid UTF-8, no NUL
    (tmp_path / "nul.bin").write_bytes(b"PK\x03\x04\x00\x00rest")
    (tmp_path / "big.txt").write_text("x" * 50, encoding="utf-8")
    found = as_pairs(read_documents([garbage, tmp_path / "nul.bin"]))
    assert found[0] == (str(garbage), "BAD: binary data (1300 control characters in its first 1550)")  # not \t\n...
    assert found[1] == (str(tmp_path / "nul.bin"), "BAD: binary data (a NUL byte at offset 4)")
    found = as_pairs(read_documents([tmp_path / "big.txt"], max_chars=10))  # too big to be read at all
    assert found == [(str(tmp_path / "big.txt"), "BAD: 50 bytes, more than 10 characters can take (--max_chars)")]


def test_a_missing_source_or_unknown_format_is_an_error_naming_it(tmp_path):
    with pytest.raises(InputFormatError, match="nowhere.txt: no such file or folder"):
        list(read_documents([tmp_path / "nowhere.txt"]))
    with pytest.raises(InputFormatError, match="unknown input format 'csv'"):
        list(read_documents([tmp_path], fmt="csv"))


def test_a_document_whose_id_repeats_an_earlier_ones_is_skipped_and_reported(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in (("d1", "First."), ("d2", "Second."), ("d1", "Third."))), encoding="utf-8")
    found = as_pairs(read_documents([path]))
    assert found[:2] == [("d1", "First."), ("d2", "Second.")]
    assert found[2][0] == "d1" and "repeats an earlier document's" in found[2][1]
    twice = as_pairs(read_documents([tmp_path / "docs.jsonl", tmp_path / "docs.jsonl"], fmt="jsonl"))
    assert [text for _, text in twice].count("First.") == 1 and len(twice) == 6
