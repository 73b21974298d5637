"""Label sets a user chooses: a ``labels.json`` file, or the labels found in the data (``--data.labels auto``),
refused when they look like misspelled TACRED labels, since a typo would silently change the task."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tacred import constants as C
from tacred.errors import LabelError, read_text

_NEAR = 0.85  # difflib ratio above which an unknown label counts as a near-miss of a known one


def known_labels() -> set[str]:
    """TACRED's 42 and Re-TACRED's 40 labels."""
    from tacred.datasets.patch import RETACRED_LABELS

    return set(C.TACRED_LABELS) | set(RETACRED_LABELS)


def near_misses(labels: set[str] | list[str]) -> dict[str, str]:
    """Unknown labels that look like a TACRED/Re-TACRED label (``per:titel`` → ``per:title``)."""
    known = sorted(known_labels())
    out = {}
    for label in sorted(set(labels) - set(known)):
        close = difflib.get_close_matches(label, known, n=1, cutoff=_NEAR)
        if close or label.lower() in {k.lower() for k in known}:
            out[label] = close[0] if close else next(k for k in known if k.lower() == label.lower())
    return out


def check_custom_labels(seen: Mapping[str, str], no_relation: str) -> None:
    """With ``labels: auto``, refuse data whose labels are TACRED's but for near-misses, and data without the
    no-relation label. ``seen`` maps each label to the file it was found in."""
    misses = near_misses(list(seen))
    if misses:
        label, meant = next(iter(misses.items()))
        raise LabelError(f"{seen[label]}: relation {label!r} is not a TACRED label but looks like {meant!r}"
                         f"{f' (and {len(misses) - 1} more near-misses)' if len(misses) > 1 else ''}; fix the data, "
                         "or give the label set explicitly (--data.labels FILE or a list) to train on custom labels")
    if no_relation not in seen:
        raise LabelError(f"--data.no_relation {no_relation!r}: no example has this label (labels found: "
                         f"{', '.join(sorted(seen)[:6])}{', ...' if len(seen) > 6 else ''}); set it to the data's "
                         "no-relation label")


def read_label_file(path: str | Path) -> list[str]:
    """A JSON list of distinct, non-empty label strings."""
    try:
        data = json.loads(read_text(path, "--data.labels"))
    except json.JSONDecodeError as err:
        raise LabelError(f"--data.labels {path}: invalid JSON at line {err.lineno}: {err.msg}") from None
    except RecursionError:
        raise LabelError(f"--data.labels {path}: JSON nested too deeply") from None
    if not isinstance(data, list) or not data or not all(isinstance(x, str) and x.strip() for x in data):
        raise LabelError(f"--data.labels {path}: expected a non-empty JSON list of label strings")
    repeated = sorted({x for x in data if data.count(x) > 1})
    if repeated:
        raise LabelError(f"--data.labels {path}: labels repeated: {', '.join(repeated[:5])}")
    return data


def label_ids(examples: Sequence[Any], labels: Any, source: str = "") -> np.ndarray:
    """The id of each example's relation in ``labels`` (a :class:`~tacred.data.vocab.Vocab`); a :class:`LabelError`
    names the first example whose relation the model does not have."""
    ids = []
    for i, ex in enumerate(examples):
        if ex.relation not in labels:
            raise LabelError(f"{source}: example {i} (id {ex.id!r}): relation {ex.relation!r} is not in the label set "
                             f"of this model ({len(labels)} labels, e.g. {labels.itos[:4]})")
        ids.append(labels.id(ex.relation))
    return np.asarray(ids, dtype=np.int64)
