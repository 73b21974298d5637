"""Relations extracted from raw text scored against exhaustively annotated gold sentences (CoNLL04), as the field
scores joint entity and relation extraction (SpERT, Eberts & Ulges, 2020).

Strict: a predicted relation is correct only when both argument spans (character offsets in the sentence's text),
both argument types and the relation are right; the head/tail order counts (a swapped pair is wrong). Boundaries:
the spans and the relation, types ignored. A predicted span is first widened to the whole gold tokens it touches
(the text is the gold tokens joined by spaces, and spaCy splits tokens such as ``Museum.``), as a system that
labels the gold tokens would mark them. Micro P/R/F1 over all triples; macro: the mean of each relation's P, R
and F1 (SpERT's, over the gold relation types). Entities: the distinct arguments of the predicted relations against
the arguments of the gold relations (and their precision against every gold entity), and, when the entities found
are given, NER P/R/F1 over all gold entities. P = 0 when nothing is predicted (as scikit-learn, which SpERT uses).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tacred.datasets.conll04 import ENTITY_TYPES, RELATIONS, Sentence, conll04_type, document_id
from tacred.errors import TacredError
from tacred.evaluation.scoring import prf

Span = tuple[int, int]  # character offsets in the document, end-exclusive
Entity = tuple[Span, str]  # (span, CoNLL04 type)
Triple = tuple[Entity, Entity, str]  # (head, tail, relation)


class ExtractionScoreError(TacredError, ValueError):
    """Predictions that cannot be scored against the gold sentences (an unknown document or relation)."""


@dataclass(frozen=True)
class GoldDocument:
    """One gold sentence as a document: its entities and relations over character spans of its text."""

    id: str
    text: str
    entities: frozenset[Entity]
    relations: frozenset[Triple]
    tokens: tuple[Span, ...] = ()  # each gold token's character span

    def snap(self, span: Span) -> Span:
        """``span`` widened to the whole tokens it overlaps (kept as it is when it overlaps none)."""
        start, end = span
        inside = [t for t in self.tokens if t[0] < end and start < t[1]]
        return (inside[0][0], inside[-1][1]) if inside else span

    @property
    def arguments(self) -> frozenset[Entity]:
        return frozenset(e for head, tail, _ in self.relations for e in (head, tail))


def gold_documents(sentences: Sequence[Sentence], stem: str) -> dict[str, GoldDocument]:
    """The gold sentences keyed by their document ids (:func:`tacred.datasets.conll04.document_id`)."""
    out = {}
    for s in sentences:
        ents = [(s.char_span(e), e.type) for e in s.entities]
        starts = [sum(len(t) + 1 for t in s.tokens[:i]) for i in range(len(s.tokens))]
        out[document_id(stem, s.index)] = GoldDocument(
            document_id(stem, s.index), s.text, frozenset(ents),
            frozenset((ents[h], ents[t], rel) for rel, h, t in s.relations),
            tuple((a, a + len(t)) for a, t in zip(starts, s.tokens, strict=True)))
    return out


def _argument(row: Mapping[str, Any], role: str, doc: GoldDocument) -> Entity:
    span = doc.snap((int(row[f"{role}_start"]), int(row[f"{role}_end"])))
    return span, conll04_type(str(row[f"{role}_type"])) or "Other"


def predicted_relations(rows: Iterable[Mapping[str, Any]], gold: Mapping[str, GoldDocument],
                        relations: Sequence[str] = RELATIONS) -> tuple[dict[str, set[Triple]], int]:
    """Flat mention rows (``doc_id``, ``subject_start``/``_end``/``_type``, the same for ``object``, ``relation``,
    and ``where``: how errors name the row) → the predicted triples of each document, with argument types mapped to
    CoNLL04's (:func:`tacred.datasets.conll04.conll04_type`), and how many rows repeated a triple already counted."""
    found: dict[str, set[Triple]] = {}
    repeated = 0
    for row in rows:
        where = row.get("where", "a prediction")
        doc_id = str(row["doc_id"])
        if doc_id not in gold:
            raise ExtractionScoreError(f"{where}: doc_id {doc_id!r} is not a gold sentence (expected ids "
                                       f"{next(iter(gold), '?')!r} and the like)")
        if row["relation"] not in relations:
            raise ExtractionScoreError(f"{where}: relation {row['relation']!r} is not one of the gold relations "
                                       f"({', '.join(relations)})")
        text = gold[doc_id].text
        for role in ("subject", "object"):
            start, end = row[f"{role}_start"], row[f"{role}_end"]
            if not 0 <= start < end <= len(text):
                raise ExtractionScoreError(f"{where}: {role} offsets [{start}, {end}) lie outside the text of "
                                           f"{doc_id} ({len(text)} characters): not the document that was scored?")
        triple = (_argument(row, "subject", gold[doc_id]), _argument(row, "object", gold[doc_id]),
                  str(row["relation"]))
        if triple in found.setdefault(doc_id, set()):
            repeated += 1
        found[doc_id].add(triple)
    return found, repeated


