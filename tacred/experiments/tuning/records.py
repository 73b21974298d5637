"""What a study leaves as data: ``trials.json`` (every finished trial; a new storage is seeded from it),
``trials.csv``, ``summary.md`` and ``best.yaml`` (the best trial's parameters as a config file)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tacred.experiments.tuning.space import SearchSpace, TuneError, nested
from tacred.io import write_json, write_text_atomic

STUDY_FILES = ("best.yaml", "trials.csv", "summary.md", "trials.json")
FINISHED = ("COMPLETE", "PRUNED")
OFFSET = "trial_offset"  # study attribute: a trial's label is its number in this storage + this offset


def trial_label(trial: Any) -> int:
    """A trial's name across storages (``trial_0016``): Optuna numbers the trials of each storage from 0, so a study
    seeded from ``trials.json`` on another machine would number them anew; the label stays. Records written before
    labels existed carry it in their run folder's name."""
    attrs = trial.user_attrs if hasattr(trial, "user_attrs") else trial.get("user_attrs", {})
    if attrs.get("trial") is not None:
        return int(attrs["trial"])
    found = re.search(r"trial_(\d+)$", str(attrs.get("run_dir", "")))
    return int(found.group(1)) if found else int(trial.number if hasattr(trial, "number") else trial["number"])


def trial_rows(study: Any) -> list[dict[str, Any]]:
    """One row per trial: number, state, best dev F1, epochs trained, seconds, run folder and parameters."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        steps = t.intermediate_values
        rows.append({"number": trial_label(t), "state": t.state.name, "value": t.value,
                     "epochs": t.user_attrs.get("epochs", (max(steps) + 1) if steps else 0),
                     "seconds": t.user_attrs.get("seconds"), "run_dir": t.user_attrs.get("run_dir", ""),
                     "best_dev_f1": t.user_attrs.get("best_dev_f1", max(steps.values()) if steps else None),
                     "params": dict(t.params)})
    return rows


def best_trial(study: Any) -> Any | None:
    import optuna

    done = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))]
    return max(done, key=lambda t: t.value) if done else None


def render_trials_csv(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["number", "state", "value", "best_dev_f1", "epochs", "seconds", *names])
    for r in rows:
        value = "" if r["value"] is None else f"{r['value']:.6f}"
        best = "" if r["best_dev_f1"] is None else f"{r['best_dev_f1']:.6f}"
        writer.writerow([r["number"], r["state"], value, best, r["epochs"], r["seconds"] or "",
                         *(r["params"].get(n, "") for n in names)])
    return buf.getvalue()


def format_value(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def render_summary(study: Any, space: SearchSpace, space_path: str, rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown summary: the budget, the best trial, and the ten best trials."""
    best = best_trial(study)
    states: dict[str, int] = {}
    for r in rows:
        states[r["state"]] = states.get(r["state"], 0) + 1
    epochs = sum(r["epochs"] for r in rows)
    hours = sum(r["seconds"] or 0 for r in rows) / 3600
    lines = [f"# Study `{study.study_name}`", "",
             f"Search space: `{space_path}` (base configs: {', '.join(f'`{c}`' for c in space.configs) or 'none'}; "
             f"training seed {space.seed}; objective: {space.describe()}, dev split only).",
             "", f"Budget so far: {len(rows)} trial{'' if len(rows) == 1 else 's'} ({', '.join(f'{n} {s.lower()}' for s, n in sorted(states.items()))}), "
             f"{epochs} epochs trained, {hours:.1f} h of training recorded (a trial process that died records none, "
             "and a resumed trial counts from its resume).", ""]
    if best is None:
        return "\n".join([*lines, "No trial has completed yet.", ""])
    lines += [f"Best: trial {trial_label(best)}, value {100 * best.value:.2f} (best dev F1 "
              f"{100 * best.user_attrs.get('best_dev_f1', best.value):.2f}; `{best.user_attrs.get('run_dir', '')}`)",
              "", "| parameter | value |", "|---|---|"]
    lines += [f"| `{k}` | {format_value(v)} |" for k, v in best.params.items()]
    names = [p.name for p in space.parameters]
    top = sorted((r for r in rows if r["value"] is not None), key=lambda r: -r["value"])[:10]
    lines += ["", "Ten best trials:", "",
              "| trial | state | value | best dev F1 | epochs | "
              + " | ".join(f"`{n.split('.')[-1]}`" for n in names) + " |",
              "|---:|---|---:|---:|---:|" + "---:|" * len(names)]
    for r in top:
        best_f1 = "" if r["best_dev_f1"] is None else f"{100 * r['best_dev_f1']:.2f}"
        lines.append(f"| {r['number']} | {r['state'].lower()} | {100 * r['value']:.2f} | {best_f1} | {r['epochs']} | "
                     + " | ".join(format_value(r["params"].get(n, "")) for n in names) + " |")
    return "\n".join([*lines, ""])


