"""One error path for every ``tacred`` command: a user error is one line and exit status 2, never a traceback.

Every error a user can fix derives from :class:`TacredError`; :func:`report` turns any exception into the line
``tacred CMD: error: WHAT: PROBLEM``. ``--debug`` (or ``TACRED_DEBUG=1``) re-raises instead, with the traceback.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

USER_ERROR_STATUS = 2
INTERNAL_ERROR_STATUS = 1
_MAX_MESSAGE = 600  # characters of one error line; jsonargparse's messages can list every class of a union


class TacredError(Exception):
    """An input or option that the user can fix; the message names the file (and example, field) or option."""


class LabelError(TacredError, ValueError):
    """An example whose relation is not in the model's label set."""


class GloveFormatError(TacredError, ValueError):
    """Word vectors that cannot be used: a damaged GloVe file, a line that is not a token followed by ``dim`` numbers,
    or installed vectors (:mod:`tacred.data.packaged_vectors`) of another size than the network's."""


class ConfigError(TacredError, ValueError):
    """An option with a value outside its allowed range or choices, or a configuration file that cannot be read."""


class ExportError(TacredError, RuntimeError):
    """An export that cannot be written or does not reproduce the PyTorch model (``tacred export``)."""


def debug_requested(argv: list[str]) -> tuple[bool, list[str]]:
    """Whether ``--debug`` (anywhere) or ``TACRED_DEBUG=1`` asks for tracebacks; ``argv`` without ``--debug``."""
    rest = [a for a in argv if a != "--debug"]
    env = os.environ.get("TACRED_DEBUG", "").strip().lower() not in ("", "0", "false", "no")
    return env or len(rest) != len(argv), rest


def is_user_error(err: BaseException) -> bool:
    """Errors caused by inputs or options (the project's own, files that cannot be read, bad option values)."""
    from jsonargparse import ArgumentError

    return isinstance(err, TacredError | OSError | UnicodeError | ArgumentError)


def one_line(err: BaseException) -> str:
    """The message of ``err`` on one line (a file name in an OSError included)."""
    if isinstance(err, OSError) and err.filename is not None and str(err.filename) not in str(err.strerror or ""):
        text = f"{err.filename}: {err.strerror or err}"
    elif type(err).__name__ == "ArgumentError":
        text = option_message(" ".join(str(err).split()))
    elif isinstance(err, UnicodeDecodeError):
        text = f"not UTF-8 text: byte {err.object[err.start:err.start + 1]!r} at offset {err.start}"
    else:
        text = str(err) or type(err).__name__
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


# linked options whose source is a field of a nested option (jsonargparse names only the nested option)
LINK_SOURCES = {"data.embedding_dim": "model.network.word_dim"}


def option_message(text: str) -> str:
    """jsonargparse's message for a bad value, shortened to ``--OPTION 'VALUE': expected ...``."""
    linked = re.search(r'Linked "([^"]+)" must be given via "([^"]+)"', text)
    if linked:
        source = LINK_SOURCES.get(linked.group(1), linked.group(2))
        return f"--{linked.group(1)}: cannot be set on its own; it follows --{source}"
    keys = re.findall(r'Parser key "([^"]+)"', text)
    if not keys:
        return text
    option = "--" + ".".join(dict.fromkeys(keys))  # "model.network" then "num_heads"
    match = re.search(r"Expected a (?:typing\.Literal\[(.*?)\]|<class '(?:[\w.]*\.)?(\w+)'>)\. Got value: (.*?)(?: - |$)", text)
    if match:
        expected = f"one of {match.group(1)}" if match.group(1) else f"a value of type {match.group(2)}"
        return f"{option} {match.group(3).strip()!r}: expected {expected}"
    match = re.search(r"Subtypes: \[(.*?)\].*Given value: (.*)$", text)
    if match:
        types = ["None" if t == "NoneType" else t for t in re.findall(r"<class '(?:[\w.]*\.)?(\w+)'>", match.group(1))]
        return f"{option} {match.group(2).strip()!r}: expected a value of type {' or '.join(types)}"
    return f"{option}: {text.split(': ', 1)[-1]}"


def report(command: str, err: BaseException) -> int:
    """Print ``err`` as one line on stderr; return the exit status (2 for user errors, 1 for internal ones)."""
    prefix = f"tacred {command}".strip() if command else "tacred"
    if is_user_error(err):
        print(f"{prefix}: error: {one_line(err)}", file=sys.stderr)
        return USER_ERROR_STATUS
    print(f"{prefix}: internal error ({type(err).__name__}): {one_line(err)} "
          f"(please report it; --debug shows the traceback)", file=sys.stderr)
    return INTERNAL_ERROR_STATUS


def read_text(path: str | Path, what: str = "") -> str:
    """A UTF-8 text file's content (``-``: standard input); text that is not UTF-8 is a :class:`TacredError` naming
    the file and the line."""
    if str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)  # None when stdin was replaced by a text stream (tests, notebooks)
        return decode_text(stream.read(), "<stdin>", what) if stream is not None else sys.stdin.read()
    return decode_text(Path(path).read_bytes(), str(path), what)


def decode_text(data: bytes, name: str, what: str = "") -> str:
    """``data`` decoded as UTF-8 (a byte-order mark is dropped); otherwise a :class:`TacredError` naming ``name``."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        label = f"{what} " if what else ""
        raise TacredError(f"{label}{name}, line {line}: not UTF-8 text (byte {data[err.start:err.start + 1]!r} "
                          f"at offset {err.start}); convert the file to UTF-8") from None