def _scores(correct: float, guessed: float, gold: float) -> dict[str, float]:
    p, r, f = prf(correct, guessed, gold, empty_precision=0.0)
    return {"precision": 100 * float(p), "recall": 100 * float(r), "f1": 100 * float(f),
            "correct": int(correct), "predicted": int(guessed), "gold": int(gold)}


def set_scores(gold: Mapping[str, Iterable[Any]], pred: Mapping[str, Iterable[Any]],
               classes: Sequence[str], class_of: Any) -> dict[str, Any]:
    """Micro and macro P/R/F1 of predicted items against gold items, document by document (exact matches), with
    each class's own (``class_of(item)`` names an item's class; macro averages over ``classes``)."""
    per = {c: [0, 0, 0] for c in classes}  # correct, predicted, gold
    for doc_id in set(gold) | set(pred):
        g, p = set(gold.get(doc_id, ())), set(pred.get(doc_id, ()))
        for item in p:
            per.setdefault(class_of(item), [0, 0, 0])[1] += 1
        for item in g:
            per.setdefault(class_of(item), [0, 0, 0])[2] += 1
        for item in g & p:
            per[class_of(item)][0] += 1
    per_class = {c: _scores(*counts) for c, counts in per.items()}
    totals = [sum(counts[k] for counts in per.values()) for k in range(3)]
    return {
        "micro": _scores(*totals),
        "macro": {m: sum(per_class[c][m] for c in classes) / len(classes) for m in ("precision", "recall", "f1")},
        "per_class": per_class,
    }


def _without_types(triples: Iterable[Triple]) -> set[tuple[Span, Span, str]]:
    return {(head[0], tail[0], rel) for head, tail, rel in triples}


def score_relations(gold: Mapping[str, GoldDocument], pred: Mapping[str, set[Triple]],
                    relations: Sequence[str] = RELATIONS) -> dict[str, Any]:
    """Strict and boundaries-only relation scores, and the entity scores of the predicted relations' arguments."""
    gold_triples = {d: doc.relations for d, doc in gold.items()}
    strict = set_scores(gold_triples, pred, relations, lambda t: t[2])
    boundaries = set_scores({d: _without_types(t) for d, t in gold_triples.items()},
                            {d: _without_types(t) for d, t in pred.items()}, relations, lambda t: t[2])
    used = {d: {e for head, tail, _ in triples for e in (head, tail)} for d, triples in pred.items()}
    arguments = set_scores({d: doc.arguments for d, doc in gold.items()}, used, ENTITY_TYPES, lambda e: e[1])
    in_entities = set_scores({d: doc.entities for d, doc in gold.items()}, used, ENTITY_TYPES, lambda e: e[1])
    return {"strict": strict, "boundaries": boundaries, "arguments": arguments,
            "arguments_among_gold_entities": in_entities["micro"]["precision"]}


ENTITY_RECORD = '{"doc_id", "entities": [{"start", "end", "type"}]}'


