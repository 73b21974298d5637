"""The model card (a folder's ``README.md``) of a model handed on, as ``tacred export`` and ``tacred models build``
write it: a title, a few opening lines, then titled sections of Markdown lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelCard:
    """``intro``: the lines under the title; ``sections``: each heading's lines, in order (blank lines inside a
    section are the caller's; those around headings are the card's)."""

    title: str
    intro: Sequence[str]
    sections: Mapping[str, Sequence[str]]

    def text(self) -> str:
        lines = [f"# {self.title}", "", *self.intro]
        for heading, body in self.sections.items():
            lines += ["", f"## {heading}", "", *body]
        return "\n".join([*lines, ""])

    def write(self, path: Path) -> None:
        path.write_text(self.text(), encoding="utf-8")
