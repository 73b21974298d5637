"""``tacred extract`` throughput: documents/s and sentences/s of the whole pipeline (spaCy, candidate pairs, the
relation model, mention records) for the paper network (300-d and 50-d words) and MiniLM with 1 and 2 worker
processes, beside spaCy's NER alone on the same documents (the ceiling the pipeline cannot pass), with the peak RSS
of each worker.

Every row runs in a fresh process (``--worker``); rates count the documents after the first chunk is done, so that
loading the model and starting the workers is left out. The models are trained here for one epoch on the generated
demo corpus (speed does not depend on how well they were trained); the documents are its test sentences, five to a
document, or those of another TACRED-format file (``--documents data/kbp37/test.json``: real news text, with more
candidate pairs per sentence).

    python benchmarks/extract_throughput.py [--documents FILE] [--pipelines spacy_tagger,paper,paper50,minilm]
"""

from __future__ import annotations

import json
import os
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


def worker(task: dict[str, Any]) -> dict[str, Any]:
    """One row in this process: ``{"what": "spacy"|"spacy_tagger"|"extract", "workers", "ckpt", "data_dir",
    "documents"}``."""
    docs = _documents(Path(task["source"]), task["documents"])
    peaks = WorkerPeaks() if task["workers"] > 1 else None
    stamps: list[tuple[float, int, int]] = []  # (time, documents, sentences) as results come
    if task["what"] in ("spacy", "spacy_tagger"):
        import spacy

        from tacred.data.spacy_pipeline import DEFAULT_MODELS

        name = next(m for m in DEFAULT_MODELS if spacy.util.is_package(m))
        tagger = [] if task["what"] == "spacy_tagger" else ["tok2vec", "tagger"]
        nlp = spacy.load(name, exclude=[*tagger, "parser", "attribute_ruler", "lemmatizer"])
        nlp.add_pipe("sentencizer", first=True)
        sentences = 0
        for i, doc in enumerate(nlp.pipe(docs, batch_size=CHUNK, n_process=task["workers"])):
            sentences += sum(1 for _ in doc.sents)
            if (i + 1) % CHUNK == 0 or i + 1 == len(docs):
                stamps.append((time.perf_counter(), i + 1, sentences))
    else:
        from tacred.extraction.documents import Document
        from tacred.extraction.output import Totals
        from tacred.extraction.pipeline import DocumentExtractor, ExtractorSettings
        from tacred.extraction.runner import run_extraction

        settings = ExtractorSettings(ckpt_path=task["ckpt"], device="cpu", num_threads=1)
        counted = {"documents": 0, "sentences": 0, "pairs": 0}

        class TimingSink:
            def done_chunks(self) -> set[int]:
                return set()

            def write(self, done: Any) -> None:
                counted["documents"] += len(done.results) + len(done.bad)
                counted["sentences"] += sum(r.sentences for r in done.results)
                counted["pairs"] += sum(r.pairs for r in done.results)
                stamps.append((time.perf_counter(), counted["documents"], counted["sentences"]))

            def finish(self) -> Totals:
                return Totals()

        extractor = DocumentExtractor(settings) if task["workers"] == 1 else None
        documents = (Document(f"doc{i}", text) for i, text in enumerate(docs))
        run_extraction(settings, documents, TimingSink(), task["workers"], CHUNK, extractor=extractor)
        task["pairs_per_sentence"] = counted["pairs"] / max(counted["sentences"], 1)
    first, last = stamps[0], stamps[-1]
    elapsed = last[0] - first[0]
    rss = high_water_mib() if peaks is None else peaks.close()
    return {"documents_per_s": (last[1] - first[1]) / elapsed, "sentences_per_s": (last[2] - first[2]) / elapsed,
            "peak_rss_mib": rss, "pairs_per_sentence": task.get("pairs_per_sentence", 0.0)}




PIPELINES = ("spacy", "spacy_tagger", "paper", "paper50", "minilm")


