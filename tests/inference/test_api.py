"""The Python prediction API: every input form gives the same answer as the TACRED dict it stands for."""

from __future__ import annotations

import json
import math

import pytest
import torch

from tests.conftest import REPO

MARKED = "<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said ."


@pytest.fixture(scope="module")
def model(checkpoint):
    from tacred import load_model

    return load_model(checkpoint)


@pytest.fixture(scope="module")
def test_examples(checkpoint) -> list[dict]:
    return json.loads((checkpoint.parents[2] / "data" / "test.json").read_text())


def test_tacred_dicts_match_the_test_command_and_never_load_spacy(model, checkpoint, test_examples, monkeypatch):
    from tacred.data.batching import EncodedSplit
    from tacred.data.examples import Example
    from tacred.text import spacy_pipeline

    monkeypatch.setattr(spacy_pipeline, "load_spacy", lambda *a, **k: pytest.fail("spaCy loaded for TACRED dicts"))
    preds = model.predict(test_examples)
    assert len(preds) == len(test_examples)
    from tacred.training.module import RelationExtractor

    lightning_model = RelationExtractor.from_checkpoint(checkpoint)  # what `tacred test` runs
    data = EncodedSplit([Example.from_dict(ex, i) for i, ex in enumerate(test_examples)], lightning_model.vocab)
    reference = lightning_model.split_probabilities(data)
    # the same encoding (numpy), batches and network as `tacred test`, without Lightning: equal to the bit
    assert torch.equal(torch.from_numpy(model.probabilities(test_examples)), reference)
    for pred, row, ex in zip(preds, reference, test_examples, strict=True):
        assert pred.id == ex["id"]
        assert pred.relation == model.labels[int(row.argmax())]
        assert pred.probability == pytest.approx(float(row.max()), abs=1e-6)
        assert math.isclose(sum(pred.probabilities.values()), 1.0, abs_tol=1e-4)
        assert list(pred.probabilities) == model.labels


def test_a_single_input_gives_one_prediction_and_a_list_a_list(model, test_examples):
    one = model.predict(test_examples[0])
    assert not isinstance(one, list)
    assert model.predict([test_examples[0]])[0] == one
    assert model.infer(test_examples[0]) == (one.relation, one.probability)


def test_a_gold_label_outside_the_model_is_ignored(model, test_examples):
    ex = dict(test_examples[0], relation="not:a_label")
    assert model.predict(ex).probabilities == model.predict(test_examples[0]).probabilities


def test_all_input_forms_agree(model, nlp):
    text = "Maria Lopez , the chief executive of Acme Holdings , said ."
    tokens = text.split()
    forms = [
        MARKED,
        {"text": MARKED},
        {"text": text, "subj": [0, 11], "obj": [37, 50]},
        {"text": text, "h": {"pos": [0, 11]}, "t": {"pos": [37, 50]}},
        {"token": tokens, "h": {"pos": [0, 2]}, "t": {"pos": [7, 9]}},
    ]
    preds = model.predict(forms)
    assert {(p.subject, p.object) for p in preds} == {("Maria Lopez", "Acme Holdings")}
    for p in preds[1:]:
        assert p.relation == preds[0].relation
        assert p.probability == pytest.approx(preds[0].probability, abs=1e-6)
    # the annotated example is the one `tacred annotate` writes for the same line
    from tacred.datasets.annotate import annotate_marked

    ex = annotate_marked([MARKED], nlp=nlp)[0]
    assert model.predict(ex).probability == pytest.approx(preds[0].probability, abs=1e-6)


def test_an_entity_type_given_with_the_tokens_is_used(model, nlp):
    tokens = "Maria Lopez , the chief executive of Acme Holdings , said .".split()
    typed = model.to_examples([{"token": tokens, "h": {"pos": [0, 2], "type": "PERSON"},
                                "t": {"pos": [7, 9], "type": "MISC"}}])[0]
    assert (typed["subj_type"], typed["obj_type"]) == ("PERSON", "MISC")
    assert (typed["subj_start"], typed["subj_end"], typed["obj_start"], typed["obj_end"]) == (0, 1, 7, 8)


