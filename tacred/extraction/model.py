"""The Python face of a trained model: ``load_model(path)`` gives a :class:`Model` that predicts given pairs
(``m.predict``, ``m.infer``: its :class:`~tacred.inference.predictor.Predictor`) and extracts relations from plain text
(``m.extract``: :class:`~tacred.extraction.pipeline.Extraction`). What ``path`` may name, and how each kind is
loaded, is :func:`tacred.inference.api.open_model`'s, the one loader."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tacred.inference.input_rules import MAX_PAIRS, MAX_TOKENS, InputError

if TYPE_CHECKING:
    from tacred.extraction.pipeline import Extraction
    from tacred.extraction.postprocess import Relation

EXTRACT_BATCH = 32  # texts that :meth:`Model.extract` reads from an iterable before extracting them


def load_model(path: str | Path, device: str = "auto", threshold: float | str | None = None,
               spacy_model: str | None = None, batch_size: int = 50, max_tokens: int | None = MAX_TOKENS,
               ner: str | None = "auto", precision: str | None = None) -> Model:
    """Load a trained model: a checkpoint (vocabularies and configuration are inside), a run folder, an exported
    ONNX folder, or the name of a model shipped with tacred (``"kbp37"``; ``tacred models`` lists them).

    ``device``: ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``; one that is absent is a
    :class:`tacred.devices.DeviceError`. ``threshold``: the no-relation threshold, a log-margin (a number or a
    ``threshold.json``); by default the ``threshold.json`` beside the checkpoint or in the exported or shipped folder
    when there is one (reported on the ``tacred`` logger and in ``.threshold_source``), else none; ``0`` is the plain
    argmax (a joint model's threshold is a probability, chosen on dev and kept in its checkpoint).
    ``max_tokens``: inputs longer than this are an :class:`InputError` (default 512, as ``tacred serve``; None: no
    limit). ``ner``: where raw text's entities come from: ``auto`` (the trained NER saved with the model,
    ``RUN/ner``, when there is one, else spaCy's own), ``stock`` (spaCy's own) or the folder of a trained NER
    (``tacred ner train``); the one used is ``.ner`` (None: spaCy's own). ``precision``: the arithmetic of the
    transformer encoders (a typed-marker or joint model's, a trained NER's): ``"32"`` (float32) or ``"bf16"``
    (bfloat16 autocast: faster on CPUs with avx512_bf16 or AMX and on GPUs); None: each as saved (the model float32,
    a trained NER as it was trained). Word-vocabulary networks (the paper's, the LSTM) run float32 whatever is asked.

    >>> m = load_model("runs/demo")                                    # doctest: +SKIP
    >>> m = load_model("kbp37")           # shipped with tacred: no training # doctest: +SKIP
    >>> m.predict("<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said .")
    """
    from tacred.inference.api import open_model

    return Model(open_model(path, device=device, threshold=threshold, spacy_model=spacy_model,
                            batch_size=batch_size, max_tokens=max_tokens, ner=ner, precision=precision))


def _check_texts(texts: Sequence[Any], first: int) -> None:
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"extract: text {first + i} is a {type(text).__name__}, not a string")


class Model:
    """A loaded model. ``predictor``: the model itself (a :class:`~tacred.inference.predictor.Predictor`, or a
    :class:`~tacred.inference.joint.JointPredictor` for a joint entity-and-relation model); its attributes
    (``labels``, ``threshold``, ``threshold_source``, ``device``, ``ner``, ...) are read and set through this object
    (``m.threshold = 0`` changes what ``m.predict`` and ``m.extract`` decide)."""

    OWN = ("predictor", "_extractions")

    def __init__(self, predictor: Any) -> None:
        self.predictor = predictor
        self._extractions: dict[tuple[bool, int, bool], Extraction] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in Model.OWN:
            raise AttributeError(name)
        return getattr(self.predictor, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in Model.OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.predictor, name, value)

    def __repr__(self) -> str:
        return f"Model({type(self.predictor).__name__}, labels={len(self.predictor.labels)})"

    def predict(self, inputs: Any) -> Any:
        """One :class:`~tacred.inference.outputs.Prediction` for one marked input, a list for a list of inputs
        (see :mod:`tacred.inference.inputs` for the accepted forms)."""
        return self.predictor.predict(inputs)

    def infer(self, item: Any) -> tuple[str, float]:
        """OpenNRE's ``model.infer(item)``: ``(relation, probability)`` for one input."""
        return self.predictor.infer(item)

    def extraction(self, one_sentence: bool = False, max_pairs: int = MAX_PAIRS, signatures: bool = True,
                   ) -> Extraction:
        """The raw-text extraction :meth:`extract` runs with these options (built once each: its spaCy pipeline is
        the loader's, shared)."""
        from tacred.extraction.pipeline import Extraction

        key = (one_sentence, max_pairs, signatures)
        if key not in self._extractions:
            self._extractions[key] = Extraction(self.predictor, self.predictor.spacy_model, one_sentence=one_sentence,
                                                max_pairs=max_pairs, signatures=signatures,
                                                warn=not self._extractions)
        return self._extractions[key]

    def extract(self, text: str | Iterable[str], max_pairs: int = MAX_PAIRS, signatures: bool = True,
                one_sentence: bool = False) -> list[Relation] | list[list[Relation]] | Iterator[list[Relation]]:
        """Relations in plain text with character offsets (:mod:`tacred.extraction.pipeline`): spaCy finds the
        entities (and nominals) and every candidate subject/object pair is predicted, or a joint model finds both
        in one pass a sentence. One text gives a list; a list (or tuple) of texts, a list per text; any other
        iterable (a generator, an open file), a generator of one list per text, read lazily. ``signatures``: drop
        pairs and relations that the model's relation signatures rule out. ``one_sentence``: each text is one
        sentence (text already split): no sentence splitting, pairs across its full stops."""
        if isinstance(text, str):
            return self._extract([text], 0, max_pairs, signatures, one_sentence)[0]
        if isinstance(text, Sequence):
            texts = list(text)
            _check_texts(texts, 0)
            return self._extract(texts, 0, max_pairs, signatures, one_sentence)
        if not isinstance(text, Iterable):
            raise InputError(f"extract takes a string or an iterable of strings, found {type(text).__name__}")
        return self._extract_lazily(iter(text), max_pairs, signatures, one_sentence)

    def _extract(self, texts: list[str], first: int, max_pairs: int, signatures: bool,
                 one_sentence: bool) -> list[list[Relation]]:
        extraction = self.extraction(one_sentence, max_pairs, signatures)
        found = extraction(texts, [f"text {first + i}" for i in range(len(texts))])
        return [t.relations for t in found]

    def _extract_lazily(self, texts: Iterator[str], max_pairs: int, signatures: bool,
                        one_sentence: bool) -> Iterator[list[Relation]]:
        done = 0
        while batch := list(islice(texts, EXTRACT_BATCH)):
            _check_texts(batch, done)
            yield from self._extract(batch, done, max_pairs, signatures, one_sentence)
            done += len(batch)
