"""CoNLL04 (Roth & Yih, 2004) in SpERT's JSON layout → TACRED-format dicts, and the same sentences as raw text.

Every ordered pair of distinct entities of a sentence becomes one example: its relation (head = subject, tail =
object, as annotated) or ``no_relation``, so the reversed pair of a relation is a ``no_relation`` example. The
release's tokens are kept; spaCy adds POS and NER as for KBP37. The gold entity types are mapped to the names
spaCy's entities get in extraction (:data:`TACRED_TYPES`), so that the relation signatures learned in training apply
to ``tacred extract``'s candidates; :data:`MENTION_TYPES` maps them back for scoring. Each sentence is also written
as a document for ``tacred extract`` (its tokens joined by single spaces, id ``<file stem>-<index>``), so that
character offsets map back to tokens.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.constants import NO_RELATION
from tacred.datasets.conversion import check_source, converted_release
from tacred.datasets.spert_layout import (
    JointSentence,
    JointTypes,
    SpanEntity,
    SpertLayoutError,
    check_sentence,
)
from tacred.errors import TacredError
from tacred.io import write_jsonl
from tacred.text.spacy_pipeline import annotate_words, given_or_default, tacred_example

if TYPE_CHECKING:
    from spacy.language import Language

ENTITY_TYPES = ("Peop", "Org", "Loc", "Other")
RELATIONS = ("Work_For", "Kill", "OrgBased_In", "Live_In", "Located_In")
# The declared label set (6): fixed order, no_relation first.
CONLL04_LABELS = (NO_RELATION, *RELATIONS)
CONLL04_TYPES = JointTypes(ENTITY_TYPES, RELATIONS)
SPLITS = {"train": "conll04_train.json", "dev": "conll04_dev.json", "test": "conll04_test.json"}
# Size limits of a conversion (the release: at most 24 entities a sentence, 19,080 examples in all): a sentence's
# pairs grow as the square of its entities, so one sentence of 400 entities alone would be 159,600 examples
MAX_ENTITIES = 100
MAX_PAIRS = 1_000_000
# conversion.json's entries in the order written
RECORD = ("source", "files", "sentences", "sentences_without_pairs", "entities", "relations", "sizes", "positives",
          "label_counts", "entity_types", "spacy_model", "spacy_version", "labels", "seconds")

# CoNLL04 entity type → subj_type/obj_type of the converted examples: the TACRED names that spaCy's entities map to
# in extraction (tacred.text.spacy_pipeline.NER_MAP), so training's relation signatures hold for extracted pairs.
# CoNLL04's Other (dates, amounts, nationalities, events) becomes MISC.
TACRED_TYPES: dict[str, str] = {"Peop": "PERSON", "Org": "ORGANIZATION", "Loc": "LOCATION", "Other": "MISC"}
# The stated type map from spaCy's stock NER labels to CoNLL04's types. CoNLL04's Other holds dates, times, amounts,
# percentages, nationalities, events and works, so those labels are Other; bare numbers (CARDINAL, ORDINAL) are not
# entities there and are dropped (chosen on dev with en_core_web_sm: NER micro-F1 57.4 against 55.1 keeping them).
SPACY_TYPES: dict[str, str] = {
    "PERSON": "Peop", "ORG": "Org", "GPE": "Loc", "LOC": "Loc", "FAC": "Loc",
    "NORP": "Other", "EVENT": "Other", "LAW": "Other", "LANGUAGE": "Other", "PRODUCT": "Other",
    "WORK_OF_ART": "Other", "DATE": "Other", "TIME": "Other", "MONEY": "Other", "PERCENT": "Other",
    "QUANTITY": "Other",
}
SPACY_DROPPED = ("CARDINAL", "ORDINAL")
# The same map over the types ``tacred extract`` writes (spaCy's labels after NER_MAP): the three named types, and
# every other type (NATIONALITY, MISC, DATE, NUMBER, ...) is Other.
MENTION_TYPES: dict[str, str] = {"PERSON": "Peop", "ORGANIZATION": "Org", "LOCATION": "Loc"}


def conll04_type(found_type: str) -> str | None:
    """The CoNLL04 type of an entity type: a CoNLL04 type is kept, spaCy's labels and the types ``tacred extract``
    writes are mapped (:data:`SPACY_TYPES`, :data:`MENTION_TYPES`), spaCy's bare numbers are not entities (None),
    and any other type is Other."""
    if found_type in ENTITY_TYPES:
        return found_type
    if found_type in SPACY_DROPPED:
        return None
    return SPACY_TYPES.get(found_type) or MENTION_TYPES.get(found_type, "Other")


class CoNLL04Error(TacredError, ValueError):
    """A CoNLL04 file or sentence that cannot be read (names the file and the sentence index)."""


@dataclass(frozen=True)
class Sentence(JointSentence):
    """One checked sentence (:class:`JointSentence`: tokens, entities, relations as ``(type, head, tail)`` entity
    indices) with the release's ``orig_id``."""

    orig_id: Any = None

    def char_span(self, entity: SpanEntity) -> tuple[int, int]:
        """The entity's character offsets in :attr:`text`, the document ``tacred extract`` reads (end-exclusive)."""
        start = sum(len(t) + 1 for t in self.tokens[:entity.start])
        end = start + len(" ".join(self.tokens[entity.start:entity.end]))
        return start, end


