"""Property-based fuzzing of every reader of user input: whatever the input, the outcome is a result or one of the
project's own errors (:class:`tacred.errors.TacredError`), never another exception; and a valid input, drawn beside
the fuzzed ones (:func:`valid_or_fuzzed`) and given as an explicit example, is read, not rejected: a reader that
rejected everything would fail here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tacred.errors import ConfigError, TacredError
from tests.conftest import REPO, make_example

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

scalars = (st.none() | st.booleans() | st.integers(-3, 40) | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=8))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 40) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=8,
)


def valid_or_fuzzed(valid: st.SearchStrategy, fuzzed: st.SearchStrategy) -> st.SearchStrategy:
    """``(True, value)`` drawn from ``valid`` or ``(False, value)`` from ``fuzzed``: the test knows which inputs the
    reader must accept."""
    return valid.map(lambda value: (True, value)) | fuzzed.map(lambda value: (False, value))


def accepted_if_valid(valid: bool, err: Exception) -> None:
    """Called where a reader raised: only an input that is not known to be valid may be rejected."""
    assert not valid, f"a valid input was rejected: {err}"


@st.composite
def valid_examples(draw: st.DrawFn) -> list[dict]:
    """Distinct valid TACRED examples (one to four)."""
    ids = draw(st.lists(st.integers(0, 20), min_size=1, max_size=4, unique=True))
    return [make_example(i, draw(st.sampled_from(["no_relation", "per:title"])), length=draw(st.integers(2, 7)))
            for i in ids]


@st.composite
def raw_examples(draw: st.DrawFn) -> dict:
    """A TACRED example with some fields dropped or replaced by arbitrary JSON."""
    example = make_example(draw(st.integers(0, 5)), draw(st.sampled_from(["no_relation", "per:title", "per:titel"])),
                           length=draw(st.integers(1, 7)))
    for key in list(example):
        action = draw(st.sampled_from(["keep", "keep", "keep", "keep", "drop", "replace"]))
        if action == "drop":
            del example[key]
        elif action == "replace":
            example[key] = draw(json_values)
    return example


def _write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


@st.composite
def data_files(draw: st.DrawFn) -> bytes:
    """A TACRED JSON list, JSON Lines, or arbitrary bytes."""
    kind = draw(st.sampled_from(["list", "jsonl", "bytes", "json"]))
    if kind == "bytes":
        return draw(st.binary(max_size=120))
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    examples = draw(st.lists(raw_examples(), max_size=4))
    if kind == "list":
        return json.dumps(examples).encode()
    return "\n".join(json.dumps(e) for e in examples).encode()


@FUZZ
@given(raw=raw_examples() | json_values)
def test_check_example_accepts_only_what_makes_a_valid_example(raw):
    from tacred.data.examples import Example, check_example

    if check_example(raw) is None:
        example = Example.from_dict(raw)
        assert 0 <= example.subj_start <= example.subj_end < len(example)
        assert 0 <= example.obj_start <= example.obj_end < len(example)
        assert len(example.pos) == len(example.ner) == len(example)
        assert example.subj_type.strip() and example.obj_type.strip() and example.relation.strip()


@FUZZ
@given(examples=valid_examples())
@example(examples=[make_example(0)])
def test_check_example_accepts_every_valid_example(examples):
    from tacred.data.examples import check_example

    for raw in examples:
        assert check_example(raw) is None, check_example(raw)


def _as_file(examples: list[dict], jsonl: bool) -> bytes:
    return ("\n".join(json.dumps(e) for e in examples) if jsonl else json.dumps(examples)).encode()


@FUZZ
@given(drawn=valid_or_fuzzed(st.builds(_as_file, valid_examples(), st.booleans()), data_files()))
@example(drawn=(True, _as_file([make_example(0), make_example(1, "per:title")], jsonl=False)))
def test_the_tacred_loader_returns_examples_or_a_data_error(tmp_path, drawn):
    from tacred.data.examples import load_examples

    valid, content = drawn
    path = _write(tmp_path / "split.json", content)
    try:
        result = load_examples(path)
    except TacredError as err:
        accepted_if_valid(valid, err)
        assert str(path) in str(err)
        return
    ids = [e.id for e in result.examples]
    assert len(ids) == len(set(ids))
    for loaded in result.examples:
        assert all(isinstance(v, int) and not isinstance(v, bool)
                   for v in (loaded.subj_start, loaded.subj_end, loaded.obj_start, loaded.obj_end))


words = st.sampled_from(["Ann", "Acme", "é", "met", "the"])
valid_marked_lines = st.builds(
    lambda before, subj, middle, obj, after, subj_first: (
        f"{before} <subj>{subj}</subj> {middle} <obj>{obj}</obj> {after}" if subj_first
        else f"{before} <obj>{obj}</obj> {middle} <subj>{subj}</subj> {after}"),
    words, words, words, words, words, st.booleans())


@FUZZ
@given(drawn=valid_or_fuzzed(valid_marked_lines, st.lists(
    st.sampled_from(["<subj>", "</subj>", "<obj>", "</obj>", "<e1>", "</e1>", "<e2>", "</e2>", "<subj:PERSON>",
                     "<obj:>", "<subj:1x>", "Ann", " ", "Acme", "é", "<", ">", "\t"]),
    max_size=10).map("".join) | st.text(max_size=40)))
@example(drawn=(True, "<subj>Ann</subj> works for <obj>Acme</obj> ."))
def test_the_marked_sentence_parser_returns_spans_or_a_marker_error(drawn):
    from tacred.datasets.annotate import MarkerError, parse_markers

    valid, line = drawn
    try:
        marked = parse_markers(line)
    except MarkerError as err:
        accepted_if_valid(valid, err)
        return
    for start, end in (marked.subj, marked.obj):
        assert 0 <= start < end <= len(marked.text) and marked.text[start:end].strip()


VALID_OFFSETS = {"text": "Ann works for Acme .", "subj": [0, 3], "obj": [14, 18]}
valid_offsets = st.fixed_dictionaries({k: st.just(v) for k, v in VALID_OFFSETS.items()}, optional={
    "id": st.sampled_from(["a1", 7]), "subj_type": st.just("PERSON"), "obj_type": st.just("ORGANIZATION"),
    "relation": st.sampled_from(["per:employee_of", "no_relation"])})


@FUZZ
@given(drawn=valid_or_fuzzed(valid_offsets, json_values | st.fixed_dictionaries(
    {"text": st.text(max_size=20), "subj": json_values | st.lists(st.integers(-2, 25), max_size=3),
     "obj": st.lists(st.integers(-2, 25), min_size=2, max_size=2)},
    optional={"id": json_values, "subj_type": json_values, "relation": json_values})))
@example(drawn=(True, {**VALID_OFFSETS, "relation": "per:employee_of"}))
def test_the_offsets_parser_returns_spans_or_a_marker_error(drawn):
    from tacred.datasets.annotate import MarkerError, parse_offsets

    valid, record = drawn
    try:
        marked, _, relation = parse_offsets(record)
    except MarkerError as err:
        accepted_if_valid(valid, err)
        return
    assert isinstance(relation, str) and relation.strip()
    assert marked.subj[1] <= marked.obj[0] or marked.obj[1] <= marked.subj[0]


label_lines = st.lists(st.sampled_from(["per:title", "no_relation", "org:founded_by", "per:titel", "", " ", "\t",
                                        "1\tper:title", '{"id": "a", "relation": "per:title"}',
                                        '{"id": "b", "relation": "no_relation"}', '{"relation": 3}', "[", "{"]),
                       max_size=6).map(lambda lines: "\n".join(lines).encode())


@st.composite
def valid_label_files(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """Gold and predicted label files of the same length, the predictions drawn from the gold labels."""
    gold = draw(st.lists(st.sampled_from(["per:title", "no_relation", "org:founded_by"]), min_size=1, max_size=6))
    pred = [draw(st.sampled_from(gold)) for _ in gold]
    return "\n".join(gold).encode(), "\n".join(pred).encode()


@FUZZ
@given(drawn=valid_or_fuzzed(valid_label_files(), st.tuples(label_lines | st.binary(max_size=60),
                                                            label_lines | st.binary(max_size=60))))
@example(drawn=(True, (b"per:title\nno_relation", b"no_relation\nno_relation")))
def test_the_scorer_readers_return_labels_or_a_label_error(tmp_path, drawn):
    from tacred.evaluation.scoring import check_predicted_labels, read_aligned, score

    valid, (gold, pred) = drawn
    gold_path, pred_path = _write(tmp_path / "gold.txt", gold), _write(tmp_path / "pred.txt", pred)
    try:
        gold_labels, pred_labels = read_aligned(gold_path, pred_path)
        check_predicted_labels(gold_labels, pred_labels, pred_path)
    except TacredError as err:
        accepted_if_valid(valid, err)
        return
    result = score(gold_labels, pred_labels)
    assert 0 <= result.precision <= 1 and 0 <= result.recall <= 1


semeval_lines = st.lists(st.sampled_from([
    '1\t"The <e1>author</e1> wrote a <e2>book</e2> ."', '2\t"A <e1>wind</e1> <e2>x</e2>"', '3\t"no markers"',
    '1\t"<e1>a<e2>b</e1></e2>"', "Cause-Effect(e1,e2)", "Other", "Cause-Effekt(e1,e2)", "Comment:", "", "garbage",
]), max_size=10).map(lambda lines: "\n".join(lines).encode())


SEMEVAL_SENTENCES = ['"The <e1>author</e1> wrote a <e2>book</e2> ."', '"A <e1>wind</e1> moved the <e2>sand</e2> ."']
SEMEVAL_LABELS = ["Cause-Effect(e1,e2)", "Other", "Product-Producer(e2,e1)"]


@st.composite
def valid_semeval_files(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A train and a test file in the release's layout: id, sentence, label, an optional comment, a blank line."""
    def blocks(first_id: int) -> bytes:
        count = draw(st.integers(1, 3))
        return "".join(f"{first_id + i}\t{draw(st.sampled_from(SEMEVAL_SENTENCES))}\n"
                       f"{draw(st.sampled_from(SEMEVAL_LABELS))}\nComment:{draw(st.sampled_from(['', ' x']))}\n\n"
                       for i in range(count)).encode()
    return blocks(1), blocks(8001)


