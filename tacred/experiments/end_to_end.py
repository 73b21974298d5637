"""End-to-end results over a seed sweep (CoNLL04): relations from raw text, scored strictly, five seeds a recipe.

``tacred ablate`` trains and tests each recipe's relation model on the gold pairs, one run folder per seed. For each
finished run, :func:`run_seed` adds what extraction from raw text needs and scores it: a NER trained on the
dataset's own entities with the run's seed (``RUN/ner``, where ``tacred extract`` finds it), ``tacred extract`` over
the raw test sentences (``RUN/extracted``) and the strict score with the NER's own F1
(``OUT/VARIANT/seed_S/end_to_end.json``, OUT being the sweep's results folder). Every step is skipped when its output
is there, so the same command goes on where it stopped. :func:`compare` then writes the table (mean ± sample std over
seeds) beside published end-to-end systems, from the stored records alone.

A spec (YAML, ``docs/results/conll04/end_to_end.yaml``) names the sweep, the gold data, the documents and the rows;
``tacred end-to-end SPEC`` runs the missing seeds and ``tacred compare SPEC --readme README.md`` renders the table.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tacred.experiments import tables
from tacred.experiments.ablation import RESULT_FILE, run_dir
from tacred.experiments.tables import Goal, Published, Row, TableError
from tacred.io import read_json, write_json

RECORD_FILE = "end_to_end.json"
SUMMARY_FILE = "end_to_end_summary.json"
TABLE_FILE = "end_to_end.md"
NER_DONE = "training.json"  # the last file `tacred ner train` writes
# what a row's `target` may set, and the entry of its summary each is held against
GOALS = {"micro_f1": Goal("micro ≥ {:.1f}", "micro_f1_mean"), "ner_f1": Goal("NER ≥ {:.1f}", "ner_f1_mean")}
SECTION_KEYS = ("results", "runs_dir", "gold", "train_data", "documents", "data_dir", "ner_epochs", "operating_point",
                "out")
MODEL_KEYS = ("variant", "variants", "seeds", "ner", "readme", "config")  # beside every table's row keys
# how each seed's relations are decided: the plain argmax; one no-relation threshold chosen on the gold dev pairs for
# F1; per-relation thresholds chosen there for precision >= 0.8 (`tacred threshold tune` with these options). All are
# recorded; the spec's `operating_point` is the table's
TUNING = {"dev_f1": [], "dev_p80": ["--min_precision", "0.8"]}
OPERATING_POINTS = ("argmax", *TUNING)
# (summary key, record path): what the table averages over seeds; "OP" is the operating point's entry
MEASURES = {
    "micro_precision": ("OP", "relations", "strict", "micro", "precision"),
    "micro_recall": ("OP", "relations", "strict", "micro", "recall"),
    "micro_f1": ("OP", "relations", "strict", "micro", "f1"),
    "macro_f1": ("OP", "relations", "strict", "macro", "f1"),
    "boundaries_f1": ("OP", "relations", "boundaries", "micro", "f1"),
    "ner_f1": ("entities", "micro", "f1"),
    "gold_pairs_f1": ("gold_pairs_f1",),
}


class EndToEndError(TableError):
    """A run, a record or a step of a seed that cannot be used (the message names the file and the entry)."""


@dataclass(frozen=True)
class Model(Row):
    """One row of the application: the variant of the sweep its seeds come from and the seeds that complete it.

    ``variants``: more than one where a recipe's seeds were trained under more than one of the sweep's variants (one
    recipe in fp32 and with bf16 autocast, say); each seed then comes from the variant that trained it, and a seed
    trained under two of them is an error, so no seed counts twice. ``seeds``: the row's seeds, 1 to N for
    ``seeds: N`` in the spec, or the list it names (a recipe whose seed 1 cannot be retrained, say)."""

    variants: tuple[str, ...]
    seeds: tuple[int, ...]
    ner: str | None = None  # a key of the spec's `ners`; None: each run trains its own (`tacred ner train` defaults)
    readme: bool = True  # False: the row is in end_to_end.md (and the summary) but not in README's table
    config: str | None = None  # a joint model's tacred fit configuration: its seeds train themselves (joint_seeds.py)

    @property
    def variant(self) -> str:
        """The first of the row's variants: where a seed that none of them has trained yet is waited for."""
        return self.variants[0]

    @property
    def record_file(self) -> str:
        """The row's record in each seed's results folder: one per NER, so rows of one sweep with different NERs
        keep their own."""
        return RECORD_FILE if self.ner is None else f"end_to_end_ner_{self.ner}.json"


