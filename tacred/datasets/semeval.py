"""SemEval-2010 Task 8 (Hendrickx et al., 2010) release files → TACRED-format dicts tokenised by spaCy.

``e1`` is the subject and ``e2`` the object; the 18 directed labels are kept, ``Other`` becomes
``no_relation``; dev is a seeded random sample of the training file (1,500 sentences, seed 0).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.constants import NO_RELATION
from tacred.datasets.annotate import MarkerError, parse_markers
from tacred.datasets.conversion import check_source, converted_release
from tacred.datasets.release_blocks import labelled_sentences
from tacred.errors import TacredError
from tacred.text.spacy_pipeline import (
    SpanError,
    annotate_spans,
    given_or_default,
    tacred_example,
)

if TYPE_CHECKING:
    from spacy.language import Language

RELATIONS = (
    "Cause-Effect", "Instrument-Agency", "Product-Producer", "Content-Container", "Entity-Origin",
    "Entity-Destination", "Component-Whole", "Member-Collection", "Message-Topic",
)
OTHER = "Other"
# The declared label set (19): fixed order, no_relation first, never derived from what a split holds.
SEMEVAL_LABELS = (NO_RELATION, *(f"{r}({a},{b})" for r in RELATIONS for a, b in (("e1", "e2"), ("e2", "e1"))))
TRAIN_FILE = "TRAIN_FILE.TXT"
TEST_FILE = "TEST_FILE_FULL.TXT"
FILES = {"train": TRAIN_FILE, "test": TEST_FILE}
# conversion.json's entries in the order written
RECORD = ("source", "files", "sizes", "dev_size", "seed", "spacy_model", "spacy_version", "labels", "label_counts",
          "seconds")
_FILE_LABELS = frozenset((OTHER, *SEMEVAL_LABELS[1:]))


class SemEvalError(TacredError, ValueError):
    """A SemEval file or sentence that cannot be read or converted (names file, line and id)."""


@dataclass(frozen=True)
class SemEvalRecord:
    """One sentence of a release file, markers still in place; ``relation`` as written in the file."""

    id: int
    sentence: str
    relation: str
    line: int
    source: str

    @property
    def where(self) -> str:
        return f"{self.source}, line {self.line}, id {self.id}"


def read_semeval(path: str | Path) -> list[SemEvalRecord]:
    """Parse a release file: ``ID<TAB>"sentence"``, a label line, an optional ``Comment:`` line, a blank."""
    path = Path(path)
    example = "a relation label (e.g. 'Cause-Effect(e1,e2)' or 'Other')"
    return [SemEvalRecord(ex_id, sentence, label, line, str(path))
            for ex_id, sentence, label, line in labelled_sentences(path, "SemEval", _FILE_LABELS, example, SemEvalError)]


def convert_records(
    records: Sequence[SemEvalRecord], prefix: str, nlp: Language | None = None, batch_size: int = 256
) -> list[dict[str, Any]]:
    """TACRED dicts with ids ``semeval-<prefix>-<file id>``; raises :class:`SemEvalError` on a bad sentence."""
    nlp = given_or_default(nlp)
    items = []
    for rec in records:
        try:
            marked = parse_markers(rec.sentence)
        except MarkerError as err:
            raise SemEvalError(f"{rec.where}: {err}") from err
        items.append((rec.where, marked.text, [marked.subj, marked.obj]))
    try:
        annotated = annotate_spans(items, nlp, batch_size=batch_size)
    except SpanError as err:
        raise SemEvalError(str(err)) from err
    return [
        tacred_example(
            f"semeval-{prefix}-{rec.id}", ann, spans[0], spans[1],
            NO_RELATION if rec.relation == OTHER else rec.relation,
        )
        for rec, (ann, spans) in zip(records, annotated, strict=True)
    ]


def split_dev(
    records: Sequence[SemEvalRecord], dev_size: int = 1500, seed: int = 0
) -> tuple[list[SemEvalRecord], list[SemEvalRecord]]:
    """(train, dev): ``dev_size`` records drawn with ``random.Random(seed)``; both keep file order."""
    if not 0 <= dev_size < len(records):
        raise SemEvalError(f"dev size must be between 0 and {len(records) - 1}, got {dev_size}")
    dev_idx = set(random.Random(seed).sample(range(len(records)), dev_size))
    train = [r for i, r in enumerate(records) if i not in dev_idx]
    dev = [r for i, r in enumerate(records) if i in dev_idx]
    return train, dev


def convert_release(
    src_dir: str | Path, dev_size: int = 1500, seed: int = 0, nlp: Language | None = None, batch_size: int = 256
) -> dict[str, list[dict[str, Any]]]:
    """Convert ``TRAIN_FILE.TXT`` and ``TEST_FILE_FULL.TXT`` under ``src_dir`` to train/dev/test splits."""
    src_dir = Path(src_dir)
    train, dev = split_dev(read_semeval(src_dir / TRAIN_FILE), dev_size, seed)
    test = read_semeval(src_dir / TEST_FILE)
    return {
        "train": convert_records(train, "train", nlp, batch_size),
        "dev": convert_records(dev, "train", nlp, batch_size),
        "test": convert_records(test, "test", nlp, batch_size),
    }


def check_release(src_dir: str | Path, dev_size: int = 1500) -> None:
    """Read both release files and every sentence's markers, so a bad source fails before spaCy is loaded."""
    src_dir = check_source(src_dir, FILES.values(), SemEvalError)
    train, test = read_semeval(src_dir / TRAIN_FILE), read_semeval(src_dir / TEST_FILE)
    for rec in (*train, *test):
        try:
            parse_markers(rec.sentence)
        except MarkerError as err:
            raise SemEvalError(f"{rec.where}: {err}") from None
    split_dev(train, dev_size)


def write_release(
    src_dir: str | Path,
    out_dir: str | Path,
    dev_size: int = 1500,
    seed: int = 0,
    nlp: Language | str | None = None,
    batch_size: int = 256,
) -> dict[str, Any]:
    """Check and convert the release, then write train/dev/test.json, labels.json, conversion.json and a README;
    ``nlp``: a spaCy pipeline or its name (None: the default), loaded once the release is checked."""
    check_release(src_dir, dev_size)
    release = converted_release(src_dir, FILES, SEMEVAL_LABELS, nlp,
                                lambda nlp: convert_release(src_dir, dev_size, seed, nlp, batch_size))
    info = release.record(RECORD, dev_size=dev_size, seed=seed)
    sizes = info["sizes"]
    readme = (
        "SemEval-2010 Task 8 (Hendrickx et al., 2010; CC BY 3.0) in TACRED format, converted by "
        "`tacred convert semeval2010`.\n"
        f"train {sizes['train']} / dev {sizes['dev']} (random sample of {TRAIN_FILE}, "
        f"seed {seed}) / test {sizes['test']} ({TEST_FILE}).\n"
        "e1 = subject, e2 = object; directed labels kept, Other -> no_relation; "
        f"tokens, POS and NER by spaCy {release.spacy_model} (spaCy {release.spacy_version}).\n"
        "Entity types: the span's mapped NER when it is one named entity, else NOMINAL.\n"
    )
    release.write(out_dir, info, readme)
    return info