@FUZZ
@given(drawn=valid_or_fuzzed(valid_semeval_files(), st.tuples(semeval_lines | st.binary(max_size=60), semeval_lines)))
@example(drawn=(True, (b'1\t"The <e1>author</e1> wrote a <e2>book</e2> ."\nProduct-Producer(e2,e1)\nComment:\n\n',
                       b'8001\t"A <e1>wind</e1> moved the <e2>sand</e2> ."\nOther\nComment:\n\n')))
def test_the_semeval_reader_returns_records_or_a_semeval_error(tmp_path, drawn):
    from tacred.datasets.semeval import TEST_FILE, TRAIN_FILE, check_release, read_semeval

    valid, (train, test) = drawn
    _write(tmp_path / TRAIN_FILE, train)
    _write(tmp_path / TEST_FILE, test)
    try:
        records = read_semeval(tmp_path / TRAIN_FILE)
        check_release(tmp_path, dev_size=0)
    except TacredError as err:
        accepted_if_valid(valid, err)
        return
    assert records and len({r.id for r in records}) == len(records)


valid_glove_files = st.lists(
    st.tuples(st.sampled_from("abcdefxyz"), st.lists(st.integers(-9, 9), min_size=3, max_size=3)),
    min_size=1, max_size=5, unique_by=lambda line: line[0]).map(
    lambda lines: "\n".join(f"{word} {' '.join(f'{v / 4:g}' for v in values)}" for word, values in lines).encode())