@dataclass(frozen=True)
class NerRecipe:
    """A NER that rows of the table may share: ``tacred ner train`` with ``args`` (after the spec's ``--max_epochs``
    ``ner_epochs``, so they may change it), trained once a seed under ``RUNS/ner/KEY/seed_S``."""

    key: str
    name: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Spec:
    path: Path
    title: str
    measure: str
    marker: str
    results: Path  # the sweep's --out (records go beside its result.json files)
    runs_dir: Path  # the sweep's --runs_dir (checkpoints; NER and extraction are written there)
    gold: Path  # the gold test file (SpERT's layout)
    train_data: Path  # the release folder the NER trains on (train and dev)
    documents: Path  # the test sentences as documents for tacred extract
    data_dir: Path  # the converted dataset (its dev pairs tune the threshold)
    ner_epochs: int
    operating_point: str
    models: tuple[Model, ...]
    published: tuple[Published, ...]  # each with its `ner_f1` (or None), `relation_f1` and its `average`
    ners: dict[str, NerRecipe] = field(default_factory=dict)
    out: Path | None = None  # where the table and the summary go (the spec's `out`, relative to its folder)

    def inputs(self) -> dict[str, Path]:
        """The files and folders the steps read, by their keys in the spec."""
        return {"gold": self.gold, "train_data": self.train_data, "documents": self.documents,
                "data_dir": self.data_dir}


def check_inputs(spec: Spec) -> None:
    """Every file and folder the steps read is there: checked before the first seed's NER trains."""
    for key, path in spec.inputs().items():
        if not path.exists():
            raise EndToEndError(f"{spec.path}, end_to_end: '{key}' {path}: no such file or folder (paths are relative "
                                "to the working directory)")


def load_spec(path: str | Path) -> Spec:
    """Read and check a spec (:mod:`tacred.experiments.tables` reads the keys every table shares); paths in it are
    relative to the working directory, ``results`` and ``out`` to the spec's folder."""
    path = Path(path)
    where = str(path)
    data = tables.read_spec(path, ("end_to_end", "ners"))
    if not isinstance(data.get("end_to_end"), dict):
        raise TableError(f"{where}: expected a mapping with an 'end_to_end' section")
    e2e, section = data["end_to_end"], f"{where}, end_to_end"
    tables.check_keys(e2e, SECTION_KEYS, section)
    point = e2e.get("operating_point", "dev_f1")
    if point not in OPERATING_POINTS:
        raise TableError(f"{section}: operating_point must be one of {', '.join(OPERATING_POINTS)}, got {point!r}")
    epochs = e2e.get("ner_epochs", 30)
    if type(epochs) is not int or epochs < 1:
        raise TableError(f"{section}: 'ner_epochs' must be a whole number of epochs, at least 1, got {epochs!r}")
    ners = {}
    for at, entry in tables.entries(data, "ners", where):
        recipe = _ner_recipe(entry, at)
        if recipe.key in ners:
            raise TableError(f"{at}: the key {recipe.key!r} is used twice")
        ners[recipe.key] = recipe
    rows = tables.read_rows(data, where, MODEL_KEYS, GOALS)
    inputs = {key: Path(tables.text(e2e, key, section)) for key in ("runs_dir", "gold", "train_data", "documents",
                                                                     "data_dir")}
    out = e2e.get("out")
    return Spec(path, title=tables.text(data, "title", where), measure=tables.text(data, "measure", where),
                marker=tables.text(data, "marker", where, ""),
                results=path.parent / tables.text(e2e, "results", section), **inputs, ner_epochs=epochs,
                operating_point=point, models=tuple(_model(at, entry, row, ners) for at, entry, row in rows),
                published=tables.read_published(data, where, PUBLISHED_FIGURES), ners=ners,
                out=None if out is None else path.parent / tables.text(e2e, "out", section))


