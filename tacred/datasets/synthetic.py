"""A small, deterministic, TACRED-format demo corpus generated from templates (no download needed).

Each template declares the facts it states, so every marked pair has a known label; ``no_relation`` pairs
are hard distractors: the same entity types, cue words negated, in another role, or held by other entities.
"""

from __future__ import annotations

import random
from pathlib import Path

from tacred.constants import NO_RELATION, SUBJECT_TYPES
from tacred.io import write_json

__all__ = ["RELATIONS", "generate_corpus", "write_corpus"]

# Short names used in the templates' fact lists -> TACRED labels.
RELATIONS: dict[str, str] = {
    "title": "per:title", "emp": "per:employee_of", "top": "org:top_members/employees",
    "hqc": "org:city_of_headquarters", "hqk": "org:country_of_headquarters", "age": "per:age",
    "spouse": "per:spouse", "fby": "org:founded_by", "cob": "per:city_of_birth",
    "res": "per:cities_of_residence", "origin": "per:origin", "dob": "per:date_of_birth",
}
NO_RELATION_SHARE = 0.6
# Slot kind (first letter of ``{P1}``) -> entity type, used for ``subj_type``/``obj_type`` and the NER tag.
# P/H/F person (any/male/female), O organisation, C city, K country, T/M ordinary/top title,
# N age, Q other number, D full date, Y year, A nationality.
KIND_TYPE: dict[str, str] = {
    "P": "PERSON", "H": "PERSON", "F": "PERSON", "O": "ORGANIZATION", "C": "CITY", "K": "COUNTRY",
    "T": "TITLE", "M": "TITLE", "N": "NUMBER", "Q": "NUMBER", "D": "DATE", "Y": "DATE", "A": "NATIONALITY",
}

_MALE = ("James John Robert Michael David William Richard Daniel Paul Mark George Kevin Brian Edward Ahmed "
         "Carlos Hiroshi Ivan Luca Pierre Omar Rahul Stefan Tomas Wei Yusuf Diego Mateo Nikolai Samuel").split()
_FEMALE = ("Mary Patricia Jennifer Linda Elizabeth Susan Jessica Sarah Karen Nancy Laura Emily Anna Maria "
           "Sofia Fatima Mei Yuki Olga Priya Ingrid Claire Elena Amara Leila Chloe Nadia Julia Grace Hannah").split()
_LAST = ("Smith Johnson Williams Brown Jones Miller Davis Garcia Rodriguez Wilson Martinez Anderson Taylor "
         "Moore Jackson Martin Thompson Harris Clark Lewis Robinson Walker Allen Wright Scott Nguyen Adams "
         "Baker Nelson Carter Mitchell Perez Roberts Turner Phillips Campbell Parker Evans Edwards Collins "
         "Stewart Morris Rogers Morgan Murphy Bailey Cooper Richardson Howard Ward Peterson Ramirez Watson "
         "Brooks Kelly Sanders Bennett Barnes Henderson Coleman Jenkins Powell Patterson Hughes Flores Butler "
         "Foster Gonzales Bryant Russell Griffin Diaz Tanaka Sato Kowalski Novak Schmidt Muller Rossi Dubois "
         "Haddad Okafor Mensah Ivanov Petrov Kim Park Chen Wang Singh Patel Khan Larsen Silva Costa").split()
_INITIALS = [f"{c}." for c in "ABCDEFGHJKLMNPRSTW"]
_ORG_STEM = ("Acme Globex Initech Northwind Vandelay Zentrix Altavia Brightwater Coldharbor Dunmore Everline "
             "Fairhaven Granite Harborview Ironclad Juniper Keystone Lakeshore Meridian Norcastle Oakridge "
             "Pinnacle Quantis Redwood Trident Vantage Westbrook Zephyr Helios Orion Polaris Crescent Beacon "
             "Cascade Blue_River Silver_Lake Red_Rock Green_Valley North_Star Old_Mill").split()
_ORG_SECTOR = ("Holdings Energy Bank Airlines Media Pharmaceuticals Motors Foods Telecom Capital Systems "
               "Logistics Mining Insurance Partners Technologies Steel Chemicals Foundation Institute").split()
