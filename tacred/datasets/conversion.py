"""The record a converter leaves beside a converted split (``conversion.json``): which sentences of the release could
not be converted, so that a test score can still be taken over every sentence of the release."""

from __future__ import annotations

import json
from pathlib import Path

from tacred.errors import TacredError

CONVERSION_FILE = "conversion.json"
RELEASE_FILES = ("train.json", "dev.json", "test.json", "labels.json", CONVERSION_FILE)  # what a converter writes


def check_output_folder(out_dir: str | Path, overwrite: bool = False) -> None:
    """A converter's OUT, checked before any work: a folder (or nothing yet), and one that holds a converted release
    only with ``overwrite`` (its files are replaced)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise TacredError(f"{out}: not a folder (OUT is the folder the converted release is written to)")
    held = [name for name in RELEASE_FILES if (out / name).exists()]
    if held and not overwrite:
        raise TacredError(f"{out} holds a converted release ({', '.join(held)}); give --overwrite to replace it, or "
                          "another OUT")


def unconverted_gold(split_file: str | Path, examples: int) -> list[str]:
    """Gold labels of the release's sentences that ``tacred convert`` could not turn into examples of ``split_file``
    (``conversion.json``'s ``unconverted`` entry for the file's split: ``test`` for ``test.json``). Empty without
    such a record, or when the record belongs to another version of the file: its size for the split is not
    ``examples``, the number of examples the file holds."""
    path = Path(split_file)
    record = path.parent / CONVERSION_FILE
    if not record.is_file():
        return []
    try:
        info = json.loads(record.read_text(encoding="utf-8"))
        if (info.get("sizes") or {}).get(path.stem) != examples:
            return []
        return [str(row["relation"]) for row in (info.get("unconverted") or {}).get(path.stem) or []]
    except (json.JSONDecodeError, AttributeError, KeyError, TypeError) as err:
        raise TacredError(f"{record}: not a conversion record written by tacred convert ({err!r})") from None
