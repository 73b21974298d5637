"""KBP37 → TACRED format: the parser (sentences that cannot be converted kept and named, format errors raised),
the converter and its record, the command, and the real release from ``<repo>/../shared/data/kbp37``."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from tacred.commands.convert import main
from tacred.constants import NO_RELATION
from tacred.data.examples import check_example
from tacred.datasets.conversion import unconverted_gold
from tacred.datasets.kbp37 import KBP37_LABELS, KBP37Error, entity_type, read_kbp37
from tacred.text.spacy_pipeline import Annotation
from tests.conftest import SHARED_DATA

RELEASE = SHARED_DATA / "kbp37"

# Invented sentences in the release's layout: id, tab, quoted tokens with spaced markers; label; two blank lines.
GOOD = [
    ('0\t" <e1> Maria Lopez </e1> , the chief executive of <e2> Acme Holdings </e2> , said . "',
     "per:employee_of(e1,e2)"),
    ('1\t" <e1> Acme Holdings </e1> hired <e2> Maria Lopez </e2> in 2004 . "', "per:employee_of(e2,e1)"),
    ('2\t" <e1> Tom Baker </e1> visited <e2> Paris </e2> last spring . "', NO_RELATION),
]
EMPTY = ('3\t" The <e1> </e1> railway station is in Cork <e2> Ireland </e2> . "', "org:country_of_headquarters(e1,e2)")


def write_file(path: Path, blocks: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f"{sentence}\n{label}\n\n\n" for sentence, label in blocks), encoding="utf-8")
    return path


def small_release(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_file(folder / "train.txt", GOOD + [EMPTY])
    write_file(folder / "dev.txt", GOOD[:2])
    write_file(folder / "test.txt", [GOOD[2], EMPTY, GOOD[0]])
    return folder


def test_parser_keeps_tokens_spans_labels_and_flags_an_empty_entity(tmp_path: Path) -> None:
    records = read_kbp37(write_file(tmp_path / "train.txt", GOOD + [EMPTY]))
    assert [r.id for r in records] == [0, 1, 2, 3] and [r.line for r in records] == [1, 5, 9, 13]
    first = records[0]
    assert first.tokens[first.subj[0]:first.subj[1] + 1] == ("Maria", "Lopez")
    assert first.tokens[first.obj[0]:first.obj[1] + 1] == ("Acme", "Holdings")
    assert "<e1>" not in first.tokens and first.relation == "per:employee_of(e1,e2)" and first.problem is None
    assert records[3].problem == "the e1 entity is empty (<e1> </e1>)"
    assert records[3].where.endswith("train.txt, line 13, id 3")


@pytest.mark.parametrize("blocks, problem", [
    ([("0\tno quotes here", NO_RELATION)], r"line 1: expected 'ID<TAB>\"sentence\"'"),
    ([GOOD[0], ("0" + GOOD[1][0][1:], NO_RELATION)], r"line 5, id 0: id already used on line 1"),
    ([(GOOD[0][0], "per:employee_of")], r"line 2, id 0: expected a KBP37 label .* found 'per:employee_of'"),
    ([(GOOD[0][0], "Cause-Effect(e1,e2)")], r"line 2, id 0: expected a KBP37 label"),
])
def test_parser_errors_name_file_line_and_id(tmp_path: Path, blocks, problem: str) -> None:
    path = write_file(tmp_path / "bad.txt", blocks)
    with pytest.raises(KBP37Error, match=re.escape(str(path)) + ", " + problem):
        read_kbp37(path)


def test_a_sentence_without_its_blank_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "train.txt"
    path.write_text(f"{GOOD[0][0]}\n{GOOD[0][1]}\n{GOOD[1][0]}\n{GOOD[1][1]}\n", encoding="utf-8")
    with pytest.raises(KBP37Error, match=r"line 3, id 0: expected a blank line"):
        read_kbp37(path)


@pytest.mark.parametrize("sentence, problem", [
    ('5\t" <e1> A </e1> and <e1> B </e1> <e2> C </e2> "', "must appear once (<e1> x2, </e1> x2)"),
    ('5\t" </e1> A <e1> and <e2> C </e2> "', "</e1> comes before <e1>"),
    ('5\t" <e1> A <e2> B </e1> C </e2> "', "the e1 and e2 entities overlap"),
])
def test_malformed_entities_are_kept_as_not_convertible(tmp_path: Path, sentence: str, problem: str) -> None:
    [record] = read_kbp37(write_file(tmp_path / "t.txt", [(sentence, NO_RELATION)]))
    assert record.problem is not None and problem in record.problem


def test_declared_label_set() -> None:
    assert len(KBP37_LABELS) == len(set(KBP37_LABELS)) == 37 and KBP37_LABELS[0] == NO_RELATION
    assert "org:top_members/employees(e2,e1)" in KBP37_LABELS and "per:title(e1,e2)" in KBP37_LABELS


def test_entity_type_is_the_majority_ner_of_the_span() -> None:
    ann = Annotation(["Prof.", "Anna", "Berg", "of", "Oslo"], ["NNP"] * 5,
                     ["O", "PERSON", "PERSON", "O", "LOCATION"], [-1, 0, 0, -1, 1])
    assert entity_type(ann, 0, 2) == "PERSON"  # the title is outside spaCy's entity: the majority decides
    assert entity_type(ann, 3, 3) == "NOMINAL"
    assert entity_type(ann, 2, 4) == "PERSON"  # a tie goes to the earliest label


def test_convert_command_writes_splits_labels_and_the_unconverted_record(tmp_path: Path, nlp, capsys) -> None:
    src, out = small_release(tmp_path / "src"), tmp_path / "out"
    assert main(["kbp37", str(src), str(out)]) == 0
    captured = capsys.readouterr()
    assert re.search(r"train\s+3 examples, 1 no_relation; 1 of 4 sentences not convertible", captured.out)
    assert re.search(r"test\s+2 examples, 1 no_relation; 1 of 3 sentences not convertible", captured.out)
    assert "train.txt, line 13, id kbp37-train-3: the e1 entity is empty" in captured.err
    splits = {name: json.loads((out / f"{name}.json").read_text()) for name in ("train", "dev", "test")}
    assert [ex["id"] for ex in splits["test"]] == ["kbp37-test-2", "kbp37-test-0"]
    first = splits["train"][0]
    assert first["token"][first["subj_start"]:first["subj_end"] + 1] == ["Maria", "Lopez"]
    assert first["relation"] == "per:employee_of(e1,e2)"
    for examples in splits.values():
        for ex in examples:
            check_example(ex)
    assert json.loads((out / "labels.json").read_text()) == list(KBP37_LABELS)
    info = json.loads((out / "conversion.json").read_text())
    assert info["sentences"] == {"train": 4, "dev": 2, "test": 3} and info["sizes"] == {"train": 3, "dev": 2, "test": 2}
    assert info["unconverted"]["test"] == [{"id": "kbp37-test-3", "file": "test.txt", "line": 5,
                                            "relation": "org:country_of_headquarters(e1,e2)",
                                            "problem": "the e1 entity is empty (<e1> </e1>)"}]
    assert unconverted_gold(out / "test.json", 2) == ["org:country_of_headquarters(e1,e2)"]
    assert unconverted_gold(out / "test.json", 5) == []  # the record belongs to another version of the file
    assert unconverted_gold(out / "dev.json", 2) == []
    assert (out / "README").is_file()


def test_convert_command_refuses_a_bad_source_before_spacy(tmp_path: Path, capsys) -> None:
    assert main(["kbp37", str(tmp_path / "nowhere"), str(tmp_path / "out")]) == 2
    assert "nowhere: not a folder" in capsys.readouterr().err
    src = small_release(tmp_path / "src")
    write_file(src / "dev.txt", [(GOOD[0][0], "per:boss_of(e1,e2)")])
    assert main(["kbp37", str(src), str(tmp_path / "out"), "--spacy_model", "no_such_model_xyz"]) == 2
    err = capsys.readouterr().err
    assert "dev.txt, line 2, id 0: expected a KBP37 label" in err and not (tmp_path / "out").exists()


def raw_labels(path: Path) -> Counter:
    """Label lines of a release file counted without the package's parser."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return Counter(lines[i + 1].strip() for i, line in enumerate(lines) if re.match(r'\d+\t"', line))


def test_every_sentence_of_the_real_release_reads() -> None:
    """The whole release through the parser: sizes, labels as written, and the sentences that cannot be converted
    (an empty entity) named; spaCy's tagging of a pre-tokenised sentence cannot refuse one."""
    if not (RELEASE / "train.txt").is_file():
        pytest.skip(f"KBP37 release not found at {RELEASE}")
    sizes, lost = {}, {}
    for split in ("train", "dev", "test"):
        records = read_kbp37(RELEASE / f"{split}.txt")
        sizes[split] = len(records)
        lost[split] = [r for r in records if r.problem is not None]
        assert Counter(r.relation for r in records) == raw_labels(RELEASE / f"{split}.txt")
        assert {r.relation for r in records} <= set(KBP37_LABELS)
        for r in records:
            if r.problem is None:
                assert 0 <= r.subj[0] <= r.subj[1] < r.obj[0] <= r.obj[1] < len(r.tokens), r.where  # e1 first
    assert sizes == {"train": 15917, "dev": 1724, "test": 3405}
    assert {split: len(rows) for split, rows in lost.items()} == {"train": 110, "dev": 10, "test": 26}
    assert all("is empty" in r.problem for rows in lost.values() for r in rows)
