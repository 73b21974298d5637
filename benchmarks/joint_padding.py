"""How much of a joint model's encoder input is padding under ``tacred extract``, by chunk size (counted, not timed).

``tacred extract`` hands the model one chunk of documents at a time (``--chunk_size``, default 64). A joint model
sorts the chunk's sentences by their word pieces and reads them ``--batch_size`` (default 50) at a time, each batch
padded to its longest sentence, so a small chunk leaves it batches of mixed lengths: padding is encoder work that
reads nothing. The rows count it with the model's own preprocessing, tokenizer and batching
(``Extraction.preprocess``, ``JointReader.encode`` and ``JointReader.batches``); no encoder runs.

    python benchmarks/joint_padding.py --joint RUN [--documents FILE.jsonl --one_sentence] [--chunk_sizes 16,64]
        [--batch_size 50]

Without ``--documents`` the rows read the demo documents of ``benchmarks/joint_cost.py`` (100 documents of five
sentences). ``docs/results/conll04/joint_cost/padding.md`` is its output for the joint MPNet run of that record.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Table, machine_line  # noqa: E402

from tacred.extraction.runner import CHUNK_SIZE  # noqa: E402


def padding(model: Any, texts: list[str], chunk_size: int, one_sentence: bool) -> dict[str, int]:
    """Sentences, batches, word pieces read and pieces padded when ``texts`` go through ``model`` (a loaded joint
    model) ``chunk_size`` at a time, as ``tacred extract`` hands them over."""
    extraction = model.extraction(one_sentence=one_sentence)
    counts = {"sentences": 0, "batches": 0, "pieces": 0, "padded": 0}
    for at in range(0, len(texts), chunk_size):
        chunk = texts[at:at + chunk_size]
        prepared = extraction.preprocess(extraction.nlp.pipe(chunk), [f"text {at + i}" for i in range(len(chunk))])
        encoded = [e for e in (model.encode(s.words) for s in prepared.sentences) if e is not None]
        for batch in model.batches(encoded):
            lengths = [len(encoded[i].input_ids) for i in batch]
            counts["batches"] += 1
            counts["pieces"] += sum(lengths)
            counts["padded"] += max(lengths) * len(lengths) - sum(lengths)
        counts["sentences"] += len(encoded)
    return counts


def run(joint: Path, documents: Path | None, one_sentence: bool, chunk_sizes: list[int], batch_size: int) -> Table:
    from tacred import load_model

    model = load_model(joint, device="cpu", batch_size=batch_size)
    if model.kind != "joint":
        raise SystemExit(f"--joint {joint}: not a joint entity-and-relation model")
    with tempfile.TemporaryDirectory(prefix="tacred-bench-padding-") as scratch:
        if documents is None:
            from joint_cost import DEMO_DOCUMENTS, demo_documents

            documents, source = demo_documents(Path(scratch), DEMO_DOCUMENTS), "the demo documents of joint_cost.py"
        else:
            source = str(documents)
        lines = documents.read_text(encoding="utf-8").splitlines()
        texts = [json.loads(line)["text"] for line in lines if line.strip()]
    table = Table("Joint model: padded word pieces a chunk size", ["chunk size (documents)", "sentences", "batches",
                                                                    "word pieces", "padded pieces", "padding share"])
    for size in chunk_sizes:
        c = padding(model, texts, size, one_sentence)
        share = c["padded"] / max(c["pieces"] + c["padded"], 1)
        table.add(size, c["sentences"], c["batches"], c["pieces"], c["padded"], f"{100 * share:.1f}%")
    table.notes += [
        f"model: {joint}; documents: {len(texts)} from {source}{' (--one_sentence)' if one_sentence else ''}; "
        f"batches of {batch_size} sentences (tacred extract --batch_size), sorted by word pieces within a chunk.",
        "padding share: padded pieces over all the pieces the encoder reads (each batch padded to its longest "
        "sentence).",
        machine_line(),
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="benchmarks/joint_padding.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--joint", type=Path, required=True, help="a joint run, its checkpoint or export folder")
    parser.add_argument("--documents", type=Path, default=None,
                        help="JSON Lines of {\"text\": ...} (default: joint_cost.py's demo documents)")
    parser.add_argument("--one_sentence", action="store_true", help="each document is one sentence")
    parser.add_argument("--chunk_sizes", default=f"16,{CHUNK_SIZE}",
                        help=f"documents a chunk, comma-separated (default 16,{CHUNK_SIZE})")
    parser.add_argument("--batch_size", type=int, default=50, help="sentences a forward pass (default 50)")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.chunk_sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--chunk_sizes {args.chunk_sizes!r}: whole numbers, comma-separated")
    if not sizes or min(sizes) < 1 or args.batch_size < 1:
        parser.error("--chunk_sizes and --batch_size must be at least 1")
    for flag in ("joint", "documents"):
        if getattr(args, flag) is not None and not getattr(args, flag).exists():
            parser.error(f"--{flag} {getattr(args, flag)}: not found")
    print(run(args.joint, args.documents, args.one_sentence, sizes, args.batch_size).render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
