"""``tacred extract`` throughput: documents/s and sentences/s of the whole pipeline (spaCy, candidate pairs, the
relation model, mention records) for the paper network (300-d and 50-d words) and MiniLM with 1 and 2 worker
processes, beside spaCy's NER alone on the same documents (the ceiling the pipeline cannot pass), with the peak RSS
of each worker.

Every row runs in a fresh process (``--worker``); rates count the documents after the first chunk is done, so that
loading the model and starting the workers is left out. The models are trained here for one epoch on the generated
demo corpus (speed does not depend on how well they were trained, but the pair scorer's word table makes it depend
on the vocabulary: the ``kbp37`` row runs the model shipped with tacred, trained on KBP37 with its real vocabulary);
the documents are the demo corpus's test sentences, five to a
document, or those of another TACRED-format file (``--documents data/kbp37/test.json``: real news text, with more
candidate pairs per sentence).

    python benchmarks/extract_throughput.py [--documents FILE] [--pipelines spacy_tagger,paper_plain,paper,...]
        [--workers 1] [--rounds 3]

Every row runs ``--rounds`` times, the rows taking turns, and each cell is the median over the rounds: a row's
share of spaCy's is taken within a round, so that the machine's drift between rows run minutes apart (seen up to
a third on the project's 2-core machines) moves it less.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import QUICK_FIT_ARGS, REPO, Table, answered_as_worker, machine_line, run_worker  # noqa: E402

SENTENCES_PER_DOCUMENT = 5
CHUNK = 16


def _documents(source: Path, limit: int) -> list[str]:
    """``limit`` documents of five sentences each from a TACRED-format file (a folder: its test.json), repeated as
    needed."""
    rows = json.loads((source / "test.json" if source.is_dir() else source).read_text(encoding="utf-8"))
    sentences = [" ".join(r["token"]) for r in rows]
    docs = [" ".join(sentences[i:i + SENTENCES_PER_DOCUMENT]) for i in range(0, len(sentences), SENTENCES_PER_DOCUMENT)]
    return (docs * (1 + limit // max(len(docs), 1)))[:limit]


def _train(kind: str, work: Path, data_dir: Path, quick: bool) -> Path:
    """One epoch on the demo corpus: the paper network (random vectors of GloVe's size) or MiniLM."""
    from tacred.training import fit

    args = ["--data.data_dir", str(data_dir), "--trainer.max_epochs", "1", "--trainer.accelerator", "cpu",
            "--trainer.devices", "1", "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary",
            "false", "--data.batch_size", "32"]
    if kind == "minilm":
        pretrained = "minilm"
        if quick:
            sys.path.insert(0, str(REPO))
            from tests.tiny_bert import corpus_words, write_tiny_bert

            pretrained = str(write_tiny_bert(work / "tiny_bert", corpus_words(data_dir)))
        args += ["--model.network.encoder", "transformer", "--model.network.pretrained", pretrained,
                 "--model.optimizer", "adamw", "--model.lr", "2e-4", "--data.entity_masking", "false"]
    elif kind == "paper50":  # as the project's GloVe models (glove.6B 50-d, no entity masking): model dimension 120
        args += ["--model.network.word_dim", "50", "--model.network.pos_dim", "35", "--model.network.ner_dim", "35",
                 "--data.entity_masking", "false"]
    elif quick:
        args += QUICK_FIT_ARGS
    run = work / kind
    fit(args=args, run_dir=run, seed=1, resume="never")
    return run / "checkpoints" / "best.ckpt"


def high_water_mib(pid: int | str = "self") -> float:
    """A process's peak resident memory (VmHWM; unlike ru_maxrss it starts afresh at exec), in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class WorkerPeaks:
    """The largest peak RSS among this process's children, polled while they run (a worker's VmHWM is gone with
    it)."""

    def __init__(self) -> None:
        import threading

        self.peak, self.stop = 0.0, threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        me = str(os.getpid())
        while not self.stop.wait(0.2):
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if fields[1] == me:
                    self.peak = max(self.peak, high_water_mib(stat.parent.name))

    def close(self) -> float:
        self.stop.set()
        self.thread.join()
        return self.peak


def matmul_rate(seconds: float = 0.5) -> float:
    """This process's fp32 matrix-product rate in FLOP per CPU-second (best of three rounds of about ``seconds / 3``
    of CPU time, so that other processes on the cores do not count), on the
    relation model's typical product: 8 pairs of 35 tokens (280 rows) × the 300-d network's 360 → 1,440 projection."""
    import torch

    a, b = torch.randn(280, 360), torch.randn(360, 1440)
    flops = 2 * 280 * 360 * 1440
    best = 0.0
    for _ in range(3):
        count, start = 0, time.process_time()
        while (elapsed := time.process_time() - start) < seconds / 3:
            torch.mm(a, b)
            count += 1
        best = max(best, count * flops / elapsed)
    return best


def transformer_flops(config: dict[str, Any], length: int, num_labels: int) -> float:
    """FLOPs (2 per multiply-add) of the matrix products of Zhou & Chen's classifier over one marked input of
    ``length`` sub-words: per layer the q, k, v and output projections, q·kᵀ and weights·v, the feed-forward; the
    head."""
    h, inner, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    per_layer = 2 * length * h * 4 * h + 2 * 2 * length * length * h + 2 * 2 * length * h * inner
    return layers * per_layer + 2 * (2 * h * h + h * num_labels)


class ModelClock:
    """Times the backend's calls (the relation network alone) and records what they computed, for FLOPs."""

    def __init__(self, predictor: Any) -> None:
        self.seconds = 0.0
        self.calls: list[tuple[str, Any]] = []  # (method, the shapes that decide the FLOPs)
        backend = self.backend = predictor.backend
        self.net = getattr(getattr(backend, "module", None), "net", None)
        for name in ("probabilities", "pair_probabilities"):
            method = getattr(backend, name, None)
            if method is not None:
                setattr(backend, name, self._timed(name, method))

    def _timed(self, name: str, method: Any) -> Any:
        import numpy as np

        def timed(arrays: dict[str, Any]) -> Any:
            start = time.process_time()  # CPU time: the machine may be shared
            out = method(arrays)
            self.seconds += time.process_time() - start
            lengths = (~arrays["pad_mask"]).sum(axis=1)
            if name == "pair_probabilities":
                sentence = arrays["sentence"]
                masked = (arrays["pair_words"] != arrays["words"][sentence]).sum(axis=1)
                # the words past the pair scorer's word table are projected by a product
                scorer = getattr(getattr(self.backend, "module", None), "__dict__", {}).get("_pair_scorer")
                computed = ((arrays["words"] >= getattr(scorer, "word_rows", 0)) & ~arrays["pad_mask"]).sum(axis=1)
                # the distinct objects of each sentence's pairs (their binned positions tell them apart)
                objects = np.unique(np.column_stack([sentence, arrays["obj_positions"]]), axis=0)[:, 0]
                self.calls.append((name, (lengths, np.bincount(sentence, minlength=len(lengths)),
                                          np.bincount(objects, minlength=len(lengths)),
                                          np.bincount(sentence, weights=masked, minlength=len(lengths)),
                                          computed)))
            else:
                self.calls.append((name, lengths))
            return out

        return timed

    def flops(self) -> float:
        """The FLOPs of every recorded call at the inputs' real lengths (padding not counted)."""
        from tacred.models.network import RelationNetwork
        from tacred.models.pair_scoring import pair_flops
        from tacred.models.transformer import TransformerNetwork

        total = 0.0
        for name, shapes in self.calls:
            if isinstance(self.net, TransformerNetwork):
                config = self.net.encoder.config.to_dict()
                labels = self.net.head[-1].out_features
                total += sum(transformer_flops(config, int(t), labels) for t in shapes)
            elif isinstance(self.net, RelationNetwork) and name == "pair_probabilities":
                for t, pairs, objects, masked, computed in zip(*shapes, strict=True):
                    if pairs:
                        shared, per_object, per_pair = pair_flops(self.net, int(t), True, masked / pairs,
                                                                  computed / max(t, 1))
                        total += shared + objects * per_object + pairs * per_pair
            elif isinstance(self.net, RelationNetwork):
                total += sum(pair_flops(self.net, int(t), False)[2] for t in shapes)
        return total


