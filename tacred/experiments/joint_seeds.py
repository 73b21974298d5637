"""A joint model's seeds in the end-to-end table (``tacred end-to-end``, rows with a ``config``): each seed trained by
``tacred fit`` with the row's configuration (resumable), extracted from the raw test sentences by ``tacred extract``
at three operating points (the argmax of 0.5, the threshold chosen for F1 on dev, the one chosen there for
precision >= 0.8), scored strictly, with the model's own NER F1 on the same raw sentences and its relation F1 given
the gold entities; the record has the layout of the pipeline rows' (``end_to_end.json``), so one table holds both."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.experiments.ablation import run_dir
from tacred.io import read_json, write_json

if TYPE_CHECKING:
    from tacred.experiments.end_to_end import Model, Spec
    from tacred.inference.joint import JointPredictor

FIT_DONE = "fit_done.json"  # written once a seed's tacred fit has ended
ARGMAX = 0.5  # a relation when its sigmoid says more likely than not


def _dev_threshold(predictor: JointPredictor, dev: Path, min_precision: float | None) -> float:
    """The relation threshold chosen on the dev sentences' gold words (as the fit chooses it)."""
    from tacred.datasets.spert_layout import read_sentences
    from tacred.evaluation.joint_scores import choose_threshold

    sentences = read_sentences(dev, predictor.types)
    gold, found = _facts(predictor, sentences)
    return choose_threshold(gold, found, min_precision)[0]


def _facts(predictor: JointPredictor, sentences: list[Any], gold_entities: bool = False) -> tuple[list, list]:
    """(gold, found) facts of each sentence, found relations as candidates; ``gold_entities``: the relations of the
    gold entity pairs (the relation step alone)."""
    from tacred.evaluation.joint_scores import SentenceFacts

    gold = []
    for s in sentences:
        ents = [(e.start, e.end, e.type) for e in s.entities]
        gold.append(SentenceFacts(set(ents), {(ents[h], ents[t], kind) for kind, h, t in s.relations}))
    if gold_entities:
        results = predictor.read_candidates([list(s.tokens) for s in sentences],
                                            [[(e.start, e.end, e.type) for e in s.entities] for s in sentences])
    else:
        results = predictor.read_candidates([list(s.tokens) for s in sentences])
    found = []
    for entities, candidates in results:
        facts = SentenceFacts({(e.start, e.end, e.type) for e in entities})
        for h, t, rel, p in candidates:
            head, tail = entities[h], entities[t]
            facts.candidates.append((((head.start, head.end, head.type), (tail.start, tail.end, tail.type), rel), p))
        found.append(facts)
    return gold, found


def gold_entity_f1(predictor: JointPredictor, test: Path) -> float:
    """Strict relation micro-F1 on the test sentences given their gold entities (the pipeline rows' gold pairs)."""
    from tacred.datasets.spert_layout import read_sentences
    from tacred.evaluation.joint_scores import joint_scores, relations_at

    gold, found = _facts(predictor, read_sentences(test, predictor.types), gold_entities=True)
    for f in found:
        f.relations = relations_at(f, predictor.threshold)
    return joint_scores(gold, found, predictor.types.entities, predictor.types.relations)["strict"]["micro"]["f1"]


def raw_text_entities(predictor: JointPredictor, documents: Path) -> dict[str, set]:
    """The entities the model finds in each document of ``documents`` (character spans and types), each document one
    sentence, as ``tacred extract --one_sentence`` reads it."""
    from tacred.extraction.documents import read_documents
    from tacred.extraction.pipeline import Extraction

    docs = [d for d in read_documents([str(documents)]) if hasattr(d, "text")]
    texts = Extraction(predictor, predictor.spacy_model, one_sentence=True)([d.text for d in docs], [d.id for d in docs])
    return {d.id: {((m.start, m.end), m.type) for _, m, _ in t.entities} for d, t in zip(docs, texts, strict=True)}


def _dev_file(run: Path) -> Path:
    """The dev file the run was trained with (its config.yaml)."""
    import yaml

    data = (yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8")) or {}).get("data") or {}
    init = data.get("init_args") or data
    name = Path(str(init.get("dev_file") or "dev.json"))
    return name if name.is_absolute() or not init.get("data_dir") else Path(str(init["data_dir"])) / name


def run_joint_seed(spec: Spec, model: Model, seed: int, num_threads: int = 1) -> Path:
    """Train (or resume) one seed of a joint row, then extract, score and record it; each step is skipped when its
    output is there."""
    import torch

    from tacred.checkpoints import read_checkpoint, trained_seconds
    from tacred.datasets.conll04 import read_conll04
    from tacred.evaluation.end_to_end import gold_documents, score_entities
    from tacred.experiments.end_to_end import OPERATING_POINTS, _step, record_path, score_relations_of
    from tacred.experiments.results import provenance
    from tacred.inference.joint import JointPredictor

    variant = model.variant
    record = record_path(spec, variant, seed, model)
    if record.exists() and all(point in read_json(record) for point in OPERATING_POINTS):
        return record
    run = run_dir(spec.runs_dir, variant, seed)
    started = {**provenance(), "num_threads": num_threads}
    if not (run / FIT_DONE).exists():
        _step(["fit", "--config", str(model.config), "--seed_everything", str(seed), "--run_dir", str(run)],
              run.parent / f"{run.name}.log")
        write_json(run / FIT_DONE, {**started, "machine": platform.processor() or platform.machine()})
    best = run / "checkpoints" / "best.ckpt"
    checkpoint = read_checkpoint(best)
    before = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        predictor = JointPredictor(checkpoint, best, device="cpu")
        dev = _dev_file(run)
        thresholds = {"argmax": ARGMAX, "dev_f1": predictor.threshold,
                      "dev_p80": _dev_threshold(predictor, dev, 0.8)}
        gold = gold_documents(read_conll04(spec.gold), spec.gold.stem)
        points = {}
        for point, threshold in thresholds.items():
            extracted = run / f"extracted_{point}"
            if not (extracted / "summary.json").exists():
                _step(["extract", str(spec.documents), "--ckpt_path", str(best), "--threshold", str(threshold),
                       "--output", str(extracted), "--num_threads", str(num_threads), "--one_sentence"],
                      run / f"extract_{point}.log")
            points[point] = {"threshold": threshold, **score_relations_of(gold, extracted)}
        entities = score_entities(gold, raw_text_entities(predictor, spec.documents))
        gold_pairs = gold_entity_f1(predictor, spec.gold)
    finally:
        torch.set_num_threads(before)
    epochs = int(checkpoint.get("epoch", 0)) + 1
    last = read_checkpoint(run / "checkpoints" / "last.ckpt")
    seconds = trained_seconds(last)
    last_epochs = int(last.get("epoch", 0)) + 1
    record.parent.mkdir(parents=True, exist_ok=True)
    write_json(record, {
        "variant": variant, "seed": seed, "checkpoint": best.name, "config": str(model.config),
        "gold": str(spec.gold), "documents": str(spec.documents), "gold_pairs_f1": gold_pairs,
        **points, "entities": entities,
        "training": {"best_epoch": epochs, "epochs": last_epochs, "seconds": seconds,
                     "seconds_per_epoch": None if seconds is None else round(seconds / last_epochs, 1),
                     **read_json(run / FIT_DONE)},
        **started,
    })
    return record
