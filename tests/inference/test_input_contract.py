"""One input contract: the same 30 wrong inputs are refused with the same message by ``load_model(...).predict``, by
``tacred predict --sentences`` and by ``tacred serve`` (real LitServe on 127.0.0.1), and the limits and the threshold
are those the docs state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from tests.conftest import run_in_process

TEXT = "Maria Lopez , the chief executive of Acme Holdings , said ."
SUBJ = (0, len("Maria Lopez"))
OBJ = (TEXT.index("Acme"), TEXT.index("Acme") + len("Acme Holdings"))


def marked(subj: str = "<subj>Maria Lopez</subj>", obj: str = "<obj>Acme Holdings</obj>", middle: str = "") -> str:
    return f"{subj} , the chief executive of {obj} ,{middle} said ."


def offsets(**change: object) -> dict:
    return {"text": TEXT, "subj": list(SUBJ), "obj": list(OBJ), **change}


# (input, what its message says): marked sentences, then offsets records (both forms `tacred predict` reads)
MARKED = [
    (marked("<subj>Maria Lo</subj>pez"), "the subject 'Maria Lo' ends inside the word 'Lopez'"),
    (marked("Ma<subj>ria Lopez</subj>"), "the subject 'ria Lopez' begins inside the word 'Maria'"),
    (marked(obj="<obj>Acme Hold</obj>ings"), "the object 'Acme Hold' ends inside the word 'Holdings'"),
    (marked("<subj:FOO>Maria Lopez</subj>"), "unknown subject type 'FOO'; this model knows "),
    (marked("<subj:SPACESHIP>Maria Lopez</subj>"), "unknown subject type 'SPACESHIP'"),
    (marked(obj="<obj:PLANET>Acme Holdings</obj>"), "unknown object type 'PLANET'"),
    (marked("Maria Lopez"), "no subject marker"),
    (marked(obj="Acme Holdings"), "no object marker"),
    ("<subj>Maria <obj>Lopez</obj></subj> said .", "markers cannot be nested"),
    (marked("<subj> </subj>"), "the subject span is empty"),
    ("<subj>Maria</subj> and <subj>Ana</subj> of <obj>Acme</obj> .", "the subject is marked more than once"),
    (marked(obj="<obj>Acme Holdings"), "<obj> is never closed"),
    (marked("<subj>Maria Lopez</obj>"), "</obj> closes <subj>"),
    (marked("<subj:bad-type>Maria Lopez</subj>"), "has an invalid type 'bad-type'"),
    (marked(middle=" word" * 600), "words (at least as many tokens), more than the limit of 512 tokens per input"),
    (marked(middle=" " + "a" * 1_000_003), "characters, more than the limit of 1,000,000 characters per input"),
    (marked(middle=" w," * 300), "tokens, more than the limit of 512 tokens per input"),
]
RECORDS = [
    (offsets(subj=[0, 8]), "the subject 'Maria Lo' ends inside the word 'Lopez'"),
    (offsets(subj=[2, SUBJ[1]]), "the subject 'ria Lopez' begins inside the word 'Maria'"),
    (offsets(obj=[OBJ[0], OBJ[1] - 4]), "the object 'Acme Hold' ends inside the word 'Holdings'"),
    (offsets(subj_type="SPACESHIP"), "unknown subject type 'SPACESHIP'; this model knows "),
    (offsets(obj_type="FOO"), "unknown object type 'FOO'"),
    (offsets(subj=[0, 100]), "'subj' [0, 100) does not fit the text"),
    (offsets(obj=[0, 5]), "overlap"),
    (offsets(subj="Maria"), "'subj' must be [start, end] (two integers)"),
    (offsets(text=""), "'text' must be a non-empty string"),
    (offsets(foo=1), "unknown field(s) foo"),
    (offsets(subj=[11, 12]), "covers only whitespace"),
    (offsets(subj_type=""), "'subj_type' must be a non-empty string"),
    (offsets(id=[1]), "'id' must be a string or an integer"),
]
BAD = MARKED + RECORDS


def test_thirty_wrong_inputs():
    assert len(BAD) == 30 and len({json.dumps(item) for item, _ in BAD}) == 30


@pytest.fixture(scope="module")
def model(checkpoint):
    from tacred import load_model

    return load_model(checkpoint, device="cpu")


def api_problems(model) -> list[str]:
    from tacred.inference.api import InputError

    problems = []
    for item, _ in BAD:
        with pytest.raises(InputError) as caught:
            model.predict(item)
        assert str(caught.value) == f"input: {caught.value.problem}"
        problems.append(caught.value.problem)
    return problems


def test_the_python_api_refuses_each_with_its_message(model):
    for problem, (_, expected) in zip(api_problems(model), BAD, strict=True):
        assert expected in problem
    known = model.encoder.known_types("subject")
    assert known and f"this model knows {', '.join(sorted(known))}" in api_problems(model)[3]


def test_an_exported_onnx_folder_refuses_them_with_the_same_messages(model, checkpoint, tmp_path):
    from tacred import load_model
    from tacred.commands.export import main

    assert main(["--ckpt_path", str(checkpoint), "--out", str(tmp_path / "onnx"), "--format", "onnx"]) == 0
    onnx = load_model(tmp_path / "onnx", device="cpu")
    assert type(onnx.predictor.backend).__name__ == "OnnxBackend" and onnx.max_tokens == 512
    assert api_problems(onnx) == api_problems(model)


def cli_problems(checkpoint, tmp_path: Path) -> list[str]:
    """``tacred predict --sentences`` over a file of the marked inputs and one of the records, every bad line
    reported (``--skip_bad_lines``): the problem of each line in order."""
    problems = []
    for fmt, items in (("marked", MARKED), ("offsets", RECORDS)):
        path = tmp_path / f"{fmt}.txt"
        path.write_text("".join((item if fmt == "marked" else json.dumps(item)) + "\n" for item, _ in items))
        ran = run_in_process("predict", "--ckpt_path", str(checkpoint), "--sentences", str(path), "--format", fmt,
                             "--skip_bad_lines", "--device", "cpu")
        by_line = {}
        for line in ran.stderr.splitlines():
            if line.startswith(f"tacred predict: skipped {path}, line "):
                number, problem = line.removeprefix(f"tacred predict: skipped {path}, line ").split(": ", 1)
                by_line[int(number)] = problem
        assert sorted(by_line) == list(range(1, len(items) + 1)), ran.stderr[-3000:]
        problems += [by_line[n] for n in sorted(by_line)]
    return problems


def test_the_cli_and_the_server_refuse_them_with_the_same_messages(model, checkpoint, tmp_path):
    from tacred.serving.process import serve_in_background

    expected = api_problems(model)
    assert cli_problems(checkpoint, tmp_path) == expected
    with serve_in_background(str(checkpoint), extra=["--num_threads", "1", "--device", "cpu"]) as served:
        answers = [requests.post(f"{served.url}/predict", data=json.dumps(item), timeout=60) for item, _ in BAD]
    assert [a.status_code for a in answers] == [422] * len(BAD)
    assert [a.json()["detail"] for a in answers] == [f"input: {problem}" for problem in expected]


test_the_cli_and_the_server_refuse_them_with_the_same_messages = pytest.mark.slow(
    test_the_cli_and_the_server_refuse_them_with_the_same_messages)  # the server is a subprocess


def test_load_model_limits_tokens_to_512_by_default(model, checkpoint):
    from tacred import load_model
    from tacred.inference.api import InputError

    assert model.max_tokens == 512
    long = {"token": ["w"] * 513, "h": {"pos": [0, 1]}, "t": {"pos": [2, 3]}}
    with pytest.raises(InputError, match="513 tokens, more than the limit of 512 tokens per input"):
        model.predict(long)
    unlimited = load_model(checkpoint, device="cpu", max_tokens=None)
    assert unlimited.predict(long).relation in unlimited.labels
    with pytest.raises(ValueError, match="max_tokens must be a whole number of at least 1"):
        load_model(checkpoint, device="cpu", max_tokens=0)


@pytest.mark.parametrize("threshold", [105.5, -200, "1e9"])
def test_a_threshold_outside_the_log_margin_range_is_refused(checkpoint, threshold):
    from tacred import load_model
    from tacred.evaluation.decision import ThresholdError

    with pytest.raises(ThresholdError, match=r"outside \[-105, 105\]: it is a log-margin"):
        load_model(checkpoint, device="cpu", threshold=threshold)


def test_a_tuned_threshold_json_beside_the_checkpoint_is_used_and_reported(checkpoint, tmp_path, caplog):
    import shutil

    from tacred import load_model

    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    shutil.copy2(checkpoint, folder / "best.ckpt")
    assert load_model(tmp_path / "run", device="cpu").threshold is None
    (folder / "threshold.json").write_text(json.dumps({"no_relation_threshold": 100.0}))
    with caplog.at_level("INFO", logger="tacred"):
        tuned = load_model(tmp_path / "run", device="cpu")
    assert tuned.threshold == 100.0 and tuned.threshold_source == str(folder / "threshold.json")
    assert f"no-relation threshold +100.0000 from {folder / 'threshold.json'}" in caplog.text
    assert tuned.predict(marked()).relation == "no_relation"  # a margin of 100 leaves no relation
    assert load_model(tmp_path / "run", device="cpu", threshold=0).threshold == 0.0  # 0: the plain argmax
    ran = run_in_process("predict", "--ckpt_path", str(tmp_path / "run"), "--sentences", "-", "--device", "cpu",
                         stdin=marked() + "\n")
    assert "no-relation threshold +100.0000 from" in ran.stderr and "\tno_relation\t" in ran.stdout