@FUZZ
@given(drawn=valid_or_fuzzed(valid_glove_files, st.binary(max_size=80) | st.lists(
    st.sampled_from(["2 3", "a 1 2 3", "b 1 2", "c x 2 3", "d 1 2 inf", "", "e  1 2 3", "f 1 2 3 4"]),
    max_size=5).map(lambda lines: "\n".join(lines).encode())))
@example(drawn=(True, b"a 0.1 0.2 0.3\nx 1 2 3\nb -1 0 1.5"))
def test_the_glove_reader_returns_vectors_or_a_glove_error(tmp_path, drawn):
    from tacred.data.glove import read_glove_vectors

    valid, content = drawn
    path = _write(tmp_path / "vectors.txt", content)
    try:
        vectors = read_glove_vectors(path, ["a", "b", "c", "d", "e", "f"], dim=3)
    except TacredError as err:
        accepted_if_valid(valid, err)
        return
    for vector in vectors.values():
        assert vector.shape == (3,) and bool(vector.isfinite().all())


patch_ids = st.lists(st.sampled_from(["a1", "b2", "c3", "d4"]), min_size=1, max_size=4, unique=True)
patch_relations = st.sampled_from(["per:title", "no_relation", "org:founded_by"])
valid_patches = (
    st.builds(lambda ids, rel: [{"id": i, "relation": rel} for i in ids], patch_ids, patch_relations)
    | st.dictionaries(st.sampled_from(["a1", "b2", "c3"]), patch_relations, min_size=1)
).map(lambda data: json.dumps(data).encode())


@FUZZ
@given(drawn=valid_or_fuzzed(valid_patches, st.binary(max_size=80) | json_values.map(lambda v: json.dumps(v).encode())))
@example(drawn=(True, b'[{"id": "a1", "relation": "per:title"}]'))
@example(drawn=(True, b'{"a1": "no_relation"}'))
def test_the_patch_reader_returns_a_patch_or_a_patch_error(tmp_path, drawn):
    from tacred.datasets.patch import read_patch

    valid, content = drawn
    path = _write(tmp_path / "patch.json", content)
    try:
        patch = read_patch(path)
    except TacredError as err:
        accepted_if_valid(valid, err)
        return
    assert patch.layout in ("tacrev", "retacred") and all(isinstance(k, str) for k in patch.labels)


