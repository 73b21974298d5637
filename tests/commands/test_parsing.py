"""The parsing every tool command shares (:mod:`tacred.commands.parsing`): a bad option is one line, not a usage
dump, and options may be spelled with hyphens."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(("argv", "command"), [
    (["predict", "--sentences", "-", "--ckpt_path", "x.ckpt"], "predict --sentences"), (["tune"], "tune"),
    (["ablate"], "ablate"), (["patch"], "patch"), (["threshold", "tune"], "threshold tune"), (["plot", "curves"], "plot"),
    (["annotate"], "annotate"), (["ensemble"], "ensemble"), (["score"], "score"), (["export"], "export"),
    (["convert"], "convert"), (["serve"], "serve"),
])
def test_an_unknown_option_is_one_line_not_a_usage_dump(argv, command, capsys):
    from tacred.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--no-such-option"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage:" not in err, err
    assert err.startswith(f"tacred {command}: error: ") and err.rstrip().endswith(f"(see tacred {command} --help)"), err


def test_tool_options_accept_the_hyphen_spelling_and_leave_extra_options_alone(tmp_path):
    from tacred.cli import main
    from tacred.commands.parsing import underscored

    assert main(["convert", "synthetic", str(tmp_path / "a"), "--n-train", "7", "--n_dev", "3", "--n-test=2"]) == 0
    assert [len(json.loads((tmp_path / "a" / f"{s}.json").read_text())) for s in ("train", "dev", "test")] == [7, 3, 2]
    assert underscored(["--study-dir=runs/a-b", "-", "--extra", "--trainer.max-epochs", "1"]) == [
        "--study_dir=runs/a-b", "-", "--extra", "--trainer.max-epochs", "1"]  # values and what --extra hands on: as given
