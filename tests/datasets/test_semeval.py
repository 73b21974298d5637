"""SemEval-2010 Task 8 → TACRED format: the parser, the converter, the dev split, the command, and the real
release from ``<repo>/../shared/data/semeval2010_task8`` (every sentence read, split and aligned; a slice converted)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tacred.commands.convert import main
from tacred.constants import NER_TAGS, NO_RELATION, POS_TAGS
from tacred.data.examples import check_example
from tacred.datasets.annotate import parse_markers
from tacred.datasets.semeval import (
    SEMEVAL_LABELS,
    SemEvalError,
    convert_records,
    read_semeval,
    split_dev,
    write_release,
)
from tacred.text.spacy_pipeline import tokenize_with_spans
from tests.conftest import SHARED_DATA

RELEASE = SHARED_DATA / "semeval2010_task8"

# Invented sentences in the release's layout (CRLF, tab after the id, quoted sentence).
BLOCKS = [
    ('1\t"The <e1>gardener</e1> planted a row of <e2>tulips</e2>."', "Other", "Comment:"),
    ('2\t"A <e1>hand</e1>s-on <e2>workshop</e2> taught the craft."', "Component-Whole(e1,e2)", "Comment: made up."),
    ('3\t""Stop," said the <e1>teacher</e1> to the noisy <e2>class</e2>."', "Member-Collection(e1,e2)", "Comment:"),
    ('4\t"The <e1>smoke</e1> came from a burning <e2>tyre</e2>."', "Entity-Origin(e1,e2)", "Comment:"),
]


def write_release_file(path: Path, blocks: list[tuple[str, ...]]) -> Path:
    path.write_bytes("".join("\r\n".join(block) + "\r\n\r\n" for block in blocks).encode("utf-8"))
    return path


def test_parser_reads_blocks_with_crlf(tmp_path: Path) -> None:
    records = read_semeval(write_release_file(tmp_path / "TRAIN_FILE.TXT", BLOCKS))
    assert [r.id for r in records] == [1, 2, 3, 4]
    assert [r.line for r in records] == [1, 5, 9, 13]
    assert records[0].relation == "Other" and records[1].relation == "Component-Whole(e1,e2)"
    assert records[2].sentence.startswith('"Stop," said the <e1>teacher</e1>')  # only the outer quotes go


@pytest.mark.parametrize(("blocks", "problem"), [
    ([BLOCKS[0], (BLOCKS[1][0], "Cause-Effect(e3,e1)", "Comment:")], "line 6, id 2: expected a relation label"),
    ([BLOCKS[0], (BLOCKS[1][0],)], "line 6, id 2: expected a relation label (e.g. 'Cause-Effect(e1,e2)' or 'Other'), found ''"),
    ([BLOCKS[0], (BLOCKS[0][0].replace("1", "7", 1), "Other", "Comment:", "stray")], "line 8, id 7: expected a blank"),
    ([BLOCKS[0], BLOCKS[0]], "line 5, id 1: id already used on line 1"),
    ([("1 The gardener planted tulips.", "Other")], "line 1: expected 'ID<TAB>\"sentence\"'"),
    ([BLOCKS[0], (BLOCKS[1][0].replace("\t", " "), *BLOCKS[1][1:])],
     "line 5, id 2: the id and the sentence must be separated by one tab, found ' '"),
    ([(BLOCKS[0][0].replace("\t", "\t\t"), *BLOCKS[0][1:])],
     "line 1, id 1: the id and the sentence must be separated by one tab, found '\\t\\t'"),
])
def test_parser_errors_name_file_line_and_id(tmp_path: Path, blocks, problem: str) -> None:
    path = write_release_file(tmp_path / "bad.txt", blocks)
    with pytest.raises(SemEvalError) as info:
        read_semeval(path)
    assert str(info.value).startswith(str(path)) and problem in str(info.value)


def test_converter_aligns_spans_and_maps_labels(tmp_path: Path, nlp) -> None:
    records = read_semeval(write_release_file(tmp_path / "TRAIN_FILE.TXT", BLOCKS))
    examples = convert_records(records, "train", nlp)
    assert [ex["id"] for ex in examples] == [f"semeval-train-{i}" for i in (1, 2, 3, 4)]
    assert [ex["relation"] for ex in examples] == [
        NO_RELATION, "Component-Whole(e1,e2)", "Member-Collection(e1,e2)", "Entity-Origin(e1,e2)"]
    spans = [(ex["token"][ex["subj_start"]:ex["subj_end"] + 1], ex["token"][ex["obj_start"]:ex["obj_end"] + 1])
             for ex in examples]
    assert spans == [(["gardener"], ["tulips"]), (["hand"], ["workshop"]), (["teacher"], ["class"]),
                     (["smoke"], ["tyre"])]
    assert examples[1]["token"][examples[1]["subj_end"] + 1] == "s"  # e1 ends inside a word
    for ex in examples:
        assert check_example(ex) is None
        assert (ex["subj_type"], ex["obj_type"]) == ("NOMINAL", "NOMINAL")
        assert set(ex["stanford_pos"]) <= set(POS_TAGS) and set(ex["stanford_ner"]) <= set(NER_TAGS)


@pytest.mark.parametrize(("sentence", "problem"), [
    ('5\t"An <e1></e1> fell on the <e2>roof</e2>."', "subject span is empty"),
    ('5\t"An <e1>  </e1> fell on the <e2>roof</e2>."', "subject span is empty"),
    ('5\t"An <e1>apple <e2>fell</e1> on the roof</e2>."', "nested"),
    ('5\t"An <e1>apple</e1> fell on the roof."', "no object marker"),
])
def test_converter_rejects_unalignable_sentences(tmp_path: Path, nlp, sentence: str, problem: str) -> None:
    path = write_release_file(tmp_path / "TEST_FILE_FULL.TXT", [*BLOCKS[:1], (sentence, "Other", "Comment:")])
    with pytest.raises(SemEvalError) as info:
        convert_records(read_semeval(path), "test", nlp)
    assert f"{path}, line 5, id 5: " in str(info.value) and problem in str(info.value)


def test_dev_split_is_seeded_disjoint_and_ordered(tmp_path: Path) -> None:
    blocks = [(f'{i}\t"A <e1>cat</e1> {i} <e2>mat</e2>."', "Other", "Comment:") for i in range(1, 41)]
    records = read_semeval(write_release_file(tmp_path / "TRAIN_FILE.TXT", blocks))
    train, dev = split_dev(records, dev_size=10, seed=0)
    again = split_dev(records, dev_size=10, seed=0)[1]
    other = split_dev(records, dev_size=10, seed=1)[1]
    assert len(train) == 30 and len(dev) == 10 and dev == again and dev != other
    assert {r.id for r in train} | {r.id for r in dev} == set(range(1, 41))
    assert [r.id for r in dev] == sorted(r.id for r in dev)
    with pytest.raises(SemEvalError, match="dev size"):
        split_dev(records, dev_size=40)


def test_declared_label_set() -> None:
    assert len(SEMEVAL_LABELS) == len(set(SEMEVAL_LABELS)) == 19 and SEMEVAL_LABELS[0] == NO_RELATION
    assert "Entity-Destination(e2,e1)" in SEMEVAL_LABELS and "Other" not in SEMEVAL_LABELS


def test_convert_command_on_a_small_release(tmp_path: Path, nlp, capsys) -> None:
    src = tmp_path / "src"
    src.mkdir()
    write_release_file(src / "TRAIN_FILE.TXT", BLOCKS)
    write_release_file(src / "TEST_FILE_FULL.TXT", BLOCKS[:2])
    out = tmp_path / "out"
    assert main(["semeval2010", str(src), str(out), "--dev_size", "1", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"train\s+3 examples", printed) and re.search(r"test\s+2 examples", printed)
    sizes = {name: len(json.loads((out / f"{name}.json").read_text())) for name in ("train", "dev", "test")}
    assert sizes == {"train": 3, "dev": 1, "test": 2}
    assert json.loads((out / "labels.json").read_text()) == list(SEMEVAL_LABELS)
    info = json.loads((out / "conversion.json").read_text())
    assert info["seed"] == 3 and info["sizes"] == sizes and info["spacy_model"].startswith("en_")
    assert (out / "README").is_file()
    assert main(["semeval2010", str(src), str(out), "--dev_size", "1"]) == 2
    assert "holds a converted release" in capsys.readouterr().err
    assert main(["semeval2010", str(tmp_path / "nowhere"), str(out), "--overwrite"]) == 2
    assert "TRAIN_FILE.TXT" in capsys.readouterr().err
    assert main(["semeval2010", str(src), str(out), "--dev_size", "1", "--spacy_model", "no_such_model_xyz",
                 "--overwrite"]) == 2
    assert "no_such_model_xyz" in capsys.readouterr().err
    assert json.loads((out / "conversion.json").read_text()) == info  # failed runs left the release as it was


@pytest.mark.slow  # `python -m tacred` in a subprocess
def test_convert_synthetic_subcommand(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tacred", "convert", "synthetic", str(tmp_path), "--n_train", "20",
         "--n_dev", "5", "--n_test", "5", "--seed", "1"],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert [len(json.loads((tmp_path / f"{s}.json").read_text())) for s in ("train", "dev", "test")] == [20, 5, 5]


def raw_labels(path: Path) -> Counter:
    """Label lines of a release file counted without the package's parser."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return Counter(lines[i + 1].strip() for i, line in enumerate(lines) if re.match(r'\d+\t"', line))


