"""``tacred models [list|show NAME|build NAME]``: the models shipped inside the package, their cards, and the step
that makes one from a checkpoint (``make shipped-models``)."""

from __future__ import annotations

import argparse

from tacred.commands.parsing import OneLineParser
from tacred.errors import report

HELP = "List the models shipped with tacred (ready to use: --model NAME), show a model's card, or build one."
EPILOG = """\
A shipped model needs no training and no download: tacred extract docs.jsonl --model kbp37,
tacred serve --model kbp37, or from Python tacred.load_model("kbp37").

examples:
  tacred models
  tacred models show kbp37
  tacred models build kbp37 --ckpt_path runs/shipped/kbp37/checkpoints/last.ckpt --data_dir data/kbp37
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="tacred models", description=HELP, epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", metavar="{list,show,build}")
    sub.add_parser("list", help="name, task, architecture, size, test scores and card of each (the default)")
    show = sub.add_parser("show", help="print a model's card (data, recipe, scores, limitations)")
    show.add_argument("name", help="a shipped model's name")
    build = sub.add_parser("build", help="write a shipped model from a checkpoint and its converted data")
    build.add_argument("name", help="the model's name (its recipe: tacred.inference.shipping.RECIPES)")
    build.add_argument("--ckpt_path", required=True, help="checkpoint (or run folder) of the trained network")
    build.add_argument("--data_dir", required=True, help="the converted data with dev.json and test.json")
    build.add_argument("--out", default=None, help="folder of shipped models (default: the package's own)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.inference import shipped

    try:
        if args.action == "show":
            print(shipped.shipped_info(args.name).card.read_text(encoding="utf-8"), end="")
        elif args.action == "build":
            from tacred.inference.shipping import build_shipped, check_build

            check_build(args.name, args.ckpt_path, args.data_dir)  # before torch loads

            folder = build_shipped(args.name, args.ckpt_path, args.data_dir,
                                   *([args.out] if args.out is not None else []))
            info = shipped.shipped_info(args.name, folder.parent)
            print(shipped.format_listing([info]))
        else:
            infos = [shipped.shipped_info(name) for name in shipped.shipped_names()]
            print(shipped.format_listing(infos) if infos else "no models are shipped in this installation")
    except (OSError, ValueError) as err:
        return report("models", err)
    return 0
