"""Relation extraction over a corpus: documents read lazily, split into sentences, every candidate pair decided,
mentions written as they are decided to standard output or resumable shards, in one process, several or on Ray; the
shards gathered into a DuckDB knowledge base (`tacred kb`)."""

from tacred.extraction.documents import BadDocument, Document, read_documents
from tacred.extraction.pipeline import DocumentExtractor, DocumentResult, ExtractorSettings

__all__ = ["BadDocument", "Document", "DocumentExtractor", "DocumentResult", "ExtractorSettings", "read_documents"]
