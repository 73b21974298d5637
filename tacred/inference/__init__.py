"""Prediction behind one contract, whatever runs the network.

::

    inputs ──InputReader──> TACRED dicts ──encoder──> named arrays ──backend──> probabilities ──> Prediction
           (inputs.py: every input form,    (encoding.py: chosen     (trained.TorchBackend    (outputs.py: the
            spaCy when needed, limits)       by the model's metadata) or onnx_backend.py)       no-relation rule)

:class:`~tacred.inference.predictor.Predictor` wires them together, and :func:`~tacred.inference.api.open_model`
loads any model as one (a joint entity-and-relation model as a :class:`~tacred.inference.joint.JointPredictor`);
raw text is extraction's (:mod:`tacred.extraction.pipeline`), which asks its candidate pairs of the model. A new kind
of model registers an encoder in ``encoding.ENCODERS`` (its name stored in the checkpoint under ``tacred_predictor:
{"encoder": NAME}`` and in an export's ``predictor.json``) and gives its backend a module ``module(**arrays) -> (B,
L) probabilities``; input forms, errors, batching, thresholds and prediction objects stay.
"""