def _average(entry: dict[str, Any], key: str, where: str) -> str:
    """Which average a published relation F1 is, and so the column it is shown in."""
    value = tables.text(entry, key, where)
    if value not in ("micro", "macro"):
        raise TableError(f"{where}: '{key}' must be micro or macro, got {value!r}")
    return value


# a published system's figures as the paper prints them: NER F1 where it gives one, strict relation F1, its average
PUBLISHED_FIGURES = {"ner_f1": tables.optional_number, "relation_f1": tables.number, "average": _average}


def _model(where: str, entry: dict[str, Any], row: dict[str, Any], ners: dict[str, NerRecipe]) -> Model:
    """A row's own keys: its sweep variant(s) and seeds, a NER of the spec's, whether README shows it, and a joint
    model's configuration."""
    ner = entry.get("ner")
    if ner is not None and ner not in ners:
        raise TableError(f"{where}: 'ner' {ner!r} is none of the spec's ners ({', '.join(ners) or 'none listed'})")
    readme = entry.get("readme", True)
    if not isinstance(readme, bool):
        raise TableError(f"{where}: 'readme' must be true or false, got {readme!r}")
    config = entry.get("config")
    if config is not None and (not isinstance(config, str) or ner is not None or "variants" in entry):
        raise TableError(f"{where}: 'config' names a joint model's configuration file, with one 'variant' (its "
                         "folder name) and no 'ner' (the joint model finds its own entities)")
    return Model(**row, variants=_variants(entry, where), seeds=_seeds(entry, where), ner=ner, readme=readme,
                 config=config)


def _plain_name(value: str, where: str, key: str) -> str:
    """A name that becomes one folder under the sweep's folders: no path separator, not ``.`` or ``..``."""
    if "/" in value or "\\" in value or value.strip() in (".", "..") or value != value.strip():
        raise TableError(f"{where}: '{key}' {value!r} must be the name of one folder (a sweep variant), not a path")
    return value


def _variants(entry: dict[str, Any], where: str) -> tuple[str, ...]:
    """A row's sweep variants: ``variant: NAME`` or ``variants: [NAME, ...]`` (one of the two)."""
    if ("variant" in entry) == ("variants" in entry):
        raise TableError(f"{where}: needs 'variant' (one sweep variant) or 'variants' (a list), not both")
    if "variant" in entry:
        return (_plain_name(tables.text(entry, "variant", where), where, "variant"),)
    names = entry["variants"]
    if (not isinstance(names, list) or not names or len(set(names)) < len(names)
            or not all(isinstance(n, str) and n.strip() for n in names)):
        raise TableError(f"{where}: 'variants' must be a list of distinct variant names, got {names!r}")
    return tuple(_plain_name(n, where, "variants") for n in names)


def _seeds(entry: dict[str, Any], where: str) -> tuple[int, ...]:
    """A row's seeds: ``seeds: N`` (1 to N) or ``seeds: [S, ...]`` (distinct positive seeds, in that order)."""
    if "seeds" not in entry:
        raise TableError(f"{where}: needs 'seeds'")
    seeds = entry["seeds"]
    listed = list(range(1, seeds + 1)) if type(seeds) is int else seeds
    if (not isinstance(listed, list) or not listed or len(set(listed)) < len(listed)
            or not all(type(s) is int and s > 0 for s in listed)):
        raise TableError(f"{where}: 'seeds' must be a positive number or a list of distinct positive seeds, "
                         f"got {seeds!r}")
    return tuple(listed)


