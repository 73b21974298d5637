"""A small corpus in SpERT's layout written by the tests (no licensed text): people, organisations and places in a
few sentence patterns with the relations CoNLL04 uses, enough for a tiny encoder to learn from in a few epochs."""

from __future__ import annotations

import json
import random
from pathlib import Path

PEOPLE = [["Maria", "Lopez"], ["John", "Smith"], ["Ana"], ["Peter", "van", "Dam"], ["Li", "Wei"], ["Omar"],
          ["Sara", "Kim"], ["Tom", "Baker"]]
ORGS = [["Acme", "Holdings"], ["Globex"], ["United", "Press", "Group"], ["Initech"], ["Blue", "Lake", "Bank"]]
PLACES = [["Boston"], ["New", "York"], ["Lyon"], ["Cape", "Town"], ["Oslo"], ["San", "Jose"]]
TYPES = {"entities": {"Peop": {}, "Org": {}, "Loc": {}},
         "relations": {"Work_For": {}, "Kill": {}, "OrgBased_In": {}, "Live_In": {}}}


def _sentence(rng: random.Random) -> dict:
    words: list[str] = []
    entities: list[dict] = []

    def add(parts: list[str], kind: str) -> int:
        entities.append({"type": kind, "start": len(words), "end": len(words) + len(parts)})
        words.extend(parts)
        return len(entities) - 1

    pattern = rng.randrange(4)
    if pattern == 0:
        p = add(rng.choice(PEOPLE), "Peop")
        words.extend(["works", "for"])
        o = add(rng.choice(ORGS), "Org")
        words.append("in")
        loc = add(rng.choice(PLACES), "Loc")
        relations = [{"type": "Work_For", "head": p, "tail": o}, {"type": "OrgBased_In", "head": o, "tail": loc}]
    elif pattern == 1:
        p = add(rng.choice(PEOPLE), "Peop")
        words.extend(["lives", "in"])
        loc = add(rng.choice(PLACES), "Loc")
        relations = [{"type": "Live_In", "head": p, "tail": loc}]
    elif pattern == 2:
        a = add(rng.choice(PEOPLE), "Peop")
        words.append("killed")
        b = add(rng.choice([x for x in PEOPLE if x != words[entities[a]["start"]:entities[a]["end"]]]), "Peop")
        words.extend(["last", "year"])
        relations = [{"type": "Kill", "head": a, "tail": b}]
    else:
        words.extend(["the", "weather", "in"])
        add(rng.choice(PLACES), "Loc")
        words.extend(["was", "fine"])
        relations = []
    words.append(".")
    return {"tokens": words, "entities": entities, "relations": relations}


def write_joint_corpus(folder: Path, seed: int = 0, sizes: tuple[int, int, int] = (48, 12, 12)) -> Path:
    """train.json, dev.json, test.json and types.json in ``folder``."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in zip(("train", "dev", "test"), sizes, strict=True):
        (folder / f"{name}.json").write_text(json.dumps([_sentence(rng) for _ in range(n)]), encoding="utf-8")
    (folder / "types.json").write_text(json.dumps(TYPES), encoding="utf-8")
    return folder


def joint_fit_args(corpus: Path, encoder: Path, run: Path, *extra: str) -> list[str]:
    """``tacred fit`` of the joint model (configs/conll04/joint_minilm.yaml, shrunk) on a corpus of
    :func:`write_joint_corpus` with a tiny encoder: 8 epochs in float32."""
    from tests.conftest import REPO

    return ["fit", "--config", str(REPO / "configs" / "conll04" / "joint_minilm.yaml"), "--model.pretrained",
            str(encoder), "--data.data_dir", str(corpus), "--data.train_file", "train.json", "--data.dev_file",
            "dev.json", "--data.test_file", "test.json", "--data.types_file", str(corpus / "types.json"),
            "--trainer.precision", "32-true", "--trainer.max_epochs", "8", "--model.lr", "3e-3", "--model.head_lr",
            "1e-2", "--model.warmup_ratio", "0", "--trainer.enable_model_summary", "false", "--run_dir", str(run),
            *extra]


def corpus_words() -> set[str]:
    """Every word of the corpus, lowercased (a tiny encoder's vocabulary)."""
    words = {w.lower() for group in (PEOPLE, ORGS, PLACES) for parts in group for w in parts}
    return words | {"works", "for", "in", "lives", "killed", "last", "year", "the", "weather", "was", "fine", "."}
