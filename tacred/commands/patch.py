"""``tacred patch``: write a TACREV or Re-TACRED version of a TACRED split and print what changed."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from tacred.commands.parsing import OneLineParser
from tacred.datasets.patch import (
    MODES,
    RETACRED_SPLIT_SIZES,
    TACREV_MD5,
    PatchError,
    PatchResult,
    apply_patch,
    check_mode,
    read_patch,
    read_split,
    write_split,
)
from tacred.errors import TacredError, report

HELP = "Apply a TACREV or Re-TACRED patch (keyed by example id) to a TACRED split."

_TOP_CHANGES = 10


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="tacred patch",
        description=HELP,
        epilog="TACREV (Alt et al., 2020): patch/{dev,test}_patch.json from github.com/DFKI-NLP/tacrev; "
        "examples not in the patch keep their label. Re-TACRED (Stoica et al., 2021): "
        "Re-TACRED/{train,dev,test}_id2label.json from github.com/gstoica27/Re-TACRED; examples not in "
        "the patch were removed by its authors and are left out.",
    )
    parser.add_argument("data", type=Path, metavar="DATA.json", help="TACRED split (official JSON list)")
    parser.add_argument("patch", type=Path, metavar="PATCH.json", help="patch file keyed by example id")
    parser.add_argument("out", type=Path, metavar="OUT.json", help="where to write the patched split")
    parser.add_argument(
        "--mode", choices=MODES, default=None,
        help="how to apply the patch; default: from the patch layout (a list of {id, relation} objects "
        "is TACREV, one id -> relation object is Re-TACRED)",
    )
    return parser


def _report(result: PatchResult, n_in: int) -> list[str]:
    confirmed = result.patched - result.changed
    lines = [
        f"  examples in   {n_in:>7}",
        f"  changed       {result.changed:>7}  (the patch gives a new relation)",
        f"  unchanged     {result.unchanged:>7}  ({confirmed} confirmed by the patch, "
        f"{result.unchanged - confirmed} not in it)",
        f"  removed       {result.removed:>7}"
        + ("  (not in the Re-TACRED patch: dropped by its authors)" if result.removed else ""),
        f"  examples out  {len(result.examples):>7}",
    ]
    if result.removed:
        lines.append("  first removed ids: " + ", ".join(result.removed_ids[:5]))
    if result.changes:
        lines.append("most frequent changes:")
        for (old, new), n in result.changes.most_common(_TOP_CHANGES):
            lines.append(f"  {old} -> {new}  {n}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.out.resolve() in {args.data.resolve(), args.patch.resolve()}:
        return report("patch", TacredError(f"OUT.json ({args.out}) must differ from DATA.json and PATCH.json"))
    try:
        patch_file = read_patch(args.patch)
        mode = args.mode or patch_file.layout
        check_mode(patch_file, mode, args.patch)
        examples = read_split(args.data)
        result = apply_patch(
            examples, patch_file.labels, source=str(args.patch), mode=mode, data_source=str(args.data)
        )
        write_split(args.out, result.examples)
    except (PatchError, OSError) as e:
        return report("patch", e)

    how = "--mode" if args.mode else "the patch layout"
    print(f"{mode} patch {args.patch} ({len(patch_file.labels)} ids; mode from {how}) on {args.data}:")
    print("\n".join(_report(result, len(examples))))
    md5 = hashlib.md5(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} (md5 {md5})")
    for split, published in TACREV_MD5.items():
        if md5 == published:
            print(f"matches the md5 TACREV publishes for its patched {split} split")
    if mode == "retacred":
        for split, size in RETACRED_SPLIT_SIZES.items():
            if len(result.examples) == size:
                print(f"{size} examples: the size of Re-TACRED's {split} split")
    return 0
