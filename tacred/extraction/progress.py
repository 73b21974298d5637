"""A progress line on a terminal (documents/s, sentences/s, ETA when the number of documents is known) and the
count of documents a source holds, when it can be had cheaply."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from tacred.extraction.documents import folder_files, format_of

REFRESH_S = 0.5


class Progress:
    """Redraws one line on ``stream`` (standard error) at most every half second, only when it is a terminal."""

    def __init__(self, total: int | None = None, stream: TextIO | None = None, done: int = 0) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.total, self.start, self.last = total, time.monotonic(), 0.0
        self.documents, self.sentences, self.skipped_before = 0, 0, done

    def update(self, documents: int, sentences: int) -> None:
        self.documents += documents
        self.sentences += sentences
        now = time.monotonic()
        if not self.enabled or now - self.last < REFRESH_S:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = self.documents / elapsed
        line = (f"{self.skipped_before + self.documents:,} documents, {rate:,.1f} documents/s, "
                f"{self.sentences / elapsed:,.1f} sentences/s")
        if self.total:
            left = max(self.total - self.skipped_before - self.documents, 0)
            eta = left / rate if rate > 0 else 0
            line = (f"{100 * (self.skipped_before + self.documents) / self.total:5.1f}% {line}, "
                    f"ETA {int(eta // 3600)}:{int(eta % 3600 // 60):02d}:{int(eta % 60):02d}")
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.last:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def count_documents(sources: Iterable[str], fmt: str, lines: bool) -> int | None:
    """How many documents (bad ones included) the sources hold, or None when that needs more than a quick count
    (standard input)."""
    total = 0
    for source in sources:
        if source == "-":
            return None
        path = Path(source)
        for file in folder_files(path) if path.is_dir() else [path]:
            kind = format_of(file, fmt, lines)
            if kind == "parquet":
                import pyarrow.parquet as pq

                total += pq.ParquetFile(file).metadata.num_rows
            elif kind in ("jsonl", "lines"):
                with file.open("rb") as stream:
                    total += sum(1 for line in stream if line.strip())
            else:
                total += 1
    return total
