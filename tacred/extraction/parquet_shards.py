"""Mention shards written as Parquet: one row per mention, the arguments as structs, the evidence as a JSON string (its
shape depends on the label set). They are read back by :mod:`tacred.extraction.mention_files`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tacred.io import atomic_path


def _schema() -> Any:
    import pyarrow as pa

    argument = pa.struct([("text", pa.string()), ("start", pa.int64()), ("end", pa.int64()), ("type", pa.string())])
    return pa.schema([("doc_id", pa.string()), ("sentence", pa.int64()), ("sentence_text", pa.string()),
                      ("subject", argument), ("object", argument), ("relation", pa.string()),
                      ("probability", pa.float64()), ("evidence", pa.string())])


def write_parquet_shard(path: str | Path, mentions: list[dict[str, Any]]) -> None:
    """The mentions as one Parquet file, written atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{**m, "evidence": None if m["evidence"] is None else json.dumps(m["evidence"], ensure_ascii=False)}
            for m in mentions]
    table = pa.Table.from_pylist(rows, schema=_schema())
    with atomic_path(path, keep_suffix=True) as tmp:
        pq.write_table(table, tmp)