@pytest.fixture(scope="module")
def release() -> tuple[list, list]:
    if not (RELEASE / "TRAIN_FILE.TXT").is_file():
        pytest.skip(f"SemEval-2010 Task 8 release not found at {RELEASE}")
    return read_semeval(RELEASE / "TRAIN_FILE.TXT"), read_semeval(RELEASE / "TEST_FILE_FULL.TXT")


def test_every_sentence_of_the_release_reads_splits_and_aligns(release, nlp) -> None:
    """The whole release through every step of the conversion that can refuse a sentence (its markers, and its
    spans on spaCy's tokens) and through the split; tagging cannot refuse a tokenised sentence, so spaCy's tagger
    runs on a slice only (next test), which saves a minute of CPU on 2 cores."""
    train_records, test_records = release
    train, dev = split_dev(train_records)  # write_release's defaults: 1,500 sentences, seed 0
    assert (len(train), len(dev), len(test_records)) == (6500, 1500, 2717)
    assert sorted(r.id for r in train + dev) == list(range(1, 8001))
    for rec in train_records + test_records:
        marked = parse_markers(rec.sentence)
        tokens = tokenize_with_spans(nlp, marked.text, [marked.subj, marked.obj])
        (subj_start, subj_end), (obj_start, obj_end) = tokens.spans
        assert all(w.strip() for w in tokens.words), rec.where
        assert 0 <= subj_start <= subj_end < obj_start <= obj_end < len(tokens.words), rec.where  # e1 before e2
    train_file = Counter(r.relation for r in train_records)
    test_file = Counter(r.relation for r in test_records)
    assert train_file == raw_labels(RELEASE / "TRAIN_FILE.TXT")
    assert test_file == raw_labels(RELEASE / "TEST_FILE_FULL.TXT")
    assert (train_file["Other"], test_file["Other"]) == (1410, 454)
    assert train_file["Entity-Destination(e2,e1)"] == test_file["Entity-Destination(e2,e1)"] == 1


