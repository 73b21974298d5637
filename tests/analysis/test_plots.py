"""``tacred plot``: every kind writes a sensible PNG from a tiny trained checkpoint or from stored results."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tacred.commands.plot import main


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG header (and a check that it is one)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def check_png(path: Path, min_side: int = 300, max_side: int = 4000) -> None:
    assert path.is_file() and 5_000 < path.stat().st_size < 600_000, path
    width, height = png_size(path)
    assert min_side <= width <= max_side and min_side <= height <= max_side, (width, height)


@pytest.mark.parametrize("kind, extra", [
    ("attention", ["--index", "0"]),
    ("confusion", []),
    ("relations", []),
    ("pr", []),
])
def test_every_kind_from_a_checkpoint(checkpoint, tmp_path, kind, extra, capsys):
    out = tmp_path / f"{kind}.png"
    assert main([kind, "--ckpt_path", str(checkpoint), "--output", str(out), *extra]) == 0
    check_png(out)
    assert str(out) in capsys.readouterr().out


def test_curves_from_the_run_folder_and_default_paths(checkpoint):
    run = checkpoint.parent.parent
    assert main(["curves", "--run_dir", str(run)]) == 0
    check_png(run / "plots" / "curves.png")
    assert main(["confusion", "--ckpt_path", str(checkpoint), "--split", "test"]) == 0
    check_png(run / "plots" / "confusion_test.png")


@pytest.mark.slow  # a subprocess
def test_the_command_runs_as_a_module(checkpoint, tmp_path):
    out = tmp_path / "a.png"
    proc = subprocess.run([sys.executable, "-m", "tacred", "plot", "attention", "--ckpt_path", str(checkpoint),
                           "--id", "demo-dev-000002", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    check_png(out)


def test_attention_marks_subject_and_object_tokens(checkpoint):
    from tacred.analysis import plots
    from tacred.analysis.inspection import attention_view, find_example, load_split

    model, data, source = load_split(checkpoint, "dev")
    index = find_example(data, source, ident=data.ids[3])
    view = attention_view(model, data, index)
    n = len(view.tokens)
    assert [w.shape for w in view.self_attention] == [(3, n, n)]
    assert np.allclose(view.self_attention[0].sum(axis=-1), 1.0, atol=1e-5)
    assert view.position_attention.shape == (n,) and np.isclose(view.position_attention.sum(), 1.0, atol=1e-5)
    fig = plots.attention_figure(view)
    heatmap = fig.axes[0]
    colors = {i: label.get_color() for i, label in enumerate(heatmap.get_xticklabels())}
    for i in range(n):
        expected = {"subject": plots.SUBJECT_COLOR, "object": plots.OBJECT_COLOR}.get(view.role(i))
        if expected:
            assert colors[i] == expected, (i, view.tokens[i])
        else:
            assert colors[i] not in (plots.SUBJECT_COLOR, plots.OBJECT_COLOR)
    assert {view.role(i) for i in range(n)} >= {"subject", "object"}
    assert "subject tokens in blue, object tokens in red" in fig.get_suptitle()


def test_stored_results_need_no_checkpoint(checkpoint, tmp_path):
    from tacred.cli import main as tacred

    assert tacred(["test", "--ckpt_path", str(checkpoint), "--run_dir", str(tmp_path),
                   "--trainer.enable_progress_bar", "false"]) == 0
    assert main(["confusion", "--predictions", str(tmp_path / "test_predictions.jsonl")]) == 0
    check_png(tmp_path / "plots" / "confusion_test_predictions.png")
    assert main(["relations", "--scores", str(tmp_path / "test_metrics.json")]) == 0
    check_png(tmp_path / "plots" / "relations_test_metrics.png")


def test_training_curves_read_the_csv_logger_layout(tmp_path):
    from tacred.analysis.inspection import read_training_curves

    (tmp_path / "metrics.csv").write_text(
        "epoch,lr-SGD,step,train/loss,val/f1,val/loss,val/precision,val/recall\n"
        ",0.1,0,,,,,\n0,,9,,0.2,1.5,0.5,0.125\n0,,9,2.0,,,,\n"
        ",0.1,10,,,,,\n1,,19,,0.4,1.2,0.6,0.3\n1,,19,1.5,,,,\n,0.09,20,,,,,\n")
    curves = read_training_curves(tmp_path)
    assert curves.train_loss == [(0, 2.0), (1, 1.5)]
    assert curves.val_f1 == [(0, 0.2), (1, 0.4)] and curves.val_recall == [(0, 0.125), (1, 0.3)]
    assert curves.lr == [(0, 0.1), (1, 0.1), (2, 0.09)]


@pytest.mark.parametrize("argv, message", [
    (["attention", "--ckpt_path", "{ckpt}", "--id", "no-such-id"], "no example with id 'no-such-id'"),
    (["attention", "--ckpt_path", "{ckpt}", "--index", "999"], "index 999 is out of range"),
    (["attention", "--ckpt_path", "{ckpt}", "--index", "0", "--layer", "4"], "layer 4 does not exist"),
    (["curves", "--run_dir", "{tmp}"], "training metrics not found"),
    (["confusion", "--ckpt_path", "{tmp}/missing.ckpt"], "checkpoint not found"),
    (["relations", "--scores", "{tmp}/missing.json"], "missing.json"),
    (["confusion"], "give exactly one of --ckpt_path, --predictions"),
    (["pr", "--ckpt_path", "{ckpt}", "--file", "{tmp}/none.json"], "none.json"),
])
def test_user_errors_are_one_line(checkpoint, tmp_path, capsys, argv, message):
    argv = [a.format(ckpt=checkpoint, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_stored_predictions_without_gold_need_a_gold_file(tmp_path, capsys):
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "a", "relation": "per:title"}) + "\n")
    assert main(["confusion", "--predictions", str(tmp_path / "p.jsonl")]) == 2
    assert "line 1: needs string 'relation' and 'gold'" in capsys.readouterr().err


# -- the picture defects of issue 15 -------------------------------------------------------------------------


def _overlaps(fig, artist, ax) -> bool:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return artist.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


def test_the_relations_legend_sits_outside_the_bars():
    from tacred.analysis.plots import relation_scores_figure
    from tacred.evaluation.scoring import score

    gold = ["a", "a", "b", "b", "no_relation"] * 3
    pred = ["a", "b", "b", "b", "a"] * 3
    fig = relation_scores_figure(score(gold, pred))
    [ax] = fig.axes
    assert ax.get_legend() is None and len(fig.legends) == 1
    assert not _overlaps(fig, fig.legends[0], ax)


def test_curves_count_epochs_from_one_and_print_no_label_over_the_lines():
    from tacred.analysis.inspection import TrainingCurves
    from tacred.analysis.plots import training_curves_figure

    curves = TrainingCurves(train_loss=[(0, 2.0), (1, 1.0), (2, 0.5)], val_f1=[(0, 0.2), (1, 0.6), (2, 0.5)],
                            val_precision=[(0, 0.3), (1, 0.5), (2, 0.5)], val_recall=[(0, 0.1), (1, 0.7), (2, 0.5)],
                            lr=[(0, 0.1), (1, 0.1), (2, 0.09)])
    fig = training_curves_figure(curves)
    for ax in fig.axes:
        assert not ax.texts  # no annotation printed over the curves
        for line in ax.lines:
            assert min(line.get_xdata()) >= 1
    dev = fig.axes[1]
    assert [t.get_text() for t in dev.get_legend().get_texts()][-1] == "best F1 60.0% (epoch 2)"
    [star] = [line for line in dev.lines if line.get_marker() == "*"]
    assert list(star.get_xdata()) == [2] and list(star.get_ydata()) == [0.6]


def _view(gold):
    from tacred.analysis.inspection import AttentionView

    rng = np.random.default_rng(0)
    weights = rng.random((3, 5, 5))
    weights /= weights.sum(-1, keepdims=True)
    return AttentionView("s1", ["Ann", "works", "at", "Acme", "."], (0, 0), (3, 3), [weights],
                         rng.random(5) / 5, gold, "per:employee_of", 0.8)


def test_attention_heads_share_a_colour_scale_with_a_colour_bar():
    from tacred.analysis.plots import attention_figure

    fig = attention_figure(_view("per:employee_of"))
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 1 and bars[0].get_ylabel() == "attention weight"
    heads = [ax for ax in fig.axes if ax.get_title().startswith("layer 1, head")]
    assert len(heads) == 3 and len({ax.images[0].get_clim() for ax in heads}) == 1
    assert "(p = 0.80, correct)" in fig._suptitle.get_text()


def test_an_unlabelled_sentence_gets_no_verdict(checkpoint, tmp_path):
    from tacred.analysis.plots import attention_figure

    title = attention_figure(_view(None))._suptitle.get_text()
    assert "gold" not in title.split("\n")[0].replace("no gold label", "") and "wrong" not in title
    assert "no gold label" in title
    # through the command: a file whose relations are all the default no_relation (as tacred annotate writes)
    data = json.loads((checkpoint.parents[2] / "data" / "test.json").read_text())[:2]
    for ex in data:
        ex["relation"] = "no_relation"
    (tmp_path / "mine.json").write_text(json.dumps(data))
    out = tmp_path / "a.png"
    assert main(["attention", "--ckpt_path", str(checkpoint), "--file", str(tmp_path / "mine.json"), "--index", "0",
                 "-o", str(out)]) == 0
    check_png(out)