NETWORK_FIELDS = ("word_dim", "pos_dim", "ner_dim", "num_heads", "ffn_dim", "dropout", "attention_dropout",
                  "word_dropout", "max_relative_distance", "gaussian_heads", "attention_dim", "num_layers")


valid_network_values = st.fixed_dictionaries({}, optional={
    "num_heads": st.sampled_from([1, 2, 3, 4, 6]), "dropout": st.floats(0, 0.9), "word_dropout": st.floats(0, 1),
    "attention_dropout": st.floats(0, 0.9), "max_relative_distance": st.integers(1, 100), "num_layers": st.integers(1, 3)})


@FUZZ
@given(drawn=valid_or_fuzzed(valid_network_values, st.dictionaries(st.sampled_from(NETWORK_FIELDS), scalars,
                                                                   max_size=4)))
@example(drawn=(True, {}))
@example(drawn=(True, {"num_heads": 3, "dropout": 0.5, "num_layers": 2}))
def test_network_validation_builds_a_config_or_raises_a_config_error(drawn):
    from tacred.models.config import NetworkConfig

    valid, values = drawn
    try:
        config = NetworkConfig(**values)
    except ConfigError as err:
        accepted_if_valid(valid, err)
        return
    assert (config.word_dim + config.pos_dim + config.ner_dim) % config.num_heads == 0
    assert 0 <= config.dropout < 1 and 0 <= config.word_dropout <= 1 and config.max_relative_distance >= 1


valid_training_values = st.fixed_dictionaries({}, optional={
    "lr": st.floats(1e-4, 1), "momentum": st.floats(0, 0.99), "batch_size": st.integers(1, 64),
    "eval_batch_size": st.integers(1, 64), "num_workers": st.integers(0, 2)})


@FUZZ
@given(values=st.dictionaries(st.sampled_from(["lr", "momentum", "weight_decay", "decay_start_epoch", "decay_factor",
                                               "decay_compare", "no_relation_weight", "batch_size", "eval_batch_size",
                                               "min_count", "num_workers", "min_glove_coverage", "labels",
                                               "no_relation"]),
                              scalars | st.lists(st.sampled_from(["no_relation", "per:title", "x"]), max_size=3),
                              max_size=4).map(lambda values: (False, values))
       | valid_training_values.map(lambda values: (True, values)))
@example(values=(True, {}))
@example(values=(True, {"lr": 0.5, "batch_size": 50, "momentum": 0.9}))
def test_training_and_data_validation_accepts_or_raises_a_config_error(values):
    """The LightningModule's and the data module's own checks (what their ``__init__`` runs first)."""
    import inspect

    from tacred.options.rules import check
    from tacred.training.datamodule import TacredDataModule
    from tacred.training.module import RelationExtractor

    valid, values = values
    try:
        for owner in (RelationExtractor, TacredDataModule):
            defaults = {name: p.default for name, p in inspect.signature(owner.__init__).parameters.items()
                        if p.default is not inspect.Parameter.empty}
            check(owner, {**defaults, **{k: v for k, v in values.items() if k in defaults}})
    except ConfigError as err:
        accepted_if_valid(valid, err)
        return
    lr = values.get("lr", 0.1)
    assert isinstance(lr, int | float) and math.isfinite(lr) and lr > 0
    assert values.get("batch_size", 1) >= 1


valid_configs = st.lists(st.sampled_from(["seed_everything: 1", "model:\n  lr: 0.1", "data:\n  batch_size: 50",
                                          "trainer:\n  max_epochs: 2", "# a comment"]),
                         max_size=4, unique=True).map("\n".join)


@FUZZ
@given(drawn=valid_or_fuzzed(valid_configs, st.text(max_size=60) | st.lists(
    st.sampled_from(["model:", "  lr: 0.1", "  lr: 0.2", "- a", "\tx: 1", "data: {", "a: [1", "b: &x 1", "c: *y", "'"]),
    max_size=5).map("\n".join)))
@example(drawn=(True, "model:\n  lr: 0.1\ntrainer:\n  max_epochs: 2"))
def test_the_config_reader_returns_yaml_or_a_config_error(tmp_path, drawn):
    from tacred.options.config_files import check_config_files

    valid, text = drawn
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        check_config_files(["fit", "--config", str(path)])
    except ConfigError as err:
        accepted_if_valid(valid, err)
        assert str(path) in str(err)


@pytest.mark.parametrize("value", ["0", "nan", "3.5", ""])
def test_option_messages_name_the_option(value, capsys, demo_data):
    from tacred.cli import main

    demo = str(REPO / "configs" / "demo.yaml")  # with data that exists: a missing data file is reported first
    assert main(["fit", "--config", demo, "--data.data_dir", str(demo_data), "--model.network.num_heads", value]) == 2
    assert "--model.network.num_heads" in capsys.readouterr().err