_ORG_SUFFIX = "Inc. Corp. Ltd. Group AG LLC Co.".split()
_CITY_COUNTRY = dict(pair.split(":") for pair in (  # city -> its country, so "{C1} , {K1}" agree
    "Paris:France London:United_Kingdom Berlin:Germany Madrid:Spain Rome:Italy Tokyo:Japan "
    "Chicago:United_States Boston:United_States Toronto:Canada Sydney:Australia Mumbai:India Cairo:Egypt "
    "Lagos:Nigeria Nairobi:Kenya Seoul:South_Korea Beijing:China Moscow:Russia Istanbul:Turkey "
    "Dublin:Ireland Vienna:Austria Prague:Czech_Republic Warsaw:Poland Lisbon:Portugal Athens:Greece "
    "Oslo:Norway Stockholm:Sweden Helsinki:Finland Denver:United_States Seattle:United_States "
    "Houston:United_States Atlanta:United_States Manila:Philippines Jakarta:Indonesia Lima:Peru "
    "Bogota:Colombia Munich:Germany Milan:Italy Osaka:Japan Geneva:Switzerland Zurich:Switzerland "
    "New_York:United_States San_Francisco:United_States Los_Angeles:United_States Hong_Kong:China "
    "Buenos_Aires:Argentina Cape_Town:South_Africa Rio_de_Janeiro:Brazil New_Delhi:India Tel_Aviv:Israel "
    "Kuala_Lumpur:Malaysia Sao_Paulo:Brazil Las_Vegas:United_States Vancouver:Canada Lyon:France").split())
_COUNTRY = ("France Germany Spain Italy Japan Canada Australia India Egypt Nigeria Kenya Brazil Argentina "
            "Mexico Russia China Turkey Ireland Austria Poland Portugal Greece Norway Sweden Finland Chile "
            "Peru Colombia Switzerland Indonesia United_States United_Kingdom South_Korea South_Africa "
            "New_Zealand Saudi_Arabia Czech_Republic Philippines Israel Malaysia Vietnam Morocco").split()
_NATIONALITY = ("French German Spanish Italian Japanese Canadian Australian Indian Egyptian Nigerian Kenyan "
                "Brazilian Argentine Mexican Russian Chinese Turkish Irish Austrian Polish Portuguese Greek "
                "Norwegian Swedish Finnish Chilean Peruvian Swiss American British Korean Dutch").split()
_TOP_TITLE = ("chief_executive president chairman chairwoman chief_financial_officer managing_director "
              "chief_operating_officer executive_director vice_president general_manager").split()
_TITLE = ("spokesman spokeswoman analyst engineer lawyer economist senior_researcher editor accountant "
          "consultant designer scientist reporter manager adviser architect").split()
_MONTHS = ("January February March April May June July August September October November "
           "December").split()

# Penn Treebank tag of every word the templates and titles use ("word/TAG" in a template overrides it).
_LEXICON_TABLE = """
DT: a an the
IN: of at with for in on by from after since that as under into while
CC: and but
TO: to
PRP$: its his her
PRP: it
RB: also still now reportedly recently never not officially earlier meanwhile there
JJ: new former youngest oldest close small fair senior chief financial general higher available old
VBD: said founded started launched married wed declined announced told met visited toured flew
VBD: defeated praised criticized interviewed sued denied turned joined hired named appointed moved
VBD: settled grew became expanded opened reported issued welcomed spoke attended applied co-founded
VBD: was were had celebrated studied cut
VBN: born based headquartered created run led raised set fallen related aged been served worked lived
VBZ: is has lives works runs heads leads sells employs holds comes celebrates wants plans
VBP: are have show
WDT: which
WP: who
WP$: whose
RP: up down
VB: comment continue hire move become work expand
VBG: being managing operating speaking according
MD: would
NN: wife husband spouse founder native resident citizen national descent family deal plan company
NN: firm group bank decision merger statement conference news interview team member behalf
NN: headquarters office head branch factory plant employee customer critic friend rival lawyer
NN: wedding government history citizenship offer meeting ceremony comment birthday son daughter
NN: executive president chairman chairwoman officer director spokesman spokeswoman analyst engineer
NN: economist researcher editor accountant consultant designer scientist reporter manager adviser
NN: architect vice
NNS: talks sales profits jobs workers people employees officials reporters years products sources
NNS: children records reports plans offices
,: ,
:: ;
-LRB-: (
-RRB-: )
POS: 's
"""
LEXICON: dict[str, str] = {}
for _line in _LEXICON_TABLE.strip().splitlines():
    _tag, _words = _line.split(": ", 1)
    for _w in _words.split():
        LEXICON.setdefault(_w, _tag)  # the first listing of an ambiguous word wins