def run(quick: bool = False, documents: Path | None = None, pipelines: tuple[str, ...] | None = None) -> Table:
    """The table; ``pipelines`` default to all of :data:`PIPELINES` (quick: all but the 50-d network, whose code path
    the tiny paper network's row already runs)."""
    import torch

    if pipelines is None:
        pipelines = tuple(p for p in PIPELINES if not (quick and p == "paper50"))

    from tacred.data.synthetic import write_corpus

    n_docs = 48 if quick else 400
    with tempfile.TemporaryDirectory(prefix="tacred-bench-extract-") as scratch:
        work = Path(scratch)
        write_corpus(work / "data", n_train=100 if quick else 600, n_dev=40 if quick else 100, n_test=200)
        threads = torch.get_num_threads()
        checkpoints = {kind: _train(kind, work, work / "data", quick) for kind in ("paper", "paper50", "minilm")
                       if kind in pipelines}
        torch.set_num_threads(threads)
        table = Table("Extraction throughput: `tacred extract` end to end beside spaCy's NER alone (CPU, fp32)",
                      ["pipeline", "workers", "documents/s", "sentences/s", "% of spaCy NER", "peak RSS MiB per worker"])
        ceiling: dict[int, float] = {}
        pairs: dict[str, float] = {}
        for what, label in (("spacy", "spaCy NER alone (sentencizer + ner)"),
                            ("spacy_tagger", "spaCy NER + tagger (what the paper network needs)"),
                            ("paper", "paper network (tiny)" if quick else "paper network (300-d words)"),
                            ("paper50", "paper network, 50-d words (the GloVe models' layout)"),
                            ("minilm", "tiny BERT" if quick else "MiniLM (all-MiniLM-L6-v2)")):
            if what not in pipelines and what != "spacy":  # spaCy's NER alone: the ceiling every row is read against
                continue
            for workers in (1,) if quick else (1, 2):
                task = {"what": what if what.startswith("spacy") else "extract", "workers": workers,
                        "ckpt": str(checkpoints.get(what, "")), "source": str(documents or work / "data"),
                        "documents": n_docs}
                # quick: in this process, a smoke test
                got = worker(task) if quick else run_worker(__file__, task, env={"OMP_NUM_THREADS": "1"})
                torch.set_num_threads(threads)
                if what == "spacy":
                    ceiling[workers] = got["sentences_per_s"]
                pairs[label] = got["pairs_per_sentence"]
                share = 100 * got["sentences_per_s"] / ceiling[workers]
                table.add(label, workers, got["documents_per_s"], got["sentences_per_s"], f"{share:.0f}%",
                          got["peak_rss_mib"])
    table.notes += [
        "candidate pairs asked per sentence: " + ", ".join(f"{k} {v:.2f}" for k, v in pairs.items() if v) + " (a "
        "pair of directed labels is asked twice; each pair is one forward pass row of the relation model).",
        machine_line(), f"CPU kernel: torch.backends.cpu.get_cpu_capability() = {torch.backends.cpu.get_cpu_capability()}.",
        f"documents: {n_docs}, each {SENTENCES_PER_DOCUMENT} sentences of "
        f"{documents or 'the generated demo corpus'}; chunks of {CHUNK} "
        "documents; one torch thread per worker.",
        "paper network: the default network (300-d word vectors, random: speed does not depend on GloVe), the same "
        "network as the project's trained GloVe models have it (glove.6B 50-d words, POS and NER 35-d: model "
        "dimension 120; no entity masking, so the candidate pairs of a sentence that share an object share its "
        "encoding) and MiniLM, each trained for one epoch on the demo corpus; the pipeline adds spaCy's tagger "
        "(the paper network reads POS tags) to the NER row's components.",
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
                             "but paper50)")
    args = parser.parse_args(argv)
    wanted = None if args.pipelines is None else tuple(p for p in args.pipelines.split(",") if p)
    unknown = sorted(set(wanted or ()) - set(PIPELINES))
    if unknown:
        parser.error(f"--pipelines: unknown {', '.join(unknown)} (choose from {', '.join(PIPELINES)})")
    if args.documents is not None and not args.documents.exists():
        parser.error(f"--documents {args.documents}: not found")
    print(run(quick=args.quick, documents=args.documents, pipelines=wanted).render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
