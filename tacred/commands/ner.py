"""``tacred ner train --data DIR --out DIR``: a spaCy NER trained on a dataset's own entities (CoNLL04), saved where
``tacred extract`` finds it (``RUN/ner``)."""

from __future__ import annotations

import argparse
import json

from tacred.commands.parsing import OneLineParser
from tacred.errors import report

HELP = "Train a spaCy NER on a dataset's own entity annotations (CoNLL04) for tacred extract."


def build_parser() -> argparse.ArgumentParser:
    from tacred.ner.loop import CHECKPOINT_MINUTES
    from tacred.ner.training import BASE_MODEL, DEFAULT_PRETRAINED, ENCODERS, TRANSFORMER_RATE

    parser = OneLineParser(
        prog="tacred ner", description=HELP,
        epilog="train: writes OUT/{train,dev}.spacy (DocBins of the sentences as tacred extract reads them), "
               "OUT/base (the starting pipeline: the base model's NER with the dataset's types), OUT/config.cfg, "
               "OUT/model-best (best dev entity F1), OUT/model-last and OUT/training.json. Give --out RUN/ner and "
               "tacred extract --ckpt_path RUN uses it (--ner stock: spaCy's own entities). A run that is killed "
               "leaves OUT/checkpoint; the same command continues from it to the model an unbroken run trains.")
    sub = parser.add_subparsers(dest="action", required=True, metavar="{train}")
    train = sub.add_parser("train", help="train with spaCy's training loop (resumable) from a generated config")
    train.add_argument("--data", required=True, metavar="DIR",
                       help="a CoNLL04 release folder in SpERT's layout (conll04_train.json, conll04_dev.json)")
    train.add_argument("--out", required=True, metavar="DIR", help="output folder, e.g. RUN/ner beside RUN/checkpoints")
    train.add_argument("--seed", type=int, default=1, help="spaCy's training seed (default 1)")
    train.add_argument("--max_epochs", type=int, default=30, help="epochs over the training sentences (default 30)")
    train.add_argument("--eval_frequency", type=int, default=50, help="steps between dev evaluations (default 50)")
    train.add_argument("--encoder", choices=ENCODERS, default="cnn",
                       help="cnn: the base model's own CNN NER, trained on from its weights (default); transformer: "
                            "the --pretrained model fine-tuned under a new NER (pip install -e '.[ner]'; slower to "
                            "train and to run)")
    train.add_argument("--pretrained", default=None, metavar="NAME|DIR",
                       help=f"--encoder transformer: a packaged model ({DEFAULT_PRETRAINED}, mpnet) or a Hugging Face "
                            f"model folder (config.json, the weights, tokenizer.json; default {DEFAULT_PRETRAINED})")
    train.add_argument("--learn_rate", type=float, default=None,
                       help=f"--encoder transformer: Adam's peak rate, after a warm-up over the first 10%% of the "
                            f"steps (default {TRANSFORMER_RATE})")
    train.add_argument("--head_rate", type=float, default=None, metavar="RATE",
                       help="--encoder transformer: the peak rate of the NER's own layers and the shape columns "
                            "(default: --learn_rate)")
    train.add_argument("--shape_width", type=int, default=None, metavar="N",
                       help="--encoder transformer: add N columns of hashed embeddings of each token's shape, first "
                            "letter and last three letters, the case an uncased encoder does not see (default 0: none)")
    train.add_argument("--bf16", action="store_true",
                       help="--encoder transformer: run the encoder under bfloat16 autocast, in training and in "
                            "tacred extract (about 3x faster on CPUs with AMX, slower on CPUs without bf16)")
    train.add_argument("--with_dev", action="store_true",
                       help="train on the training and dev sentences together for --max_epochs over both, without "
                            "an early stop, as SpERT trained its final models; model-best is then the last model "
                            "(nothing held out to choose on) and the dev scores are on seen sentences")
    train.add_argument("--checkpoint_minutes", type=float, default=CHECKPOINT_MINUTES, metavar="M",
                       help="minutes between the checkpoints (OUT/checkpoint: weights, optimizer, position, random "
                            f"state) that a rerun of the same command resumes from (default {CHECKPOINT_MINUTES:g}; "
                            "0: after every step)")
    train.add_argument("--base_model", default=None,
                       help=f"--encoder cnn: the packaged spaCy pipeline whose NER training starts from (default "
                            f"{BASE_MODEL})")
    train.add_argument("--overwrite", action="store_true",
                       help="train again into an --out that holds a finished NER (training.json), replacing it "
                            "(default: refuse; a killed run's OUT/checkpoint is resumed by the same command)")
    return parser


