"""Vocabularies of words, POS tags, NER tags and relation labels, saved with every run."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tacred import constants as C
from tacred.errors import ConfigError, read_text
from tacred.relation_types.signatures import Signatures


@dataclass
class Vocab:
    """A string ↔ id map. With ``unk`` set, unknown strings map to it; otherwise they are an error."""

    itos: list[str]
    unk: str | None = C.UNK
    stoi: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(set(self.itos)) != len(self.itos):
            raise ValueError("vocabulary has duplicate entries")
        self.stoi = {s: i for i, s in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, item: str) -> bool:
        return item in self.stoi

    def id(self, item: str) -> int:
        found = self.stoi.get(item)
        if found is not None:
            return found
        if self.unk is None:
            raise KeyError(item)
        return self.stoi[self.unk]

    def encode(self, items: Iterable[str]) -> list[int]:
        return [self.id(s) for s in items]


@dataclass
class Vocabularies:
    """Everything that maps an example to ids; a checkpoint is only valid with the one it was trained with."""

    words: Vocab
    pos: Vocab
    ner: Vocab
    labels: Vocab
    lowercase: bool = True
    entity_masking: bool = True
    use_lemmas: bool = False
    no_relation: str = C.NO_RELATION
    # a transformer's tokenizer (tacred.data.markers.tokenizer_spec); None for the word-vocabulary networks
    tokenizer: dict[str, Any] | None = None
    # the (subject type, object type) pairs each relation may take (tacred.relation_types.signatures: the schema, else
    # learned from training with support); a vocabulary written before tacred learned them gets the schema's (not
    # stored: to_dict leaves them out)
    signatures: Signatures = None  # type: ignore[assignment]  # None: set in __post_init__

    def __post_init__(self) -> None:
        if self.signatures is None:
            self.signatures = Signatures.from_schema(self.labels.itos, self.no_relation)

    @property
    def no_relation_id(self) -> int:
        return self.labels.id(self.no_relation)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "format": 1,
            "words": self.words.itos, "pos": self.pos.itos, "ner": self.ner.itos, "labels": self.labels.itos,
            "lowercase": self.lowercase, "entity_masking": self.entity_masking,
            "use_lemmas": self.use_lemmas, "no_relation": self.no_relation,
        }
        if self.tokenizer is not None:  # only then: the fingerprints of earlier vocabularies stay what they were
            data["tokenizer"] = self.tokenizer
        if self.signatures.stored:
            data["signatures"] = self.signatures.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Vocabularies:
        return cls(
            words=Vocab(list(data["words"])), pos=Vocab(list(data["pos"])), ner=Vocab(list(data["ner"])),
            labels=Vocab(list(data["labels"]), unk=None), lowercase=data["lowercase"],
            entity_masking=data["entity_masking"], use_lemmas=data.get("use_lemmas", False),
            no_relation=data["no_relation"], tokenizer=data.get("tokenizer"),
            signatures=Signatures.from_dict(data["signatures"]) if data.get("signatures") is not None else None,
        )

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Vocabularies:
        """Load from a ``vocab.json`` or from a checkpoint (``.ckpt``) that stores it."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"vocabulary source not found: {path}")
        if path.suffix == ".ckpt":
            from tacred.checkpoints import CheckpointError, read_checkpoint

            ckpt = read_checkpoint(path)
            if not isinstance(ckpt.get("tacred_vocab"), dict):
                raise CheckpointError(f"{path}: checkpoint holds no tacred vocabulary (not written by tacred?)")
            data = ckpt["tacred_vocab"]
        else:
            try:
                data = json.loads(read_text(path, "vocabulary"))
            except (json.JSONDecodeError, RecursionError) as err:
                raise ConfigError(f"vocabulary {path}: not valid JSON ({err})") from None
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"vocabulary {path}: not a tacred vocabulary ({type(err).__name__}: {err})") from None

    def fingerprint(self) -> str:
        """What ids an example gets: the signatures are left out (they change no id), so a run started before
        tacred learned them resumes with vocabularies that hold them."""
        import hashlib

        data = {k: v for k, v in self.to_dict().items() if k != "signatures"}
        return hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _ordered(counts: Counter[str], min_count: int) -> list[str]:
    # Most frequent first, ties alphabetically: the same data always gives the same ids.
    return [w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_count]


def build_vocabularies(
    train: Sequence[Any],
    *,
    labels: Sequence[str],
    lowercase: bool = True,
    min_count: int = 1,
    entity_masking: bool = True,
    use_lemmas: bool = False,
    no_relation: str = C.NO_RELATION,
) -> Vocabularies:
    """Build the vocabularies from training examples (:class:`tacred.data.examples.Example`)."""
    if no_relation not in labels:
        raise ConfigError(f"--data.no_relation {no_relation!r}: not among the labels {list(labels)[:8]}"
                          f"{'...' if len(labels) > 8 else ''}")
    words: Counter[str] = Counter()
    pos: Counter[str] = Counter()
    ner: Counter[str] = Counter()
    entity_types: set[tuple[str, str]] = {("SUBJ", t) for t in C.SUBJECT_TYPES} | {("OBJ", t) for t in C.OBJECT_TYPES}
    for ex in train:
        source = ex.lemmas if use_lemmas and ex.lemmas is not None else ex.tokens
        for i, tok in enumerate(source):
            in_entity = ex.subj_start <= i <= ex.subj_end or ex.obj_start <= i <= ex.obj_end
            if entity_masking and in_entity:
                continue
            words[tok.lower() if lowercase else tok] += 1
        pos.update(ex.pos)
        ner.update(ex.ner)
        entity_types.add(("SUBJ", ex.subj_type))
        entity_types.add(("OBJ", ex.obj_type))
    specials = [C.PAD, C.UNK]
    masks = [f"{role}-{t}" for role, t in sorted(entity_types)] if entity_masking else []
    word_list = specials + masks + [w for w in _ordered(words, min_count) if w not in set(masks)]
    pos_list = specials + list(C.POS_TAGS) + sorted(set(pos) - set(C.POS_TAGS))
    ner_list = specials + list(C.NER_TAGS) + sorted(set(ner) - set(C.NER_TAGS))
    label_list = [no_relation] + [lab for lab in labels if lab != no_relation]
    return Vocabularies(
        words=Vocab(word_list), pos=Vocab(pos_list), ner=Vocab(ner_list), labels=Vocab(label_list, unk=None),
        lowercase=lowercase, entity_masking=entity_masking, use_lemmas=use_lemmas, no_relation=no_relation,
        signatures=Signatures.learn(train, no_relation, label_list),
    )
