"""Sub-commands of ``tacred`` that are not Lightning's fit/validate/test/predict.

Each module here exposes ``HELP`` (one line) and ``main(argv: list[str] | None) -> int``; the
dispatcher in :mod:`tacred.cli` imports a module only when its command is asked for.
"""

# command name -> module under tacred.commands
COMMANDS: dict[str, str] = {
    "score": "score",
    "score-extraction": "score_extraction",
    "end-to-end": "end_to_end",
    "convert": "convert",
    "annotate": "annotate",
    "patch": "patch",
    "ensemble": "ensemble",
    "ablate": "ablate",
    "compare": "compare",
    "plot": "plot",
    "threshold": "threshold",
    "tune": "tune",
    "ner": "ner",
    "extract": "extract",
    "kb": "kb",
    "serve": "serve",
    "export": "export",
    "pretrained": "pretrained",
    "models": "models",
}