# Macros: ``<NAME>`` in a template is replaced by one of these (which may contain slots and macros).
MACROS: dict[str, list[str]] = {
    "VP": ["said the talks would continue", "declined to comment", "told reporters that sales had fallen",
           "announced a new plan", "was not available for comment", "welcomed the decision",
           "said in a statement that the deal was fair", "spoke to reporters [ <TIMEP> ]"],
    "VPPL": ["declined to comment", "attended the ceremony", "were not available for comment",
             "spoke to reporters", "welcomed the decision"],
    "OVP": ["reported higher profits", "declined to comment", "announced a merger", "cut {Q9} jobs",
            "said it would hire {Q9} workers", "issued a statement", "said sales had fallen"],
    "ADV": ["also", "still", "now", "reportedly", "officially"],
    "TIMEP": ["in a statement", "at a news conference", "in an interview", "earlier"],
    "PRE": ["according to a statement ,", "in an interview ,", "officials said that", "{P9} said that",
            "sources close to {O9} said that", "reports from {C9} said that", "meanwhile ,", "earlier ,",
            "speaking in {C9} , {P9} said that"],
    "POST": [", officials said", ", according to {O9}", ", {P9} told reporters", ", sources said",
             ", according to reports from {C9}"],
    "CONJ": [", while", ", and", "; meanwhile ,", ", but"],
}