def _ner_recipe(entry: dict[str, Any], where: str) -> NerRecipe:
    """A ``ners`` entry (key, name, args); ``tacred ner train`` checks the options themselves when it runs (the first
    step of each seed)."""
    tables.check_keys(entry, ("key", "name", "args"), where)
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise TableError(f"{where}: 'args' must be a list of texts (tacred ner train options), got {args!r}")
    if {"--data", "--out", "--seed"} & {a.split("=")[0] for a in args}:
        raise TableError(f"{where}: 'args' cannot set --data, --out or --seed (the spec and the seed do)")
    key = tables.text(entry, "key", where)
    if not key.replace("_", "").isalnum():
        raise TableError(f"{where}: 'key' {key!r} must be letters, digits and underscores (it names folders)")
    return NerRecipe(key, tables.text(entry, "name", where), tuple(args))


def is_end_to_end(path: str | Path) -> bool:
    """Whether the spec at ``path`` tabulates end-to-end extraction (an ``end_to_end`` section) rather than scores
    on gold pairs; a file that cannot be read is left to the loader's errors."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and "end_to_end" in data


def record_path(spec: Spec, variant: str, seed: int, model: Model | None = None) -> Path:
    return run_dir(spec.results, variant, seed) / (RECORD_FILE if model is None else model.record_file)


def _step(command: list[str], log: Path) -> None:
    """Run one ``tacred`` step in a subprocess, its output in ``log``; a failure names the command and the log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as out:
        done = subprocess.run([sys.executable, "-m", "tacred", *command], stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        raise EndToEndError(f"tacred {command[0]} failed (exit {done.returncode}; log {log}): " + " / ".join(tail))


def score_ner(gold_file: Path, ner: Path, num_threads: int) -> dict[str, Any]:
    """The F1 of the NER in ``ner`` over every gold entity of ``gold_file``, run with the ``num_threads`` torch threads
    that ``tacred extract`` gets: a transformer NER under bf16 autocast finds slightly other entities with another
    thread count (the train-and-dev MPNet NER of seed 5: 957 of 1,079 right with one thread, 955 with two)."""
    import torch

    from tacred.datasets.conll04 import read_conll04, spacy_entities
    from tacred.evaluation.end_to_end import gold_documents, score_entities
    from tacred.ner.training import BEST
    from tacred.text.spacy_pipeline import load_spacy

    sentences = read_conll04(gold_file)
    before = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        return score_entities(gold_documents(sentences, gold_file.stem),
                              spacy_entities(sentences, gold_file.stem, load_spacy(str(ner / BEST))))
    finally:
        torch.set_num_threads(before)


def score_relations_of(gold: dict[str, Any], extracted: Path) -> dict[str, Any]:
    """The strict, boundaries-only and argument scores of what ``tacred extract`` wrote into ``extracted``."""
    from tacred.evaluation.end_to_end import predicted_relations, score_relations
    from tacred.extraction.mention_files import mention_rows

    pred, repeated = predicted_relations(mention_rows([extracted]), gold)
    return {"relations": score_relations(gold, pred), "repeated": repeated}


def seed_variant(spec: Spec, model: Model, seed: int) -> str:
    """The variant of the row that trained ``seed`` (its ``tacred ablate`` result), else the row's first; an error
    when two of the row's variants trained it."""
    found = [v for v in model.variants if (run_dir(spec.results, v, seed) / RESULT_FILE).exists()]
    if len(found) > 1:
        raise EndToEndError(f"{spec.path}, model {model.key}: seed {seed} was trained under {' and '.join(found)}; "
                            f"keep one of {', '.join(str(run_dir(spec.results, v, seed)) for v in found)}")
    return found[0] if found else model.variant


def finished(spec: Spec, model: Model, seed: int) -> bool:
    """Whether this seed's record holds every operating point."""
    record = record_path(spec, seed_variant(spec, model, seed), seed, model)
    return record.exists() and all(point in read_json(record) for point in OPERATING_POINTS)


def trained(spec: Spec, model: Model, seed: int) -> bool:
    """Whether ``tacred ablate`` has finished (trained and tested) this seed of the model."""
    return (run_dir(spec.results, seed_variant(spec, model, seed), seed) / RESULT_FILE).exists()


def _tested_checkpoint(run: Path, result: dict[str, Any]) -> Path:
    """The checkpoint of the run folder ``run`` that its ``tacred ablate`` ``result`` was tested with."""
    return run / "checkpoints" / f"{result.get('checkpoint', 'best')}.ckpt"


def _same_training(run: Path, result: dict[str, Any], result_file: Path) -> None:
    """Refuse a run folder whose training is not the one ``result_file`` tested: a seed trained again (another
    machine's kernels, another thread count) is another model, and its end-to-end scores would stand beside the
    record's gold-pair F1 as if they were one model's. Told apart by the dev F1 of every epoch."""
    from tacred.experiments.ablation import dev_f1_by_epoch

    recorded = result.get("dev_curve")
    if recorded is None:  # a record from before dev curves were kept
        return
    found = dev_f1_by_epoch(run / "metrics.csv") if (run / "metrics.csv").is_file() else {}
    curve = [found[e] for e in sorted(found)]
    if len(curve) != len(recorded) or any(abs(a - b) > 1e-6 for a, b in zip(curve, recorded, strict=False)):
        shown = ", ".join(f"{100 * v:.2f}" for v in curve) or "none"
        raise EndToEndError(
            f"{run}: this training is not the one {result_file} tested (dev F1 per epoch {shown} against the "
            f"record's {', '.join(f'{100 * v:.2f}' for v in recorded)}): a retrained seed is another model; train it "
            f"under a variant of its own, or move the record away to measure this one")


def checkpoint_of(spec: Spec, model: Model, seed: int) -> Path:
    """Where the checkpoint that ``tacred ablate`` tested for this trained seed lies (in the sweep's runs folder)."""
    variant = seed_variant(spec, model, seed)
    return _tested_checkpoint(run_dir(spec.runs_dir, variant, seed),
                              read_json(run_dir(spec.results, variant, seed) / RESULT_FILE))


def run_seed(spec: Spec, model: Model, seed: int, num_threads: int = 1) -> Path | None:
    """NER, thresholds, extraction and score of one finished run of the sweep (None when its ``tacred ablate`` result
    is not in yet); each step is skipped when its output is there, and a record without one of
    :data:`OPERATING_POINTS` (written before it was added) gets it added, the rest kept as it is."""
    from tacred.experiments.results import provenance
    from tacred.ner.training import NER_FOLDER

    variant = seed_variant(spec, model, seed)
    record = record_path(spec, variant, seed, model)
    stored = read_json(record) if record.exists() else {}
    if all(point in stored for point in OPERATING_POINTS):
        return record
    result_file = record.parent / RESULT_FILE
    if not trained(spec, model, seed):
        return None
    result = read_json(result_file)
    run = run_dir(spec.runs_dir, variant, seed)
    checkpoint = _tested_checkpoint(run, result)
    if not checkpoint.exists():
        raise EndToEndError(f"{result_file}: its checkpoint {checkpoint} is missing (the sweep's --runs_dir is "
                            f"{spec.runs_dir}?)")
    _same_training(run, result, result_file)
    # what scores it, taken before the first step (the checkout may move while it runs, as tacred ablate's fits do)
    started = {**provenance(), "num_threads": num_threads}
    recipe = spec.ners[model.ner] if model.ner is not None else None
    # the run's own NER, or the recipe's for this seed (shared by the rows that name it); where this row extracts
    ner = run / NER_FOLDER if recipe is None else run_dir(spec.runs_dir / NER_FOLDER, recipe.key, seed)
    work = run if recipe is None else run / f"ner_{recipe.key}"
    if not (ner / NER_DONE).exists():
        _step(["ner", "train", "--data", str(spec.train_data), "--out", str(ner), "--seed", str(seed),
               "--max_epochs", str(spec.ner_epochs), *(recipe.args if recipe else ())], ner.parent / f"{ner.name}.log")
    from tacred.datasets.conll04 import read_conll04
    from tacred.evaluation.end_to_end import gold_documents

    gold = gold_documents(read_conll04(spec.gold), spec.gold.stem)
    points = {point: stored[point] for point in OPERATING_POINTS if point in stored}
    entities = stored.get("entities") or score_ner(spec.gold, ner, num_threads)  # the NER's own F1, once
    for point in OPERATING_POINTS:
        if point in points:
            continue
        threshold, value = "0", 0.0
        if point in TUNING:
            threshold_file = run / f"threshold_{point}.json"
            if not threshold_file.exists():
                _step(["threshold", "tune", "--ckpt_path", str(checkpoint), "--data_dir", str(spec.data_dir),
                       *TUNING[point], "--output", str(threshold_file)], run / f"threshold_{point}.log")
            threshold = str(threshold_file)
            tuned = read_json(threshold_file)
            value = tuned["relation_thresholds"] if "relation_thresholds" in tuned else tuned["no_relation_threshold"]
        extracted = work / f"extracted_{point}"
        _step(["extract", str(spec.documents), "--ckpt_path", str(checkpoint), "--ner", str(ner),
               "--threshold", threshold, "--output", str(extracted), "--num_threads", str(num_threads)],
              work / f"extract_{point}.log")
        points[point] = {"threshold": value, **score_relations_of(gold, extracted)}
    ner_record = read_json(ner / NER_DONE)
    added = {point: started for point in OPERATING_POINTS if stored and point not in stored}
    write_json(record, {
        "variant": variant, "seed": seed, "checkpoint": checkpoint.name,
        "gold": str(spec.gold), "documents": str(spec.documents),
        "gold_pairs_f1": 100 * float(result["f1"]),
        **points, "entities": entities,
        **({"ner": recipe.key, "ner_folder": str(ner)} if recipe else {}),
        "ner_training": {k: ner_record.get(k) for k in ("encoder", "base_model", "seed", "max_epochs", "seconds",
                                                        "spacy", "learn_rate", "bf16", "head_rate", "shape_width",
                                                        "with_dev")
                             if k in ner_record}
        | {"dev_ents_f": (ner_record.get("dev_scores") or {}).get("ents_f")},
        # what scored it: kept from the record it extends (one from before num_threads was kept has none)
        **({k: stored[k] for k in started if k in stored} if stored else started),
        **({"added_later": stored.get("added_later", {}) | added} if added or "added_later" in stored else {}),
    })
    return record


def _value(record: dict[str, Any], path: tuple[str, ...], where: Path) -> float:
    value: Any = record
    for key in path:
        if not isinstance(value, dict) or key not in value:
            raise EndToEndError(f"{where}: no {'.'.join(path)}")
        value = value[key]
    return float(value)


def measure_model(spec: Spec, model: Model) -> dict[str, Any]:
    """A row's figures over those of its seeds that have a record: per measure, the values per seed (by seed) and
    their mean and sample std (two decimals)."""
    records = sorted((seed, path) for variant in model.variants for seed in model.seeds
                     if (path := run_dir(spec.results, variant, seed) / model.record_file).exists())
    seeds, values, variants = [], {key: [] for key in MEASURES}, []
    for seed, path in records:
        if seeds and seeds[-1] == seed:
            raise EndToEndError(f"{spec.path}, model {model.key}: seed {seed} has two records ({path} and another "
                                f"of {', '.join(model.variants)}); keep one")
        record = read_json(path)
        seeds.append(seed)
        variants.append(path.parent.parent.name)
        for key, where in MEASURES.items():
            values[key].append(_value(record, tuple(spec.operating_point if k == "OP" else k for k in where), path))
    # one variant: its name; several: each seed's (in the order of "seeds")
    row: dict[str, Any] = ({"variant": model.variant} if len(model.variants) == 1 else {"variants": variants}) | {
        "seeds": seeds, "complete": set(seeds) == set(model.seeds)}
    for key, found in values.items():
        row |= tables.spread(key, found)
    if model.target and row["complete"]:
        row["targets"] = tables.verdicts(model.target, row, GOALS)
    return row


def measure(spec: Spec) -> dict[str, Any]:
    return {"title": spec.title, "measure": spec.measure,
            **{m.key: {"name": m.name, "inputs": m.inputs, **measure_model(spec, m)} for m in spec.models},
            "published": [p.record() for p in spec.published]}


def render_markdown(spec: Spec, summary: dict[str, Any], readme: bool = False) -> str:
    """The table: the application's rows (mean ± std over seeds, the target) and the published systems (their strict
    relation F1 in the micro or the macro column, as printed), then the sources; ``readme``: without the rows the spec
    keeps out of README (``readme: false``)."""
    figures = ("ner_f1", "micro_f1", "micro_precision", "micro_recall", "macro_f1")  # the columns after "seeds"
    rows = []
    for model in spec.models:
        if readme and not model.readme:
            continue
        row = summary[model.key]
        rows.append([model.name, model.inputs, str(len(row["seeds"])),
                     *(tables.mean_std_cell(row, key) for key in figures),
                     tables.target_cell(row, GOALS, len(model.seeds))])
    for p in spec.published:
        figure, ner = f"{p.figures['relation_f1']:.2f}", p.figures["ner_f1"]
        micro, macro = (figure, "") if p.figures["average"] == "micro" else ("", figure)
        rows.append([p.name, p.inputs, "", "" if ner is None else f"{ner:.2f}", micro, "", "", macro, "published"])
    head = ["system", "inputs", "seeds", "NER F1", "relation F1 (strict, micro)", "P", "R", "macro-F1", "target"]
    lines = tables.markdown_table(head, "llrrrrrrl", rows)
    lines += ["", "Sources: " + "; ".join(f"{p.name}: {p.source}" for p in spec.published)]
    return "\n".join(lines) + "\n"


def table_folder(spec: Spec, out: str | Path | None = None) -> Path:
    """Where the table goes: ``out`` (``--out``), else the spec's own ``out``; a spec that names none needs ``--out``,
    so that no spec writes under fixed names beside itself by chance."""
    if out is not None:
        folder = Path(out)
    elif spec.out is not None:
        folder = spec.out
    else:
        raise EndToEndError(f"{spec.path}: no 'out' in its end_to_end section says where {TABLE_FILE} and "
                            f"{SUMMARY_FILE} go; add one (relative to the spec's folder) or give --out")
    if folder.exists() and not folder.is_dir():
        raise EndToEndError(f"{folder}: not a folder (where {TABLE_FILE} and {SUMMARY_FILE} go)")
    return folder


def compare(spec_path: str | Path, out: str | Path | None = None, readme: str | Path | None = None) -> list[Path]:
    """``end_to_end_summary.json`` and ``end_to_end.md`` (the title and what is measured above the table) in ``out``
    (else the spec's ``out``) from the stored records, and the table in ``readme`` between its markers; nothing is
    written when no row has a record."""
    spec = load_spec(spec_path)
    folder = table_folder(spec, out)
    if readme is not None:
        tables.readme_parts(Path(readme), spec.marker)  # a README without its markers fails before anything is written
    summary = measure(spec)
    if not any(summary[m.key]["seeds"] for m in spec.models):
        raise EndToEndError(f"{spec.path}: nothing measured (no row has a record under {spec.results}); no table "
                            "written")
    folder.mkdir(parents=True, exist_ok=True)
    page = tables.markdown_page(spec.title, spec.measure, render_markdown(spec, summary))
    return tables.write_results(folder / SUMMARY_FILE, summary, folder / TABLE_FILE, page, readme,
                                render_markdown(spec, summary, readme=True), spec.marker)


__all__ = ("EndToEndError", "Spec", "check_inputs", "compare", "finished", "load_spec", "measure", "render_markdown",
           "run_seed", "score_ner", "score_relations_of", "seed_variant", "table_folder", "trained")
