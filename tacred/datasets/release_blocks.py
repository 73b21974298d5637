"""The block layout SemEval-2010 Task 8 and KBP37 share: ``ID<TAB>"sentence"``, a label line, an optional
``Comment:`` line (SemEval), then blank lines. One reader for both, whose errors name the file, the line and the id."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from tacred.errors import TacredError, read_text

_SENTENCE = re.compile(r'(\d+)\s+"(.*)"\s*')


def labelled_sentences(path: Path, what: str, labels: Collection[str], label_example: str,
                       error: Callable[[str], TacredError]) -> Iterator[tuple[int, str, str, int]]:
    """``(id, sentence, label, line)`` for each block of ``path`` in file order (``line``: the sentence's, 1-based).

    ``labels``: the label lines allowed; ``label_example`` is shown when another is found; ``error`` builds the
    exception raised for a file that breaks the layout (a missing file, a line that is not a sentence, a space where
    the tab belongs, a repeated id, an unknown label, a block without its blank line, no block at all)."""
    if not path.is_file():
        raise error(f"{path}: {what} file not found")
    lines = read_text(path, f"{what} source").splitlines()  # CRLF and LF alike
    seen: dict[int, int] = {}
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        m = _SENTENCE.fullmatch(lines[i])
        if m is None:
            raise error(f"{path}, line {i + 1}: expected 'ID<TAB>\"sentence\"', found {lines[i][:60]!r}")
        separator = lines[i][m.end(1):m.start(2) - 1]
        if separator != "\t":
            raise error(f"{path}, line {i + 1}, id {m.group(1)}: the id and the sentence must be separated by one "
                        f"tab, found {separator!r}")
        ex_id, line_no = int(m.group(1)), i + 1
        if ex_id in seen:
            raise error(f"{path}, line {line_no}, id {ex_id}: id already used on line {seen[ex_id]}")
        seen[ex_id] = line_no
        label = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if label not in labels:
            raise error(f"{path}, line {i + 2}, id {ex_id}: expected {label_example}, found {label!r}")
        i += 2
        if i < len(lines) and lines[i].startswith("Comment"):
            i += 1
        if i < len(lines) and lines[i].strip():
            raise error(f"{path}, line {i + 1}, id {ex_id}: expected a blank line, found {lines[i][:60]!r}")
        yield ex_id, m.group(2), label, line_no
    if not seen:
        raise error(f"{path}: no examples found")
