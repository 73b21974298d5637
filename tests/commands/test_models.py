"""``tacred models``: the list of shipped models, a model's card, and one-line errors."""

from __future__ import annotations

from tacred.inference.shipped import shipped_info
from tests.conftest import run_in_process


def test_models_lists_each_shipped_model_with_its_figures() -> None:
    info = shipped_info("kbp37")
    for args in (("models",), ("models", "list")):
        out = run_in_process(*args).stdout
        header, row = out.splitlines()[:2]
        assert header.split()[:2] == ["name", "task"]
        assert row.startswith("kbp37 ")
        test = info.scores()["test"]
        for text in (f"{100 * test['macro_f1']:.2f}", f"{100 * test['micro_f1']:.2f}", str(info.card),
                     f"{info.size_bytes / 1e6:.1f} MB", "per:/org:"):
            assert text in row


def test_models_show_prints_the_card() -> None:
    out = run_in_process("models", "show", "kbp37").stdout
    assert out == shipped_info("kbp37").card.read_text(encoding="utf-8")


def test_an_unknown_model_is_one_line_with_the_list() -> None:
    ran = run_in_process("models", "show", "kbp73", check=False)
    assert ran.status == 2
    assert ran.stderr.strip().startswith("tacred models: error: 'kbp73' is neither")
    assert "shipped: kbp37" in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
