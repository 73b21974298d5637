"""spaCy's training loop (``spacy.training.loop.train``) with checkpoints that a killed run resumes from exactly.

``spacy train`` keeps no optimizer state: a run cut off after an hour starts again at its first step. :func:`train`
runs the same steps as spaCy's loop (the same shuffles, batches, updates, schedules, evaluations, ``model-best`` and
``model-last`` saves and console log; a test holds the weights equal) and every ``checkpoint_minutes`` writes
``OUT/checkpoint``: the weights, the optimizer's moments and averages keyed by where each parameter sits in the
pipeline, each epoch's order, how far into the current epoch the run is, the evaluations so far and the random
generators' states. A run that finds a checkpoint written for the same config and corpora continues from it and
ends with the weights an uninterrupted run ends with."""

from __future__ import annotations

import hashlib
import logging
import pickle
import random
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy

from tacred.errors import TacredError

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"  # OUT/checkpoint: model/ (nlp.to_disk) and state.pkl
STATE = "state.pkl"
CHECKPOINT_MINUTES = 10.0


class ResumeError(TacredError, ValueError):
    """A checkpoint that cannot be resumed here (written for another config or corpus, or unreadable)."""


def _fingerprint(config_path: Path, corpora: list[Path]) -> str:
    """What a checkpoint is only valid for: the config's text and the training and dev corpora's bytes."""
    digest = hashlib.sha256(config_path.read_bytes())
    for path in corpora:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _parameter_names(nlp: Any) -> dict[tuple[int, str], str]:
    """Every parameter the optimizer can be called with, (node or shim id, name), against a name that is the same in
    every process building the pipeline from the same config: component, the node's place in a breadth-first walk,
    and the parameter's name (a PyTorch shim's parameters under the node that wraps them)."""
    names: dict[tuple[int, str], str] = {}
    for component, proc in nlp.pipeline:
        model = getattr(proc, "model", None)
        if not hasattr(model, "walk"):
            continue
        for i, node in enumerate(model.walk()):
            for param in node.param_names:
                names.setdefault((node.id, param), f"{component}/{i}/{param}")
            for j, shim in enumerate(node.shims):
                module = getattr(shim, "_model", None)
                for param, _ in getattr(module, "named_parameters", lambda: [])():
                    names.setdefault((shim.id, param), f"{component}/{i}/shim{j}/{param}")
    return names


_OPTIMIZER_TABLES = ("mom1", "mom2", "averages", "nr_update", "last_seen")


def _optimizer_state(optimizer: Any, names: dict[tuple[int, str], str]) -> dict[str, dict[str, Any]]:
    state = {}
    for table in _OPTIMIZER_TABLES:
        values = getattr(optimizer, table)
        if values is None:
            continue
        unnamed = [key for key in values if key not in names]
        if unnamed:
            raise ResumeError(f"the optimizer's {table} holds parameters outside the pipeline's models: {unnamed[:3]}")
        state[table] = {names[key]: value for key, value in values.items()}
    return state


def _restore_optimizer(optimizer: Any, state: dict[str, dict[str, Any]], names: dict[tuple[int, str], str]) -> None:
    keys = {name: key for key, name in names.items()}
    for table, values in state.items():
        missing = sorted(set(values) - set(keys))
        if missing:
            raise ResumeError(f"the checkpoint's optimizer names parameters this pipeline lacks: {missing[:3]}")
        restored = {keys[name]: value for name, value in values.items()}
        setattr(optimizer, table, defaultdict(int, restored) if table in ("nr_update", "last_seen") else restored)


