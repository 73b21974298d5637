"""The joint model's LightningModule: :class:`~tacred.models.joint.JointNetwork` with SpERT's recipe (AdamW, linear
warm-up and decay, entity cross-entropy plus relation binary cross-entropy), scored on dev and test as the field
scores CoNLL04, the relation threshold chosen on dev and kept in the checkpoint with everything else prediction
needs (types, tokenizer, widest span)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback

from tacred.data.joint_batching import IGNORED, JOINT_KEY, EncodedSentence, JointBatch
from tacred.datasets.spert_layout import JointTypes
from tacred.errors import ConfigError
from tacred.evaluation.joint_scores import SentenceFacts, choose_threshold, joint_scores, relations_at
from tacred.models.joint import JointNetwork, SentenceFound, build_encoder, find
from tacred.training.reproducibility import ReproducibleSteps
from tacred.training.schedule import LinearWarmup

log = logging.getLogger(__name__)


def _positive(name: str, value: Any, *, integer: bool = False, below_one: bool = False, none_ok: bool = False) -> None:
    if value is None and none_ok:
        return
    kinds = (int,) if integer else (int, float)
    ok = isinstance(value, kinds) and not isinstance(value, bool) and value > 0 and (not below_one or value < 1)
    if not ok:
        rule = "an integer >= 1" if integer else "a number in (0, 1)" if below_one else "a number > 0"
        raise ConfigError(f"--model.{name} {value!r}: must be {rule}")


class JointExtractor(L.LightningModule):
    """Entities and relations from one encoder pass a sentence.

    Args:
        pretrained: the encoder (``minilm``, ``mpnet``, or a local Hugging Face folder).
        lr: AdamW's learning rate of the encoder; head_lr: of the span and pair classifiers (None: ``lr``).
        weight_decay, warmup_ratio: AdamW's decay (not on biases and norms) and the share of steps warming up.
        width_dim, type_dim, hidden, dropout, shapes: the network (:class:`JointNetwork`).
        relation_weight: the relation loss's weight beside the entity loss.
        relation_threshold: a pair's relation is kept when its probability reaches this; None: chosen on dev at
            every validation (the best strict micro-F1, or ``min_precision``'s rule) and kept in the checkpoint.
        min_precision: choose the dev threshold with the best recall among those of at least this precision.
        output_dir: where ``test`` writes its scores and predictions (default: the run folder).
        use_signatures: a found pair's relation must have the argument types the training data shows for it.
        types, pieces, max_width, signatures: linked from the data module (the types, the tokenizer's record, the
            widest span, which relation the training data shows between which types).
        transformer_config: the encoder's configuration (recorded in checkpoints; None: load ``pretrained``).
    """

    def __init__(self, pretrained: str = "minilm", lr: float = 5e-5, head_lr: float | None = None,
                 weight_decay: float = 0.01, warmup_ratio: float = 0.1, width_dim: int = 25, type_dim: int = 25,
                 hidden: int = 512, dropout: float = 0.1, shapes: bool = True, relation_weight: float = 1.0,
                 relation_threshold: float | None = None, min_precision: float | None = None,
                 output_dir: str | None = None,
                 types: JointTypes | dict | Callable[[], JointTypes] | None = None,
                 pieces: dict | Callable[[], dict] | None = None,
                 max_width: int | Callable[[], int] | None = None,
                 signatures: list | Callable[[], list] | None = None, use_signatures: bool = True,
                 transformer_config: dict | None = None) -> None:
        super().__init__()
        for name, value in (("lr", lr), ("relation_weight", relation_weight)):
            _positive(name, value)
        if not (isinstance(weight_decay, int | float) and not isinstance(weight_decay, bool) and weight_decay >= 0):
            raise ConfigError(f"--model.weight_decay {weight_decay!r}: must be a number >= 0")
        _positive("head_lr", head_lr, none_ok=True)
        for name, value in (("width_dim", width_dim), ("type_dim", type_dim), ("hidden", hidden)):
            _positive(name, value, integer=True)
        for name, value in (("relation_threshold", relation_threshold), ("min_precision", min_precision)):
            _positive(name, value, below_one=True, none_ok=True)
        if not (isinstance(dropout, int | float) and 0 <= dropout < 1):
            raise ConfigError(f"--model.dropout {dropout!r}: must be a number in [0, 1)")
        if not (isinstance(warmup_ratio, int | float) and 0 <= warmup_ratio <= 1):
            raise ConfigError(f"--model.warmup_ratio {warmup_ratio!r}: must be a number in [0, 1]")
        if relation_threshold is not None and min_precision is not None:
            raise ConfigError("--model.min_precision chooses the relation threshold on dev: leave out "
                              "--model.relation_threshold, or min_precision")
        types = types() if callable(types) else types
        pieces = pieces() if callable(pieces) else pieces
        max_width = max_width() if callable(max_width) else max_width
        signatures = signatures() if callable(signatures) else signatures
        if types is None or pieces is None or max_width is None:
            raise ValueError("JointExtractor needs the types, tokenizer and widest span (from the data module or a "
                             "checkpoint)")
        self.types = JointTypes.from_dict(types) if isinstance(types, dict) else types
        self.pieces, self.max_width = pieces, int(max_width)
        encoder, transformer_config = build_encoder(pretrained, transformer_config)
        self.signatures = signatures
        allowed = torch.tensor(signatures, dtype=torch.bool) if signatures is not None and use_signatures else None
        self.net = JointNetwork(encoder, len(self.types.entities), len(self.types.relations), self.max_width,
                                width_dim, type_dim, hidden, dropout, shapes, allowed)
        self.save_hyperparameters(ignore=["types", "pieces", "max_width", "signatures", "output_dir",
                                          "transformer_config"])
        self.hparams["transformer_config"] = transformer_config
        self.output_dir = output_dir
        self.threshold = 0.5 if relation_threshold is None else float(relation_threshold)
        self._facts: list[tuple[SentenceFacts, SentenceFacts]] = []
        self.net.train()

    def configure_callbacks(self) -> list[Callback]:
        return [ReproducibleSteps()]

    # -- steps --------------------------------------------------------------------------------------
    def training_step(self, batch: JointBatch, batch_idx: int) -> torch.Tensor:
        span_logits, pair_logits = self.net(batch)
        entity_loss = F.cross_entropy(span_logits.flatten(0, 2).float(), batch.span_labels.flatten(),
                                      ignore_index=IGNORED)
        loss = entity_loss
        if pair_logits.shape[0]:
            loss = loss + self.hparams.relation_weight * F.binary_cross_entropy_with_logits(
                pair_logits.float(), batch.pair_labels)
        self.log("train/loss", loss, on_step=False, on_epoch=True, batch_size=len(batch), prog_bar=True)
        return loss

    def facts(self, batch: JointBatch) -> list[tuple[SentenceFacts, SentenceFacts]]:
        """(gold, found) of each sentence of an evaluation batch; found relations keep every candidate's
        probability, which the threshold decides."""
        found = [found_facts(f, self.types) for f in find(self.net, batch)]
        return [(gold_facts(g, self.types), f) for g, f in zip(batch.gold, found, strict=True)]

    def validation_step(self, batch: JointBatch, batch_idx: int) -> None:
        self._facts.extend(self.facts(batch))

    def test_step(self, batch: JointBatch, batch_idx: int) -> None:
        self._facts.extend(self.facts(batch))

    def on_validation_epoch_start(self) -> None:
        self._facts = []

    on_test_epoch_start = on_validation_epoch_start

    def _scores(self, stage: str) -> dict[str, Any]:
        gold = [g for g, _ in self._facts]
        found = [f for _, f in self._facts]
        self._facts = []
        if stage == "val" and self.hparams.relation_threshold is None:
            self.threshold, _ = choose_threshold(gold, found, self.hparams.min_precision)
        for f in found:
            f.relations = relations_at(f, self.threshold)
        scores = joint_scores(gold, found, self.types.entities, self.types.relations)
        strict, ner = scores["strict"], scores["entities"]
        # fractions, as every tacred model logs them (the score files hold percentages, as the field reports them)
        self.log_dict({f"{stage}/f1": strict["micro"]["f1"] / 100, f"{stage}/precision": strict["micro"]["precision"] / 100,
                       f"{stage}/recall": strict["micro"]["recall"] / 100, f"{stage}/macro_f1": strict["macro"]["f1"] / 100,
                       f"{stage}/boundaries_f1": scores["boundaries"]["micro"]["f1"] / 100,
                       f"{stage}/ner_f1": ner["micro"]["f1"] / 100, f"{stage}/threshold": self.threshold},
                      prog_bar=False)
        return {"threshold": self.threshold, **scores, "found": found}

    def on_validation_epoch_end(self) -> None:
        if not self.trainer.sanity_checking:
            self._scores("val")
        else:
            self._facts = []

    def on_test_epoch_end(self) -> None:
        from tacred.io import write_json, write_jsonl
        from tacred.training.reports import fresh_names, output_dir

        scores = self._scores("test")
        found = scores.pop("found")
        # the relation models' rule: earlier outputs kept under their names unless --overwrite
        metrics_path, predictions_path = fresh_names(output_dir(self), ["test_metrics.json", "test_predictions.jsonl"],
                                                     getattr(self, "overwrite_outputs", False))
        write_json(metrics_path, scores)
        write_jsonl(predictions_path, ({"entities": sorted(f.entities), "relations": sorted(f.relations)}
                                       for f in found))
        s = scores["strict"]["micro"]
        log.info("test: relations strict P %.2f R %.2f F1 %.2f, macro-F1 %.2f; NER F1 %.2f (threshold %.2f)",
                 s["precision"], s["recall"], s["f1"], scores["strict"]["macro"]["f1"],
                 scores["entities"]["micro"]["f1"], self.threshold)

    # -- optimisation -------------------------------------------------------------------------------
    def configure_optimizers(self) -> dict[str, Any]:
        hp = self.hparams
        head_lr = hp.head_lr or hp.lr
        groups: dict[tuple[bool, bool], list[torch.nn.Parameter]] = {}
        for name, p in self.net.named_parameters():
            in_encoder = name.startswith("encoder.")
            decayed = p.ndim >= 2 and "norm" not in name.lower()
            groups.setdefault((in_encoder, decayed), []).append(p)
        optimizer = torch.optim.AdamW(
            [{"params": ps, "lr": hp.lr if enc else head_lr, "weight_decay": hp.weight_decay if dec else 0.0}
             for (enc, dec), ps in sorted(groups.items())], lr=hp.lr, eps=1e-6)
        total = int(self.trainer.estimated_stepping_batches)
        scheduler = LinearWarmup(optimizer, total, round(hp.warmup_ratio * total))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    # -- checkpoints --------------------------------------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint[JOINT_KEY] = {"types": self.types.to_dict(), "tokenizer": self.pieces, "max_width": self.max_width,
                                 "signatures": self.signatures, "threshold": self.threshold}

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        saved = checkpoint.get(JOINT_KEY) or {}
        if saved.get("types") is not None and JointTypes.from_dict(saved["types"]) != self.types:
            raise ConfigError("the checkpoint was trained on other entity or relation types than the data module "
                              "read; evaluate with --ckpt_path alone (its types are inside)")
        if self.hparams.relation_threshold is None and "threshold" in saved:
            self.threshold = float(saved["threshold"])


def gold_facts(sentence: EncodedSentence, types: JointTypes) -> SentenceFacts:
    """A sentence's gold entities and relations with their type names."""
    ents = [(s, e, types.entities[k]) for s, e, k in sentence.entities]
    return SentenceFacts(set(ents), {(ents[h], ents[t], types.relations[r]) for h, t, r in sentence.relations})


def found_facts(found: SentenceFound, types: JointTypes) -> SentenceFacts:
    """What the model found in a sentence, with type names; every pair's relations as candidates."""
    ents = [(s, e, types.entities[k]) for s, e, k, _ in found.entities]
    facts = SentenceFacts(set(ents))
    for (h, t), row in zip(found.pairs, found.probs.tolist(), strict=True):
        facts.candidates.extend(((ents[h], ents[t], rel), p) for rel, p in zip(types.relations, row, strict=True))
    return facts