# the options of one encoder only: given with the other, they would be ignored, so they are refused
TRANSFORMER_ONLY = ("pretrained", "learn_rate", "head_rate", "shape_width", "bf16")
CNN_ONLY = ("base_model",)


def check_options(args: argparse.Namespace) -> None:
    """Every option checked, and the defaults of the chosen encoder's own filled in, before anything is read or
    loaded; options of the other encoder are refused."""
    from tacred.ner.training import BASE_MODEL, DEFAULT_PRETRAINED, TRANSFORMER_RATE, NerTrainingError

    if args.max_epochs < 1:
        raise NerTrainingError(f"--max_epochs {args.max_epochs}: must be at least 1")
    if args.eval_frequency < 1:
        raise NerTrainingError(f"--eval_frequency {args.eval_frequency}: must be at least 1")
    other = TRANSFORMER_ONLY if args.encoder == "cnn" else CNN_ONLY
    given = [name for name in other if getattr(args, name) not in (None, False)]
    if given:
        flags = ", ".join(f"--{name}" for name in given)
        raise NerTrainingError(f"{flags}: {'options' if len(given) > 1 else 'an option'} of --encoder "
                               f"{'transformer' if args.encoder == 'cnn' else 'cnn'}, not of --encoder {args.encoder}")
    if args.encoder == "cnn":
        args.base_model = args.base_model or BASE_MODEL
    else:
        args.pretrained = args.pretrained or DEFAULT_PRETRAINED
        args.learn_rate = TRANSFORMER_RATE if args.learn_rate is None else args.learn_rate
        args.shape_width = 0 if args.shape_width is None else args.shape_width
    for flag, rate in (("--learn_rate", args.learn_rate), ("--head_rate", args.head_rate)):
        if rate is not None and not rate > 0:
            raise NerTrainingError(f"{flag} {rate}: must be above 0")
    if not args.checkpoint_minutes >= 0:
        raise NerTrainingError(f"--checkpoint_minutes {args.checkpoint_minutes}: must be 0 or more")
    if args.shape_width is not None and args.shape_width < 0:
        raise NerTrainingError(f"--shape_width {args.shape_width}: must be 0 (none) or more")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.datasets.conll04 import CoNLL04Error
    from tacred.io import left_as_found
    from tacred.ner.training import NerTrainingError, check_output, resumable, train_ner
    from tacred.text.spacy_pipeline import SpacyModelError
    from tacred.training.quiet import tacred_log_lines

    try:
        check_options(args)
        check_output(args.out, args.overwrite)
        # a run that fails leaves --out as it found it, unless it wrote a checkpoint that the same command resumes
        with tacred_log_lines(), left_as_found(args.out, keep=resumable):
            transformer = {"pretrained": args.pretrained, "learn_rate": args.learn_rate, "bf16": args.bf16,
                           "head_rate": args.head_rate, "shape_width": args.shape_width}
            record = train_ner(args.data, args.out, seed=args.seed, max_epochs=args.max_epochs,
                               eval_frequency=args.eval_frequency, encoder=args.encoder,
                               with_dev=args.with_dev, checkpoint_minutes=args.checkpoint_minutes,
                               overwrite=args.overwrite,
                               **({"base_model": args.base_model} if args.encoder == "cnn" else transformer))
    except (NerTrainingError, CoNLL04Error, SpacyModelError, OSError) as err:
        return report("ner train", err)
    print(json.dumps({k: record[k] for k in ("labels", "types", "seconds")}
                     | {"dev_ents_f": record["dev_scores"].get("ents_f")}))
    return 0