def export_trials(study: Any) -> list[dict[str, Any]]:
    """Every finished trial as plain data: parameters with their distributions, dev F1 per epoch, the value."""
    from optuna.distributions import distribution_to_json

    return [{"number": t.number, "state": t.state.name, "value": t.value, "params": t.params,
             "distributions": {k: json.loads(distribution_to_json(d)) for k, d in t.distributions.items()},
             "intermediate_values": {str(k): v for k, v in sorted(t.intermediate_values.items())},
             "user_attrs": t.user_attrs}
            for t in study.get_trials(deepcopy=False) if t.state.name in FINISHED]


def import_trials(study: Any, path: Path) -> int:
    """Seed a study that has no trials yet with the finished trials of an earlier export (``trials.json``), so a
    study continues from committed results on a fresh machine. Returns how many were added."""
    import optuna
    from optuna.distributions import json_to_distribution

    if not path.is_file() or study.get_trials(deepcopy=False):
        return 0
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
        # every record keeps its label; one that repeats an earlier record's (written before labels were kept, by a
        # storage that numbered anew) gets the next free one
        labels: list[int] = []
        for r in records:
            label = trial_label(r)
            labels.append(label if label not in labels else max(max(labels), label) + 1)
        for r, label in zip(records, labels, strict=True):
            r.setdefault("user_attrs", {})["trial"] = label
        trials = [optuna.trial.create_trial(
            state=optuna.trial.TrialState[r["state"]], value=r["value"], params=r["params"],
            distributions={k: json_to_distribution(json.dumps(d)) for k, d in r["distributions"].items()},
            intermediate_values={int(k): v for k, v in r["intermediate_values"].items()},
            user_attrs=r.get("user_attrs", {})) for r in records]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise TuneError(f"{path}: cannot read the exported trials ({err}); move it away to start afresh") from err
    study.add_trials(trials)
    # the next trial (number len(trials) in this storage) is labelled after the highest label so far
    study.set_user_attr(OFFSET, max(labels, default=-1) + 1 - len(trials))
    return len(trials)


def write_trial_config(path: Path, about: str, space: SearchSpace, params: dict[str, Any]) -> Path:
    """A trial's parameters (with the space's fixed values) as a config file for ``tacred fit --config``, under
    comment lines: ``about`` (where they come from), then the command that trains with them."""
    configs = " ".join(f"--config {c}" for c in space.configs)
    header = "".join(f"# {line}\n" for line in about.splitlines())
    header += f"#   tacred fit {configs} --config {path} --seed_everything 1 --run_dir RUN\n"
    return write_text_atomic(path, header + yaml.safe_dump(nested({**space.fixed, **params}), sort_keys=False))


def write_study_files(study: Any, space: SearchSpace, space_path: str, out: Path) -> list[Path]:
    """``best.yaml`` (the best trial's parameters, a config file for ``tacred fit --config``), ``trials.csv``,
    ``summary.md`` and ``trials.json`` (every finished trial, from which a new storage is seeded) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = trial_rows(study)
    names = [p.name for p in space.parameters]
    paths = [out / name for name in STUDY_FILES]
    best = best_trial(study)
    if best is not None:
        write_trial_config(paths[0], f"Best trial {trial_label(best)} of study {study.study_name!r} ({space.describe()}: "
                           f"{100 * best.value:.2f}),\nsearched with {space_path}. Train with it:", space, best.params)
    write_text_atomic(paths[1], render_trials_csv(rows, names))
    write_text_atomic(paths[2], render_summary(study, space, space_path, rows))
    write_json(paths[3], export_trials(study))
    return [p for p in paths if p.exists()]