# (template, facts). Facts: "SUBJ short-relation OBJ" separated by commas; a fact whose slot sits in an
# optional ``[ ... ]`` part that was left out is dropped. "a|b_c" picks an alternative ("_" = space).
POSITIVE: list[tuple[str, str]] = [
    ("{P1} , the {M1} of {O1} , <VP>", "P1 title M1, P1 emp O1, O1 top P1"),
    ("{O1} {M1} {P1} <VP>", "P1 title M1, P1 emp O1, O1 top P1"),
    ("{P1} , a {T1} at|with|for {O1} , <VP>", "P1 title T1, P1 emp O1"),
    ("{O1} 's {T1} , {P1} , <VP>", "P1 title T1, P1 emp O1"),
    ("{P1} [ , {N1} , ] has served as {M1} of {O1} since {Y1}", "P1 title M1, P1 emp O1, O1 top P1, P1 age N1"),
    ("{O1} named|appointed {P1} [ , {N1} , ] as|as_its_new {M1} [ <TIMEP> ]",
     "P1 title M1, P1 emp O1, O1 top P1, P1 age N1"),
    ("the {T1} , {P1} , <VP>", "P1 title T1"),
    ("former {T1} {P1} <VP>", "P1 title T1"),
    ("{P1} , who worked as a {T1} for {Q1} years , <VP>", "P1 title T1"),
    ("{P1} became {M1} of {O1} in {Y1} [ after {Q1} years at the firm ]", "P1 title M1, P1 emp O1, O1 top P1"),
    ("{P1} [ <ADV> ] works|worked for {O1}", "P1 emp O1"),
    ("{P1} , who joined {O1} in {Y1} , <VP>", "P1 emp O1"),
    ("{P1} has worked at {O1} for {Q1} years", "P1 emp O1"),
    ("{O1} employee {P1} <VP>", "P1 emp O1"),
    ("{P1} , an employee of {O1} , <VP>", "P1 emp O1"),
    ("{P1} spoke on behalf of {O1} <TIMEP>", "P1 emp O1"),
    ("{O1} hired {P1} as a {T1} [ in {Y1} ]", "P1 emp O1, P1 title T1"),
    ("{P1} runs|heads|leads {O1} [ , which is based in {C1} ]", "O1 top P1, P1 emp O1, O1 hqc C1"),
    ("{O1} , led by {P1} , <OVP>", "O1 top P1, P1 emp O1"),
    ("{O1} is run by {M1} {P1}", "O1 top P1, P1 emp O1, P1 title M1"),
    ("under {P1} , {O1} expanded into {K1}", "O1 top P1, P1 emp O1"),
    ("{P1} , who has led {O1} since {Y1} , <VP>", "O1 top P1, P1 emp O1"),
    ("{P1} founded|started|launched {O1} [ in a small office in {C1} ]", "O1 fby P1"),
    ("{O1} was founded/VBN|created|set_up by {P1} [ and {P2} ]", "O1 fby P1, O1 fby P2"),
    ("{O1} founder {P1} <VP>", "O1 fby P1"),
    ("{P1} , who co-founded {O1} [ with {P2} ] , <VP>", "O1 fby P1, O1 fby P2"),
    ("{P1} , the founder of {O1} , <VP>", "O1 fby P1"),
    ("{O1} , set up by {P1} [ in {C1} ] , <OVP>", "O1 fby P1"),
    ("{O1} , which {P1} started|founded with {Q1} employees , <OVP>", "O1 fby P1"),
    ("{P1} and {P2} founded {O1} [ <TIMEP> ]", "O1 fby P1, O1 fby P2"),
    ("{O1} , which is based|headquartered in {C1} , <OVP>", "O1 hqc C1"),
    ("{O1} is headquartered|based in {C1} , {K1}", "O1 hqc C1, O1 hqk K1"),
    ("the {C1} firm|company|group {O1} <OVP>", "O1 hqc C1"),
    ("{O1} , whose headquarters are in {C1} [ , {K1} ] , <OVP>", "O1 hqc C1, O1 hqk K1"),
    ("{O1} moved its headquarters to {C1} [ in {Y1} ]", "O1 hqc C1"),
    ("{O1} ( {C1} ) <OVP>", "O1 hqc C1"),
    ("{O1} , a company based in {K1} , <OVP>", "O1 hqk K1"),
    ("{K1} 's {O1} <OVP>", "O1 hqk K1"),
    ("{O1} has its head office in {C1} [ , {K1} ]", "O1 hqc C1, O1 hqk K1"),
    ("based in {K1} , {O1} employs {Q1} people", "O1 hqk K1"),
    ("{O1} , the {K1} company|bank|group , <OVP>", "O1 hqk K1"),
    ("{O1} , which has its headquarters in {K1} , <OVP>", "O1 hqk K1"),
    ("{O1} is based|headquartered in {K1}", "O1 hqk K1"),
    ("{P1} , {N1} , <VP>", "P1 age N1"),
    ("{P1} , aged {N1} , <VP>", "P1 age N1"),
    ("{P1} , who is {N1} , <VP>", "P1 age N1"),
    ("{P1} , {N1} years old , <VP>", "P1 age N1"),
    ("{P1} [ recently ] turned {N1}", "P1 age N1"),
    ("{P1} , now {N1} , <VP>", "P1 age N1"),
    ("at {N1} , {P1} is the youngest|oldest member of the team", "P1 age N1"),
    ("{P1} ( {N1} ) <VP>", "P1 age N1"),
    ("{P1} , {N1} , and {P2} , {N2} , <VPPL>", "P1 age N1, P2 age N2"),
    ("{P1} is|was married/VBN to {P2}", "P1 spouse P2"),
    ("{P1} married {P2} in {Y1} [ in {C1} ]", "P1 spouse P2"),
    ("{H1} and his wife , {F1} , <VPPL>", "H1 spouse F1"),
    ("{F1} and her husband {H1} <VPPL>", "F1 spouse H1"),
    ("{F1} , the wife of {H1} , <VP>", "F1 spouse H1"),
    ("{F1} , whose husband {H1} is a {T1} , <VP>", "F1 spouse H1, H1 title T1"),
    ("{H1} , who has been married/VBN to {F1} since {Y1} , <VP>", "H1 spouse F1"),
    ("{P1} and {P2} , who have been married/VBN for {Q1} years , <VPPL>", "P1 spouse P2"),
    ("{P1} wed {P2} in {C1}", "P1 spouse P2"),
    ("{P1} 's spouse , {P2} , <VP>", "P1 spouse P2"),
    ("{P1} was born in {C1} [ in {Y1} ]", "P1 cob C1, P1 dob Y1"),
    ("born in {C1} , {P1} moved to {C2} [ in {Y1} ]", "P1 cob C1, P1 res C2"),
    ("{P1} , a native of {C1} , <VP>", "P1 cob C1"),
    ("{P1} , who was born in {C1} , <VP>", "P1 cob C1"),
    ("{C1} native {P1} <VP>", "P1 cob C1"),
    ("{P1} was born and raised in {C1}", "P1 cob C1"),
    ("{P1} grew up in {C2} after being born in {C1}", "P1 cob C1, P1 res C2"),
    ("{P1} , born {D1} in {C1} , <VP>", "P1 dob D1, P1 cob C1"),
    ("{P1} ( born in {C1} ) <VP>", "P1 cob C1"),
    ("{P1} [ <ADV> ] lives in {C1}", "P1 res C1"),
    ("{P1} , a resident of {C1} , <VP>", "P1 res C1"),
    ("{P1} moved to {C1} in {Y1}", "P1 res C1"),
    ("{P1} has lived in {C1} for {Q1} years", "P1 res C1"),
    ("{P1} , of {C1} , <VP>", "P1 res C1"),
    ("{P1} , who now lives in {C1} , <VP>", "P1 res C1"),
    ("{P1} settled in {C1} [ in {Y1} ]", "P1 res C1"),
    ("{P1} grew up in {C1}", "P1 res C1"),
    ("{A1} {T1} {P1} <VP>", "P1 origin A1, P1 title T1"),
    ("{P1} , a {A1} citizen|national , <VP>", "P1 origin A1"),
    ("{P1} , who is {A1} , <VP>", "P1 origin A1"),
    ("{P1} , who holds {A1} citizenship , <VP>", "P1 origin A1"),
    ("{P1} , who comes from {K1} , <VP>", "P1 origin K1"),
    ("{P1} , of {A1} descent , <VP>", "P1 origin A1"),
    ("{P1} , whose family is from {K1} , <VP>", "P1 origin K1"),
    ("{P1} is a {A1} {T1}", "P1 origin A1, P1 title T1"),
    ("{P1} was born on {D1}", "P1 dob D1"),
    ("{P1} ( born {D1} ) <VP>", "P1 dob D1"),
    ("{P1} , born {D1} , <VP>", "P1 dob D1"),
    ("{P1} , who was born on {D1} in {C1} , <VP>", "P1 dob D1, P1 cob C1"),
    ("born on {D1} , {P1} <VP>", "P1 dob D1"),
    ("records show that {P1} was born on {D1}", "P1 dob D1"),
    ("{P1} , born in {Y1} , <VP>", "P1 dob Y1"),
]
NEGATIVE: list[tuple[str, str]] = [
    ("{P1} was not born in {C1} [ , but in {C2} ]", "P1 cob C2"),
    ("{P1} visited|toured {C1} [ in {Y1} ]", ""),
    ("{P1} flew to {C1} for talks with {P2}", ""),
    ("{P1} has never lived in {C1}", ""),
    ("{P1} spoke at a conference in {C1} [ <TIMEP> ]", ""),
    ("{P1} met {P2} in {C1}", ""),
    ("{P1} is not married to {P2}", ""),
    ("{P1} attended the wedding of {P2} and {P3}", "P2 spouse P3"),
    ("{P1} , a friend|rival|lawyer of {P2} , <VP>", ""),
    ("{P1} met the wife|husband of {P2}", ""),
    ("{P1} defeated|praised|criticized|interviewed {P2} [ in {C1} ]", ""),
    ("{P1} never worked for {O1}", ""),
    ("{P1} sued|criticized|praised {O1} [ <TIMEP> ]", ""),
    ("{P1} met with the {M1} of {O1}", ""),
    ("{P1} , a customer|critic of {O1} , <VP>", ""),
    ("{P1} toured the {O1} plant|factory|offices in {C1}", ""),
    ("{O1} opened a new office|branch|factory in {C1} [ , {K1} ]", ""),
    ("{O1} sells its products in {K1} and {K2}", ""),
    ("{O1} denied plans to move its headquarters to {C1}", ""),
    ("{O1} , which is based in {C1} , opened an office in {C2}", "O1 hqc C1"),
    ("{O1} plans to expand into {K1}", ""),
    ("{O1} hired {Q1} workers in {C1}", ""),
    ("{P1} , who has lived there for {Q1} years , <VP>", ""),
    ("{P1} said {Q1} people attended the meeting", ""),
    ("{P1} has {Q1} children", ""),
    ("{P1} , whose son|daughter was born on {D1} , <VP>", ""),
    ("{P1} , whose son|daughter was born in {C1} , <VP>", ""),
    ("{P1} joined {O1} on {D1}", "P1 emp O1"),
    ("{P1} married {P2} on {D1}", "P1 spouse P2"),
    ("{P1} met {A1} officials in {C1}", ""),
    ("{P1} criticized the {A1} government", ""),
    ("{P1} , who studied {A1} history , <VP>", ""),
    ("{P1} is not a {T1}", ""),
    ("{P1} met {P2} , {N1} , in {C1}", "P2 age N1"),
    ("{P1} , who is not related to {O1} founder {P2} , <VP>", "O1 fby P2"),
    ("{P1} denied that {P2} had applied for {A1} citizenship", ""),
    ("{P1} wants to become {M1} of {O1}", ""),
    ("{P1} turned down an offer to work for {O1}", ""),
    ("{P1} denied reports that {P2} was born in {C1}", ""),
    ("{H1} celebrates|celebrated his birthday on {D1}", ""),
]
_LABELS = tuple(RELATIONS.values())
_ALL = POSITIVE + NEGATIVE
_BY_LABEL: dict[str, list[tuple[str, str]]] = {
    label: [t for t in POSITIVE if any(f.split()[1] == short for f in t[1].split(",") if f.strip())]
    for short, label in RELATIONS.items()
}
# (subject type, object type) of every relation; negatives mostly use these so types alone do not decide.
_SIGNATURES = {(KIND_TYPE[f.split()[0][0]], KIND_TYPE[f.split()[2][0]])
               for _, facts in POSITIVE for f in facts.split(",") if f.strip()}