@pytest.mark.parametrize(("bad", "message"), [
    ("Maria Lopez works for Acme .", "no subject marker"),
    ({"text": ""}, "'text' must be a non-empty string"),
    ({"token": ["a", "b"], "h": {"pos": [0, 1]}, "t": {"pos": [1, 3]}}, "'t.pos' [1, 3) does not fit 2 tokens"),
    ({"token": ["a", "b"], "h": {"pos": [0, 2]}, "t": {"pos": [1, 2]}}, "overlap"),
    ({"token": ["a", ""], "h": {"pos": [0, 1]}, "t": {"pos": [1, 2]}}, "empty or non-string token"),
    ({"token": ["a", "b"], "h": [0, 1], "t": {"pos": [1, 2]}}, "'h' must be an object"),
    ({"sentence": "x"}, "found the keys ['sentence']"),
    (42, "expected a string, a dict or a list"),
    ([42], "expected a string or an object"),
])
def test_bad_inputs_are_errors_that_say_what_is_wrong(model, bad, message):
    from tacred.inference.api import InputError

    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        model.predict(bad)


def test_a_bad_tacred_dict_names_the_item_of_the_batch(model, test_examples):
    from tacred.inference.api import InputError

    broken = dict(test_examples[1], stanford_pos=["NN"])
    with pytest.raises(InputError, match=r"input 1: field 'stanford_pos' has 1 tags"):
        model.predict([test_examples[0], broken])


@pytest.mark.slow  # a fresh Python subprocess
def test_load_model_predicts_without_importing_lightning(model, checkpoint, test_examples):
    """The API rebuilds the network from the checkpoint with torch alone: ~3 s and ~280 MiB instead of ~7 s and
    ~400 MiB with Lightning, torchmetrics, matplotlib and TorchDynamo (docs/performance.md)."""
    import subprocess
    import sys

    probe = ("import json, sys; from tacred import load_model; "
             f"pred = load_model({str(checkpoint)!r}).predict(json.loads(sys.stdin.read())); "
             "print(pred.relation, sorted(m for m in ('lightning', 'torchmetrics', 'matplotlib', 'datasets', 'spacy') "
             "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, input=json.dumps(test_examples[0]),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    relation, heavy = proc.stdout.strip().split(" ", 1)
    assert heavy == "[]"
    assert relation == model.predict(test_examples[0]).relation


def test_a_threshold_turns_relations_into_no_relation(checkpoint, test_examples):
    from tacred import load_model

    strict = load_model(checkpoint, threshold=50.0).predict(test_examples)
    assert {p.relation for p in strict} == {"no_relation"}


def test_lightning_load_from_checkpoint_works(checkpoint, model, test_examples):
    from tacred.training.module import RelationExtractor

    loaded = RelationExtractor.load_from_checkpoint(checkpoint).eval()
    for name, value in model.backend.module.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], value), name
    assert loaded.vocab.fingerprint() == model.encoder.vocab.fingerprint()


def test_predict_sentences_takes_the_options_of_predict_and_keeps_earlier_outputs(checkpoint, tmp_path, capsys,
                                                                                     monkeypatch, nlp):
    import io

    from tacred.commands.predict_raw import main

    argv = ["--ckpt_path", str(checkpoint), "--sentences", "-", "--num_threads", "1",
            "--model.no_relation_threshold", "50", "--data.batch_size", "8", "--run_dir", str(tmp_path)]
    for _ in range(2):
        monkeypatch.setattr("sys.stdin", io.StringIO(MARKED + "\n"))
        assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["line-1\tno_relation\t" + out[0].split("\t")[2] + "\tMaria Lopez -> Acme Holdings"] * 2
    first = json.loads((tmp_path / "predictions.jsonl").read_text())
    assert first["relation"] == "no_relation" and set(first["probabilities"]) == set(first["probabilities"])
    assert (tmp_path / "predictions-1.jsonl").read_text() == (tmp_path / "predictions.jsonl").read_text()


