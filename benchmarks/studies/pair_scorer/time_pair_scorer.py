"""Times the pair scorer alone (PairScorer through the torch backend, one thread) on the batches `tacred extract`
hands it, for comparing two versions of tacred/models/pair_scoring.py on the same inputs.

    python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record [--quick]   # once: the network, the batches
    PYTHONPATH=CHECKOUT python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK time [--reference]

`record` trains the network of benchmarks/extract_throughput.py's `paper` row (one epoch on the generated demo
corpus, seed 1; entity masking on) and pickles the arrays of every pair_probabilities call while extracting from 400
documents of KBP37's test sentences and 400 demo documents. `time` runs those batches three times per document set
and prints the scorer's CPU milliseconds per sentence, and the largest probability difference and label agreement
against the reference probabilities (written by `--reference`). `--quick`: the benchmark's quick network, 16
documents a set, and the demo corpus's test sentences standing in for KBP37's where data/kbp37 is not converted
(a smoke run: the figures measure nothing)."""

import argparse
import pickle
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks import extract_throughput as bench

REPO = Path(__file__).resolve().parents[3]
SETS = {"kbp37": REPO / "data" / "kbp37" / "test.json", "demo": None}
DOCUMENTS = 400


def source_of(name: str) -> Path | None:
    """The documents file of set ``name``; None (the demo corpus) for KBP37's where data/kbp37 is not converted."""
    path = SETS[name]
    if path is not None and not path.is_file():
        print(f"{name}: {path} is not there; the demo corpus stands in")
        return None
    return path


def extractor(work: Path):
    from tacred.extraction.runner import DocumentExtractor, ExtractorSettings

    settings = ExtractorSettings(ckpt_path=str(work / "paper" / "checkpoints" / "best.ckpt"), device="cpu",
                                 num_threads=1)
    return settings, DocumentExtractor(settings)


class Sink:
    """An output that keeps nothing: every chunk is extracted, none written."""

    def done_chunks(self):
        return set()

    def write(self, done):
        pass

    def finish(self):
        from tacred.extraction.output import Totals

        return Totals()


def recorded_batches(settings, ex, source, work: Path, documents: int = DOCUMENTS) -> list[dict]:
    """The arrays of every pair_probabilities call of ``ex`` while it extracts from ``documents`` documents of
    ``source`` (None: the generated demo corpus in WORK/data)."""
    from tacred.extraction.documents import Document
    from tacred.extraction.runner import run_extraction

    batches, backend = [], ex.predictor.backend
    real = backend.pair_probabilities

    def kept(arrays):
        batches.append({k: v.copy() for k, v in arrays.items()})
        return real(arrays)

    backend.pair_probabilities = kept
    docs = bench._documents(source or work / "data", documents)
    run_extraction(settings, (Document(f"d{i}", t) for i, t in enumerate(docs)), Sink(), 1, bench.CHUNK,
                   extractor=ex)
    backend.pair_probabilities = real
    return batches


def record(work: Path, quick: bool = False) -> None:
    from tacred.datasets.synthetic import write_corpus

    write_corpus(work / "data", n_train=600, n_dev=100, n_test=200)
    bench._train("paper", work, work / "data", quick)
    torch.set_num_threads(1)
    for name, source in SETS.items():
        if source is not None and not source.is_file() and not quick:
            raise SystemExit(f"{source} is not there: `make kbp37-data` converts KBP37 (docs/data.md)")
        source = source_of(name)
        settings, ex = extractor(work)
        batches = recorded_batches(settings, ex, source, work, 16 if quick else DOCUMENTS)
        (work / f"{name}_batches.pkl").write_bytes(pickle.dumps(batches))
        print(name, len(batches), "batches,", sum(len(b["sentence"]) for b in batches), "pairs")


def timed(work: Path, reference: bool) -> None:
    import tacred.models.pair_scoring as scoring

    torch.set_num_threads(1)
    print("pair scorer:", scoring.__file__)
    _, ex = extractor(work)
    backend = ex.predictor.backend
    for name in SETS:
        batches = pickle.loads((work / f"{name}_batches.pkl").read_bytes())
        sentences = sum(len(b["words"]) for b in batches)
        backend.pair_probabilities(batches[0])
        rounds = []
        for _ in range(3):
            start = time.process_time()
            probs = np.concatenate([backend.pair_probabilities(b) for b in batches])
            rounds.append(1000 * (time.process_time() - start) / sentences)
        path = work / f"{name}_reference.npy"
        if reference:
            np.save(path, probs)
        ref = np.load(path)
        print(f"{name}: {sentences} sentences, ms/sentence {' '.join(f'{r:.3f}' for r in rounds)}; "
              f"max |p - reference| {np.abs(probs - ref).max():.2e}, labels agree {(probs.argmax(1) == ref.argmax(1)).mean():.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("step", choices=("record", "time"))
    parser.add_argument("--reference", action="store_true", help="time: write the reference probabilities")
    parser.add_argument("--quick", action="store_true", help="record: a smoke run on tiny inputs")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step == "record":
        record(args.work, args.quick)
    else:
        timed(args.work, args.reference)