Piece = tuple[str, str, str]  # (word, POS tag, "") for a word; ("", "", slot key) for an entity slot


def _expand(text: str, ns: str, rng: random.Random, out: list[Piece], source: str) -> None:
    """Append the pieces of one random expansion of ``text`` (slots namespaced by ``ns``) to ``out``."""
    words = text.split()
    i = 0
    while i < len(words):
        word = words[i]
        if word == "[":
            depth, j = 1, i + 1
            while j < len(words) and depth:
                depth += {"[": 1, "]": -1}.get(words[j], 0)
                j += 1
            if depth:
                raise ValueError(f"template {source!r}: '[' without a matching ']'")
            if rng.random() < 0.5:
                _expand(" ".join(words[i + 1:j - 1]), ns, rng, out, source)
            i = j
            continue
        if word == "]":
            raise ValueError(f"template {source!r}: ']' without a matching '['")
        if "|" in word:
            _expand(rng.choice(word.split("|")).replace("_", " "), ns, rng, out, source)
        elif word.startswith("<") and word.endswith(">"):
            if word[1:-1] not in MACROS:
                raise ValueError(f"template {source!r}: unknown macro {word}")
            _expand(rng.choice(MACROS[word[1:-1]]), ns, rng, out, source)
        elif word.startswith("{") and word.endswith("}"):
            if word[1:2] not in KIND_TYPE:
                raise ValueError(f"template {source!r}: unknown slot kind in {word}")
            out.append(("", "", ns + word[1:-1]))
        else:
            word, _, tag = word.rpartition("/") if "/" in word else ("", "", word)
            word, tag = (word, tag) if word else (tag, LEXICON.get(tag, ""))
            if not tag:
                raise ValueError(f"template {source!r}: the word {word!r} has no POS tag in LEXICON")
            out.append((word, tag, ""))
        i += 1


