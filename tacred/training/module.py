"""The LightningModule: a thin shell around :class:`RelationNetwork` with the paper's training recipe."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback

from tacred.data.batching import Batch, EncodedSplit
from tacred.data.vocab import Vocabularies
from tacred.evaluation.decision import label_thresholds
from tacred.evaluation.metrics import TacredScore
from tacred.evaluation.threshold import ThresholdError, apply_threshold, load_threshold
from tacred.inference.trained import build_network, label_probabilities, load_trained
from tacred.models.config import NetworkConfig
from tacred.models.network import NetworkOutput
from tacred.options.rules import OptionError, check
from tacred.options.specs import ModelOption
from tacred.training.clipping import clip_grad_norm_, clip_grad_value_
from tacred.training.reproducibility import ReproducibleSteps
from tacred.training.schedule import DecayOnStall, build_schedule


class RelationExtractor(L.LightningModule):
    """Relation classifier trained with SGD and the original code's learning-rate decay.

    Every option is checked when the module is built, against the rules in its annotation
    (:mod:`tacred.options.rules`), before the vocabularies are read.

    Args:
        vocab: the run's vocabularies (linked from the data module; saved in every checkpoint), or a function that
            reads them.
        word_vectors: pretrained word vectors (linked from the data module), None, or a function that reads them.
        network: architecture (:class:`NetworkConfig`).
        lr, momentum, weight_decay: SGD.
        lr_schedule: ``"stall"`` (the paper: :class:`DecayOnStall`), ``"cosine"`` (annealed to zero over
            ``trainer.max_epochs``, blind to dev F1) or ``"linear"`` (per step: a warm-up over ``warmup_ratio`` of all
            training steps, then down to zero; the fine-tuning rule of the transformer encoder).
        optimizer: ``"sgd"`` (the paper) or ``"adamw"`` (the transformer encoder: ε 1e-6, ``weight_decay`` on every
            weight matrix, none on biases and norms).
        warmup_ratio: the share of training steps of the ``linear`` schedule's warm-up.
        decay_start_epoch, decay_factor, decay_compare, decay_patience: the ``stall`` rule: from epoch
            ``decay_start_epoch`` on, lr × ``decay_factor`` after ``decay_patience`` epochs in a row whose dev F1
            did not beat the previous (``decay_compare: previous``) or the best (``best``) epoch.
        no_relation_weight: cross-entropy weight of the no-relation class (1.0: unweighted).
        output_dir: where ``test``/``predict`` write predictions (default: the trainer's log dir).
        no_relation_threshold: evaluate and predict with the no-relation rule of :mod:`tacred.evaluation.threshold`
            (a number, or a ``threshold.json`` from ``tacred threshold tune``, one threshold or one per relation);
            None: the plain argmax.
            Not saved in checkpoints: pass it when testing or predicting.
        compile: run the network through ``torch.compile`` (pays off on GPUs; on the 2-core CPU of
            docs/performance.md it made epochs slower). Word-embedding gradients are then dense: the compiler
            cannot trace a sparse gradient's backward (data-dependent shapes) and would split the graph.
        sparse_embedding: sparse word-embedding gradients when the recipe allows them (plain SGD, one process, not
            compiled): the same update, summed in a different order (last-bit differences; docs/performance.md).
        checkpoint_above_tokens: the transformer encoder only: training batches of more than this many padded
            sub-words (batch size × longest input) recompute each layer's activations in the backward pass instead
            of keeping them (activation checkpointing): the same numbers in far less memory, for one more forward
            pass through those batches. None: never. Not saved in checkpoints (a choice of the machine, not the model).
    """

    def __init__(
        self,
        vocab: Vocabularies | Callable[[], Vocabularies] | None = None,
        word_vectors: torch.Tensor | Callable[[], torch.Tensor | None] | None = None,
        network: NetworkConfig | None = None,
        lr: ModelOption.lr = 0.1,
        momentum: ModelOption.momentum = 0.0,
        weight_decay: ModelOption.weight_decay = 0.0,
        decay_start_epoch: ModelOption.decay_start_epoch = 15,
        decay_factor: ModelOption.decay_factor = 0.9,
        decay_compare: ModelOption.decay_compare = "previous",
        decay_patience: ModelOption.decay_patience = 1,
        lr_schedule: ModelOption.lr_schedule = "stall",
        no_relation_weight: ModelOption.no_relation_weight = 1.0,
        output_dir: str | None = None,
        no_relation_threshold: float | str | None = None,
        compile: bool = False,
        sparse_embedding: bool = True,
        optimizer: ModelOption.optimizer = "sgd",
        warmup_ratio: ModelOption.warmup_ratio = 0.0,
        checkpoint_above_tokens: ModelOption.checkpoint_above_tokens = None,
    ) -> None:
        super().__init__()
        if vocab is None:
            raise ValueError("RelationExtractor needs the vocabularies (given by the data module or a checkpoint)")
        check(RelationExtractor, locals())  # the rules in the annotations above
        try:
            threshold = None if no_relation_threshold is None else load_threshold(no_relation_threshold)
        except ThresholdError as err:
            raise OptionError(RelationExtractor, "no_relation_threshold", no_relation_threshold, str(err)) from None
        # options first, data second: the command line passes functions that read the data files (tacred.training.cli)
        vocab = vocab() if callable(vocab) else vocab
        try:
            threshold = label_thresholds(threshold, vocab.labels.itos, vocab.no_relation, no_relation_threshold)
        except ThresholdError as err:
            raise OptionError(RelationExtractor, "no_relation_threshold", no_relation_threshold, str(err)) from None
        word_vectors = word_vectors() if callable(word_vectors) else word_vectors
        if isinstance(network, dict):
            network = NetworkConfig(**network)
        network = network or NetworkConfig()
        # where outputs go, the threshold (from `tacred threshold tune`) and compiling are choices of each
        # test/predict command, kept out of checkpoints: on `tacred test --ckpt_path` LightningCLI applies a
        # checkpoint's hyperparameters over the command line, which must not override them
        self.save_hyperparameters(ignore=["vocab", "word_vectors", "network", "no_relation_threshold", "output_dir",
                                          "compile", "checkpoint_above_tokens"])
        self.output_dir = output_dir
        self.no_relation_threshold = threshold
        self.vocab = vocab
        self.network_config = network
        if checkpoint_above_tokens is not None and network.encoder != "transformer":  # refused before building
            raise OptionError(RelationExtractor, "checkpoint_above_tokens", checkpoint_above_tokens,
                              f"recomputes the layers of the transformer encoder only (network.encoder: {network.encoder})")
        self.net = build_network(network, vocab, word_vectors)
        self.hparams["network"] = network.to_dict()  # after building: a transformer records its architecture
        if checkpoint_above_tokens is not None:
            self.net.recompute_layers_above(checkpoint_above_tokens)
        self.compiled = compile
        if compile:
            # in place, so parameter names (and checkpoints) stay those of the plain network
            self.net.compile(dynamic=True)
        weights = torch.ones(len(vocab.labels))
        weights[vocab.no_relation_id] = no_relation_weight
        self.register_buffer("class_weights", weights, persistent=False)
        self.scores = torch.nn.ModuleDict({s: TacredScore(len(vocab.labels), vocab.no_relation_id) for s in ("val", "test")})
        self._outputs: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._epoch_ran_to_end = False  # every batch of the current training epoch ran (its lr step is due)

    def configure_callbacks(self) -> list[Callback]:
        """Every Trainer that runs this model reseeds before each training step (:class:`ReproducibleSteps`)."""
        return [ReproducibleSteps()]

    # -- steps --------------------------------------------------------------------------------------
    def forward(self, batch: Batch) -> NetworkOutput:
        return self.net(batch)

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        logits = self(batch).logits
        loss = F.cross_entropy(logits, batch.labels, weight=self.class_weights)
        self.log("train/loss", loss, on_step=False, on_epoch=True, batch_size=len(batch), prog_bar=True, sync_dist=True)
        return loss

    def _eval_step(self, batch: Batch, stage: str) -> torch.Tensor:
        logits = self(batch).logits
        loss = F.cross_entropy(logits, batch.labels, weight=self.class_weights)
        preds = logits.argmax(dim=-1)
        if self.no_relation_threshold is not None:
            probs = torch.softmax(logits.float(), dim=-1)
            preds = apply_threshold(probs, self.vocab.no_relation_id, self.no_relation_threshold).to(preds.device)
        self.scores[stage].update(preds, batch.labels)
        self.log(f"{stage}/loss", loss, on_step=False, on_epoch=True, batch_size=len(batch), sync_dist=True)
        return logits

    def validation_step(self, batch: Batch, batch_idx: int) -> None:
        self._eval_step(batch, "val")

    def test_step(self, batch: Batch, batch_idx: int) -> None:
        logits = self._eval_step(batch, "test")
        self._outputs.append((batch.index.cpu(), torch.softmax(logits.float(), dim=-1).cpu()))

    def predict_step(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> torch.Tensor:
        """Label probabilities (B, L); ``tacred predict`` writes them with :class:`tacred.training.callbacks.PredictionFileWriter`."""
        return torch.softmax(self(batch).logits.float(), dim=-1).cpu()

    def _log_scores(self, stage: str) -> dict[str, float]:
        result = self.scores[stage].compute()
        self.scores[stage].reset()
        values = {k: float(v) for k, v in result.items()}
        # compute() already summed the counts over all processes, so every rank holds the same values: "max"
        # keeps them exact (a mean over ranks could round) and silences Lightning's missing-sync warning
        self.log_dict({f"{stage}/{k}": v for k, v in values.items() if k != "f1"}, sync_dist=True, reduce_fx="max")
        self.log(f"{stage}/f1", values["f1"], sync_dist=True, reduce_fx="max", prog_bar=stage == "val")
        return values

    def on_validation_epoch_end(self) -> None:
        self._log_scores("val")

    def on_train_batch_end(self, outputs: Any, batch: Batch, batch_idx: int) -> None:
        self._epoch_ran_to_end = batch_idx + 1 == self.trainer.num_training_batches

    def on_train_epoch_end(self) -> None:
        """The paper's rule (``lr_schedule: stall``, :class:`DecayOnStall`) is stepped here, with this epoch's dev F1,
        rather than by Lightning; the other schedules are Lightning's to step (:meth:`lr_scheduler_step`).

        Lightning steps a metric-driven scheduler after the epoch-end checkpoint callbacks, and skips that step
        when a run restarts from a checkpoint written there (``FitLoop.on_advance_end``): ``last.ckpt`` and
        ``best.ckpt`` would hold the learning rate before the epoch's decay, and a run resumed from ``last.ckpt``
        would lose the decay. This hook runs before those callbacks (:class:`tacred.training.callbacks.LastCheckpoint`,
        ``ModelCheckpoint``), so they save the decayed rate. (``cosine`` needs no such care: Lightning steps an
        epoch schedule without a metric right after the epoch's last batch, before the checkpoints.)"""
        scheduler = self.lr_schedulers()
        if not isinstance(scheduler, DecayOnStall) or not self._epoch_ran_to_end:
            return  # another schedule, or an epoch cut short (max_steps, a stop request): no decay, as in Lightning
        if scheduler.last_epoch > self.current_epoch:
            return  # this epoch's step is in the state already (a run resumed at this epoch's end)
        f1 = self.trainer.callback_metrics.get("val/f1")
        if f1 is not None:  # no validation yet: nothing to compare
            scheduler.step(float(f1))

    def lr_scheduler_step(self, scheduler: Any, metric: Any = None) -> None:
        """Lightning's step (``linear`` after every optimizer step, ``cosine`` after every epoch), except for the
        paper's rule, which :meth:`on_train_epoch_end` steps (see there for why)."""
        if not isinstance(scheduler, DecayOnStall):
            super().lr_scheduler_step(scheduler, metric)

    def on_test_epoch_start(self) -> None:
        self._outputs = []

    def on_test_epoch_end(self) -> None:
        from tacred.training.reports import stack_outputs, write_test_outputs

        self._log_scores("test")
        outputs, self._outputs = self._outputs, []
        write_test_outputs(self, *stack_outputs(outputs, len(self.vocab.labels)))

    # -- optimisation ---------------------------------------------------------------------------
    def configure_optimizers(self) -> dict[str, Any]:
        hp = self.hparams
        # Sparse word-embedding gradients: only the rows of the batch's words are zeroed, clipped and updated,
        # instead of the whole (V, 300) matrix every step. Plain SGD on a sparse gradient is the same update;
        # momentum and weight decay would touch every row, DDP would all-reduce a sparse tensor, and a compiled
        # network cannot trace the backward of one (data-dependent shapes: the compiler would split the graph).
        trainer = self._attached_trainer()
        world = trainer.world_size if trainer is not None else 1
        kind = hp.get("optimizer", "sgd")
        if hasattr(self.net, "embed"):  # the word-vocabulary networks
            self.net.embed.words.sparse = (hp.get("sparse_embedding", True) and kind == "sgd" and hp.momentum == 0
                                           and hp.weight_decay == 0 and world == 1 and not self.compiled)
        if kind == "adamw":
            decayed = [p for n, p in self.named_parameters() if p.ndim >= 2 and "norm" not in n.lower()]
            chosen = {id(p) for p in decayed}
            rest = [p for p in self.parameters() if id(p) not in chosen]
            optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": hp.weight_decay},
                                           {"params": rest, "weight_decay": 0.0}], lr=hp.lr, eps=1e-6)
        else:
            optimizer = torch.optim.SGD(self.parameters(), lr=hp.lr, momentum=hp.momentum,
                                        weight_decay=hp.weight_decay)
        max_epochs = trainer.max_epochs if trainer is not None else 0
        schedule = hp.get("lr_schedule", "stall")
        total_steps = int(self.trainer.estimated_stepping_batches) if schedule == "linear" else 0
        scheduler, on_metric = build_schedule(schedule, optimizer, max_epochs or 0, hp.decay_start_epoch,
                                              hp.decay_factor, hp.decay_compare, hp.get("decay_patience", 1),
                                              total_steps, hp.get("warmup_ratio", 0.0))
        # Lightning saves and restores the scheduler's state in checkpoints and steps it (lr_scheduler_step), per step
        # for `linear`, per epoch otherwise
        config: dict[str, Any] = {"scheduler": scheduler, "interval": "step" if schedule == "linear" else "epoch"}
        if on_metric:
            config.update(monitor="val/f1", strict=False)  # Lightning requires a monitor for a ReduceLROnPlateau
        return {"optimizer": optimizer, "lr_scheduler": config}

    def _attached_trainer(self) -> L.Trainer | None:
        """The Trainer running this model, or None (``configure_optimizers`` called directly, as in tests)."""
        try:
            return self.trainer
        except RuntimeError:  # Lightning's answer for a model not attached to a Trainer
            return None

    def configure_gradient_clipping(self, optimizer: torch.optim.Optimizer, gradient_clip_val: float | None = None,
                                    gradient_clip_algorithm: str | None = None) -> None:
        """Lightning's clipping, or ours when a gradient is sparse (torch's ``clip_grad_norm_`` rejects those)."""
        params = [p for group in optimizer.param_groups for p in group["params"]]
        if not gradient_clip_val or not any(p.grad is not None and p.grad.is_sparse for p in params):
            self.clip_gradients(optimizer, gradient_clip_val, gradient_clip_algorithm)
        elif gradient_clip_algorithm == "value":
            clip_grad_value_(params, float(gradient_clip_val))
        else:
            clip_grad_norm_(params, float(gradient_clip_val))

    # -- checkpoints ----------------------------------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["tacred_vocab"] = self.vocab.to_dict()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        saved = checkpoint.get("tacred_vocab")
        if saved is not None and Vocabularies.from_dict(saved).fingerprint() != self.vocab.fingerprint():
            raise ValueError(
                "the checkpoint was trained with different vocabularies than the data module built; "
                "pass --data.vocab_path <checkpoint> (tacred test/predict do this automatically)"
            )

    @classmethod
    def from_checkpoint(cls, path: str | Path, map_location: str | torch.device = "cpu",
                        **hparams: Any) -> RelationExtractor:
        """Rebuild a trained model from its checkpoint alone (vocabularies and hyperparameters included) through the
        one loader, :func:`tacred.inference.trained.load_trained`; ``hparams`` replace saved hyperparameters (e.g.
        ``no_relation_threshold=0.5``). The model comes back in evaluation mode."""
        return load_trained(path, lambda saved: cls(**{"vocab": saved.vocab, "network": saved.network, **saved.hparams,
                                                       **hparams}), map_location)

    @classmethod
    def load_from_checkpoint(cls, checkpoint_path: str | Path, map_location: Any = None, hparams_file: Any = None,
                             strict: bool | None = None, **kwargs: Any) -> RelationExtractor:  # type: ignore[override]
        """Lightning's classmethod, answered by :meth:`from_checkpoint` (the vocabularies come from the checkpoint:
        they are not hyperparameters). A tacred checkpoint holds its hyperparameters and every weight, so Lightning's
        ``hparams_file`` and ``strict=False`` (for checkpoints without them) have nothing to do."""
        if hparams_file is not None or strict is False:
            raise ValueError("RelationExtractor.load_from_checkpoint: a tacred checkpoint holds its hyperparameters and "
                             "every weight; hparams_file and strict=False are not used (pass hyperparameters as keywords)")
        return cls.from_checkpoint(checkpoint_path, "cpu" if map_location is None else map_location, **kwargs)

    def split_probabilities(self, data: EncodedSplit, batch_size: int = 50) -> torch.Tensor:
        """Label probabilities (N, L) of every example of an encoded split, in the split's order (no Trainer)."""
        self.eval()
        return label_probabilities(self, data, len(self.vocab.labels), batch_size)

    def label_names(self) -> list[str]:
        return list(self.vocab.labels.itos)

    def describe(self) -> str:
        trainable = sum(p.numel() for p in self.parameters() if p.requires_grad)
        return json.dumps({"trainable_parameters": trainable, "labels": len(self.vocab.labels)})

