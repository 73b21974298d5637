"""Relations from plain text (tacred/extraction/: preprocess.py, forward.py, postprocess.py, pipeline.py, model.py):
candidate pairs from spaCy's entities (TACRED models) or nominals (other models), their character offsets, the cap on
pairs, directed labels resolved into one fact per pair, relation signatures, and ``extract`` on any iterable."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_one_sentence_pairs_entities_across_the_full_stops_of_a_text(model, nlp):
    """Text already split into sentences: each text is one, so its entities pair across full stops."""
    model.threshold = -50.0
    try:
        split = model.extract(TEXT, signatures=False)
        whole = model.extract([TEXT], signatures=False, one_sentence=True)[0]
        lazily = next(model.extract(iter([TEXT]), signatures=False, one_sentence=True))
    finally:
        model.threshold = None
    assert {r.sentence for r in split} == {0, 1} and {r.sentence for r in whole} == {0}
    pairs = {(r.subject.text, r.object.text) for r in whole}
    assert any({"Maria Lopez", "John Smith"} == {s, o} for s, o in pairs)  # across the full stop
    assert {(r.subject.text, r.object.text) for r in split} < pairs
    assert [(r.subject.text, r.object.text, r.relation) for r in lazily] == [
        (r.subject.text, r.object.text, r.relation) for r in whole]


def test_no_relation_decided_means_nothing_returned_and_lists_give_lists(model, nlp):
    model.threshold = 50.0
    try:
        assert model.extract([TEXT, "Nothing here."]) == [[], []]
    finally:
        model.threshold = None


class FixedBackend:
    """A backend that gives every pair the same probabilities (the network is not what these tests are about);
    ``reversed_probs``: what it gives instead when the subject comes after the object in the sentence."""

    device = "cpu"

    def __init__(self, probs: list[float], reversed_probs: list[float] | None = None) -> None:
        self.probs = np.asarray(probs, dtype=np.float32)
        self.reversed = self.probs if reversed_probs is None else np.asarray(reversed_probs, dtype=np.float32)

    def probabilities(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        subject_first = (arrays["subj_positions"] == 0).argmax(1) < (arrays["obj_positions"] == 0).argmax(1)  # (B,)
        return np.where(subject_first[:, None], self.probs, self.reversed)  # (B, L)


def word_predictor(labels: list[str], no_relation: str, backend: FixedBackend, signatures=None):
    from tacred.data.vocab import Vocab, Vocabularies
    from tacred.extraction.model import Model
    from tacred.inference.encoding import WordEncoder
    from tacred.inference.predictor import Predictor

    vocab = Vocabularies(Vocab(["<PAD>", "<UNK>"]), Vocab(["<PAD>", "<UNK>"]), Vocab(["<PAD>", "<UNK>", "O"]),
                         Vocab(labels, unk=None), entity_masking=False, no_relation=no_relation,
                         signatures=signatures)
    return Model(Predictor(WordEncoder(vocab), backend))


SEMEVAL = ["Other", "Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)"]


def test_directed_labels_give_one_fact_per_pair_in_the_relations_own_order(nlp, caplog):
    from tacred.relation_types.schema import pair_rule

    assert pair_rule(SEMEVAL, "Other", None) == pair_rule(SEMEVAL, "Other", None).__class__(
        None, None, nominals=True, both_orders=True)
    text = "The fire in the kitchen caused smoke and damage."
    # asked (first, second): "the second causes the first" at 0.8; asked (second, first): "the subject (second)
    # causes the object (first)" at 0.6; both say Cause-Effect(second, first)
    model = word_predictor(SEMEVAL, "Other", FixedBackend([0.1, 0.1, 0.8], [0.3, 0.6, 0.1]))
    found = model.extract(text)
    words = {r.subject.text for r in found} | {r.object.text for r in found}
    assert {"fire", "kitchen", "smoke", "damage"} <= words
    n = len(words)
    assert len(found) == n * (n - 1) // 2  # each unordered pair once: no fact twice
    for r in found:
        assert r.relation == "Cause-Effect" and r.subject.start > r.object.start  # the cause comes second here
        assert r.probability == pytest.approx((0.8 + 0.6) / 2)  # the mean of both orders
        assert r.evidence == {"combined": "mean", "orders": [
            {"subject": r.object.text, "object": r.subject.text, "label": "Cause-Effect(e2,e1)",
             "probability": pytest.approx(0.8)},
            {"subject": r.subject.text, "object": r.object.text, "label": "Cause-Effect(e1,e2)",
             "probability": pytest.approx(0.6)}]}
        assert text[r.subject.start:r.subject.end] == r.subject.text
    capped = model.extract(text, max_pairs=3)
    assert len(capped) == 3 and "the 3 closest together are predicted" in caplog.text
    # the orders disagree: the mean decides (0.5 + 0.45 for the first order's reading against 0.3 + 0.1)
    split = word_predictor(SEMEVAL, "Other", FixedBackend([0.2, 0.5, 0.3], [0.45, 0.1, 0.45])).extract(text)
    assert {r.subject.start < r.object.start for r in split} == {True}
    assert all(r.probability == pytest.approx((0.5 + 0.45) / 2) for r in split)
    assert word_predictor(SEMEVAL, "Other", FixedBackend([0.9, 0.05, 0.05])).extract(text) == []


TACRED_LABELS = ["no_relation", "per:employee_of", "per:city_of_birth"]
TYPED_TEXT = "John Smith works for Acme Corp in Boston since 1990."


def test_signatures_drop_type_impossible_relations_and_pairs(nlp):
    from tacred.relation_types.signatures import Signatures

    signatures = Signatures({"per:employee_of": frozenset({("PERSON", "ORGANIZATION")}),
                             "per:city_of_birth": frozenset({("PERSON", "CITY")})})
    backend = FixedBackend([0.1, 0.2, 0.7])  # per:city_of_birth decided for every pair
    model = word_predictor(TACRED_LABELS, "no_relation", backend, signatures)
    kept = model.extract(TYPED_TEXT)
    # Acme Corp (ORGANIZATION) cannot be a city of birth; Boston (LOCATION) can: CITY is a LOCATION in plain text
    assert [(r.object.text, r.relation) for r in kept] == [("Boston", "per:city_of_birth")]
    docs = list(nlp.pipe([TYPED_TEXT]))
    assert model.extraction().docs(docs, ["t"])[0].pairs == 2  # (PERSON, DATE) is no relation's: not asked
    unfiltered = model.extraction(signatures=False).docs(docs, ["t"])[0]
    assert unfiltered.pairs == 3 and len(unfiltered.relations) == 3
    assert {r.object.text for r in model.extract(TYPED_TEXT, signatures=False)} == {"Acme Corp", "Boston", "1990"}


def test_a_model_without_signatures_gets_the_schema_and_is_open_elsewhere_said_once(nlp, caplog):
    model = word_predictor(TACRED_LABELS, "no_relation", FixedBackend([0.1, 0.2, 0.7]))
    assert [(r.object.text, r.relation) for r in model.extract(TYPED_TEXT)] == [("Boston", "per:city_of_birth")]
    assert "holds no relation signatures" not in caplog.text  # TAC KBP's schema covers every label
    open_labels = ["no_relation", "per:city_of_birth", "works_near"]  # a relation outside the schema takes any pair
    mixed = word_predictor(open_labels, "no_relation", FixedBackend([0.1, 0.2, 0.7]))
    found = mixed.extract(TYPED_TEXT)
    assert found and found == mixed.extract(TYPED_TEXT) == mixed.extract(TYPED_TEXT, signatures=False)
    assert {r.relation for r in found} == {"works_near"}
    assert caplog.text.count("holds no relation signatures") == 1 and "(works_near)" in caplog.text


def test_the_checkpoint_of_an_earlier_version_still_extracts_within_the_schema(nlp, caplog):
    from tacred import load_model
    from tacred.relation_types.schema import schema_pairs
    from tests.conftest import REPO

    old = load_model(REPO / "tests" / "fixtures" / "checkpoint_v1.ckpt", device="cpu")
    assert not old.encoder.vocab.signatures.stored  # the schema's stand in: the checkpoint holds none
    old.threshold = -50.0
    unfiltered = old.extract(TEXT, signatures=False)
    kept = old.extract(TEXT)
    assert unfiltered and len(kept) < len(unfiltered) and "holds no relation signatures" not in caplog.text
    assert all((r.subject.type, r.object.type) in schema_pairs(r.relation) for r in kept)


def test_extract_takes_any_iterable_and_yields_lazily(model, nlp):
    from tacred.inference.inputs import InputError

    taken = []

    def texts():
        for n in range(100):
            taken.append(n)
            yield f"John Smith {n} was born in Chicago."

    found = model.extract(texts())
    assert not isinstance(found, list) and taken == []  # nothing read before the first result is asked for
    first = next(found)
    assert isinstance(first, list) and len(taken) == 32  # one batch read
    assert 1 + sum(1 for _ in found) == 100
    assert isinstance(model.extract(("One text.", "Another.")), list)
    with pytest.raises(InputError, match="extract: text 1 is a int, not a string"):
        model.extract(["text", 5])
    with pytest.raises(InputError, match="text 2 is a NoneType"):
        list(model.extract(iter(["a", "b", None])))


def test_the_api_and_tacred_extract_read_text_with_one_pipeline_and_agree(model, checkpoint):
    """``m.extract`` runs the trimmed pipeline of ``tacred extract`` (no parser for a model without nominal pairs),
    so the two find the same relations in the same text."""
    from tacred.extraction.documents import Document
    from tacred.extraction.runner import DocumentExtractor, ExtractorSettings

    text_nlp = model.extraction().nlp
    assert "parser" not in text_nlp.pipe_names and "sentencizer" in text_nlp.pipe_names
    model.threshold = -50.0  # every candidate pair decided: all of them are compared
    try:
        api = model.extract(TEXT, signatures=False)
        extractor = DocumentExtractor(ExtractorSettings(ckpt_path=str(checkpoint), device="cpu", threshold=-50.0,
                                                        signatures=False))
        cli = extractor.process(Document("d", TEXT))
    finally:
        model.threshold = None
    assert extractor.nlp is text_nlp  # one spaCy loader and cache (tacred.text.spacy_pipeline.load_spacy)
    assert [(r.subject.start, r.object.start, r.relation, round(r.probability, 6)) for r in api] == [
        (m["subject"]["start"], m["object"]["start"], m["relation"], m["probability"]) for m in cli.mentions]


def test_tacred_extract_never_reports_a_relation_that_breaks_the_schema(checkpoint, tmp_path, nlp):
    """The tiny trained model, every candidate pair decided as a relation (threshold -50), on text with persons,
    organisations, places, dates and numbers: what ``tacred extract`` writes fits TAC KBP's schema, and without
    signatures it would not."""
    import json

    from tacred.relation_types.schema import schema_pairs
    from tests.conftest import run_in_process

    text = tmp_path / "news.txt"
    text.write_text("Acme Holdings was founded in 1990 by John Smith in Boston.\n"
                    "Maria Lopez, 45, joined General Motors in Detroit on Monday and met Pope Francis in Rome.\n"
                    "Rome hosted 3,000 people from Acme Holdings and the United Nations in May 2004.\n", encoding="utf-8")

    def extracted(*extra: str) -> list[dict]:
        out = run_in_process("extract", str(text), "--lines", "--ckpt_path", str(checkpoint), "--threshold", "-50",
                             *extra).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    kept, unfiltered = extracted(), extracted("--no_signatures")
    fits = [(r["subject"]["type"], r["object"]["type"]) in schema_pairs(r["relation"]) for r in unfiltered]
    assert kept and not all(fits)
    assert all((r["subject"]["type"], r["object"]["type"]) in schema_pairs(r["relation"]) for r in kept)