def _entity(kind: str, rng: random.Random) -> list[tuple[str, str]]:
    """The (token, POS tag) pairs of a random entity of one slot kind."""
    if kind in "PHF":
        male = kind == "H" or (kind == "P" and rng.random() < 0.5)
        first, last, r = rng.choice(_MALE if male else _FEMALE), rng.choice(_LAST), rng.random()
        names = [last] if r < 0.12 else [first, rng.choice(_INITIALS), last] if r < 0.22 else [first, last]
        return [(w, "NNP") for w in names]
    if kind == "O":
        words = rng.choice(_ORG_STEM).split("_")
        if rng.random() < 0.6:
            words.append(rng.choice(_ORG_SECTOR))
        if rng.random() < 0.5:
            words.append(rng.choice(_ORG_SUFFIX))
        return [(w, "NNP") for w in words]
    if kind in "CK":
        return [(w, "NNP") for w in rng.choice(list(_CITY_COUNTRY) if kind == "C" else _COUNTRY).split("_")]
    if kind in "TM":
        return [(w, LEXICON[w]) for w in rng.choice(_TITLE if kind == "T" else _TOP_TITLE).split("_")]
    if kind == "A":
        return [(rng.choice(_NATIONALITY), "JJ")]
    if kind in "NQ":
        return [(str(rng.randint(18, 94) if kind == "N" else rng.randint(2, 60)), "CD")]
    year = (str(rng.randint(1930, 2012)), "CD")
    if kind == "Y":
        return [year]
    month, day = (rng.choice(_MONTHS), "NNP"), (str(rng.randint(1, 28)), "CD")
    return [month, day, (",", ","), year] if rng.random() < 0.7 else [day, month, year]


