"""The mention on which the two-node Ray test of `make test-scale` failed, extracted in chunks of other sizes:
the test's tiny model and corpus (tests/extraction/test_ray_engine.py), `tacred extract` with --chunk_size 4, 3 and
7 (how many mentions move, as written to 6 decimals), and the unrounded probability of doc-0297's `Globex Corp →
John Smith` mention in its chunk of 4, of 3, of 7 and alone.

    python -m benchmarks.studies.pair_scorer.chunk_edge WORK [--documents 600]

Run it at two commits (PYTHONPATH=CHECKOUT) to compare them. With fewer than 298 documents (a smoke run) doc-0297 is
not among them and only the chunk comparison is printed."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from tacred.analysis.inspection import train_demo_model
from tests.extraction.test_ray_engine import EXTRACT, write_corpus


def main(work: Path, documents: int = 600) -> None:
    import tacred
    import tacred.extraction.postprocess as answers
    from tacred.extraction.documents import Document
    from tacred.extraction.output import read_mentions
    from tacred.extraction.runner import DocumentExtractor, ExtractorSettings

    print("tacred:", Path(tacred.__file__).parent)
    work.mkdir(parents=True, exist_ok=True)
    ckpt = work / "checkpoint.txt"  # as the test's session fixture trains it
    if not ckpt.exists():
        ckpt.write_text(str(train_demo_model(work / "tiny_model", epochs=2, n_train=60, n_dev=40, n_test=40,
                                             word_dim=24)))
    path = ckpt.read_text()
    corpus = work / "corpus"
    corpus.mkdir(exist_ok=True)
    write_corpus(corpus / "news.jsonl", documents)
    written = {}
    for chunk in ("4", "3", "7"):
        out = work / f"extracted_{chunk}"
        subprocess.run(["rm", "-rf", str(out)], check=True)
        subprocess.run([sys.executable, "-m", "tacred", "extract", str(corpus), "--ckpt_path", path,
                        *[chunk if a == "4" else a for a in EXTRACT], "--output", str(out), "--num_threads", "1"],
                       check=True, capture_output=True, cwd=Path(tacred.__file__).parents[1])
        written[chunk] = [(m["doc_id"], m["sentence"], m["subject"]["start"], m["object"]["start"], m["relation"],
                           m["probability"]) for m in read_mentions(out)]
    for chunk in ("3", "7"):
        moved = sum(a != b for a, b in zip(written["4"], written[chunk], strict=True))
        print(f"--chunk_size 4 against {chunk}: {moved} of {len(written['4'])} mentions differ")
    answers.round = lambda x, n=None: x  # the mention records unrounded
    lines = [json.loads(line) for line in (corpus / "news.jsonl").read_text().splitlines()]
    at = next((i for i, line in enumerate(lines) if line["id"] == "doc-0297"), None)
    if at is None:
        return
    extractor = DocumentExtractor(ExtractorSettings(ckpt_path=path, device="cpu", num_threads=1, threshold=0.0,
                                                    signatures=False))
    for size in (4, 3, 7, 1):
        first = at - at % size
        docs = [Document(line["id"], line["text"]) for line in lines[first:first + size]
                if line["text"] and "\x00" not in line["text"]]
        for doc, result in zip(docs, extractor.process_many(docs), strict=True):
            for m in result.mentions if doc.id == "doc-0297" else []:
                if (m["subject"]["text"], m["object"]["text"], m["sentence"]) == ("Globex Corp", "John Smith", 2):
                    print(f"doc-0297 in a chunk of {size}: {m['relation']} {m['probability']:.10f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--documents", type=int, default=600)
    args = parser.parse_args()
    main(args.work, args.documents)
