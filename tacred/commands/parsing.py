"""Command-line parsing shared by tacred's own commands: one-line errors, options spelled with underscores."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from tacred.errors import USER_ERROR_STATUS

_HYPHENATED_OPTION = re.compile(r"--[A-Za-z][A-Za-z0-9_.]*-[A-Za-z0-9_.-]*")


def underscored(args: Sequence[str], stop: str | None = "--extra") -> list[str]:
    """Option names with underscores, as Lightning spells them (``--ckpt_path``): ``--n-trials`` and ``--n_trials``
    are the same option. Values are kept as given; nothing after ``stop`` (``--extra``: options handed on to
    ``tacred fit``) is touched."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == stop:
            break
        name, sep, value = arg.partition("=")
        if _HYPHENATED_OPTION.fullmatch(name):
            out[i] = name.replace("-", "_").replace("__", "--", 1) + sep + value
    return out


class OneLineParser(argparse.ArgumentParser):
    """argparse for tacred's commands: a bad option or value is one line on stderr and exit status 2, not a usage dump
    (``--help`` still prints the whole usage). Options are spelled with underscores; the hyphen spelling is accepted
    (:func:`underscored`)."""

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:
        return super().parse_known_args(underscored(sys.argv[1:] if args is None else args), namespace)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(USER_ERROR_STATUS)
