"""What relation signatures do to precision: a checkpoint's predictions over TACRED-format test files with the gold
arguments, scored as they are and with every relation whose (subject type, object type) its signature does not allow
turned into no_relation (what ``tacred extract`` does by default). Prints micro P/R/F1 both ways per file; with
``--train``, one row per kind of signature: every pair seen in training (tacred before the schema), the support rule
alone, and the checkpoint's own (TAC KBP's schema where its labels have one). ``--schema_breaks`` counts the
relations of ``tacred extract`` outputs whose argument types break TAC KBP's schema.

    python benchmarks/signature_precision.py --ckpt_path RUN [--split FILE ...] [--train TRAIN_FILE]
    python benchmarks/signature_precision.py --demo   # a small model trained on the generated demo corpus
    python benchmarks/signature_precision.py --schema_breaks extracted.jsonl ...
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@dataclass(frozen=True)
class SignatureEffect:
    """One split's micro scores without and with the signature filter, and how many relations it removed
    (of them, how many were right)."""

    split: str
    examples: int
    without: tuple[float, float, float]
    with_signatures: tuple[float, float, float]
    removed: int
    removed_correct: int

    def row(self) -> str:
        (p0, r0, f0), (p1, r1, f1) = self.without, self.with_signatures
        return (f"| {self.split} | {self.examples} | {100 * p0:.1f} / {100 * r0:.1f} / {100 * f0:.1f} | "
                f"{100 * p1:.1f} / {100 * r1:.1f} / {100 * f1:.1f} | {self.removed} ({self.removed_correct} right) |")


def signature_effect(checkpoint: str | Path, split: str | Path, name: str, signatures: Any = None) -> SignatureEffect:
    """Score one TACRED-format file with and without the checkpoint's signatures, or ``signatures`` (the model's own
    labels; a gold label outside them counts as missed)."""
    from tacred.checkpoints import resolve_checkpoint
    from tacred.data.examples import load_examples
    from tacred.data.vocab import Vocabularies
    from tacred.evaluation.scoring import prf
    from tacred.extraction.preprocess import SignatureFilter
    from tacred.relation_types.signatures import coarse
    from tacred.training import evaluate

    checkpoint = resolve_checkpoint(checkpoint)
    vocab = Vocabularies.load(checkpoint)
    if vocab.signatures is None:
        raise SystemExit(f"{checkpoint}: holds no relation signatures (trained before tacred learned them)")
    examples = load_examples(split, strict=False).examples
    known = [ex for ex in examples if ex.relation in vocab.labels]
    if len(known) < len(examples):
        print(f"{name}: {len(examples) - len(known)} examples with labels the model does not have are left out",
              file=sys.stderr)
    evaluation = evaluate(checkpoint, _as_file(known, split))
    labels, no_relation = evaluation.labels, evaluation.no_relation
    predicted = evaluation.names(evaluation.predicted())
    types = SignatureFilter(signatures or vocab.signatures, labels, no_relation)
    filtered = [p if types.takes(p, coarse(ex.subj_type), coarse(ex.obj_type)) else no_relation
                for p, ex in zip(predicted, known, strict=True)]
    gold = evaluation.gold_names

    def micro(pred: list[str]) -> tuple[float, float, float]:
        g, p = np.array(gold), np.array(pred)
        correct = int(((p == g) & (p != no_relation)).sum())
        return tuple(float(x) for x in prf(correct, int((p != no_relation).sum()), int((g != no_relation).sum())))

    removed = [i for i, (a, b) in enumerate(zip(predicted, filtered, strict=True)) if a != b]
    return SignatureEffect(name, len(known), micro(predicted), micro(filtered), len(removed),
                           sum(predicted[i] == gold[i] for i in removed))


def plain_text_effect(checkpoint: str | Path, split: str | Path, limit: int | None = None) -> str:
    """``tacred extract``'s view: the split's sentences as plain text, extracted without and with signatures; how
    many relations each gives and how many of them break a signature."""
    import json

    from tacred import load_model
    from tacred.extraction.preprocess import SignatureFilter
    from tacred.relation_types.signatures import Signatures

    model = load_model(checkpoint, device="cpu")
    signatures: Signatures = model.encoder.vocab.signatures
    texts = [" ".join(r["token"]) for r in json.loads(Path(split).read_text(encoding="utf-8"))][:limit]
    types = SignatureFilter(signatures, model.labels, model.encoder.no_relation)
    line = []
    for use in (False, True):
        found = [r for text in model.extract(texts, signatures=use) for r in text]
        broken = sum(not types.fact_fits(r.relation, r.subject.type, r.object.type) for r in found)
        line.append(f"{len(found)} relations, {broken} type-impossible ({100 * broken / max(len(found), 1):.1f}%)")
    return f"plain text of {len(texts)} sentences: without signatures {line[0]}; with signatures {line[1]}"


def training_signatures(train: str | Path) -> dict[str, Any]:
    """The two learned kinds of signature from a training file: every pair seen, and the support rule's pairs."""
    from collections import Counter

    from tacred.data.examples import load_examples
    from tacred.relation_types.signatures import Signatures, supported

    counts: dict[str, Counter] = {}
    for ex in load_examples(train, strict=False).examples:
        counts.setdefault(ex.relation, Counter())[(ex.subj_type, ex.obj_type)] += 1
    return {"every pair seen": Signatures({label: frozenset(c) for label, c in counts.items()}),
            "support rule alone": Signatures(supported(counts))}