def _fresh_entity(kind: str, rng: random.Random, used: set[str]) -> tuple[list[tuple[str, str]], set[str]]:
    """An entity whose name (and surname or organisation stem) is not in ``used``, and its keys for ``used``."""
    while True:
        entity = _entity(kind, rng)
        keys = {" ".join(w for w, _ in entity)}
        keys |= {"surname " + entity[-1][0]} if kind in "PHF" else {"org " + entity[0][0]} if kind == "O" else set()
        if not keys & used:
            return entity, keys


def _facts(template: tuple[str, str], ns: str, present: dict[str, object]) -> dict[tuple[str, str], str]:
    """The template's facts whose two slots both occur in the sentence, keyed by (subject, object) slot."""
    facts: dict[tuple[str, str], str] = {}
    for fact in (f.split() for f in template[1].split(",") if f.strip()):
        if len(fact) != 3 or fact[1] not in RELATIONS:
            raise ValueError(f"template {template[0]!r}: malformed fact {' '.join(fact)!r}")
        subj, obj, label = ns + fact[0], ns + fact[2], RELATIONS[fact[1]]
        if subj not in present or obj not in present:
            continue
        pairs = [(subj, obj), (obj, subj)] if label == "per:spouse" else [(subj, obj)]
        for pair in pairs:
            if facts.setdefault(pair, label) != label:
                raise ValueError(f"template {template[0]!r}: the pair {pair} has two relations")
    return facts


Sentence = tuple[list[str], list[str], list[str], dict[str, tuple[int, int, str]], dict[tuple[str, str], str]]


def _sentence(template: tuple[str, str], rng: random.Random) -> Sentence:
    """Tokens, POS and NER tags, entity spans by slot, and facts of one sentence built around ``template``."""
    clauses: list[tuple[str, tuple[str, str]]] = [("a", template)]
    pieces: list[Piece] = []
    frame = rng.random()
    if frame < 0.2:
        _expand("<PRE>", "f", rng, pieces, "<PRE>")
    _expand(template[0], "a", rng, pieces, template[0])
    if 0.55 <= frame < 0.7:
        _expand("<POST>", "f", rng, pieces, "<POST>")
    elif frame >= 0.7:  # a second clause whose entities are distractors for the first one's (and back)
        clauses.append(("b", rng.choice(_ALL)))
        _expand("<CONJ>", "f", rng, pieces, "<CONJ>")
        _expand(clauses[1][1][0], "b", rng, pieces, clauses[1][1][0])
    pieces.append((".", ".", ""))

    tokens: list[str] = []
    pos: list[str] = []
    ner: list[str] = []
    spans: dict[str, tuple[int, int, str]] = {}
    used: set[str] = set()
    for word, tag, slot in pieces:
        if not slot:
            tokens.append(word)
            pos.append(tag)
            ner.append("O")
            continue
        if slot in spans:
            raise ValueError(f"template {template[0]!r}: slot {{{slot[1:]}}} occurs twice in one sentence")
        city = spans.get(slot[0] + "C" + slot[2:]) if slot[1] == "K" else None
        if city:  # {K1} after {C1} in one clause is the country of that city
            country = _CITY_COUNTRY["_".join(tokens[city[0]:city[1] + 1])]
            entity, keys = [(w, "NNP") for w in country.split("_")], set()
        else:
            entity, keys = _fresh_entity(slot[1], rng, used)
        used |= keys
        spans[slot] = (len(tokens), len(tokens) + len(entity) - 1, KIND_TYPE[slot[1]])
        tokens.extend(w for w, _ in entity)
        pos.extend(t for _, t in entity)
        ner.extend(KIND_TYPE[slot[1]] for _ in entity)
    for i, word in enumerate(tokens[:-1]):  # "a" / "an" agree with the next word
        if word in ("a", "an"):
            tokens[i] = "an" if tokens[i + 1][0] in "aeiouAEIOU" else "a"
    tokens[0] = tokens[0][:1].upper() + tokens[0][1:]
    facts: dict[tuple[str, str], str] = {}
    for ns, clause in clauses:
        facts.update(_facts(clause, ns, spans))
    return tokens, pos, ner, spans, facts