def _sentence(raw: Any, index: int, where: str) -> Sentence:
    """One sentence checked by :func:`tacred.datasets.spert_layout.check_sentence` against CoNLL04's types, with no
    limit on its entities (:func:`check_release` applies ``--max_entities``) and no overlapping entities (each pair
    becomes one example, whose subject and object must not share a token)."""
    try:
        s = check_sentence(raw, index, where, CONLL04_TYPES, max_entities=None, overlaps=False)
    except SpertLayoutError as err:
        raise CoNLL04Error(str(err)) from None
    return Sentence(s.index, s.tokens, s.entities, s.relations, raw.get("orig_id"))


def read_conll04(path: str | Path) -> list[Sentence]:
    """A SpERT-layout file (a JSON list of sentences), every sentence checked."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CoNLL04Error(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CoNLL04Error(f"{path}: not a JSON file ({err})") from None
    if not isinstance(data, list):
        raise CoNLL04Error(f"{path}: expected a JSON list of sentences, found {type(data).__name__}")
    return [_sentence(raw, i, str(path)) for i, raw in enumerate(data)]


def document_id(stem: str, index: int) -> str:
    """The id of sentence ``index`` of the file named ``stem`` (e.g. ``conll04_test-17``) as a document."""
    return f"{stem}-{index}"


def documents(sentences: Sequence[Sentence], stem: str) -> list[dict[str, Any]]:
    """The sentences as ``tacred extract`` input records: ``{"id", "text"}`` with the tokens joined by spaces."""
    return [{"id": document_id(stem, s.index), "text": s.text} for s in sentences]


def spacy_entities(sentences: Sequence[Sentence], stem: str, nlp: Language,
                   batch_size: int = 64) -> dict[str, set[tuple[tuple[int, int], str]]]:
    """The entities a spaCy pipeline finds in each sentence's text (as ``tacred extract`` reads it), as character
    spans with their CoNLL04 types (:data:`SPACY_TYPES`; bare numbers left out), keyed by document id."""
    disable = [name for name in ("parser", "lemmatizer", "attribute_ruler", "tagger") if name in nlp.pipe_names]
    docs = nlp.pipe((s.text for s in sentences), batch_size=batch_size, disable=disable)
    found: dict[str, set[tuple[tuple[int, int], str]]] = {}
    for s, doc in zip(sentences, docs, strict=True):
        typed = (((e.start_char, e.end_char), conll04_type(e.label_)) for e in doc.ents)
        found[document_id(stem, s.index)] = {(span, kind) for span, kind in typed if kind is not None}
    return found


def pair_examples(sentence: Sentence, prefix: str, annotation: Any) -> list[dict[str, Any]]:
    """Every ordered pair of distinct entities as a TACRED dict (id ``conll04-<prefix>-<sentence>-<head>-<tail>``)."""
    labels = {(head, tail): rel for rel, head, tail in sentence.relations}
    out = []
    for i, subj in enumerate(sentence.entities):
        for j, obj in enumerate(sentence.entities):
            if i == j:
                continue
            out.append(tacred_example(
                f"conll04-{prefix}-{sentence.index}-{i}-{j}", annotation, (subj.start, subj.end - 1),
                (obj.start, obj.end - 1), labels.get((i, j), NO_RELATION), TACRED_TYPES[subj.type],
                TACRED_TYPES[obj.type]))
    return out


def convert_sentences(sentences: Sequence[Sentence], prefix: str, nlp: Language | None = None,
                      batch_size: int = 256) -> list[dict[str, Any]]:
    """The TACRED dicts of every sentence with at least two entities, in file order."""
    paired = [s for s in sentences if len(s.entities) >= 2]
    annotations = annotate_words((s.tokens for s in paired), given_or_default(nlp),
                                 batch_size=batch_size)
    return [ex for s, ann in zip(paired, annotations, strict=True) for ex in pair_examples(s, prefix, ann)]


def pair_count(sentence: Sentence) -> int:
    """The examples a sentence converts to: every ordered pair of distinct entities."""
    return len(sentence.entities) * (len(sentence.entities) - 1)


def check_release(src_dir: str | Path, max_entities: int = MAX_ENTITIES,
                  max_pairs: int = MAX_PAIRS) -> dict[str, list[Sentence]]:
    """Read the three split files, so that a bad source fails before spaCy is loaded: every sentence checked, no
    sentence with more than ``max_entities`` entities (its pairs grow as the square), no split that converts to no
    example, and at most ``max_pairs`` examples in all."""
    src_dir = check_source(src_dir, SPLITS.values(), CoNLL04Error)
    splits = {split: read_conll04(src_dir / name) for split, name in SPLITS.items()}
    for split, sentences in splits.items():
        path = src_dir / SPLITS[split]
        crowded = next((s for s in sentences if len(s.entities) > max_entities), None)
        if crowded is not None:
            raise CoNLL04Error(f"{path}, sentence {crowded.index}: {len(crowded.entities):,} entities "
                               f"({pair_count(crowded):,} ordered pairs), more than the limit of {max_entities:,} "
                               "entities a sentence (--max_entities)")
        if not sentences:
            raise CoNLL04Error(f"{path}: holds no sentence; each split needs sentences to convert")
        if not any(pair_count(s) for s in sentences):
            raise CoNLL04Error(f"{path}: none of its {len(sentences):,} sentences has two entities, so the split "
                               "would convert to no example")
    pairs = sum(pair_count(s) for sentences in splits.values() for s in sentences)
    if pairs > max_pairs:
        raise CoNLL04Error(f"{src_dir}: the release converts to {pairs:,} examples (ordered entity pairs), more than "
                           f"the limit of {max_pairs:,} (--max_pairs)")
    return splits


def write_release(src_dir: str | Path, out_dir: str | Path, nlp: Language | str | None = None,
                  batch_size: int = 256, max_entities: int = MAX_ENTITIES,
                  max_pairs: int = MAX_PAIRS) -> dict[str, Any]:
    """Check and convert the release: train/dev/test.json, labels.json, documents/<file stem>.jsonl (the raw
    sentences for ``tacred extract``), conversion.json and a README. The limits: :func:`check_release`; ``nlp``: a
    spaCy pipeline or its name (None: the default), loaded once the release is checked."""
    sentences = check_release(src_dir, max_entities, max_pairs)
    release = converted_release(src_dir, SPLITS, CONLL04_LABELS, nlp, lambda nlp: {
        name: convert_sentences(sents, name, nlp, batch_size) for name, sents in sentences.items()})
    out_dir = Path(out_dir)
    (out_dir / "documents").mkdir(parents=True, exist_ok=True)
    for name, sents in sentences.items():
        stem = Path(SPLITS[name]).stem
        write_jsonl(out_dir / "documents" / f"{stem}.jsonl", documents(sents, stem))
    counts = release.label_counts
    info = release.record(
        RECORD,
        sentences={name: len(s) for name, s in sentences.items()},
        sentences_without_pairs={name: sum(len(x.entities) < 2 for x in s) for name, s in sentences.items()},
        entities={name: sum(len(x.entities) for x in s) for name, s in sentences.items()},
        relations={name: sum(len(x.relations) for x in s) for name, s in sentences.items()},
        positives={name: size - counts[name].get(NO_RELATION, 0) for name, size in release.sizes.items()},
        entity_types=dict(TACRED_TYPES),
    )
    sizes = info["sizes"]
    readme = (
        "CoNLL04 (Roth & Yih, 2004; SpERT's split and layout) in TACRED format, converted by "
        "`tacred convert conll04`.\n"
        f"train {sizes['train']} / dev {sizes['dev']} / test {sizes['test']} examples: every ordered pair of "
        "distinct entities of a sentence, its relation (head = subject, tail = object) or no_relation.\n"
        "Entity types: Peop -> PERSON, Org -> ORGANIZATION, Loc -> LOCATION, Other -> MISC (the names spaCy's "
        "entities get in tacred extract).\n"
        f"The release's tokens; POS and NER by spaCy {release.spacy_model} (spaCy {release.spacy_version}).\n"
        "documents/: each split's sentences as tacred extract input (tokens joined by spaces, id "
        "<file stem>-<index>), for tacred score-extraction.\n"
    )
    release.write(out_dir, info, readme)
    return info