def schema_breaks(path: str | Path) -> str:
    """How many relations of a ``tacred extract`` output (JSON Lines) break TAC KBP's schema, and which."""
    import json
    from collections import Counter

    from tacred.relation_types.schema import slot_pairs

    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    bad = Counter(r["relation"] for r in rows if slot_pairs(r["relation"]) is not None
                  and (r["subject"]["type"], r["object"]["type"]) not in slot_pairs(r["relation"]))
    top = ", ".join(f"{label} {n}" for label, n in bad.most_common(4))
    return (f"{path}: {len(rows)} relations, {sum(bad.values())} break the schema "
            f"({100 * sum(bad.values()) / max(len(rows), 1):.1f}%){': ' + top if top else ''}")


def _as_file(examples: list, like: str | Path) -> Path:
    """The examples as a TACRED JSON file (evaluate reads files)."""
    import json

    raw = {ex.id: ex for ex in examples}
    rows = [r for r in json.loads(Path(like).read_text(encoding="utf-8")) if str(r.get("id")) in raw]
    out = Path(tempfile.mkdtemp()) / Path(like).name
    out.write_text(json.dumps(rows), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt_path", default=None, help="a checkpoint or run folder trained with signatures")
    parser.add_argument("--split", nargs="*", default=[], help="TACRED-format files to score")
    parser.add_argument("--plain_text", type=int, default=None,
                        help="extract from the first N sentences of each split as plain text (default all; 0: none)")
    parser.add_argument("--demo", action="store_true", help="train the demo model and score its test split and "
                                                            "../shared/data/tacred_sample/test.json")
    parser.add_argument("--train", default=None, help="the model's training file: also score every pair seen in it "
                                                      "and the support rule's pairs")
    parser.add_argument("--schema_breaks", nargs="*", default=[], help="tacred extract outputs (JSON Lines) to check "
                                                                       "against TAC KBP's schema")
    args = parser.parse_args(argv)
    for path in args.schema_breaks:
        print(schema_breaks(path))
    if args.schema_breaks and not (args.ckpt_path or args.demo):
        return 0
    splits = [(s, Path(s).parent.name + "/" + Path(s).name) for s in args.split]
    checkpoint = args.ckpt_path
    if args.demo:
        from tacred.analysis.inspection import train_demo_model

        work = Path(tempfile.gettempdir()) / "tacred-signature-demo"
        checkpoint = train_demo_model(work, epochs=12, n_train=600, n_dev=100, n_test=400, word_dim=60)
        splits.append((str(work / "data" / "test.json"), "demo corpus test (400)"))
        sample = Path(__file__).resolve().parents[2] / "shared" / "data" / "tacred_sample" / "test.json"
        if sample.is_file():
            splits.append((str(sample), "tacred_sample test"))
    if checkpoint is None or not splits:
        parser.error("give --ckpt_path and --split, or --demo")
    print("| test data | examples | without signatures P / R / F1 | with signatures P / R / F1 | relations removed |")
    print("|---|---:|---:|---:|---:|")
    kinds = training_signatures(args.train) if args.train else {}
    for split, name in splits:
        for kind, signatures in kinds.items():
            print(signature_effect(checkpoint, split, f"{name}, {kind}", signatures).row(), flush=True)
        own = ", the checkpoint's signatures" if kinds else ""
        print(signature_effect(checkpoint, split, name + own).row(), flush=True)
    print(flush=True)
    for split, name in splits if args.plain_text != 0 else []:
        print(f"- {name}: {plain_text_effect(checkpoint, split, args.plain_text)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
