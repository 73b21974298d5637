"""The no-relation decision with numpy alone (prediction without torch uses it; :mod:`tacred.evaluation.threshold` tunes it).

Rule: predict the best other relation r* iff ``log p(r*) > log p(no_relation) + t``, else no_relation: ``t`` is a
log-margin (natural log), not a probability. ``t = 0`` is exactly the argmax; ``t > 0`` trades recall for precision,
``t < 0`` the other way round; ``|t|`` at most :data:`THRESHOLD_LIMIT`. Per-relation thresholds (``tacred threshold
tune --min_precision``) give each relation r its own ``t[r]``, read for the best other relation r*; a relation
switched off (``t[r] = +inf``, ``null`` in ``threshold.json``) is never predicted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tacred.errors import TacredError
from tacred.io import read_json

RULE = "predict the best relation r* iff log p(r*) > log p(no_relation) + threshold, else no_relation"
_TINY = 1e-300  # probabilities that underflowed to 0 get a finite log
# Float32 probabilities (both backends) lie in [1.4e-45, 1], so every log-margin lies within ±103.3 (a tuned threshold
# within ±104.3): a threshold beyond ±105 decides every input alike (all no_relation, or never no_relation).
THRESHOLD_LIMIT = 105.0
RELATION_RULE = ("predict the best relation r* iff log p(r*) > log p(no_relation) + threshold[r*], else no_relation; "
                 "a relation whose threshold is null is never predicted")
# what a threshold file or value holds: one log-margin, or one per relation label (None: switched off)
LoadedThreshold = float | dict[str, float | None]


class ThresholdError(TacredError, ValueError):
    """A threshold that cannot be tuned, read or applied; the message says which file or input and why."""


def checked_probabilities(probs: Any, no_relation_id: int) -> np.ndarray:
    """``probs`` as a float64 array (N, L), checked: at least 2 labels, finite and non-negative values."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ThresholdError(f"probabilities must have shape (examples, labels) with at least 2 labels, got {p.shape}")
    if not 0 <= no_relation_id < p.shape[1]:
        raise ThresholdError(f"no_relation_id {no_relation_id} is not a label id of {p.shape[1]} labels")
    bad = ~np.isfinite(p).all(axis=1) | (p < 0).any(axis=1)
    if bad.any():
        raise ThresholdError(f"example {int(np.flatnonzero(bad)[0])}: probabilities must be finite and non-negative")
    return p


