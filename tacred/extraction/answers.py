"""What extraction answers: a relation found in plain text between two mentions (``m.extract``), what one text gave
(its relations, sentences and candidate pairs), and the one record of a relation that ``tacred extract`` writes and
``POST /extract`` answers."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Mention:
    """An argument in the text: its words, character offsets (end-exclusive) and type."""

    text: str
    start: int
    end: int
    type: str


@dataclass(frozen=True)
class Relation:
    """A relation found in plain text between a subject and an object mention, in sentence ``sentence`` (counted
    from 0) of its text. ``evidence``: for directed labels, the label and probability read in each order of the pair
    and how they were combined (None for a model asked in one order)."""

    relation: str
    probability: float
    subject: Mention
    object: Mention
    sentence: int = 0
    evidence: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TextRelations:
    """What one text gave: its relations, its sentences' character spans and how many candidate pairs were asked."""

    relations: list[Relation]
    sentences: list[tuple[int, int]]
    pairs: int = 0


def mention_record(doc_id: str, text: str, sentence: tuple[int, int], relation: Relation) -> dict[str, Any]:
    """One relation as the record that extraction writes (offsets into the document, end-exclusive); its Parquet
    schema is :mod:`tacred.extraction.parquet_shards`, and :mod:`tacred.extraction.mention_files` reads it back."""
    return {
        "doc_id": doc_id, "sentence": relation.sentence, "sentence_text": text[sentence[0]:sentence[1]],
        "subject": asdict(relation.subject), "object": asdict(relation.object),
        "relation": relation.relation, "probability": round(float(relation.probability), 6),
        "evidence": relation.evidence,
    }


@dataclass
class DocumentResult:
    """What one document gave: its sentences, the candidate pairs asked, the mentions decided (JSON-ready dicts,
    see :func:`mention_record`), or the error that stopped it (then nothing else)."""

    doc_id: str
    sentences: int = 0
    pairs: int = 0
    mentions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @classmethod
    def of_text(cls, doc_id: str, text: str, found: TextRelations) -> DocumentResult:
        """A document's result from what its text gave: each relation as its :func:`mention_record`."""
        mentions = [mention_record(doc_id, text, found.sentences[r.sentence], r) for r in found.relations]
        return cls(doc_id, len(found.sentences), found.pairs, mentions)

    def answer(self) -> dict[str, Any]:
        """The answer of ``POST /extract`` for a document that was extracted (``error`` is None)."""
        return {"id": self.doc_id, "sentences": self.sentences, "pairs": self.pairs, "mentions": self.mentions}
