"""Relations from plain text: candidate pairs from spaCy's entities (TACRED models) or nominals (other models), their
character offsets, the cap on pairs, and ``tacred extract`` on sentences written here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import run_in_process

TEXT = "Maria Lopez, the chief executive of Acme Holdings, said on Monday. John Smith was born in Chicago."


@pytest.fixture(scope="module")
def model(checkpoint):
    from tacred import load_model

    return load_model(checkpoint, device="cpu")


def test_every_typed_pair_is_a_candidate_with_its_offsets(model, nlp):
    model.threshold = -50.0  # every candidate decided as a relation: the pairs themselves are under test
    try:
        found = model.extract(TEXT, signatures=False)
    finally:
        model.threshold = None
    pairs = {(r.subject.text, r.object.text) for r in found}
    assert ("Maria Lopez", "Acme Holdings") in pairs and ("Acme Holdings", "Maria Lopez") in pairs
    assert ("John Smith", "Chicago") in pairs
    assert not any({"Maria Lopez", "John Smith"} == {s, o} for s, o in pairs)  # never across sentences
    assert all(r.subject.type in ("PERSON", "ORGANIZATION") for r in found)  # TACRED's subject types
    for r in found:
        for mention in (r.subject, r.object):
            assert TEXT[mention.start:mention.end] == mention.text
        assert r.relation != "no_relation" and 0 < r.probability <= 1


def test_no_relation_decided_means_nothing_returned_and_lists_give_lists(model, nlp):
    model.threshold = 50.0
    try:
        assert model.extract([TEXT, "Nothing here."]) == [[], []]
    finally:
        model.threshold = None


class FixedBackend:
    """A backend that gives every pair the same probabilities (the network is not what these tests are about)."""

    device = "cpu"

    def __init__(self, probs: list[float]) -> None:
        self.probs = np.asarray(probs, dtype=np.float32)

    def probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        return np.tile(self.probs, (len(arrays["words"]), 1))


def semeval_predictor(probs: list[float]):
    from tacred.data.vocab import Vocab, Vocabularies
    from tacred.inference.encoding import WordEncoder
    from tacred.inference.predictor import Predictor

    vocab = Vocabularies(Vocab(["<PAD>", "<UNK>"]), Vocab(["<PAD>", "<UNK>"]), Vocab(["<PAD>", "<UNK>", "O"]),
                         Vocab(["Other", "Cause-Effect(e1,e2)"], unk=None), entity_masking=False, no_relation="Other")
    return Predictor(WordEncoder(vocab), FixedBackend(probs))


def test_a_semeval_model_pairs_every_ordered_pair_of_nominals_capped(nlp, caplog):
    from tacred.inference.extract import pair_rule

    assert pair_rule(["Other", "Cause-Effect(e1,e2)"], "Other", None).subject_types is None
    text = "The fire in the kitchen caused smoke and damage."
    found = semeval_predictor([0.1, 0.9]).extract(text)
    words = {r.subject.text for r in found} | {r.object.text for r in found}
    assert {"fire", "kitchen", "smoke", "damage"} <= words
    n = len(words)
    assert len(found) == n * (n - 1)  # every ordered pair
    assert all(r.relation == "Cause-Effect(e1,e2)" and text[r.subject.start:r.subject.end] == r.subject.text
               for r in found)
    capped = semeval_predictor([0.1, 0.9]).extract(text, max_pairs=3)
    assert len(capped) == 3 and "the 3 closest together are predicted" in caplog.text
    assert semeval_predictor([0.9, 0.1]).extract(text) == []  # "Other" decided for every pair


def test_tacred_extract_prints_json_lines(checkpoint, tmp_path, nlp):
    text_file = tmp_path / "texts.txt"
    text_file.write_text(f"{TEXT}\n\nNothing to see.\n", encoding="utf-8")
    ran = run_in_process("extract", str(text_file), "--ckpt_path", str(checkpoint), "--threshold", "-50",
                         "--max_pairs", "2")
    lines = [json.loads(line) for line in ran.stdout.splitlines()]
    assert lines and {line["id"] for line in lines} == {"line-1"}
    assert len(lines) == 2 and set(lines[0]) == {"id", "relation", "probability", "subject", "object"}
    assert f"{text_file}, line 1:" in ran.stderr and "relation(s) in 2 line(s)" in ran.stderr
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    bad = run_in_process("extract", str(empty), "--ckpt_path", str(checkpoint), check=False)
    assert bad.status == 2 and bad.stderr.strip() == f"tacred extract: error: {empty} holds no text"