def margins(p: np.ndarray, no_relation_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Best other label r* (N,) and the margin m = log p(no_relation) − log p(r*) (N,) of float64 probabilities."""
    other = p.copy()
    other[:, no_relation_id] = -1.0  # below every probability
    best = other.argmax(axis=1)  # (N,) first maximum, as argmax breaks ties
    logp = np.log(np.maximum(p, _TINY))
    return best, logp[:, no_relation_id] - np.take_along_axis(logp, best[:, None], axis=1)[:, 0]


def decide(probs: Any, no_relation_id: int, threshold: float | np.ndarray | None) -> np.ndarray:
    """Label ids (N,) under the rule of this module; ``threshold`` None or 0 gives ``probs.argmax(-1)``, an (L,)
    array gives each label its own (+inf: never predicted; :func:`label_thresholds` builds it).

    ``probs``: (N, L) array. An example exactly on the boundary is decided as the argmax decides.
    """
    p = checked_probabilities(probs, no_relation_id)
    best, margin = margins(p, no_relation_id)
    if isinstance(threshold, np.ndarray):
        if threshold.shape != (p.shape[1],) or np.isnan(threshold).any() or (threshold == -np.inf).any():
            raise ThresholdError(f"per-label thresholds must be {p.shape[1]} numbers or +inf, got {threshold!r}")
        t: Any = threshold[best]  # (N,) the threshold of each example's best other relation
    else:
        t = 0.0 if threshold is None else float(threshold)
        if not np.isfinite(t):
            raise ThresholdError(f"threshold must be a finite number, got {threshold!r}")
    p_best, p_nr = np.take_along_axis(p, best[:, None], axis=1)[:, 0], p[:, no_relation_id]
    # on the boundary (margin == -t) break the tie as argmax would: larger probability, then lower id
    argmax_says_relation = (p_best > p_nr) | ((p_best == p_nr) & (best < no_relation_id))
    relation = (margin < -t) | ((margin == -t) & argmax_says_relation)
    return np.where(relation, best, no_relation_id).astype(np.int64)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def load_threshold(source: float | int | str | Path) -> LoadedThreshold:
    """A threshold given as a number, a number in a string, or a ``threshold.json`` written by ``tacred threshold tune``:
    its number, or its per-relation thresholds (``relation_thresholds``: label → number, or None for a relation
    switched off)."""
    if isinstance(source, (int, float)) and not isinstance(source, bool):
        value: Any = source
    elif (value := _number(str(source))) is None:
        path = Path(source)
        if not path.is_file():
            raise ThresholdError(f"no_relation threshold: not a number and no such file: {path}")
        try:
            data = read_json(path)
            if isinstance(data, dict) and "relation_thresholds" in data:
                return _relation_thresholds(data["relation_thresholds"], path)
            value = data.get("no_relation_threshold")
        except (json.JSONDecodeError, AttributeError) as err:
            raise ThresholdError(f"{path}: not a threshold file written by 'tacred threshold tune' ({err})") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ThresholdError(f"{path}: 'no_relation_threshold' must be a number, found {value!r}")
    return _checked(value)


def _relation_thresholds(found: Any, path: Path) -> dict[str, float | None]:
    if not isinstance(found, dict) or not found:
        raise ThresholdError(f"{path}: 'relation_thresholds' must map relation labels to numbers (or null), "
                             f"found {type(found).__name__}")
    out: dict[str, float | None] = {}
    for label, value in found.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ThresholdError(f"{path}: the threshold of {label!r} must be a number or null, found {value!r}")
        try:
            out[str(label)] = None if value is None else _checked(value)
        except ThresholdError as err:
            raise ThresholdError(f"{path}: {label!r}: {err}") from None
    return out


def label_thresholds(threshold: LoadedThreshold | None, labels: Sequence[str], no_relation: str,
                     source: object = "per-relation thresholds") -> float | np.ndarray | None:
    """What :func:`decide` takes for a model with these labels: a single threshold as it is, per-relation ones as an
    (L,) array (+inf where switched off). Per-relation thresholds must name exactly the model's relations (``source``:
    how the error names them, e.g. their file)."""
    if threshold is None or not isinstance(threshold, Mapping):
        return threshold
    relations = [label for label in labels if label != no_relation]
    missing, unknown = set(relations) - set(threshold), set(threshold) - set(relations)
    if missing or unknown:
        raise ThresholdError(f"{source}: tuned for other labels than this model's "
                             f"(missing: {sorted(missing)[:5]}, not the model's: {sorted(unknown)[:5]})")
    out = np.zeros(len(labels))
    for i, label in enumerate(labels):
        if label != no_relation:
            value = threshold[label]
            out[i] = np.inf if value is None else value
    return out


def describe_threshold(threshold: float | np.ndarray | Mapping[str, Any] | None) -> str:
    """One line: ``+0.2500``, or ``per relation (36; 4 switched off)``."""
    if threshold is None:
        return "none (the argmax)"
    if isinstance(threshold, Mapping):
        return f"per relation ({len(threshold)}; {sum(v is None for v in threshold.values())} switched off)"
    if isinstance(threshold, np.ndarray):  # the no-relation label's own entry is never read
        return f"per relation ({threshold.size - 1}; {int(np.isposinf(threshold).sum())} switched off)"
    return f"{float(threshold):+.4f}"


def _checked(value: Any) -> float:
    if not np.isfinite(float(value)):
        raise ThresholdError(f"no_relation threshold must be finite, got {value!r}")
    if abs(float(value)) > THRESHOLD_LIMIT:
        raise ThresholdError(
            f"no_relation threshold {value!r} is outside [-{THRESHOLD_LIMIT:g}, {THRESHOLD_LIMIT:g}]: it is a log-margin "
            "(a relation r* is predicted iff log p(r*) > log p(no_relation) + threshold), and every margin of float32 "
            "probabilities lies within that range")
    return float(value)
