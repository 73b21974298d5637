"""Relations in raw text, from ``m.extract(text)`` to a corpus: the three steps that every way in shares
(:mod:`tacred.extraction.pipeline`: preprocess, spaCy's sentences → candidate pairs; forward, the model's
probabilities; postprocess, decisions → answers), ``load_model`` (:mod:`tacred.extraction.model`), and over a
corpus documents read lazily, cut into chunks, their mentions written as they are decided to
standard output or resumable shards, in one process, several or on Ray; the shards gathered into a DuckDB knowledge
base (`tacred kb`). docs/architecture.md follows one document from ``tacred extract`` to the output file."""

from tacred.extraction.documents import BadDocument, Document, read_documents
from tacred.extraction.pipeline import Extraction
from tacred.extraction.postprocess import DocumentResult, Relation
from tacred.extraction.preprocess import Mention
from tacred.extraction.runner import DocumentExtractor, ExtractorSettings

__all__ = ["BadDocument", "Document", "DocumentExtractor", "DocumentResult", "Extraction", "ExtractorSettings",
           "Mention", "Relation", "read_documents"]
