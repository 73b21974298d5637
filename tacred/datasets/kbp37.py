"""KBP37 (Zhang & Wang, 2015) release files → TACRED-format dicts: TACRED's KBP slot relations on public text.

The release's own tokens and splits are kept (``train.txt``, ``dev.txt``, ``test.txt``); spaCy adds POS and NER.
``e1`` is the subject and ``e2`` the object, the 36 directed labels are kept as written (``per:employee_of(e1,e2)``).
A sentence with an empty entity (``<e1> </e1>``, about 0.7%) cannot be converted: it is reported by file, line and
id and recorded in ``conversion.json`` so that test scores can count it as a ``no_relation`` prediction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.constants import NO_RELATION
from tacred.datasets.conversion import check_source, converted_release
from tacred.datasets.release_blocks import labelled_sentences
from tacred.errors import TacredError
from tacred.text.spacy_pipeline import (
    NOMINAL,
    Annotation,
    annotate_words,
    given_or_default,
    tacred_example,
)

if TYPE_CHECKING:
    from spacy.language import Language

RELATIONS = (
    "org:alternate_names", "org:city_of_headquarters", "org:country_of_headquarters", "org:founded",
    "org:founded_by", "org:members", "org:stateorprovince_of_headquarters", "org:subsidiaries",
    "org:top_members/employees", "per:alternate_names", "per:cities_of_residence", "per:countries_of_residence",
    "per:country_of_birth", "per:employee_of", "per:origin", "per:spouse", "per:stateorprovinces_of_residence",
    "per:title",
)
# The declared label set (37): fixed order, no_relation first, never derived from what a split holds.
KBP37_LABELS = (NO_RELATION, *(f"{r}({a},{b})" for r in RELATIONS for a, b in (("e1", "e2"), ("e2", "e1"))))
SPLITS = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}
# conversion.json's entries in the order written
RECORD = ("source", "files", "sentences", "sizes", "spacy_model", "spacy_version", "labels", "label_counts",
          "unconverted", "seconds")
_MARKERS = ("<e1>", "</e1>", "<e2>", "</e2>")


class KBP37Error(TacredError, ValueError):
    """A KBP37 file that cannot be read (names the file, the line and the id)."""


@dataclass(frozen=True)
class KBP37Record:
    """One sentence of a release file: its tokens without markers and the entity token spans (inclusive), or
    ``problem`` when it cannot be converted (then the spans are meaningless)."""

    id: int
    tokens: tuple[str, ...]
    subj: tuple[int, int]
    obj: tuple[int, int]
    relation: str
    line: int
    source: str
    problem: str | None = None

    @property
    def where(self) -> str:
        return f"{self.source}, line {self.line}, id {self.id}"


def _parse_tokens(sentence: str) -> tuple[tuple[str, ...], tuple[int, int], tuple[int, int], str | None]:
    """Tokens without the four markers, the e1 and e2 token spans, and why the sentence cannot be used (or None)."""
    words = sentence.split()
    counts = {m: words.count(m) for m in _MARKERS}
    wrong = [f"{m} x{n}" for m, n in counts.items() if n != 1]
    if wrong:
        return (), (0, 0), (0, 0), f"each of <e1>, </e1>, <e2>, </e2> must appear once ({', '.join(wrong)})"
    tokens: list[str] = []
    bounds: dict[str, int] = {}
    for w in words:
        if w in _MARKERS:
            bounds[w] = len(tokens)
        else:
            tokens.append(w)
    spans = {}
    for name in ("e1", "e2"):
        start, end = bounds[f"<{name}>"], bounds[f"</{name}>"]
        if end < start:
            return (), (0, 0), (0, 0), f"</{name}> comes before <{name}>"
        if end == start:
            return (), (0, 0), (0, 0), f"the {name} entity is empty (<{name}> </{name}>)"
        spans[name] = (start, end - 1)
    (s1, e1), (s2, e2) = spans["e1"], spans["e2"]
    if s1 <= e2 and s2 <= e1:
        return (), (0, 0), (0, 0), "the e1 and e2 entities overlap"
    return tuple(tokens), spans["e1"], spans["e2"], None


def read_kbp37(path: str | Path) -> list[KBP37Record]:
    """Parse a release file: ``ID<TAB>" tokens with <e1> … </e1> <e2> … </e2> "``, the label line, blank lines.

    A sentence whose entities cannot be used is kept with ``problem`` set; a file that breaks the format (a line
    that is not a sentence, an unknown label, a repeated id) raises :class:`KBP37Error`."""
    path = Path(path)
    example = "a KBP37 label (e.g. 'per:employee_of(e1,e2)' or 'no_relation')"
    records = []
    for ex_id, sentence, label, line in labelled_sentences(path, "KBP37", frozenset(KBP37_LABELS), example, KBP37Error):
        tokens, subj, obj, problem = _parse_tokens(sentence)
        records.append(KBP37Record(ex_id, tokens, subj, obj, label, line, str(path), problem))
    return records


def entity_type(annotation: Annotation, start: int, end: int) -> str:
    """The mapped NER that most tokens of ``start..end`` (inclusive) carry (the earliest on a tie), else NOMINAL.

    KBP37's entities are names whose spaCy entity often covers only part of them (``Prof. Riccardo Reitano``), so
    the span's majority type is kept where SemEval's rule (one whole entity, else NOMINAL) would lose it."""
    found = Counter(t for t in annotation.ner[start:end + 1] if t != "O")
    if not found:
        return NOMINAL
    best = max(found.values())
    return next(t for t in annotation.ner[start:end + 1] if found.get(t) == best)


def convert_records(
    records: Sequence[KBP37Record], prefix: str, nlp: Language | None = None, batch_size: int = 256
) -> list[dict[str, Any]]:
    """TACRED dicts with ids ``kbp37-<prefix>-<file id>`` for the records that can be converted, in file order."""
    usable = [r for r in records if r.problem is None]
    annotations = annotate_words((r.tokens for r in usable), given_or_default(nlp),
                                 batch_size=batch_size)
    return [
        tacred_example(f"kbp37-{prefix}-{rec.id}", ann, rec.subj, rec.obj, rec.relation,
                       entity_type(ann, *rec.subj), entity_type(ann, *rec.obj))
        for rec, ann in zip(usable, annotations, strict=True)
    ]


def unconverted(records: Sequence[KBP37Record], prefix: str) -> list[dict[str, Any]]:
    """What :func:`write_release` records of each sentence it cannot convert (its gold label included)."""
    return [{"id": f"kbp37-{prefix}-{r.id}", "file": Path(r.source).name, "line": r.line, "relation": r.relation,
             "problem": r.problem} for r in records if r.problem is not None]


def check_release(src_dir: str | Path) -> dict[str, list[KBP37Record]]:
    """Read the three release files, so that a bad source fails before spaCy is loaded."""
    src_dir = check_source(src_dir, SPLITS.values(), KBP37Error)
    return {split: read_kbp37(src_dir / name) for split, name in SPLITS.items()}


def write_release(
    src_dir: str | Path, out_dir: str | Path, nlp: Language | str | None = None, batch_size: int = 256
) -> dict[str, Any]:
    """Check and convert the release, then write train/dev/test.json, labels.json, conversion.json and a README;
    ``nlp``: a spaCy pipeline or its name (None: the default), loaded once the release is checked."""
    records = check_release(src_dir)
    release = converted_release(src_dir, SPLITS, KBP37_LABELS, nlp, lambda nlp: {
        name: convert_records(recs, name, nlp, batch_size) for name, recs in records.items()})
    skipped = {name: unconverted(recs, name) for name, recs in records.items()}
    info = release.record(RECORD, sentences={name: len(recs) for name, recs in records.items()}, unconverted=skipped)
    sizes = info["sizes"]
    lost = ", ".join(f"{name} {len(rows)}" for name, rows in skipped.items())
    readme = (
        "KBP37 (Zhang & Wang, 2015, arXiv:1508.01006) in TACRED format, converted by `tacred convert kbp37`.\n"
        f"train {sizes['train']} / dev {sizes['dev']} / test {sizes['test']} sentences "
        f"(the release's own splits and tokens; not convertible, listed in conversion.json: {lost}).\n"
        "e1 = subject, e2 = object; the 36 directed labels and no_relation as written; "
        f"POS and NER by spaCy {release.spacy_model} (spaCy {release.spacy_version}).\n"
        "Entity types: the NER label most tokens of the span carry, else NOMINAL.\n"
        "Test scores count the unconvertible test sentences as no_relation predictions (tacred test).\n"
    )
    release.write(out_dir, info, readme)
    return info