def _random_state() -> dict[str, Any]:
    import torch

    return {"python": random.getstate(), "numpy": numpy.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def _restore_random(state: dict[str, Any]) -> None:
    import torch

    random.setstate(state["python"])
    numpy.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class _Position:
    """Where the batch stream stands: each started epoch's order of the examples (spaCy shuffles one list in place
    every epoch), and the batches of the last one already trained on."""

    def __init__(self, size: int, orders: list[list[int]] | None = None, done: int = 0) -> None:
        self.orders = orders or []
        self.done = done
        self._order = list(self.orders[-1]) if self.orders else list(range(size))

    def batches(self, examples: list[Any], batcher: Any, max_epochs: int) -> Iterator[tuple[int, list[Any]]]:
        """spaCy's ``create_train_batches`` from this position: the batcher is replayed over the epochs already
        trained (a size schedule advances as it did), their batches skipped."""
        for order in self.orders[:-1]:
            for _ in batcher([examples[i] for i in order]):
                pass
        epoch = max(len(self.orders) - 1, 0)
        resumed = bool(self.orders)
        while max_epochs < 1 or epoch != max_epochs:
            if not resumed:
                random.shuffle(self._order)
                self.orders.append(list(self._order))
                self.done = 0
            skip, resumed = self.done, False
            for k, batch in enumerate(batcher([examples[i] for i in self.orders[-1]])):
                if k < skip:
                    continue
                self.done = k + 1  # counted from here: a checkpoint is only written once the step is done
                yield epoch, batch
            epoch += 1


def _write_checkpoint(out: Path, nlp: Any, state: dict[str, Any]) -> None:
    """OUT/checkpoint, replaced whole: written beside it, then renamed over it."""
    partial, final, old = out / f"{CHECKPOINT}.partial", out / CHECKPOINT, out / f"{CHECKPOINT}.old"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    nlp.to_disk(partial / "model")
    with open(partial / STATE, "wb") as handle:
        pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
    if final.exists():
        final.rename(old)
    partial.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def checkpoint_names() -> tuple[str, ...]:
    """The names of what a run leaves in ``out`` while it trains: the checkpoint, and its copies while replaced."""
    return CHECKPOINT, f"{CHECKPOINT}.old", f"{CHECKPOINT}.partial"


def find_checkpoint(out: Path) -> Path | None:
    """The checkpoint a rerun continues from (one left as ``.old`` by a run killed while replacing it counts)."""
    for name in (CHECKPOINT, f"{CHECKPOINT}.old"):
        if (out / name / STATE).is_file():
            return out / name
    return None


def _read_checkpoint(folder: Path, fingerprint: str) -> dict[str, Any]:
    try:
        with open(folder / STATE, "rb") as handle:
            state = pickle.load(handle)
    except Exception as err:  # noqa: BLE001 - a cut-off or foreign pickle raises nearly anything
        raise ResumeError(f"{folder / STATE}: cannot be read ({err}); delete {folder} to start over") from None
    if state.get("fingerprint") != fingerprint:
        raise ResumeError(f"{folder}: written for another config or corpus than this run's; delete it to start over, "
                          f"or train into another folder")
    return state


def train(config_path: Path, out: Path, *, corpora: list[Path],
          checkpoint_minutes: float = CHECKPOINT_MINUTES) -> dict[str, Any]:
    """Train the pipeline ``config_path`` describes into ``out`` (``model-best``, ``model-last``), resuming from
    ``out/checkpoint`` when one was written for the same config and ``corpora``; ``checkpoint_minutes``: minutes
    between checkpoints (0: after every step). Returns ``{"seconds": training time over every leg,
    "resumed_at_step": the first step this leg trained, or None, "steps": the steps trained over every leg,
    "evaluations": the dev evaluations over every leg}``; the checkpoint is removed when training ends."""
    from spacy import util
    from spacy.schemas import ConfigSchemaTraining
    from spacy.training.initialize import init_nlp
    from spacy.training.loop import (
        DIR_MODEL_BEST,
        DIR_MODEL_LAST,
        clean_output_dir,
        create_before_to_disk_callback,
        create_evaluation_callback,
        subdivide_batch,
        update_meta,
    )
    from thinc.api import constant, fix_random_seed

    fingerprint = _fingerprint(config_path, corpora)
    found = find_checkpoint(out)
    saved = _read_checkpoint(found, fingerprint) if found is not None else None
    nlp = init_nlp(util.load_config(config_path, interpolate=False))
    config = nlp.config.interpolate()
    T = util.registry.resolve(config["training"], schema=ConfigSchemaTraining)
    if T["max_epochs"] < 0:
        raise ResumeError(f"{config_path}: [training] max_epochs -1 streams the corpus, which a checkpoint cannot "
                          f"place; give 0 (no limit) or more")
    if config["training"]["seed"] is not None:
        fix_random_seed(config["training"]["seed"])
    train_corpus, dev_corpus = util.resolve_dot_names(config, [T["train_corpus"], T["dev_corpus"]])
    optimizer, batcher = T["optimizer"], T["batcher"]
    before_to_disk, before_update = create_before_to_disk_callback(T["before_to_disk"]), T["before_update"]
    frozen, annotating = T["frozen_components"], T["annotating_components"]
    evaluate = create_evaluation_callback(nlp, dev_corpus, T["score_weights"])
    dropouts = constant(T["dropout"]) if isinstance(T["dropout"], float) else T["dropout"]
    examples = list(train_corpus(nlp))
    if not examples:
        raise ResumeError(f"{config_path}: the training corpus is empty")

    first, results, losses, words, earlier = 0, [], {}, 0, 0.0
    position = _Position(len(examples))
    if saved is None:
        clean_output_dir(out)
        names = _parameter_names(nlp)
    else:
        nlp.from_disk(found / "model")
        names = _parameter_names(nlp)  # after loading: the NER's model is rebuilt from disk, with new node ids
        _restore_optimizer(optimizer, saved["optimizer"], names)
        for _ in range(saved["step"] + 1):  # the schedules and dropouts are generators: advanced, not stored
            optimizer.step_schedules()
            next(dropouts)
        first, results, losses = saved["step"] + 1, saved["results"], saved["losses"]
        words, earlier = saved["words"], saved["seconds"]
        position = _Position(len(examples), saved["orders"], saved["done"])
        _restore_random(saved["random"])
        log.info("resuming %s at step %d (epoch %d, after %d of its batches)", found, first, len(saved["orders"]),
                 saved["done"])

    def save_model(is_best: bool) -> None:
        with nlp.use_params(optimizer.averages):
            before_to_disk(nlp).to_disk(out / DIR_MODEL_LAST)
        if is_best:
            shutil.rmtree(out / DIR_MODEL_BEST, ignore_errors=True)
            shutil.copytree(out / DIR_MODEL_LAST, out / DIR_MODEL_BEST)

    with nlp.select_pipes(disable=frozen):
        log_step, finalize_logger = T["logger"](nlp, sys.stdout, sys.stderr)
    began = last_saved = time.perf_counter()
    step = first - 1
    try:
        for step, (epoch, batch) in enumerate(position.batches(examples, batcher, T["max_epochs"]), start=first):
            if before_update:
                before_update(nlp, {"step": step, "epoch": epoch})
            dropout = next(dropouts)
            for subbatch in subdivide_batch(batch, T["accumulate_gradient"]):
                nlp.update(subbatch, drop=dropout, losses=losses, sgd=False, exclude=frozen, annotates=annotating)
            for name, proc in nlp.pipeline:
                if name not in frozen and getattr(proc, "is_trainable", False) and \
                        proc.model not in (True, False, None):
                    proc.finish_update(optimizer)
            optimizer.step_schedules()
            is_best, score, other_scores = None, None, None
            if not step % T["eval_frequency"]:
                with nlp.use_params(optimizer.averages) if optimizer.averages else nullcontext():
                    score, other_scores = evaluate()
                results.append((score, step))
                is_best = score == max(results)[0]
            words += sum(len(example) for example in batch)
            info = {"epoch": epoch, "step": step, "score": score, "other_scores": other_scores, "losses": losses,
                    "checkpoints": results, "seconds": int(earlier + time.perf_counter() - began), "words": words}
            if is_best is not None:
                with nlp.select_pipes(disable=frozen):
                    update_meta(T, nlp, info)
                save_model(is_best)
                info["output_path"] = str(out / DIR_MODEL_LAST)
            log_step(info if is_best is not None else None)
            if is_best is not None:
                losses = {}
            best_step = -max((r_score, -r_step) for r_score, r_step in results)[1]
            if T["patience"] and step - best_step >= T["patience"]:
                break
            if T["max_steps"] and step >= T["max_steps"]:
                break
            if time.perf_counter() - last_saved >= checkpoint_minutes * 60:
                _write_checkpoint(out, nlp, {
                    "fingerprint": fingerprint, "step": step, "results": results, "losses": losses, "words": words,
                    "seconds": earlier + time.perf_counter() - began, "orders": position.orders,
                    "done": position.done, "optimizer": _optimizer_state(optimizer, names),
                    "random": _random_state()})
                last_saved = time.perf_counter()
    finally:
        finalize_logger()
        save_model(False)
    for name in checkpoint_names():
        shutil.rmtree(out / name, ignore_errors=True)
    return {"seconds": earlier + time.perf_counter() - began, "resumed_at_step": first if saved else None,
            "steps": step + 1, "evaluations": len(results)}
