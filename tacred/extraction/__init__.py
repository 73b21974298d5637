"""From a corpus to a knowledge base: mention files read back and aggregated into DuckDB (`tacred kb`)."""
