"""The joint model's command line keeps the input contract: a bad sentence, type or option is one line naming the
file (and sentence) or the option, exit 2, before the encoder loads (these runs name an encoder folder that cannot
load: any error about it would mean the check came too late), and no run folder is left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO, run_in_process
from tests.joint_corpus import write_joint_corpus

CONFIG = str(REPO / "configs" / "conll04" / "joint_minilm.yaml")


def fit(corpus: Path, run: Path, *extra: str):
    broken = corpus / "broken_encoder"
    broken.mkdir(exist_ok=True)
    (broken / "config.json").write_text("{}")
    return run_in_process("fit", "--config", CONFIG, "--model.pretrained", str(broken),
                          "--data.data_dir", str(corpus), "--data.train_file", "train.json", "--data.dev_file",
                          "dev.json", "--data.test_file", "test.json", "--data.types_file", str(corpus / "types.json"),
                          "--run_dir", str(run), *extra, check=False)


def spoil(path: Path, index: int, change: dict) -> None:
    sentences = json.loads(path.read_text())
    sentences[index].update(change)
    path.write_text(json.dumps(sentences))


@pytest.mark.parametrize(("file", "change", "fragments"), [
    ("train.json", {"relations": [{"type": "Kill", "head": 0, "tail": 9}]},
     ("train.json, sentence 3", "relation 0's tail is entity 9, which does not exist")),
    ("train.json", {"entities": [{"type": "Peop", "start": 2, "end": 2}]}, ("train.json, sentence 3", "empty")),
    ("dev.json", {"relations": [{"type": "Founded", "head": 0, "tail": 1}]},
     ("dev.json, sentence 3", "relation 0 has the unknown type 'Founded'")),
])
def test_a_bad_sentence_is_refused_before_the_encoder_loads(tmp_path: Path, file: str, change: dict,
                                                           fragments: tuple[str, ...]) -> None:
    corpus = write_joint_corpus(tmp_path / "corpus")
    spoil(corpus / file, 3, change)
    ran = fit(corpus, tmp_path / "run")
    assert ran.status == 2 and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert all(f in ran.stderr for f in fragments), ran.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("option", "value", "fragment"), [
    ("--model.dropout", "1.5", "--model.dropout 1.5: must lie in [0, 1)"),
    ("--model.relation_threshold", "2", "--model.relation_threshold 2: must lie in (0, 1)"),
    ("--data.batch_size", "0", "--data.batch_size 0: must be a number >= 1"),
    ("--data.types_file", "missing_types.json", "missing_types.json: no such types file"),
    ("--model.pretrained", "no/such/folder", "--model.pretrained 'no/such/folder': neither a packaged encoder"),
])
def test_a_bad_option_is_refused_before_the_encoder_loads(tmp_path: Path, option: str, value: str,
                                                         fragment: str) -> None:
    corpus = write_joint_corpus(tmp_path / "corpus")
    ran = fit(corpus, tmp_path / "run", option, value)
    assert ran.status == 2 and fragment in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert not (tmp_path / "run").exists()


def test_an_option_the_joint_model_does_not_have(tmp_path: Path) -> None:
    corpus = write_joint_corpus(tmp_path / "corpus")
    ran = fit(corpus, tmp_path / "run", "--model.network.num_heads", "3")
    assert ran.status == 2 and "--model.network: not an option of the joint model's model" in ran.stderr, ran.stderr