def release_slice(path: Path, blocks: int, out: Path) -> Path:
    """The first ``blocks`` sentences of a release file, byte for byte, as a file of their own."""
    kept = path.read_bytes().split(b"\r\n\r\n")[:blocks]
    out.write_bytes(b"".join(block + b"\r\n\r\n" for block in kept))
    return out


def test_a_slice_of_the_release_converts_to_valid_examples(tmp_path: Path, nlp) -> None:
    if not (RELEASE / "TRAIN_FILE.TXT").is_file():
        pytest.skip(f"SemEval-2010 Task 8 release not found at {RELEASE}")
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    release_slice(RELEASE / "TRAIN_FILE.TXT", 300, src / "TRAIN_FILE.TXT")
    release_slice(RELEASE / "TEST_FILE_FULL.TXT", 100, src / "TEST_FILE_FULL.TXT")
    info = write_release(src, out, dev_size=50, nlp=nlp)
    splits = {name: json.loads((out / f"{name}.json").read_text()) for name in ("train", "dev", "test")}
    assert {name: len(exs) for name, exs in splits.items()} == {"train": 250, "dev": 50, "test": 100}
    assert json.loads((out / "labels.json").read_text()) == list(SEMEVAL_LABELS)
    for name, examples in splits.items():
        for ex in examples:
            assert check_example(ex) is None, (name, ex["id"])
            n = len(ex["token"])
            assert len(ex["stanford_pos"]) == len(ex["stanford_ner"]) == n
            assert 0 <= ex["subj_start"] <= ex["subj_end"] < ex["obj_start"] <= ex["obj_end"] < n
            assert ex["relation"] in SEMEVAL_LABELS
    ids = [int(ex["id"].rsplit("-", 1)[1]) for ex in splits["train"] + splits["dev"]]
    assert sorted(ids) == list(range(1, 301))

    def as_release(counter: Counter) -> Counter:
        return Counter({("Other" if k == NO_RELATION else k): v for k, v in counter.items()})

    assert as_release(Counter(ex["relation"] for ex in splits["train"] + splits["dev"])) == raw_labels(
        src / "TRAIN_FILE.TXT")
    assert as_release(Counter(ex["relation"] for ex in splits["test"])) == raw_labels(src / "TEST_FILE_FULL.TXT")
    assert info["sizes"] == {"train": 250, "dev": 50, "test": 100} and info["seed"] == 0