def worker(task: dict[str, Any]) -> dict[str, Any]:
    """One row in this process: ``{"what": "spacy"|"spacy_tagger"|"extract", "workers", "ckpt", "data_dir",
    "documents"}``."""
    from tacred.devices import keep_freed_memory

    keep_freed_memory()  # every row's process as tacred extract's (spaCy's alone too: the rows differ in work only)
    docs = _documents(Path(task["source"]), task["documents"])
    peaks = WorkerPeaks() if task["workers"] > 1 else None
    stamps: list[tuple[float, float, int, int]] = []  # (time, CPU time, documents, sentences) as results come
    if task["what"] in ("spacy", "spacy_tagger"):
        import spacy

        from tacred.text.spacy_pipeline import DEFAULT_MODELS

        name = next(m for m in DEFAULT_MODELS if spacy.util.is_package(m))
        tagger = [] if task["what"] == "spacy_tagger" else ["tok2vec", "tagger"]
        nlp = spacy.load(name, exclude=[*tagger, "parser", "attribute_ruler", "lemmatizer"])
        nlp.add_pipe("sentencizer", first=True)
        sentences = 0
        for i, doc in enumerate(nlp.pipe(docs, batch_size=CHUNK, n_process=task["workers"])):
            sentences += sum(1 for _ in doc.sents)
            if (i + 1) % CHUNK == 0 or i + 1 == len(docs):
                stamps.append((time.perf_counter(), time.process_time(), i + 1, sentences))
    else:
        from tacred.extraction.documents import Document
        from tacred.extraction.output import Totals
        from tacred.extraction.runner import DocumentExtractor, ExtractorSettings, run_extraction

        settings = ExtractorSettings(ckpt_path=task["ckpt"], device="cpu", num_threads=1)
        counted = {"documents": 0, "sentences": 0, "pairs": 0}

        class TimingSink:
            def done_chunks(self) -> set[int]:
                return set()

            def write(self, done: Any) -> None:
                counted["documents"] += len(done.results) + len(done.bad)
                counted["sentences"] += sum(r.sentences for r in done.results)
                counted["pairs"] += sum(r.pairs for r in done.results)
                stamps.append((time.perf_counter(), time.process_time(), counted["documents"], counted["sentences"]))

            def finish(self) -> Totals:
                return Totals()

        from tacred.extraction import forward

        per_sentence = forward.reads_sentence_arrays
        if task.get("plain"):  # before pair scoring: every pair a TACRED dict, one network row per pair
            forward.reads_sentence_arrays = lambda model: False
        extractor = DocumentExtractor(settings) if task["workers"] == 1 else None
        clock = ModelClock(extractor.predictor) if extractor is not None else None
        rate = matmul_rate() if clock is not None else 0.0
        documents = (Document(f"doc{i}", text) for i, text in enumerate(docs))
        try:
            run_extraction(settings, documents, TimingSink(), task["workers"], CHUNK, extractor=extractor)
        finally:  # quick mode runs every row in this process
            forward.reads_sentence_arrays = per_sentence
        task["pairs_per_sentence"] = counted["pairs"] / max(counted["sentences"], 1)
        if clock is not None:
            sentences = max(counted["sentences"], 1)
            task["model"] = {"ms_per_sentence": 1000 * clock.seconds / sentences,
                             "mflop_per_sentence": clock.flops() / sentences / 1e6, "gflops": rate / 1e9}
    first, last = stamps[0], stamps[-1]
    elapsed, cpu = last[0] - first[0], last[1] - first[1]
    rss = high_water_mib() if peaks is None else peaks.close()
    return {"documents_per_s": (last[2] - first[2]) / elapsed, "sentences_per_s": (last[3] - first[3]) / elapsed,
            # one worker: sentences per CPU-second of this process, which other processes on the cores do not slow
            "sentences_per_cpu_s": (last[3] - first[3]) / cpu if task["workers"] == 1 and cpu > 0 else None,
            "peak_rss_mib": rss, "pairs_per_sentence": task.get("pairs_per_sentence", 0.0),
            "model": task.get("model")}




