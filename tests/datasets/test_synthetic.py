"""Tests of the embedded demo corpus: determinism, sizes, disjoint splits, valid fields, labels, difficulty."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tacred.constants import NER_TAGS, NO_RELATION, OBJECT_TYPES, POS_TAGS, SUBJECT_TYPES, TACRED_LABELS
from tacred.datasets.synthetic import (
    _BY_LABEL,
    NEGATIVE,
    POSITIVE,
    RELATIONS,
    _sentence,
    generate_corpus,
    write_corpus,
)
from tests.conftest import REPO

SPLITS = ("train", "dev", "test")
FIELDS = ("id", "relation", "token", "subj_start", "subj_end", "obj_start", "obj_end", "subj_type",
          "obj_type", "stanford_pos", "stanford_ner")
# sha256 of json.dumps(generate_corpus(seed=5, n_train=200, n_dev=50, n_test=50)). A template edit changes
# it on purpose: then update it here, since demo results are only comparable between equal corpora.
GOLDEN_SHA256 = "cba7a062a1fb915921167cae63c273ac12c3d88e35eb64bb44a36edb07c035cb"
_DIGEST = ("import hashlib, json; from tacred.datasets.synthetic import generate_corpus; "
           "print(hashlib.sha256(json.dumps(generate_corpus(seed=5, n_train=200, n_dev=50, n_test=50))"
           ".encode()).hexdigest())")


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[dict]]:
    return generate_corpus()


def _f1(gold: list[str], pred: list[str]) -> float:
    """The official TACRED micro F1 (no_relation ignored)."""
    correct = sum(g == p != NO_RELATION for g, p in zip(gold, pred, strict=True))
    guessed, wanted = sum(p != NO_RELATION for p in pred), sum(g != NO_RELATION for g in gold)
    precision, recall = correct / guessed if guessed else 1.0, correct / wanted if wanted else 0.0
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _naive_bayes_f1(train: list[dict], test: list[dict], features) -> float:
    """Dev F1 of a multinomial naive Bayes classifier over the given binary features."""
    prior = Counter(e["relation"] for e in train)
    counts = {label: Counter() for label in prior}
    for e in train:
        counts[e["relation"]].update(features(e))
    vocab = set().union(*counts.values())
    totals = {label: sum(c.values()) + 0.1 * len(vocab) for label, c in counts.items()}

    def predict(e: dict) -> str:
        return max(prior, key=lambda label: math.log(prior[label]) + sum(
            math.log((counts[label][f] + 0.1) / totals[label]) for f in features(e) if f in vocab))

    return _f1([e["relation"] for e in test], [predict(e) for e in test])


def test_same_seed_gives_identical_json_and_another_seed_differs(tmp_path: Path) -> None:
    first = write_corpus(tmp_path / "a", seed=3, n_train=120, n_dev=30, n_test=30)
    again = write_corpus(tmp_path / "b", seed=3, n_train=120, n_dev=30, n_test=30)
    other = write_corpus(tmp_path / "c", seed=4, n_train=120, n_dev=30, n_test=30)
    for split in SPLITS:
        assert first[split].read_bytes() == again[split].read_bytes()
        assert first[split].read_bytes() != other[split].read_bytes()


@pytest.mark.slow  # Python subprocesses with other hash seeds
def test_output_does_not_depend_on_the_process_or_hash_seed() -> None:
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", _DIGEST], env=env, capture_output=True, text=True,
                              check=True, cwd=REPO)
        digests.add(done.stdout.strip())
    here = hashlib.sha256(json.dumps(generate_corpus(seed=5, n_train=200, n_dev=50, n_test=50)).encode())
    assert digests == {here.hexdigest()}
    assert here.hexdigest() == GOLDEN_SHA256, "the corpus changed: update GOLDEN_SHA256 if that was intended"


def test_default_and_custom_sizes(corpus: dict[str, list[dict]]) -> None:
    assert {k: len(v) for k, v in corpus.items()} == {"train": 3000, "dev": 600, "test": 600}
    small = generate_corpus(seed=1, n_train=7, n_dev=0, n_test=2)
    assert {k: len(v) for k, v in small.items()} == {"train": 7, "dev": 0, "test": 2}


@pytest.mark.parametrize("kwargs", [{"n_dev": -1}, {"n_train": 2.5}, {"n_test": True}, {"seed": "13"}])
def test_bad_sizes_and_seeds_are_rejected_with_their_name(kwargs: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        generate_corpus(**kwargs)


def test_no_sentence_is_shared_within_or_across_splits(corpus: dict[str, list[dict]]) -> None:
    sentences = [" ".join(e["token"]) for split in SPLITS for e in corpus[split]]
    assert len(sentences) == len(set(sentences))


def test_every_example_is_valid_tacred(corpus: dict[str, list[dict]]) -> None:
    ids = set()
    for split in SPLITS:
        for index, e in enumerate(corpus[split]):
            where = f"{split}[{index}]"
            assert tuple(e) == FIELDS, where
            assert e["id"] == f"demo-{split}-{index + 1:06d}" and e["id"] not in ids, where
            ids.add(e["id"])
            n = len(e["token"])
            assert all(isinstance(t, str) and t and " " not in t for t in e["token"]), where
            assert len(e["stanford_pos"]) == n and len(e["stanford_ner"]) == n, where
            assert 0 <= e["subj_start"] <= e["subj_end"] < n and 0 <= e["obj_start"] <= e["obj_end"] < n, where
            assert e["subj_end"] < e["obj_start"] or e["obj_end"] < e["subj_start"], f"{where}: spans overlap"
            assert e["relation"] in TACRED_LABELS, where
            assert e["subj_type"] in SUBJECT_TYPES and e["obj_type"] in OBJECT_TYPES, where
            assert set(e["stanford_pos"]) <= set(POS_TAGS) and set(e["stanford_ner"]) <= set(NER_TAGS), where


def test_entity_tokens_carry_their_ner_type_and_template_words_are_o(corpus: dict[str, list[dict]]) -> None:
    for e in corpus["train"]:
        ner = e["stanford_ner"]
        assert set(ner[e["subj_start"]:e["subj_end"] + 1]) == {e["subj_type"]}, e["id"]
        assert set(ner[e["obj_start"]:e["obj_end"] + 1]) == {e["obj_type"]}, e["id"]
        for token, tag, pos in zip(e["token"], ner, e["stanford_pos"], strict=True):
            if token.lower() in {"said", "the", "of", "was", "born", "in", "founder", "who"}:
                assert tag == "O", f"{e['id']}: template word {token!r} tagged {tag}"
            if tag in ("PERSON", "ORGANIZATION", "CITY", "COUNTRY"):
                assert pos == "NNP", f"{e['id']}: name token {token!r} tagged {pos}"
    ner_tags = Counter(t for e in corpus["train"] for t in e["stanford_ner"])
    assert {"PERSON", "ORGANIZATION", "CITY", "COUNTRY", "TITLE", "NUMBER", "DATE", "NATIONALITY"} <= set(ner_tags)


def test_label_distribution(corpus: dict[str, list[dict]]) -> None:
    for split in SPLITS:
        labels = Counter(e["relation"] for e in corpus[split])
        assert 0.5 <= labels[NO_RELATION] / len(corpus[split]) <= 0.7, (split, labels)
        assert len(labels) - 1 >= 10, (split, labels)  # at least ten relations besides no_relation
        assert _f1([e["relation"] for e in corpus[split]], [NO_RELATION] * len(corpus[split])) == 0.0
    assert set(Counter(e["relation"] for e in corpus["train"])) == {NO_RELATION, *RELATIONS.values()}


def test_multi_token_entities_and_both_entity_orders(corpus: dict[str, list[dict]]) -> None:
    train = corpus["train"]
    assert sum(e["subj_end"] > e["subj_start"] for e in train) > len(train) / 2
    assert sum(e["obj_end"] > e["obj_start"] for e in train) > len(train) / 5
    assert any(e["subj_type"] == "ORGANIZATION" and e["subj_end"] - e["subj_start"] >= 2 for e in train)
    positives = [e for e in train if e["relation"] != NO_RELATION]
    subject_first = sum(e["subj_start"] < e["obj_start"] for e in positives)
    assert 0.2 < subject_first / len(positives) < 0.9


def test_sentence_lengths_vary(corpus: dict[str, list[dict]]) -> None:
    lengths = [len(e["token"]) for split in SPLITS for e in corpus[split]]
    assert 15 <= sum(lengths) / len(lengths) <= 22
    assert min(lengths) >= 4 and 30 <= max(lengths) <= 60
    assert sum(8 <= n <= 40 for n in lengths) / len(lengths) > 0.95


def test_no_relation_pairs_are_hard_distractors(corpus: dict[str, list[dict]]) -> None:
    train = corpus["train"]
    signature = {(e["subj_type"], e["obj_type"]) for e in train if e["relation"] != NO_RELATION}
    negatives = [e for e in train if e["relation"] == NO_RELATION]
    assert sum((e["subj_type"], e["obj_type"]) in signature for e in negatives) / len(negatives) > 0.8
    # the same cue word appears in both a relation and a no_relation example of the same entity types
    for cue, relation, types in [("born", "per:city_of_birth", ("PERSON", "CITY")),
                                 ("married", "per:spouse", ("PERSON", "PERSON")),
                                 ("headquarters", "org:city_of_headquarters", ("ORGANIZATION", "CITY"))]:
        labels = {e["relation"] for e in train if cue in e["token"] and (e["subj_type"], e["obj_type"]) == types}
        assert {relation, NO_RELATION} <= labels, cue


def test_bag_of_words_alone_does_not_solve_it_but_the_marked_pair_does(corpus: dict[str, list[dict]]) -> None:
    def sentence_words(e: dict) -> set[str]:
        return {w.lower() for w in e["token"]}

    def pair_features(e: dict) -> set[str]:
        lo, hi = min(e["subj_end"], e["obj_end"]) + 1, max(e["subj_start"], e["obj_start"])
        return ({"between:" + w.lower() for w in e["token"][lo:hi]}
                | {f"types:{e['subj_type']}-{e['obj_type']}", f"subject_first:{e['subj_start'] < e['obj_start']}"})

    assert _naive_bayes_f1(corpus["train"], corpus["dev"], sentence_words) < 0.6
    assert _naive_bayes_f1(corpus["train"], corpus["dev"], pair_features) > 0.8


def test_every_template_expands_and_every_relation_has_eight_templates() -> None:
    rng = random.Random(0)
    for template in POSITIVE + NEGATIVE:
        for _ in range(40):  # raises on a word without a POS tag, a bad slot or two labels for a pair
            tokens, pos, ner, spans, _ = _sentence(template, rng)
            assert len(tokens) == len(pos) == len(ner) and (tokens[0][0].isupper() or tokens[0][0].isdigit())
            assert all(tokens[i + 1][0] in "aeiouAEIOU" for i, t in enumerate(tokens) if t == "an")
    for label in RELATIONS.values():
        assert len(_BY_LABEL[label]) >= 8, label


def test_write_corpus_writes_utf8_json_lists_that_load_back(tmp_path: Path) -> None:
    paths = write_corpus(tmp_path / "new" / "dir", seed=2, n_train=40, n_dev=10, n_test=10)
    assert set(paths) == set(SPLITS)
    expected = generate_corpus(seed=2, n_train=40, n_dev=10, n_test=10)
    for split, path in paths.items():
        assert path == tmp_path / "new" / "dir" / f"{split}.json"
        text = path.read_bytes().decode("utf-8")
        assert "\n" not in text.strip(), "the JSON must be written without indentation"
        assert json.loads(text) == expected[split]


def test_write_corpus_refuses_a_file_as_directory(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(NotADirectoryError, match="taken"):
        write_corpus(target, n_train=1, n_dev=1, n_test=1)
