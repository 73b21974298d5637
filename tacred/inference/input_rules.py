"""The input contract that every way to predict shares (``load_model``, ``tacred predict --sentences``, ``tacred
extract``, ``tacred serve``, an exported ONNX folder): its limits, and the checks that turn a wrong input into one
:class:`InputError` message, the same whichever way the input came in."""

from __future__ import annotations

from collections.abc import Set

from tacred.errors import TacredError

MAX_TOKENS = 512  # tokens per input by default: TACRED's longest sentence has 96, SemEval's 97 (spaCy tokens)
MAX_CHARACTERS = 1_000_000  # characters per input: spaCy's own limit (its nlp.max_length, error E088)
MAX_PAIRS = 100  # candidate pairs predicted per text in extraction (the closest together when there are more)


class InputError(TacredError, ValueError):
    """An input the model cannot read; the message names the item and the problem. ``item`` is the input's position
    in the list given (None when no one input is at fault) and ``problem`` the message without the position."""

    def __init__(self, message: str, item: int | None = None, problem: str | None = None) -> None:
        super().__init__(message)
        self.item = item
        self.problem = message if problem is None else problem


def check_max_tokens(max_tokens: int | None) -> int | None:
    """``max_tokens`` as given, checked: a whole number of at least 1, or None for no limit."""
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError(f"max_tokens must be a whole number of at least 1 (or None: no limit), got {max_tokens!r}")
    return max_tokens


def check_characters(text: str) -> None:
    """A text longer than spaCy reads in one piece."""
    if len(text) > MAX_CHARACTERS:
        raise InputError(f"{len(text):,} characters, more than the limit of {MAX_CHARACTERS:,} characters per input")


def check_token_count(count: int, max_tokens: int | None, exact: bool = True) -> None:
    """``count`` tokens (``exact``) or whitespace-separated words (at least as many tokens) over the limit."""
    if max_tokens is not None and count > max_tokens:
        what = "tokens" if exact else "words (at least as many tokens)"
        raise InputError(f"{count} {what}, more than the limit of {max_tokens} tokens per input")


def _word_around(text: str, at: int) -> str:
    start, end = at, at
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return text[start:end]


def check_word_boundaries(text: str, span: tuple[int, int], role: str) -> None:
    """A span (end-exclusive character offsets) must begin and end between words: ``[0, 8]`` on "Maria Lopez"
    would make the subject "Maria Lo"."""
    start, end = span
    for at, edge in ((start, "begins"), (end, "ends")):
        if 0 < at < len(text) and text[at - 1].isalnum() and text[at].isalnum():
            raise InputError(f"the {role} {text[start:end]!r} {edge} inside the word {_word_around(text, at)!r}; "
                             "a span must begin and end at word boundaries")


def check_entity_type(entity_type: str | None, role: str, known: Set[str] | None) -> None:
    """An entity type given with an input must be one the model knows (``known``; None: the model takes any)."""
    if entity_type is not None and known and entity_type not in known:
        raise InputError(f"unknown {role} type {entity_type!r}; this model knows {', '.join(sorted(known))}")
