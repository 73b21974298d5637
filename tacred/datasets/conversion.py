"""What every converter of a public release shares: the source folder checked, spaCy loaded once the release reads,
and the converted release written (the splits, ``labels.json``, the record ``conversion.json`` and a README). The
record also lists the sentences a converter could not convert, so that a test score can still be taken over every
sentence of the release (:func:`unconverted_gold`)."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.errors import TacredError
from tacred.io import write_json, write_text_atomic

if TYPE_CHECKING:
    from spacy.language import Language

CONVERSION_FILE = "conversion.json"
RELEASE_FILES = ("train.json", "dev.json", "test.json", "labels.json", CONVERSION_FILE)  # what a converter writes
Splits = dict[str, list[dict[str, Any]]]  # split name -> TACRED dicts


def check_source(src_dir: str | Path, files: Iterable[str], error: Callable[[str], TacredError]) -> Path:
    """``src_dir`` as a path, once it is a folder (else ``error``, naming the release ``files`` it should hold)."""
    src = Path(src_dir)
    if not src.is_dir():
        raise error(f"{src}: not a folder (expected the folder holding {', '.join(files)})")
    return src


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


@dataclass(frozen=True)
class ConvertedRelease:
    """A release converted to TACRED dicts, not yet written: where it came from, its declared labels, its splits,
    the spaCy pipeline that tagged it and the seconds the conversion took."""

    source: Path
    files: dict[str, str]
    labels: tuple[str, ...]
    splits: Splits
    spacy_model: str
    spacy_version: str
    seconds: float

    @property
    def sizes(self) -> dict[str, int]:
        return {name: len(examples) for name, examples in self.splits.items()}

    @property
    def label_counts(self) -> dict[str, dict[str, int]]:
        return {name: dict(Counter(ex["relation"] for ex in exs)) for name, exs in self.splits.items()}

    def record(self, keys: Sequence[str], **own: Any) -> dict[str, Any]:
        """The conversion record: the entries every converter writes (``source``, ``files``, ``sizes``,
        ``spacy_model``, ``spacy_version``, ``labels``, ``label_counts``, ``seconds``) and the converter's ``own``,
        in the order of ``keys``, which names each of them once (a fixed order: a rerun writes the same bytes)."""
        entries = {"source": str(self.source), "files": self.files, "sizes": self.sizes,
                   "spacy_model": self.spacy_model, "spacy_version": self.spacy_version, "labels": len(self.labels),
                   "label_counts": self.label_counts, "seconds": self.seconds, **own}
        if sorted(keys) != sorted(entries):
            raise ValueError(f"the record's keys {list(keys)} must name each of its entries once: {list(entries)}")
        return {key: entries[key] for key in keys}

    def write(self, out_dir: str | Path, record: Mapping[str, Any], readme: str) -> Path:
        """``<split>.json`` for each split, ``labels.json``, ``conversion.json`` (``record``) and ``README`` in
        ``out_dir``, each written atomically; the folder is created when missing."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, examples in self.splits.items():
            write_json(out / f"{name}.json", examples, indent=None, ensure_ascii=False)
        write_json(out / "labels.json", list(self.labels), indent=None)
        write_json(out / CONVERSION_FILE, dict(record), indent=None, ensure_ascii=False)
        write_text_atomic(out / "README", readme)
        return out


def converted_release(src_dir: str | Path, files: Mapping[str, str], labels: Sequence[str],
                    nlp: Language | str | None, convert: Callable[[Language], Splits]) -> ConvertedRelease:
    """Run ``convert`` (the converter's own step: checked release → TACRED dicts by split) with the spaCy pipeline
    ``nlp``, or the one it names (None: the default), loaded only now: call it once the release is checked, so that a
    bad source is answered before spaCy loads. ``files``: the release files read, by role."""
    import spacy

    from tacred.text.spacy_pipeline import load_spacy, model_id

    if nlp is None or isinstance(nlp, str):
        nlp = load_spacy(nlp)
    start = time.perf_counter()
    splits = convert(nlp)
    seconds = round(time.perf_counter() - start, 1)
    return ConvertedRelease(Path(src_dir).resolve(), dict(files), tuple(labels), splits, model_id(nlp),
                            spacy.__version__, seconds)


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