def test_predict_sentences_answers_as_the_python_api(model, checkpoint, monkeypatch, capsys, nlp):
    """`tacred predict --sentences` is the Python API on each line (ids line-N unless a record gives one); a line whose
    id repeats an earlier one is named by its line and, with --skip_bad_lines, left out."""
    import io

    from tacred.commands.predict_raw import main

    text = "Maria Lopez , the chief executive of Acme Holdings , said ."
    records = [{"text": text, "subj": [0, 11], "obj": [37, 50]}, {"text": text, "subj": [37, 50], "obj": [0, 11], "id": 7},
               {"text": text, "subj": [0, 5], "obj": [37, 41], "id": "7"}]
    lines = "\n".join(json.dumps(r) for r in records) + "\n"
    argv = ["--ckpt_path", str(checkpoint), "--sentences", "-", "--format", "offsets", "--output", "jsonl"]
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert main(argv) == 2
    assert "tacred predict: error: <stdin>, line 3: id '7' repeats the id of line 2" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert main([*argv, "--skip_bad_lines"]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == ["line-1", "7"] and "1 of 3 lines skipped, 2 predicted" in err
    for row, pred in zip(rows, model.predict(records[:2]), strict=True):
        assert (row["relation"], row["subject"], row["object"]) == (pred.relation, pred.subject, pred.object)
        assert row["probabilities"] == {k: round(v, 6) for k, v in pred.probabilities.items()}


def test_an_input_error_names_the_position_of_the_input(model):
    from tacred.inference.inputs import InputError

    with pytest.raises(InputError) as failed:
        model.predict([MARKED, "no markers here"])
    assert (failed.value.item, str(failed.value)) == (1, f"input 1: {failed.value.problem}")
    assert failed.value.problem.startswith("no subject marker")


def test_a_sentence_the_api_refuses_is_named_by_its_line_or_skipped(monkeypatch, capsys):
    """What only the API finds (spaCy cannot cut a marked span into tokens) is reported with the line it came from."""
    from tacred.commands.predict_raw import _predictions
    from tacred.datasets.annotate import AnnotationError
    from tacred.inference.inputs import InputError

    class Refuses:  # stands in for a Predictor that cannot tokenise the inputs marked "bad"
        def predict(self, inputs):
            for k, item in enumerate(inputs):
                if "bad" in item["text"]:
                    raise InputError(f"input {k}: no token", k, "span [0, 3) = 'bad' contains no token")
            return [item["id"] for item in inputs]

    lines = ["<subj>a</subj> b <obj>c</obj>", "", "<subj>bad</subj> <obj>c</obj>", "<subj>d</subj> e <obj>f</obj>"]
    inputs = [{"text": lines[i], "id": f"line-{i + 1}"} for i in (0, 2, 3)]
    with pytest.raises(AnnotationError, match="^x.txt, line 3: span"):
        _predictions(Refuses(), list(inputs), [1, 3, 4], list(lines), "x.txt", skip=False)
    assert _predictions(Refuses(), inputs, [1, 3, 4], lines, "x.txt", skip=True) == ["line-1", "line-4"]
    assert lines[2] == "" and "skipped x.txt, line 3: span [0, 3)" in capsys.readouterr().err


def test_the_readme_example_runs(checkpoint, nlp, capsys):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = next(b.split("\n", 1)[1] for b in readme.split("```python")[1:] if "load_model" in b)
    run_folder = repr(str(checkpoint.parents[1]))
    code = block.split("```", 1)[0].replace('"runs/demo"', run_folder)
    assert run_folder in code
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - the documented example, as a user runs it
    out = capsys.readouterr().out.splitlines()
    assert len(out) >= 3 and out[0].endswith("Maria Lopez -> Acme Holdings")
    import re

    for line in out[3:]:  # m.extract: relation, subject and its character offsets, object
        found = re.fullmatch(r"(\S+) (.+) (\d+) (\d+) -> (.+)", line)
        assert found and found.group(2, 3, 4) in {("Maria Lopez", "0", "11"), ("Acme Holdings", "36", "49")}
