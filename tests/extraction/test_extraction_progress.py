"""The progress line: drawn only on a terminal, with documents/s, sentences/s and an ETA when the total is known;
the total counted from files but not from standard input."""

from __future__ import annotations

import io
import json

from tacred.extraction import progress as progress_module
from tacred.extraction.progress import Progress, count_documents


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_rates_and_eta_on_a_terminal_only(monkeypatch):
    clock = iter([0.0, 2.0, 2.1, 4.0])
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: next(clock, 10.0))
    screen = Terminal()
    bar = Progress(total=100, stream=screen, done=20)
    bar.update(10, 40)  # at 2 s: 10 documents done here, 20 by an earlier run
    bar.update(1, 1)  # at 2.1 s: too soon to redraw
    bar.update(9, 40)  # at 4 s
    lines = screen.getvalue().split("\r")[1:]
    assert len(lines) == 2
    assert lines[0].startswith(" 30.0% 30 documents, 5.0 documents/s, 20.0 sentences/s, ETA 0:00:14")
    assert lines[1].startswith(" 40.0% 40 documents, 5.0 documents/s, 20.2 sentences/s, ETA 0:00:12")
    piped = io.StringIO()
    quiet = Progress(total=100, stream=piped)
    quiet.update(10, 10)
    quiet.close()
    assert piped.getvalue() == ""


def test_the_total_is_counted_from_files_but_not_standard_input(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("One.\n\nTwo.\n", encoding="utf-8")
    (tmp_path / "docs" / "b.jsonl").write_text("\n".join(json.dumps({"text": t}) for t in "xyz"), encoding="utf-8")
    assert count_documents([str(tmp_path / "docs")], "auto", lines=False) == 1 + 3
    assert count_documents([str(tmp_path / "docs")], "auto", lines=True) == 2 + 3
    assert count_documents([str(tmp_path / "docs"), "-"], "auto", lines=False) is None
