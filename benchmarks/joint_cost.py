"""The joint entity-and-relation model's cost beside the per-pair relation model's, in one run: encoder passes per
training epoch (counted), training seconds per epoch on the same encoder (timed), and extraction sentences/s of
joint MPNet against the MPNet pipeline (NER, then the relation model once per candidate pair) and spaCy's NER +
tagger, on CoNLL04's test sentences and on the demo documents.

Training rows build the models and their real batches through the library (``JointExtractor`` over
``JointDataModule``'s length-bucketed batches of 8 sentences; the transformer ``RelationExtractor`` over
``TacredDataModule``'s batches of 32 pairs), not through a Lightning Trainer: each timed step is the module's own
``training_step`` (forward and loss) under the precision's autocast, backward, gradient clipping at 1.0 and an AdamW
step, with untrained heads (speed does not depend on the weights). Each row runs in a fresh worker process, the rows
taking turns over ``--rounds``; seconds per epoch = the epoch's steps × the median step.

Extraction rows run ``tacred extract``'s own code (``DocumentExtractor`` and ``run_extraction``) in a fresh worker
each. Their speed depends on how many entities and pairs the models find, so give trained models: ``--joint RUN``
(a joint MPNet run), ``--pipeline RUN`` (an MPNet relation run) and ``--ner FOLDER`` (its MPNet NER, ``tacred ner
train --encoder transformer --pretrained mpnet``). Without them the rows use stand-ins, each named in the table:
joint MPNet trained for one step with its entity classifier set to find no entity (the encoder pass and the span
grid, no pair: less than a trained model's cost), and the MPNet relation model trained for one step behind spaCy's
stock NER (its candidate pairs, without the MPNet NER's own encoder pass: less than the real pipeline's cost).

    python benchmarks/joint_cost.py [--encoders minilm,mpnet] [--rounds 3] [--steps 20]
        [--joint RUN --pipeline RUN --ner FOLDER] [--spert data/conll04_spert] [--pairs data/conll04]

``--extraction_precisions 32,bf16``: the joint and pipeline rows at each ``tacred extract --precision`` (every
encoder of a row at it, the pipeline's NER included; default 32). ``--chunk_size N``: documents a chunk, as ``tacred
extract --chunk_size`` (default: its default). ``--extraction_only``: the extraction table alone.
``--training_only``: the passes and training tables alone;
``ATEN_CPU_CAPABILITY=avx2 python benchmarks/joint_cost.py --training_only --precision 32-true`` is what an AVX2-only
machine (no bf16 instructions) takes, on this one.

``--quick``: tiny BERT and tiny MPNet encoders, the tiny joint corpus in SpERT's layout (tests/joint_corpus.py) and
its pairs, two steps, one round, every row in this process: a smoke test, not a measurement.
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, Table, answered_as_worker, autocast, machine_line, precisions, run_worker  # noqa: E402

from tacred.extraction.runner import CHUNK_SIZE  # noqa: E402  (tacred extract's documents a chunk)

SPERT_DIR = REPO / "data" / "conll04_spert"  # SpERT's release files (make conll04-data)
PAIRS_DIR = REPO / "data" / "conll04"  # tacred convert conll04's pairs and documents (make conll04-data)
SPLITS = {"train": "conll04_train.json", "dev": "conll04_dev.json", "test": "conll04_test.json"}
TYPES_FILE = "conll04_types.json"
JOINT_BATCH, PAIR_BATCH = 8, 32  # configs/conll04/joint_*.yaml and configs/conll04/{transformer,mpnet}.yaml
ENCODERS = {"minilm": "MiniLM (all-MiniLM-L6-v2)", "mpnet": "MPNet (all-mpnet-base-v2)"}
DEMO_DOCUMENTS = 100  # the extraction rows' demo documents (48 in quick mode)
TARGET_PASSES, TARGET_SPEED = 6.0, 5.0  # the targets: fewer encoder passes an epoch; extraction speed-up


@dataclass
class Inputs:
    """Where one run reads its data and encoders: CoNLL04's two layouts and each encoder's name or folder."""

    spert: Path
    pairs: Path
    encoders: dict[str, str]
    source: str


# -- training: one row in a worker -----------------------------------------------------------------
def _joint(task: dict[str, Any]) -> tuple[Any, Any, list[list[int]]]:
    from tacred.data.batching import BucketBatchSampler
    from tacred.training.joint_datamodule import JointDataModule
    from tacred.training.joint_module import JointExtractor

    spert = Path(task["spert"])
    dm = JointDataModule(data_dir=str(spert), train_file=SPLITS["train"], dev_file=SPLITS["dev"],
                         test_file=SPLITS["test"], types_file=str(spert / TYPES_FILE), batch_size=JOINT_BATCH,
                         tokenizer=task["pretrained"])
    model = JointExtractor(pretrained=task["pretrained"], types=dm.types, pieces=dm.pieces, max_width=dm.max_width,
                           signatures=dm.signatures)
    split = dm.encoded("train")
    return model, split, list(BucketBatchSampler(split.lengths, JOINT_BATCH, shuffle=True, seed=0))


def _pairs(task: dict[str, Any]) -> tuple[Any, Any, list[list[int]]]:
    from tacred.data.batching import BucketBatchSampler
    from tacred.models.config import NetworkConfig
    from tacred.training.datamodule import TacredDataModule
    from tacred.training.module import RelationExtractor

    pairs = Path(task["pairs"])
    dm = TacredDataModule(data_dir=str(pairs), labels=str(pairs / "labels.json"), entity_masking=False,
                          tokenizer=task["pretrained"], batch_size=PAIR_BATCH)
    network = NetworkConfig(encoder="transformer", pretrained=task["pretrained"], dropout=0.1)
    model = RelationExtractor(vocab=dm.vocab, network=network, optimizer="adamw", lr=5e-5, weight_decay=0.01)
    split = dm.encoded("train")
    return model, split, list(BucketBatchSampler(split.lengths, PAIR_BATCH, shuffle=True, seed=0))


def train_worker(task: dict[str, Any]) -> dict[str, Any]:
    """``{"model": "joint"|"pairs", "pretrained", "spert", "pairs", "precision", "steps", "warmup", "threads"}`` →
    the epoch's steps and examples and each timed step's seconds."""
    import torch

    torch.set_num_threads(task["threads"])
    torch.manual_seed(0)
    model, split, batches = (_joint if task["model"] == "joint" else _pairs)(task)
    model.log = lambda *args, **kwargs: None  # training_step logs to a Trainer; there is none here
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5, weight_decay=0.01)
    model.train()
    seconds = []
    for k in range(task["warmup"] + task["steps"]):
        start = time.perf_counter()
        batch = split.collate(batches[k % len(batches)])  # collation is part of a step, as in the DataLoader
        with autocast(task["precision"]):
            loss = model.training_step(batch, k)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        if k >= task["warmup"]:
            seconds.append(time.perf_counter() - start)
    return {"steps_per_epoch": len(batches), "examples": len(split), "step_seconds": seconds,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# -- extraction: one row in a worker ---------------------------------------------------------------
def extract_worker(task: dict[str, Any]) -> dict[str, Any]:
    """``{"what": "spacy_tagger"|"extract", "documents": a JSON Lines file, "ckpt", "ner", "one_sentence", "threads",
    "chunk_size", "no_entities"}`` → sentences/s over every document after a warm-up pass over the first chunk, pairs
    and entities per sentence, peak RSS."""
    import torch

    from tacred.devices import keep_freed_memory

    keep_freed_memory()
    torch.set_num_threads(task["threads"])
    docs = [json.loads(line) for line in Path(task["documents"]).read_text(encoding="utf-8").splitlines() if line]
    chunk = task["chunk_size"]
    counted = {"sentences": 0, "pairs": 0, "relations": 0}
    if task["what"] == "spacy_tagger":  # as extract_throughput.py's row: spaCy's NER + tagger, sentencizer first
        import spacy

        from tacred.text.spacy_pipeline import DEFAULT_MODELS

        nlp = spacy.load(next(m for m in DEFAULT_MODELS if spacy.util.is_package(m)),
                         exclude=["parser", "attribute_ruler", "lemmatizer"])
        nlp.add_pipe("sentencizer", first=True)
        list(nlp.pipe((d["text"] for d in docs[:chunk]), batch_size=chunk))  # warm-up
        start = time.perf_counter()
        for doc in nlp.pipe((d["text"] for d in docs), batch_size=chunk):
            counted["sentences"] += 1 if task["one_sentence"] else sum(1 for _ in doc.sents)
    else:
        from tacred.extraction.documents import Document
        from tacred.extraction.output import Totals
        from tacred.extraction.runner import DocumentExtractor, ExtractorSettings, run_extraction

        settings = ExtractorSettings(ckpt_path=task["ckpt"], device="cpu", num_threads=task["threads"],
                                     ner=task.get("ner") or "auto", one_sentence=task["one_sentence"],
                                     precision=task.get("precision"))
        extractor = DocumentExtractor(settings)
        if task.get("no_entities"):  # the untrained joint stand-in: "no entity" wins every span (see the notes)
            out = extractor.predictor.net.entity_out
            with torch.no_grad():
                out.weight.zero_()
                out.bias.fill_(-1e4)
                out.bias[0] = 0.0

        class TimingSink:
            def done_chunks(self) -> set[int]:
                return set()

            def write(self, done: Any) -> None:
                counted["sentences"] += sum(r.sentences for r in done.results)
                counted["pairs"] += sum(r.pairs for r in done.results)
                counted["relations"] += sum(len(r.mentions) for r in done.results)

            def finish(self) -> Totals:
                return Totals()

        extractor.process_many([Document(d["id"], d["text"]) for d in docs[:chunk]])  # warm-up
        start = time.perf_counter()
        run_extraction(settings, (Document(d["id"], d["text"]) for d in docs), TimingSink(), 1, chunk,
                       extractor=extractor)
    seconds = time.perf_counter() - start
    sentences = max(counted["sentences"], 1)
    return {"sentences_per_s": counted["sentences"] / seconds, "sentences": counted["sentences"],
            "pairs_per_sentence": counted["pairs"] / sentences, "relations_per_sentence": counted["relations"] / sentences,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def worker(task: dict[str, Any]) -> dict[str, Any]:
    return train_worker(task) if task["kind"] == "train" else extract_worker(task)


# -- inputs ----------------------------------------------------------------------------------------
def quick_inputs(scratch: Path) -> Inputs:
    """The tiny joint corpus in SpERT's layout under CoNLL04's file names, its pairs (tacred convert conll04's
    code), and a tiny BERT and a tiny MPNet over its words."""
    sys.path.insert(0, str(REPO))
    from tacred.datasets.conll04 import write_release
    from tacred.datasets.synthetic import write_corpus
    from tests.joint_corpus import corpus_words as joint_words
    from tests.joint_corpus import write_joint_corpus
    from tests.tiny_bert import corpus_words, write_tiny_bert

    corpus = write_joint_corpus(scratch / "corpus", sizes=(48, 12, 32))
    spert = scratch / "spert"
    spert.mkdir()
    for split, name in SPLITS.items():
        shutil.copy(corpus / f"{split}.json", spert / name)
    shutil.copy(corpus / "types.json", spert / TYPES_FILE)
    write_release(spert, scratch / "pairs")
    write_corpus(scratch / "demo", n_train=10, n_dev=10, n_test=200)  # the demo documents' words too
    words = joint_words() | corpus_words(scratch / "pairs") | corpus_words(scratch / "demo")
    encoders = {"minilm": str(write_tiny_bert(scratch / "tiny_bert", words)),
                "mpnet": str(write_tiny_bert(scratch / "tiny_mpnet", words, architecture="mpnet"))}
    return Inputs(spert, scratch / "pairs", encoders, "the tiny joint corpus (tests/joint_corpus.py: 48 / 12 / 32 "
                  "sentences) and its pairs; tiny BERT and tiny MPNet (2 layers, hidden 32) for MiniLM and MPNet")


def conll04_inputs(spert: Path, pairs: Path) -> Inputs | str:
    """CoNLL04 as `make conll04-data` leaves it, or why it cannot be read."""
    wanted = [spert / n for n in (*SPLITS.values(), TYPES_FILE)] + [pairs / n for n in ("train.json", "labels.json")]
    wanted.append(pairs / "documents" / "conll04_test.jsonl")
    missing = [str(p) for p in wanted if not p.is_file()]
    if missing:
        return f"CoNLL04 not found ({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}): `make conll04-data`"
    return Inputs(spert, pairs, {"minilm": "minilm", "mpnet": "mpnet"},
                  f"CoNLL04 (SpERT's split): sentences from {spert}, pairs from {pairs} (tacred convert conll04)")


# -- the tables ------------------------------------------------------------------------------------
def passes_table(inputs: Inputs) -> Table:
    """Encoder passes an epoch, counted: one a sentence (joint), one an ordered pair of gold entities (per pair)."""
    from tacred.datasets.spert_layout import read_sentences

    sentences = read_sentences(inputs.spert / SPLITS["train"])
    pairs = json.loads((inputs.pairs / "train.json").read_text(encoding="utf-8"))
    ratio = len(pairs) / len(sentences)
    table = Table("Joint vs per-pair: encoder passes per training epoch (counted)",
                  ["model", "training examples", "encoder passes per epoch", "per-pair ÷ joint", "target"])
    table.add("joint (one pass a sentence: its entities and relations)", len(sentences), len(sentences), "1.00×", "")
    table.add("per pair (one pass an ordered pair of gold entities)", len(pairs), len(pairs), f"{ratio:.2f}×",
              f"≥ {TARGET_PASSES:.0f}×: {'met' if ratio >= TARGET_PASSES else 'not met'}")
    with_pairs = sum(len(s.entities) >= 2 for s in sentences)
    table.notes += [f"data: {inputs.source}.",
                    f"per pair: every ordered pair of a sentence's gold entities is one example ({with_pairs} of the "
                    f"{len(sentences)} training sentences have two or more entities); the joint model reads each "
                    "sentence once and classifies every span and every pair of its entities from that pass.",
                    machine_line()]
    return table


def training_table(inputs: Inputs, encoders: list[str], rounds: int, steps: int, warmup: int, quick: bool,
                   precision: str, why: str = "as asked") -> Table:
    rows = [(enc, model) for enc in encoders for model in ("joint", "pairs")]
    measured: dict[tuple[str, str], list[dict[str, Any]]] = {row: [] for row in rows}
    for _ in range(rounds):  # the rows take turns, so the machine's drift between rows moves the ratio less
        for enc, model in rows:
            task = {"kind": "train", "model": model, "pretrained": inputs.encoders[enc], "spert": str(inputs.spert),
                    "pairs": str(inputs.pairs), "precision": precision, "steps": steps, "warmup": warmup,
                    "threads": 2}
            measured[(enc, model)].append(worker(task) if quick else run_worker(__file__, task))
    table = Table(f"Joint vs per-pair: training seconds per epoch, same encoder ({precision}, 2 threads)",
                  ["encoder", "model", "batch", "steps per epoch", "s per step (median)", "s per epoch",
                   "examples/s", "per-pair ÷ joint, s per epoch", "peak RSS MiB"])
    epoch: dict[tuple[str, str], float] = {}
    for enc, model in rows:
        runs = measured[(enc, model)]
        step = statistics.median(s for r in runs for s in r["step_seconds"])
        per_epoch = runs[0]["steps_per_epoch"] * step
        epoch[(enc, model)] = per_epoch
        batch = JOINT_BATCH if model == "joint" else PAIR_BATCH
        ratio = f"{per_epoch / epoch[(enc, 'joint')]:.2f}×" if model == "pairs" else "1.00×"
        name = ENCODERS[enc] + (" (tiny stand-in)" if quick else "")
        table.add(name, "joint (sentences)" if model == "joint" else "per pair (pairs)", batch,
                  runs[0]["steps_per_epoch"], step, per_epoch, runs[0]["examples"] / per_epoch, ratio,
                  statistics.median(r["peak_rss_mib"] for r in runs))
    table.notes += [
        f"data: {inputs.source}.",
        f"each row: {steps} step{'s' * (steps != 1)} timed after {warmup} warm-up step{'s' * (warmup != 1)}, over {rounds} round{'s' * (rounds > 1)} "
        "(every row once a round, in a fresh worker process); a step = collation, the module's training_step "
        "(forward and loss) under the precision's autocast, backward, clipping at 1.0, AdamW. Seconds per epoch = "
        "the epoch's length-bucketed batches × the median step (the timed batches are the first of a shuffled "
        "epoch). Models built through the library, no Lightning Trainer (its loop adds the same small cost to both); "
        "untrained heads.",
        "joint: JointExtractor over JointDataModule's training sentences in batches of 8 (configs/conll04/joint_*.yaml;"
        " its loss classifies every span up to the widest training entity and every pair of gold entities); per "
        "pair: the transformer RelationExtractor with typed markers over TacredDataModule's pairs in batches of 32 "
        "(configs/conll04/{transformer,mpnet}.yaml).",
        f"precision: {precision} for both models ({why}).",
        machine_line(),
    ]
    return table


def _write_documents(path: Path, docs: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def demo_documents(work: Path, n: int) -> Path:
    """``work/demo.jsonl``: ``n`` demo documents as extract_throughput.py builds them (its five-sentence documents of
    the generated demo corpus's test split, written to ``work/demo`` unless there)."""
    from extract_throughput import _documents

    from tacred.datasets.synthetic import write_corpus

    if not (work / "demo" / "test.json").is_file():  # quick mode wrote it first, for the tiny encoders' words
        write_corpus(work / "demo", n_train=10, n_dev=10, n_test=200)
    demo = [{"id": f"demo{i}", "text": t} for i, t in enumerate(_documents(work / "demo", n))]
    return _write_documents(work / "demo.jsonl", demo)


def document_sets(inputs: Inputs, work: Path, quick: bool) -> list[tuple[str, Path, bool]]:
    """(name, JSON Lines file, one sentence a document): CoNLL04's test sentences and the demo documents as
    extract_throughput.py builds them."""
    from extract_throughput import SENTENCES_PER_DOCUMENT

    test = inputs.pairs / "documents" / "conll04_test.jsonl"
    n_test = sum(1 for line in test.read_text(encoding="utf-8").splitlines() if line.strip())
    n_demo = 48 if quick else DEMO_DOCUMENTS  # the MPNet pipeline asks MPNet once a pair: 100 take minutes
    return [(f"CoNLL04 test sentences ({n_test} one-sentence documents, --one_sentence)", test, True),
            (f"demo documents ({n_demo} of {SENTENCES_PER_DOCUMENT} sentences, extract_throughput.py's)",
             demo_documents(work, n_demo), False)]


def stand_ins(inputs: Inputs, work: Path, quick: bool) -> tuple[Path, Path]:
    """Untrained joint MPNet and MPNet relation runs: one training step each (a run folder tacred extract loads)."""
    import torch

    from tacred.training import fit

    threads = torch.get_num_threads()
    # two training batches and two dev batches (a limit of 1 reaches Lightning as 1.0: every batch)
    short = {"trainer": {"max_epochs": 1, "limit_train_batches": 2, "limit_val_batches": 2,
                         "num_sanity_val_steps": 0, "precision": "32-true", "accelerator": "cpu",
                         "enable_progress_bar": False, "enable_model_summary": False}}
    spert = inputs.spert
    # init_args spelled out: tacred fit's file checks read a subclass-mode config's data.init_args only
    joint = fit([str(REPO / "configs" / "conll04" / "joint_mpnet.yaml"), short],
                ["--model.init_args.pretrained", inputs.encoders["mpnet"], "--data.init_args.data_dir", str(spert),
                 "--data.init_args.types_file", str(spert / TYPES_FILE)], run_dir=work / "joint_mpnet", seed=1,
                resume="never", in_subprocess=not quick, log=None if quick else work / "fit.log")
    pairs = fit([str(REPO / "configs" / "conll04.yaml"), str(REPO / "configs" / "conll04" / "mpnet.yaml"), short],
                ["--model.network.pretrained", inputs.encoders["mpnet"], "--data.data_dir", str(inputs.pairs),
                 "--data.labels", str(inputs.pairs / "labels.json")], run_dir=work / "pairs_mpnet", seed=1,
                resume="never", in_subprocess=not quick, log=None if quick else work / "fit.log")
    torch.set_num_threads(threads)
    return joint, pairs


def extraction_table(inputs: Inputs, work: Path, quick: bool, rounds: int, threads: int,
                     joint: Path | None, pipeline: Path | None, ner: str | None,
                     extraction_precisions: tuple[str, ...] = ("32",), chunk_size: int = CHUNK_SIZE) -> Table:
    """The joint and pipeline rows once a precision of ``extraction_precisions`` (``tacred extract --precision``:
    every encoder of the row at it, the pipeline's NER included), spaCy's row once."""
    import torch

    made_joint, made_pairs = (None, None) if joint and pipeline else stand_ins(inputs, work, quick)
    mpnet = "tiny MPNet" if quick else "MPNet"
    joint_label = (f"joint {mpnet} ({joint})" if joint else
                   f"joint {mpnet}, stand-in: untrained, finds no entity (encoder pass + span grid only)")
    if pipeline:
        pipe_label = f"{mpnet} pipeline ({pipeline}; NER: {ner or 'the run’s own, else spaCy stock'})"
    else:
        pipe_label = (f"{mpnet} pipeline, stand-in: untrained {mpnet} relation model per pair behind spaCy's stock "
                      f"NER{' (' + ner + ')' if ner else ''}")
    rows = [("spacy_tagger", "spaCy NER + tagger", "—", {})]
    for precision in extraction_precisions:
        rows += [(f"joint {precision}", joint_label, precision,
                  {"ckpt": str(joint or made_joint), "no_entities": joint is None, "precision": precision}),
                 (f"pipeline {precision}", pipe_label, precision,
                  {"ckpt": str(pipeline or made_pairs), "ner": ner if pipeline or ner else "stock",
                   "precision": precision})]
    sets = document_sets(inputs, work, quick)
    measured: dict[tuple[str, str], list[dict[str, Any]]] = {(s, r): [] for s, _, _ in sets for r, *_ in rows}
    before = torch.get_num_threads()
    for _ in range(rounds):
        for name, path, one_sentence in sets:
            for what, _, _, extra in rows:
                task = {"kind": "extract", "what": "spacy_tagger" if what == "spacy_tagger" else "extract",
                        "documents": str(path), "one_sentence": one_sentence, "threads": threads,
                        "chunk_size": chunk_size, **extra}
                measured[(name, what)].append(worker(task) if quick else run_worker(__file__, task))
                torch.set_num_threads(before)
    table = Table("Joint vs pipeline: extraction sentences/s (CPU, one worker)",
                  ["documents", "pipeline", "precision", "sentences/s", "joint ÷ this", "target",
                   "pairs asked per sentence", "relations per sentence", "peak RSS MiB"])
    for name, _, _ in sets:
        for what, label, precision, _ in rows:
            runs = measured[(name, what)]
            # the joint row's rate (at this row's precision; spaCy's: the first) over this row's, round by round
            # (rows minutes apart drift), then the median
            joint_runs = measured[(name, f"joint {precision if precision != '—' else extraction_precisions[0]}")]
            ratio = statistics.median(j["sentences_per_s"] / r["sentences_per_s"] for j, r in
                                      zip(joint_runs, runs, strict=True) if r["sentences_per_s"])
            target = ""
            if what.startswith("pipeline"):
                met = "met" if ratio >= TARGET_SPEED else "not met"
                target = f"≥ {TARGET_SPEED:.0f}×: {met}" + ("" if joint and pipeline else " (stand-ins)")
            table.add(name, label, precision, statistics.median(r["sentences_per_s"] for r in runs), f"{ratio:.2f}×",
                      target,
                      statistics.median(r["pairs_per_sentence"] for r in runs) if what != "spacy_tagger" else "—",
                      statistics.median(r["relations_per_sentence"] for r in runs) if what != "spacy_tagger" else "—",
                      statistics.median(r["peak_rss_mib"] for r in runs))
    table.notes += [
        "what each row ran: spaCy NER + tagger: the packaged spaCy pipeline's sentencizer, tagger and NER (no "
        "relations; extract_throughput.py's row); joint: `tacred extract --ckpt_path RUN` of a joint checkpoint "
        "(spaCy's tokenizer and sentencizer, then one encoder pass a sentence for entities and relations); "
        "pipeline: `tacred extract --ckpt_path RUN --ner NER` of a per-pair relation checkpoint (the NER once a "
        "sentence, the relation model once a candidate pair).",
        "precision: `tacred extract --precision` of the row, for every encoder in it (the pipeline's NER too): 32 "
        "float32, bf16 bfloat16 autocast; a ratio compares the joint model and the pipeline at the same precision "
        f"(spaCy's row: the joint model at {extraction_precisions[0]}).",
        ("trained models as given." if joint and pipeline else
         "stand-ins (no --joint/--pipeline given): speed depends on the entities found, so an untrained model's "
         "figures are not the trained model's. The joint stand-in finds no entity (its pair scoring left out: a "
         "lower bound of its cost); the pipeline stand-in asks the candidate pairs of spaCy's stock CNN NER and "
         "leaves out the MPNet NER's pass a sentence (a lower bound of its cost). Give --joint RUN --pipeline RUN "
         "--ner FOLDER for the figures the target is about."),
        f"documents in chunks of {chunk_size} (tacred extract --chunk_size; its default is {CHUNK_SIZE}): a chunk "
        "is one call of the model's extraction, whose sentences (joint) or pairs (pipeline) go through the encoder "
        "in batches of similar length; rates count every document's sentences after a warm-up pass over the first "
        "chunk (loading left out); "
        f"{threads} torch thread{'s' * (threads > 1)}, one worker process a row; rounds: {rounds}, every row once a "
        "round, each cell the median over the rounds, each ratio the median of the ratios taken within a round.",
        f"data: {inputs.source}.",
        machine_line(),
    ]
    return table


def run(quick: bool = False, encoders: tuple[str, ...] = ("minilm", "mpnet"), rounds: int = 3, steps: int = 20,
        warmup: int = 3, threads: int = 2, joint: Path | None = None, pipeline: Path | None = None,
        ner: str | None = None, spert: Path = SPERT_DIR, pairs: Path = PAIRS_DIR,
        precision: str = "auto", extraction: bool = True, training: bool = True,
        extraction_precisions: tuple[str, ...] = ("32",), chunk_size: int = CHUNK_SIZE) -> list[Table]:
    """The three tables (``extraction``: False leaves the extraction table out; ``training``: False leaves the passes
    and training tables out); quick mode: tiny encoders and corpus, two steps after one warm-up, one round."""
    if quick:
        rounds, steps, warmup = 1, 2, 1
    why = "as --precision asked"
    if precision == "auto":
        precision = "bf16-mixed" if "bf16-mixed" in precisions(quick) else "32-true"
        why = ("quick mode runs the bf16 code path" if quick else "the CPU has bf16 instructions"
               if precision == "bf16-mixed" else "this CPU has no bf16 instructions: eager bf16 is emulated there, "
               "10-50x slower; --precision bf16-mixed forces it")
    with tempfile.TemporaryDirectory(prefix="tacred-bench-joint-") as scratch:
        work = Path(scratch)
        inputs = quick_inputs(work) if quick else conll04_inputs(spert, pairs)
        if isinstance(inputs, str):
            table = Table("Joint vs per-pair cost", ["what", "status"])
            table.add("all rows", "skipped")
            table.notes += [inputs, machine_line()]
            return [table]
        tables = [passes_table(inputs),
                  training_table(inputs, list(encoders), rounds, steps, warmup, quick, precision, why)] if training else []
        if extraction:
            tables.append(extraction_table(inputs, work, quick, rounds, threads, joint, pipeline, ner,
                                           extraction_precisions, chunk_size))
        return tables


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if answered_as_worker(argv, worker):
        return 0
    import argparse

    from tacred.devices import PRECISIONS

    parser = argparse.ArgumentParser(prog="benchmarks/joint_cost.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny encoders and corpus (a smoke test, not a "
                                                             "measurement)")
    parser.add_argument("--encoders", default="minilm,mpnet", help="training rows' encoders (default minilm,mpnet)")
    parser.add_argument("--rounds", type=int, default=3, help="every row this many times, taking turns (default 3)")
    parser.add_argument("--steps", type=int, default=20, help="timed training steps a row (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed training steps first (default 3)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the extraction rows (default 2)")
    parser.add_argument("--precision", choices=("auto", "32-true", "bf16-mixed"), default="auto",
                        help="training rows (auto: bf16-mixed where the CPU has bf16 instructions, else 32-true)")
    parser.add_argument("--extraction_precisions", default="32",
                        help="extraction rows: the joint and pipeline rows once for each of these `tacred extract "
                             "--precision` values, comma-separated (default 32; 32,bf16: both)")
    parser.add_argument("--chunk_size", type=int, default=CHUNK_SIZE,
                        help=f"extraction rows: documents a chunk, as tacred extract --chunk_size (default {CHUNK_SIZE})")
    parser.add_argument("--training_only", action="store_true", help="the passes and training tables alone (e.g. "
                        "under ATEN_CPU_CAPABILITY=avx2 --precision 32-true: what an AVX2-only machine takes)")
    parser.add_argument("--extraction_only", action="store_true", help="the extraction table alone (trained models "
                        "given by --joint, --pipeline and --ner)")
    parser.add_argument("--joint", type=Path, default=None, help="a trained joint MPNet run (tacred fit --config "
                                                                 "configs/conll04/joint_mpnet.yaml)")
    parser.add_argument("--pipeline", type=Path, default=None, help="a trained MPNet relation run (configs/conll04.yaml "
                                                                    "+ configs/conll04/mpnet.yaml)")
    parser.add_argument("--ner", default=None, help="the pipeline's NER folder (tacred ner train --encoder "
                                                    "transformer --pretrained mpnet); default: the run's own")
    parser.add_argument("--spert", type=Path, default=SPERT_DIR, help=f"CoNLL04 in SpERT's layout (default {SPERT_DIR})")
    parser.add_argument("--pairs", type=Path, default=PAIRS_DIR, help=f"tacred convert conll04's output (default "
                                                                      f"{PAIRS_DIR})")
    args = parser.parse_args(argv)
    encoders = tuple(e for e in args.encoders.split(",") if e)
    unknown = sorted(set(encoders) - set(ENCODERS))
    if unknown or not encoders:
        parser.error(f"--encoders: unknown {', '.join(unknown) or '(none given)'} (choose from {', '.join(ENCODERS)})")
    for flag in ("rounds", "steps", "threads", "chunk_size"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag} must be at least 1")
    for flag in ("joint", "pipeline"):
        if getattr(args, flag) is not None and not getattr(args, flag).exists():
            parser.error(f"--{flag} {getattr(args, flag)}: not found")
    if args.training_only and (args.joint or args.pipeline or args.ner):
        parser.error("--training_only measures no extraction: leave out --joint, --pipeline and --ner")
    if args.training_only and args.extraction_only:
        parser.error("--training_only and --extraction_only leave nothing to measure together: give one")
    extraction_precisions = tuple(dict.fromkeys(p for p in args.extraction_precisions.split(",") if p))
    wrong = [p for p in extraction_precisions if p not in PRECISIONS]
    if wrong or not extraction_precisions:
        parser.error(f"--extraction_precisions: unknown {', '.join(wrong) or '(none given)'} (choose from "
                     f"{', '.join(PRECISIONS)})")
    if bool(args.joint) != bool(args.pipeline):
        parser.error("--joint and --pipeline go together (a trained model beside a stand-in compares nothing)")
    tables = run(quick=args.quick, encoders=encoders, rounds=args.rounds, steps=args.steps, warmup=max(args.warmup, 0),
                 threads=args.threads, joint=args.joint, pipeline=args.pipeline, ner=args.ner, spert=args.spert,
                 pairs=args.pairs, precision=args.precision, extraction=not args.training_only,
                 training=not args.extraction_only, extraction_precisions=extraction_precisions,
                 chunk_size=args.chunk_size)
    print("\n".join(t.render() for t in tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