def _example(rng: random.Random) -> dict:
    """One random example (without its id); its label is drawn first, then a sentence that has such a pair."""
    label = rng.choice(_LABELS) if rng.random() >= NO_RELATION_SHARE else NO_RELATION
    for _ in range(1000):
        pool = _BY_LABEL[label] if label != NO_RELATION else NEGATIVE if rng.random() < 0.5 else POSITIVE
        tokens, pos, ner, spans, facts = _sentence(rng.choice(pool), rng)
        if label != NO_RELATION:
            candidates = [pair for pair, rel in facts.items() if rel == label]
        else:
            candidates = [(s, o) for s in spans for o in spans
                          if s != o and spans[s][2] in SUBJECT_TYPES and (s, o) not in facts]
            typed = [(s, o) for s, o in candidates if (spans[s][2], spans[o][2]) in _SIGNATURES]
            candidates = typed if typed and rng.random() < 0.9 else candidates
        if candidates:
            subj, obj = rng.choice(candidates)
            return {
                "relation": label, "token": tokens,
                "subj_start": spans[subj][0], "subj_end": spans[subj][1],
                "obj_start": spans[obj][0], "obj_end": spans[obj][1],
                "subj_type": spans[subj][2], "obj_type": spans[obj][2],
                "stanford_pos": pos, "stanford_ner": ner,
            }
    raise RuntimeError(f"no template yields a {label} pair; check the templates' facts")


def _split(split: str, n: int, seed: int, seen: set[str]) -> list[dict]:
    """``n`` examples whose sentences are not in ``seen`` (which is updated)."""
    rng = random.Random(f"tacred-demo:{seed}:{split}")
    examples: list[dict] = []
    for _ in range(50 * n + 1000):
        if len(examples) == n:
            break
        example = _example(rng)
        if " ".join(example["token"]) in seen:
            continue
        seen.add(" ".join(example["token"]))
        examples.append({"id": f"demo-{split}-{len(examples) + 1:06d}", **example})
    if len(examples) < n:
        raise RuntimeError(f"could only generate {len(examples)} distinct {split} sentences of {n} asked for")
    return examples


def generate_corpus(seed: int = 13, n_train: int = 3000, n_dev: int = 600, n_test: int = 600) -> dict[str, list[dict]]:
    """The splits ``train``/``dev``/``test`` as lists of TACRED dicts; the same seed gives the same corpus.

    No sentence occurs twice, within or across splits; about 60% of the examples are ``no_relation``.
    """
    sizes = {"train": n_train, "dev": n_dev, "test": n_test}
    for name, n in sizes.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n_{name} must be a non-negative integer, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    seen: set[str] = set()
    return {name: _split(name, n, seed, seen) for name, n in sizes.items()}


def write_corpus(out_dir: str | Path, seed: int = 13, n_train: int = 3000, n_dev: int = 600,
                 n_test: int = 600) -> dict[str, Path]:
    """Write ``train.json``, ``dev.json`` and ``test.json`` (TACRED JSON lists, UTF-8, no final newline) into
    ``out_dir``, each atomically."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a directory; cannot write the demo corpus there")
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, examples in generate_corpus(seed, n_train, n_dev, n_test).items():
        paths[name] = write_json(out / f"{name}.json", examples, indent=None, ensure_ascii=False, newline=False)
    return paths
