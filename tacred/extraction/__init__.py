"""Relations in raw text, from ``m.extract(text)`` to a corpus: the relation search that every way in shares
(:mod:`tacred.extraction.relations`: spaCy's sentences → candidate pairs → the model's probabilities → decisions →
answers), and over a corpus documents read lazily, cut into chunks, their mentions written as they are decided to
standard output or resumable shards, in one process, several or on Ray; the shards gathered into a DuckDB knowledge
base (`tacred kb`). docs/architecture.md follows one document from ``tacred extract`` to the output file."""

from tacred.extraction.answers import DocumentResult, Mention, Relation
from tacred.extraction.documents import BadDocument, Document, read_documents
from tacred.extraction.pipeline import DocumentExtractor, ExtractorSettings

__all__ = ["BadDocument", "Document", "DocumentExtractor", "DocumentResult", "ExtractorSettings", "Mention", "Relation",
           "read_documents"]
