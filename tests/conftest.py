"""Shared fixtures: paths to the real data beside the repository and tiny synthetic TACRED files."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
TACRED_SAMPLE = SHARED_DATA / "tacred_sample"
# the start of a Python program that may not import torch or Lightning (ONNX Runtime alone): their imports fail, and
# the torch-backed spaCy plugin's entry points are hidden, since spaCy imports every registered plugin
NO_TORCH_PROBE = """
import catalogue, importlib.abc, importlib.metadata, json, sys
catalogue.AVAILABLE_ENTRY_POINTS = importlib.metadata.EntryPoints(
    e for d in importlib.metadata.distributions() for e in d.entry_points
    if not e.value.startswith("spacy_curated_transformers"))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "lightning", "pytorch_lightning", "torchmetrics"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
"""


@dataclass
class Ran:
    status: int
    stdout: str
    stderr: str


def run_in_process(*args: str, stdin: str | None = None, check: bool = True) -> Ran:
    """``tacred ARGS`` through ``tacred.cli.main`` in this process, for tests whose subject is not the process
    itself (no ~5 s of imports per call): what it returned and printed; torch's thread count is restored after
    (``--num_threads`` sets it for the process). ``stdin``: what it reads from standard input; ``check``: fail
    the test unless it returned 0."""
    import sys

    import torch

    from tacred.cli import main

    out, err, threads, given_stdin = io.StringIO(), io.StringIO(), torch.get_num_threads(), sys.stdin
    try:
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as stop:  # jsonargparse's --help and --print_config end the parse
                status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 2
    finally:
        torch.set_num_threads(threads)
        sys.stdin = given_stdin
    ran = Ran(status, out.getvalue(), err.getvalue())
    if check:
        assert status == 0, f"tacred {' '.join(args)} returned {status}:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    return ran


def doc_block(doc: str, name: str) -> str:
    """The ```bash block of ``docs/DOC`` right after the comment ``<!-- tested: NAME -->``: the commands a test runs,
    read from where users read them."""
    text = (REPO / "docs" / doc).read_text(encoding="utf-8")
    found = re.findall(rf"<!-- tested: {re.escape(name)} -->\n```bash\n(.*?)```", text, re.S)
    assert len(found) == 1, f"docs/{doc}: expected one block marked 'tested: {name}', found {len(found)}"
    return found[0]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (free when asked: the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def tacred_sample() -> Path:
    if not (TACRED_SAMPLE / "train.json").is_file():
        pytest.skip(f"the public TACRED sample is not found at {TACRED_SAMPLE}")
    return TACRED_SAMPLE


def make_example(i: int, relation: str = "no_relation", length: int = 6) -> dict:
    tokens = [f"w{(i * 7 + k) % 13}" for k in range(length)]
    tokens[0], tokens[-1] = "Alice", "Acme"
    return {
        "id": f"ex{i}", "relation": relation, "token": tokens,
        "subj_start": 0, "subj_end": 0, "obj_start": length - 1, "obj_end": length - 1,
        "subj_type": "PERSON", "obj_type": "ORGANIZATION",
        "stanford_pos": ["NNP"] + ["NN"] * (length - 2) + ["NNP"],
        "stanford_ner": ["PERSON"] + ["O"] * (length - 2) + ["ORGANIZATION"],
    }


@pytest.fixture
def write_json(tmp_path: Path):
    def write(name: str, data: object) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated corpus (the demo generator, shrunk) shared by the end-to-end tests."""
    from tacred.datasets.synthetic import write_corpus

    out = tmp_path_factory.mktemp("demo_data")
    write_corpus(out, seed=5, n_train=240, n_dev=60, n_test=60)
    return out


@pytest.fixture(scope="session")
def nlp():
    """The installed English spaCy pipeline (loaded once per test session)."""
    from tacred.text.spacy_pipeline import SpacyModelError, load_spacy

    try:
        return load_spacy()
    except SpacyModelError as err:
        pytest.skip(f"no spaCy English model installed: {err}")


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's one tiny trained model (60 generated training examples, 2 epochs, in this process), for every
    test that needs some trained checkpoint; its data is in ``checkpoint.parents[2] / "data"``."""
    import torch

    from tacred.analysis.inspection import train_demo_model

    threads = torch.get_num_threads()  # `tacred fit` sets its own thread count; later tests get this one back
    try:
        return train_demo_model(tmp_path_factory.getbasetemp() / "tiny_model", epochs=2, n_train=60, n_dev=40,
                                n_test=40, word_dim=24)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def joint_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small corpus in SpERT's layout (:mod:`tests.joint_corpus`) for the joint model's tests."""
    from tests.joint_corpus import write_joint_corpus

    return write_joint_corpus(tmp_path_factory.mktemp("joint_corpus"))


@pytest.fixture(scope="session")
def joint_run(joint_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's one trained joint model on ``joint_corpus``: a tiny BERT fitted for 8 epochs by ``tacred fit``
    in this process; the encoder's folder is removed after (everything later reads the checkpoint alone)."""
    import shutil

    pytest.importorskip("transformers")
    from tests.joint_corpus import corpus_words, joint_fit_args
    from tests.tiny_bert import write_tiny_bert

    encoder = write_tiny_bert(tmp_path_factory.mktemp("joint_tiny") / "bert", corpus_words())
    run = tmp_path_factory.mktemp("joint") / "run"
    run_in_process(*joint_fit_args(joint_corpus, encoder, run))
    shutil.rmtree(encoder)
    return run



# `make test` hands whole files to its workers in collection order (`--dist loadfile --no-loadscope-reorder`); files
# that start first should be the long ones, so that a few long files do not end up last on one worker while the
# other waits (longest-processing-time-first scheduling). The order measures itself: when a run ends, each file's
# seconds (setup, call and teardown of its tests, as pytest reports them) are kept in pytest's cache
# (.pytest_cache/, one record per -m selection), and the next run with the same selection starts with the files that
# took longest. Without a record (a fresh clone, --cache-clear, -p no:cacheprovider) the files run in collection order.
_seconds_by_file: dict[str, float] = {}


def _durations_key(config: pytest.Config) -> str:
    return "tacred/file_seconds/" + (re.sub(r"\W+", "_", config.option.markexpr or "").strip("_") or "all")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cache = getattr(config, "cache", None)
    seconds = cache.get(_durations_key(config), {}) if cache is not None else {}
    if seconds:  # stable: the order within a file, and among files without a figure, stays
        items.sort(key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], 0.0))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    file = report.nodeid.split("::", 1)[0]
    _seconds_by_file[file] = _seconds_by_file.get(file, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    cache = getattr(config, "cache", None)
    if hasattr(config, "workerinput") or cache is None or not _seconds_by_file:
        return  # an xdist worker: its reports reach the controller, which keeps the record
    key = _durations_key(config)
    # files this run did not reach (-k, a path given) keep their earlier figure
    cache.set(key, {**cache.get(key, {}), **{f: round(s, 2) for f, s in _seconds_by_file.items()}})


@pytest.fixture
def keep_torch_threads():
    """``--num_threads`` sets torch's thread count for the whole process (configs/demo.yaml: 1); the tests that run
    ``tacred fit`` in this process give later tests the count they found."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def torch_loads(monkeypatch) -> list[object]:
    """The files ``torch.load`` reads while the test runs (every checkpoint read goes through it), in order."""
    import torch

    loads: list[object] = []
    real_load = torch.load

    def counted(*args, **kwargs):
        loads.append(args[0] if args else kwargs.get("f"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", counted)
    return loads
