"""The TAC KBP slot schema as data: for each of TACRED's 41 relations (KBP37's 18 among them) and Re-TACRED's four new
names, the type of its subject and the types its object (the slot filler) may take, in TACRED's Stanford NER types,
and the names those types get where the types come from spaCy (:mod:`tacred.text.spacy_pipeline`: KBP37's data,
plain-text extraction).

Sources: the TAC KBP Slot Descriptions and the Slot Filling annotation guidelines (LDC, TAC KBP 2009-2014), which
give each slot its filler: a PER, ORG or GPE name, a date, a number or a string; and TACRED's typing of the string
fillers (Zhang et al., 2017: TITLE, NATIONALITY, RELIGION, IDEOLOGY, CRIMINAL_CHARGE, CAUSE_OF_DEATH and URL from
CoreNLP's regexner). The subject is fixed by the prefix: a ``per:`` slot belongs to a PERSON, an ``org:`` slot to an
ORGANIZATION. A GPE filler is any of LOCATION, COUNTRY, STATE_OR_PROVINCE and CITY (CoreNLP types a place by its
level or as a plain LOCATION); a place slot of one level takes that level or LOCATION.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_DIRECTED = re.compile(r"^(?P<base>.+)\((?P<args>e1,e2|e2,e1)\)$")

_GPE = ("LOCATION", "COUNTRY", "STATE_OR_PROVINCE", "CITY")
_CITY, _STATE, _COUNTRY = ("CITY", "LOCATION"), ("STATE_OR_PROVINCE", "LOCATION"), ("COUNTRY", "LOCATION")

# relation → (subject type, object types): the one table. MISC beside a name: CoreNLP types some nicknames and
# acronyms MISC; per:age's DURATION: ages written "45 years old"; per:countries_of_residence's NATIONALITY:
# TACRED's fillers written as demonyms ("the Chilean writer").
SLOT_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "per:alternate_names": ("PERSON", ("PERSON", "MISC")),
    "per:date_of_birth": ("PERSON", ("DATE",)),
    "per:age": ("PERSON", ("NUMBER", "DURATION")),
    "per:country_of_birth": ("PERSON", _COUNTRY),
    "per:stateorprovince_of_birth": ("PERSON", _STATE),
    "per:city_of_birth": ("PERSON", _CITY),
    "per:origin": ("PERSON", ("NATIONALITY", *_COUNTRY)),
    "per:date_of_death": ("PERSON", ("DATE",)),
    "per:country_of_death": ("PERSON", _COUNTRY),
    "per:stateorprovince_of_death": ("PERSON", _STATE),
    "per:city_of_death": ("PERSON", _CITY),
    "per:cause_of_death": ("PERSON", ("CAUSE_OF_DEATH",)),
    "per:countries_of_residence": ("PERSON", (*_COUNTRY, "NATIONALITY")),
    "per:stateorprovinces_of_residence": ("PERSON", _STATE),
    "per:cities_of_residence": ("PERSON", _CITY),
    "per:schools_attended": ("PERSON", ("ORGANIZATION",)),
    "per:title": ("PERSON", ("TITLE",)),
    "per:employee_of": ("PERSON", ("ORGANIZATION", *_GPE)),
    "per:religion": ("PERSON", ("RELIGION",)),
    "per:spouse": ("PERSON", ("PERSON",)),
    "per:children": ("PERSON", ("PERSON",)),
    "per:parents": ("PERSON", ("PERSON",)),
    "per:siblings": ("PERSON", ("PERSON",)),
    "per:other_family": ("PERSON", ("PERSON",)),
    "per:charges": ("PERSON", ("CRIMINAL_CHARGE",)),
    "org:alternate_names": ("ORGANIZATION", ("ORGANIZATION", "MISC")),
    "org:political/religious_affiliation": ("ORGANIZATION", ("ORGANIZATION", "RELIGION", "IDEOLOGY")),
    "org:top_members/employees": ("ORGANIZATION", ("PERSON",)),
    "org:number_of_employees/members": ("ORGANIZATION", ("NUMBER",)),
    "org:members": ("ORGANIZATION", ("ORGANIZATION", *_GPE)),
    "org:member_of": ("ORGANIZATION", ("ORGANIZATION", *_GPE)),
    "org:subsidiaries": ("ORGANIZATION", ("ORGANIZATION",)),
    "org:parents": ("ORGANIZATION", ("ORGANIZATION", *_GPE)),
    "org:founded_by": ("ORGANIZATION", ("PERSON", "ORGANIZATION", *_GPE)),
    "org:founded": ("ORGANIZATION", ("DATE",)),
    "org:dissolved": ("ORGANIZATION", ("DATE",)),
    "org:country_of_headquarters": ("ORGANIZATION", _COUNTRY),
    "org:stateorprovince_of_headquarters": ("ORGANIZATION", _STATE),
    "org:city_of_headquarters": ("ORGANIZATION", _CITY),
    "org:shareholders": ("ORGANIZATION", ("PERSON", "ORGANIZATION", *_GPE)),
    "org:website": ("ORGANIZATION", ("URL",)),
    # Re-TACRED (Stoica et al., 2021) renames the headquarters slots to branches and per:alternate_names to identity
    "org:country_of_branch": ("ORGANIZATION", _COUNTRY),
    "org:stateorprovince_of_branch": ("ORGANIZATION", _STATE),
    "org:city_of_branch": ("ORGANIZATION", _CITY),
    "per:identity": ("PERSON", ("PERSON", "MISC")),
}
SUBJECT_BY_PREFIX = {"per:": "PERSON", "org:": "ORGANIZATION"}

# A Stanford type → what the same argument is called where spaCy types it (spacy_pipeline.NER_MAP: GPE, LOC and
# FAC are LOCATION, NORP is NATIONALITY, CARDINAL is NUMBER). Fillers spaCy has no entity for (a title, a charge, a
# cause of death, a URL) are NOMINAL, as KBP37's converter types an argument without an entity. Others keep their name.
SPACY_NAMES: dict[str, str] = {
    "CITY": "LOCATION", "COUNTRY": "LOCATION", "STATE_OR_PROVINCE": "LOCATION", "DURATION": "DATE", "SET": "DATE",
    "RELIGION": "NATIONALITY", "IDEOLOGY": "NATIONALITY",
    "TITLE": "NOMINAL", "CAUSE_OF_DEATH": "NOMINAL", "CRIMINAL_CHARGE": "NOMINAL", "URL": "NOMINAL",
}


def spacy_name(entity_type: str) -> str:
    """What an argument of this Stanford type is called where spaCy types it (:data:`SPACY_NAMES`)."""
    return SPACY_NAMES.get(entity_type, entity_type)


def _both_names(types: tuple[str, ...]) -> frozenset[str]:
    return frozenset(types) | {spacy_name(t) for t in types}


def split_direction(label: str) -> tuple[str, str | None]:
    """``("per:employee_of", "e2,e1")`` for ``per:employee_of(e2,e1)`` (KBP37's and SemEval's directed labels: ``e1``
    is the argument training data writes first, as the subject); ``(label, None)`` for a label without direction."""
    found = _DIRECTED.match(label)
    return (found["base"], found["args"]) if found else (label, None)


def is_directed(labels: Sequence[str]) -> bool:
    """Whether the label set writes direction into its labels."""
    return any(split_direction(label)[1] is not None for label in labels)


@dataclass(frozen=True)
class PairRule:
    """Which mentions may be subjects and objects (None: any mention either way); ``nominals``: head nouns of noun
    phrases are mentions too; ``both_orders``: each unordered pair is asked in both orders (directed labels)."""

    subject_types: frozenset[str] | None
    object_types: frozenset[str] | None
    nominals: bool = False
    both_orders: bool = False


def pair_rule(labels: Sequence[str], no_relation: str, known_types: set[str] | None) -> PairRule:
    """Which mentions a label set pairs: TACRED-style typed pairs when every relation is ``per:``/``org:`` (the
    subject typed by the prefix, the object any of ``known_types``); nominal pairs otherwise; unordered pairs asked
    both ways when the labels carry their direction."""
    relations = [label for label in labels if label != no_relation]
    prefixes = {label[:4] for label in relations}
    typed = bool(relations) and prefixes <= set(SUBJECT_BY_PREFIX)
    if is_directed(relations):
        return PairRule(None, None, nominals=not typed, both_orders=True)
    if typed:
        objects = frozenset(known_types) if known_types else None
        return PairRule(frozenset(SUBJECT_BY_PREFIX[p] for p in prefixes), objects)
    return PairRule(None, None, nominals=True)


def slot_pairs(relation: str) -> frozenset[tuple[str, str]] | None:
    """The (subject type, object type) pairs the schema allows ``relation`` (without direction), in both type
    vocabularies; None for a relation the schema does not hold."""
    if relation not in SLOT_TYPES:
        return None
    subject, objects = SLOT_TYPES[relation]
    return frozenset((s, o) for s in _both_names((subject,)) for o in _both_names(objects))


def schema_pairs(label: str) -> frozenset[tuple[str, str]] | None:
    """The pairs a label allows its (subject, object) arguments in the order training data writes them: for a
    directed label ``R(e2,e1)`` the relation's object comes first, so its pairs are swapped. None without a schema."""
    relation, args = split_direction(label)
    pairs = slot_pairs(relation)
    if pairs is None:
        return None
    return frozenset((o, s) for s, o in pairs) if args == "e2,e1" else pairs