def entity_file(path: str | Path, gold: Mapping[str, GoldDocument]) -> dict[str, set[Entity]]:
    """The entities a NER found, read from a JSON Lines file of :data:`ENTITY_RECORD` (character offsets into the
    document's text, end-exclusive; CoNLL04, spaCy or ``tacred extract`` types, spaCy's bare numbers dropped), keyed
    by document id. Checked as predicted relations are: every record, offset and document id, the error naming the
    file and the line."""
    from tacred.errors import read_text
    from tacred.io import JsonLinesError, jsonl_records

    found: dict[str, set[Entity]] = {}
    lines: dict[str, int] = {}
    try:
        records = list(jsonl_records(read_text(path, "--entities").splitlines()))
    except JsonLinesError as err:
        raise ExtractionScoreError(f"{path}, {err}") from None
    for number, record in records:
        where = f"{path}, line {number}"
        if not isinstance(record, dict) or "doc_id" not in record or not isinstance(record.get("entities"), list):
            raise ExtractionScoreError(f"{where}: expected {ENTITY_RECORD}")
        doc_id = record["doc_id"]
        if not isinstance(doc_id, str) or doc_id not in gold:
            raise ExtractionScoreError(f"{where}: doc_id {doc_id!r} is not a gold sentence (expected ids "
                                       f"{next(iter(gold), '?')!r} and the like)")
        if doc_id in lines:
            raise ExtractionScoreError(f"{where}: doc_id {doc_id!r} repeats line {lines[doc_id]} (one line a document)")
        lines[doc_id] = number
        text = gold[doc_id].text
        typed = set()
        for k, entity in enumerate(record["entities"]):
            at = f"{where}, entity {k}"
            if not isinstance(entity, dict) or not isinstance(entity.get("type"), str) or not entity["type"].strip():
                raise ExtractionScoreError(f"{at}: expected {{\"start\", \"end\", \"type\"}} with a type, got "
                                           f"{str(entity)[:80]}")
            start, end = entity.get("start"), entity.get("end")
            for key, value in (("start", start), ("end", end)):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ExtractionScoreError(f"{at}: '{key}' {value!r} is not an integer (character offsets)")
            if not 0 <= start < end <= len(text):
                raise ExtractionScoreError(f"{at}: offsets [{start}, {end}) are not a span of the text of {doc_id} "
                                           f"({len(text)} characters; 0 <= start < end <= {len(text)})")
            kind = conll04_type(entity["type"])
            if kind is not None:
                typed.add(((start, end), kind))
        found.setdefault(doc_id, set()).update(typed)
    return found


def score_entities(gold: Mapping[str, GoldDocument], pred: Mapping[str, Iterable[Entity]]) -> dict[str, Any]:
    """NER: the entities found (spans with CoNLL04 types) against every gold entity; ``pred`` holds a document's
    entities under its id."""
    unknown = sorted(set(pred) - set(gold))
    if unknown:
        raise ExtractionScoreError(f"entities of {len(unknown)} documents that are not gold sentences, e.g. "
                                   f"{unknown[0]!r}")
    snapped = {d: {(gold[d].snap(span), kind) for span, kind in ents} for d, ents in pred.items()}
    return set_scores({d: doc.entities for d, doc in gold.items()}, snapped, ENTITY_TYPES, lambda e: e[1])


def format_scores(report: Mapping[str, Any]) -> str:
    """The scores as a short text report."""
    lines = []

    def row(name: str, s: Mapping[str, Any]) -> None:
        m = s["micro"]
        lines.append(f"{name:28s} P {m['precision']:6.2f}  R {m['recall']:6.2f}  F1 {m['f1']:6.2f}  "
                     f"({m['correct']} correct, {m['predicted']} predicted, {m['gold']} gold)   macro-F1 "
                     f"{s['macro']['f1']:6.2f}")

    if "relations" in report:
        rel = report["relations"]
        row("relations, strict", rel["strict"])
        row("relations, boundaries", rel["boundaries"])
        row("arguments (entities)", rel["arguments"])
        lines.append(f"{'':28s} {rel['arguments_among_gold_entities']:.2f}% of the arguments are gold entities")
        for name, s in rel["strict"]["per_class"].items():
            lines.append(f"  {name:26s} P {s['precision']:6.2f}  R {s['recall']:6.2f}  F1 {s['f1']:6.2f}  "
                         f"({s['correct']}/{s['predicted']} predicted, {s['gold']} gold)")
        if report.get("repeated"):
            lines.append(f"{report['repeated']} predicted rows repeat a relation already counted (counted once)")
    if "entities" in report:
        row(f"NER ({report.get('ner_source', 'entities')})", report["entities"])
        for name, s in report["entities"]["per_class"].items():
            lines.append(f"  {name:26s} P {s['precision']:6.2f}  R {s['recall']:6.2f}  F1 {s['f1']:6.2f}")
    return "\n".join(lines)