def round_shares(runs: list[dict[str, Any]], of: list[dict[str, Any]] | None, key: str) -> list[float]:
    """A row's ``key`` as a percentage of another row's, round by round (``runs`` and ``of``: the two rows' results in
    round order); empty where the other row is missing or a round lacks the figure (``None``, or 0)."""
    if not of or not all(r[key] and o[key] for r, o in zip(runs, of, strict=True)):
        return []
    return [100 * r[key] / o[key] for r, o in zip(runs, of, strict=True)]


PIPELINES = ("spacy", "spacy_tagger", "paper_plain", "paper", "paper50", "kbp37", "minilm")


def run(quick: bool = False, documents: Path | None = None, pipelines: tuple[str, ...] | None = None,
        workers: tuple[int, ...] = (1, 2), rounds: int = 1) -> Table:
    """The table; ``pipelines`` default to all of :data:`PIPELINES` (quick: all but the 50-d network and the shipped
    model, whose code path the tiny paper network's row already runs). ``rounds``: every row runs once a round, the
    rounds one after another; a share is taken within each round and every cell is the median over the rounds (the
    machine's speed drifts between rows run minutes apart). Quick mode runs one round, whatever ``rounds`` says."""
    import torch

    if quick:
        rounds = 1

    if pipelines is None:
        pipelines = tuple(p for p in PIPELINES if not (quick and p in ("paper50", "kbp37")))

    from tacred.datasets.synthetic import write_corpus

    n_docs = 48 if quick else 400
    with tempfile.TemporaryDirectory(prefix="tacred-bench-extract-") as scratch:
        work = Path(scratch)
        write_corpus(work / "data", n_train=100 if quick else 600, n_dev=40 if quick else 100, n_test=200)
        threads = torch.get_num_threads()
        checkpoints = {kind: _train(kind, work, work / "data", quick) for kind in ("paper", "paper50", "minilm")
                       if kind in pipelines or (kind == "paper" and "paper_plain" in pipelines)}
        checkpoints["paper_plain"] = checkpoints.get("paper", "")
        checkpoints["kbp37"] = "kbp37"  # the model shipped with tacred: a real vocabulary (see the notes)
        torch.set_num_threads(threads)
        table = Table("Extraction throughput: `tacred extract` end to end beside spaCy's NER alone (CPU, fp32)",
                      ["pipeline", "workers", "documents/s", "sentences/s", "% of spaCy NER", "% of NER + tagger",
                       "sentences per CPU-s", "% of NER + tagger, CPU", "model CPU ms/sentence",
                       "model MFLOP/sentence", "model time ÷ FLOP time", "peak RSS MiB per worker"])
        rows = [(what, label) for what, label in (
            ("spacy", "spaCy NER alone (sentencizer + ner)"),
            ("spacy_tagger", "spaCy NER + tagger (what the paper network needs)"),
            ("paper_plain", "paper network (tiny), one pass per pair (before)" if quick else
             "paper network (300-d words), one pass per pair (before)"),
            ("paper", "paper network (tiny)" if quick else "paper network (300-d words)"),
            ("paper50", "paper network, 50-d words (the GloVe models' layout)"),
            ("kbp37", "the shipped KBP37 model (50-d GloVe, 43,867 words)"),
            ("minilm", "tiny BERT" if quick else "MiniLM (all-MiniLM-L6-v2)"))
            # spaCy's NER alone: the ceiling every row is read against
            if what in pipelines or what == "spacy"]
        counts = (1,) if quick else workers
        # every row once a round, the rounds one after another: a row's shares are taken within each round (rows
        # measured minutes apart), and each cell is the median over the rounds
        measured: dict[tuple[str, int], list[dict[str, Any]]] = {(what, c): [] for what, _ in rows for c in counts}
        for _ in range(rounds):
            for what, _ in rows:
                for count in counts:
                    task = {"what": what if what.startswith("spacy") else "extract", "workers": count,
                            "ckpt": str(checkpoints.get(what, "")), "source": str(documents or work / "data"),
                            "documents": n_docs, "plain": what == "paper_plain"}
                    # quick: in this process, a smoke test
                    got = worker(task) if quick else run_worker(__file__, task, env={"OMP_NUM_THREADS": "1"})
                    torch.set_num_threads(threads)
                    measured[(what, count)].append(got)
        rates: list[float] = []
        pairs: dict[str, float] = {}
        spread: list[str] = []
        for what, label in rows:
            for count in counts:
                runs = measured[(what, count)]
                ceiling = measured[("spacy", count)]
                tagger = measured.get(("spacy_tagger", count))

                def median(key: str, runs: list[dict[str, Any]] = runs) -> float:
                    return statistics.median(r[key] for r in runs)

                pairs[label] = median("pairs_per_sentence")
                of_tagger = round_shares(runs, tagger, "sentences_per_s")
                of_tagger_cpu = round_shares(runs, tagger, "sentences_per_cpu_s")
                with_tagger = f"{statistics.median(of_tagger):.0f}%" if of_tagger else "—"
                if rounds > 1 and of_tagger_cpu and what != "spacy_tagger":
                    spread.append(f"{label}, {count} worker{'s' * (count > 1)}: "
                                  + ", ".join(f"{v:.0f}%" for v in of_tagger_cpu))
                models = [r["model"] for r in runs if r.get("model")]
                if models:
                    ms, mflop = (statistics.median(m[k] for m in models) for k in ("ms_per_sentence",
                                                                                    "mflop_per_sentence"))
                    rate = statistics.median(m["gflops"] for m in models)
                    rates.append(rate)
                    # each round's time over its FLOPs' time at the rate measured in the same worker
                    ratio = statistics.median(m["ms_per_sentence"] * m["gflops"] / m["mflop_per_sentence"]
                                              for m in models)
                    model_cells = [ms, mflop, f"{ratio:.2f}×"]
                else:
                    model_cells = ["—", "—", "—"]
                per_cpu = [r["sentences_per_cpu_s"] for r in runs]
                cpu_cells = ([statistics.median(per_cpu),
                              f"{statistics.median(of_tagger_cpu):.0f}%" if of_tagger_cpu else "—"]
                             if all(per_cpu) else ["—", "—"])
                table.add(label, count, median("documents_per_s"), median("sentences_per_s"),
                          f"{statistics.median(round_shares(runs, ceiling, 'sentences_per_s')):.0f}%", with_tagger, *cpu_cells,
                          *model_cells, median("peak_rss_mib"))
    table.notes += [
        "candidate pairs asked per sentence: " + ", ".join(f"{k} {v:.2f}" for k, v in pairs.items() if v) + " (a "
        "pair of directed labels is asked twice; each pair is one forward pass row of the relation model).",
        machine_line(), f"CPU kernel: torch.backends.cpu.get_cpu_capability() = {torch.backends.cpu.get_cpu_capability()}.",
        ("rounds: 1." if rounds == 1 else
         f"rounds: {rounds}, every row once a round; each cell is the median over the rounds, each share the median "
         "of the shares taken within a round." + (" The shares of NER + tagger's sentences per CPU-second, round by "
                                                  "round: " + "; ".join(spread) + "." if spread else "")),
        f"documents: {n_docs}, each {SENTENCES_PER_DOCUMENT} sentences of "
        f"{documents or 'the generated demo corpus'}; chunks of {CHUNK} "
        "documents; one torch thread per worker.",
        "paper network: the default network (300-d word vectors, random: speed does not depend on GloVe), the same "
        "network as the project's trained GloVe models have it (glove.6B 50-d words, POS and NER 35-d: model "
        "dimension 120; no entity masking, so the candidate pairs of a sentence that share an object share its "
        "encoding) and MiniLM, each trained for one epoch on the demo corpus; the shipped KBP37 model (`tacred "
        "models show kbp37`: the 50-d layout, trained on KBP37, a vocabulary of 43,867 words); the pipeline adds "
        "spaCy's tagger (the paper network reads POS tags) to the NER row's components.",
        "CPU columns (one worker): sentences per CPU-second of the row's process, and its share of the NER + "
        "tagger row's: what the pipelines cost, whatever else runs on the machine (wall-clock rates drop when "
        "other processes share the cores).",
        "model columns (one worker): the relation network's own CPU time in the backend per sentence, the FLOPs of its "
        "matrix products at the sentences' real lengths (tacred.models.pair_scoring.pair_flops: with pair scoring "
        "the sentence's attention terms once (its projections are table rows, a product only for words past the "
        "word table) plus each pair's attention, feed-forward and position-aware layer (without entity masking "
        "the attention and feed-forward once per object, the pairs that share it differing only in the subject's "
        "position features); before "
        "it, the whole network per pair; the transformer: every layer per marked input), and that time over the "
        "time those FLOPs take at the matrix-product rate measured in the same worker (fp32, one thread, per "
        "CPU-second: "
        + (", ".join(f"{r:.1f}" for r in rates) or "—") + " GFLOP/s; a 280 × 360 by 360 × 1,440 product).",
        "before: the same checkpoint with every candidate pair a TACRED dict run through the per-pair encoder and "
        "the plain forward pass (pairs that share an object and all words share the encoder), as tacred extract "
        "did before pair scoring; after: arrays built per sentence and every pair of a sentence from one shared "
        "pass (tacred.models.pair_scoring).",
        "peak RSS: the row's process with one worker; the largest worker process with two (VmHWM)."
        + (" Quick mode: one worker, in the benchmark's own process (RSS includes the trainings)." if quick else ""),
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if answered_as_worker(argv, worker):
        return 0
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--documents", type=Path, default=None,
                        help="a TACRED-format JSON file whose sentences make the documents (default: the demo corpus)")
    parser.add_argument("--pipelines", default=None,
                        help=f"which rows besides spaCy's NER alone (default: {','.join(PIPELINES)}; --quick: all "
                             "but paper50 and kbp37)")
    parser.add_argument("--workers", default="1,2", help="worker processes per row, e.g. 1 or 1,2 (default 1,2)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="run every row this many times, interleaved, and print the medians (default 3; "
                             "--quick: 1)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    wanted = None if args.pipelines is None else tuple(p for p in args.pipelines.split(",") if p)
    unknown = sorted(set(wanted or ()) - set(PIPELINES))
    if unknown:
        parser.error(f"--pipelines: unknown {', '.join(unknown)} (choose from {', '.join(PIPELINES)})")
    if args.documents is not None and not args.documents.exists():
        parser.error(f"--documents {args.documents}: not found")
    counts = tuple(int(w) for w in args.workers.split(",") if w)
    print(run(quick=args.quick, documents=args.documents, pipelines=wanted, workers=counts,
              rounds=args.rounds).render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
