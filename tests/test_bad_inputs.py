"""Every bad input a one-line answer: a table of malformed or edge inputs run through the commands in-process.

Each case must exit with status 2 and print one line ``tacred CMD: error: ...`` naming the file (example, field)
or the option and its value; no traceback, no usage text, and a failed ``fit`` leaves no run folder behind.
"""

from __future__ import annotations

import argparse
import gzip
import json
import pickle
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tacred.cli import main
from tests.conftest import REPO, make_example, run_in_process

DEMO = str(REPO / "configs" / "demo.yaml")
SMALL = ("--model.network.word_dim", "24", "--model.network.ffn_dim", "16",
         "--model.network.attention_dim", "16", "--trainer.enable_progress_bar", "false")
FIT = ("fit", "--config", DEMO, "--data.data_dir", "{good}", "--run_dir", "{run}", *SMALL, "--trainer.max_epochs", "1")
RELATIONS = ("no_relation", "per:title", "org:founded_by", "per:employee_of")


def corpus(n: int, offset: int = 0) -> list[dict]:
    return [make_example(offset + i, RELATIONS[i % len(RELATIONS)], length=6 + i % 3) for i in range(n)]


def data_bytes(change: Callable[[list[dict]], object]) -> bytes:
    """The good training split changed in place by ``change``, as JSON."""
    examples = corpus(12)
    change(examples)
    return json.dumps(examples).encode()


def set_field(index: int, **fields: object) -> Callable[[list[dict]], None]:
    return lambda exs: exs[index].update(fields)


def drop_field(index: int, key: str) -> Callable[[list[dict]], None]:
    return lambda exs: exs[index].pop(key)


# ---- bad training splits: (train.json content, fragments of the error line) --------------------------------
DATA: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "empty": (b"", ("train.json", "empty")),
    "whitespace": (b"  \n\n \n", ("train.json", "white space")),
    "latin1": (json.dumps(corpus(3)).replace("Alice", "Al\u00efce").encode("latin-1"), ("train.json", "not UTF-8", "line 1")),
    "truncated_list": (json.dumps(corpus(3)).encode()[:-40], ("train.json", "invalid JSON")),
    "trailing_comma": (json.dumps(corpus(2)).encode()[:-1] + b",]", ("train.json", "invalid JSON")),
    "bad_jsonl_line": (b"\n".join([json.dumps(e).encode() for e in corpus(2)] + [b'{"id": "x", '])
                       , ("train.json", "line 3")),
    "deep_nesting": (b"[" * 50_000 + b"]" * 50_000, ("train.json", "nested too deeply")),
    "top_number": (b"3", ("train.json", "example 0", "JSON object")),
    "top_null": (b"null", ("train.json", "example 0", "JSON object")),  # crashed pyarrow's JSON reader
    "top_true_jsonl": (b"true\nfalse\n", ("train.json", "example 0", "JSON object")),
    "top_string": (b'"tokens"', ("train.json", "example 0", "JSON object")),
    "empty_list": (b"[]", ("train.json", "no examples")),
    "list_of_numbers": (b"[1, 2]", ("train.json", "example 0", "JSON object")),
    "null_bytes": (b"\x00\x00\x00", ("train.json",)),
    "gzip_bytes": (gzip.compress(b"[]"), ("train.json", "not UTF-8")),
    "missing_token": (data_bytes(drop_field(2, "token")), ("train.json", "example 2", "token")),
    "missing_relation": (data_bytes(drop_field(1, "relation")), ("train.json", "example 1", "relation")),
    "missing_subj_type": (data_bytes(drop_field(3, "subj_type")), ("train.json", "example 3", "subj_type")),
    "missing_obj_end": (data_bytes(drop_field(0, "obj_end")), ("train.json", "example 0", "obj_end")),
    "missing_pos": (data_bytes(drop_field(4, "stanford_pos")), ("train.json", "example 4", "stanford_pos")),
    "token_string": (data_bytes(set_field(1, token="Alice founded Acme")), ("train.json", "example 1", "'token'")),
    "token_empty_list": (data_bytes(set_field(1, token=[])), ("train.json", "example 1", "'token'")),
    "token_empty_string": (data_bytes(lambda e: e[2]["token"].__setitem__(1, "")), ("train.json", "example 2", "position 1")),
    "token_blank": (data_bytes(lambda e: e[2]["token"].__setitem__(2, "  ")), ("train.json", "example 2", "position 2")),
    "token_number": (data_bytes(lambda e: e[5]["token"].__setitem__(1, 7)), ("train.json", "example 5", "position 1")),
    "token_null": (data_bytes(lambda e: e[5]["token"].__setitem__(1, None)), ("train.json", "example 5", "position 1")),
    "pos_short": (data_bytes(lambda e: e[3]["stanford_pos"].pop()), ("train.json", "example 3", "stanford_pos")),
    "ner_long": (data_bytes(lambda e: e[3]["stanford_ner"].append("O")), ("train.json", "example 3", "stanford_ner")),
    "pos_number": (data_bytes(lambda e: e[6]["stanford_pos"].__setitem__(0, 1)), ("train.json", "example 6", "stanford_pos")),
    "subj_start_string_once": (data_bytes(set_field(1, subj_start="0")), ("train.json", "example 1", "subj_start", "'0'")),
    "subj_start_string_all": (data_bytes(lambda e: [x.update(subj_start="0") for x in e]),
                              ("train.json", "example 0", "subj_start")),
    "obj_start_float": (data_bytes(set_field(2, obj_start=5.0)), ("train.json", "example 2", "obj_start")),
    "subj_end_bool": (data_bytes(set_field(2, subj_end=True)), ("train.json", "example 2", "subj_end")),
    "subj_start_null": (data_bytes(set_field(4, subj_start=None)), ("train.json", "example 4", "subj_start")),
    "subj_start_negative": (data_bytes(set_field(1, subj_start=-1)), ("train.json", "example 1", "subj_start=-1")),
    "subj_end_before_start": (data_bytes(set_field(1, subj_start=2, subj_end=1)), ("train.json", "example 1", "subj_end=1")),
    "obj_end_past_sentence": (data_bytes(set_field(0, obj_end=99)), ("train.json", "example 0", "obj_end=99")),
    "obj_start_list": (data_bytes(set_field(0, obj_start=[1])), ("train.json", "example 0", "obj_start")),
    "relation_number": (data_bytes(set_field(2, relation=3)), ("train.json", "example 2", "relation")),
    "relation_empty": (data_bytes(set_field(2, relation="")), ("train.json", "example 2", "relation")),
    "relation_blank": (data_bytes(set_field(2, relation="  ")), ("train.json", "example 2", "relation")),
    "subj_type_blank": (data_bytes(set_field(3, subj_type=" ")), ("train.json", "example 3", "subj_type")),
    "obj_type_empty": (data_bytes(set_field(3, obj_type="")), ("train.json", "example 3", "obj_type")),
    "obj_type_number": (data_bytes(set_field(3, obj_type=1)), ("train.json", "example 3", "obj_type")),
    "id_number": (data_bytes(set_field(5, id=5)), ("train.json", "example 5", "'id'")),
    "id_blank": (data_bytes(set_field(5, id=" ")), ("train.json", "example 5", "'id'")),
    "id_list": (data_bytes(set_field(5, id=["a"])), ("train.json", "example 5", "'id'")),
    "duplicate_id": (data_bytes(set_field(7, id="ex2")), ("train.json", "example 7", "'ex2'", "repeats")),
    "lemma_short": (data_bytes(set_field(1, lemma=["a"])), ("train.json", "example 1", "lemma")),
    "lemma_string": (data_bytes(set_field(1, lemma="a b c")), ("train.json", "example 1", "lemma")),
    "object_not_list": (json.dumps({"examples": corpus(2)}).encode(),
                        ("train.json", "holds a JSON object (keys 'examples')", "must hold a JSON list")),
    "typo_relation": (data_bytes(set_field(1, relation="per:titel")), ("train.json", "per:titel", "per:title")),
    "case_relation": (data_bytes(set_field(1, relation="Per:Title")), ("train.json", "Per:Title", "per:title")),
    "typo_relation_2": (data_bytes(set_field(1, relation="org:founded_bye")), ("train.json", "org:founded_bye")),
}

# ---- other bad files, by name ----------------------------------------------------------------------------
GLOVE_ROW = " ".join(["0.5"] * 24)
FILES: dict[str, bytes] = {
    "syntax.yaml": b"model:\n  lr: [0.1\n",
    "duplicate.yaml": b"model:\n  lr: 0.1\n  lr: 0.2\n",
    "latin1.yaml": "model:\n  lr: 0.1  # caf\u00e9\n".encode("latin-1"),
    "list.yaml": b"- fit\n- test\n",
    "tabs.yaml": b"model:\n\tlr: 0.1\n",
    "unknown_key.yaml": b"model:\n  learning_rate: 0.1\n",
    "wrong_type.yaml": b"model:\n  lr: fast\n",
    "bad_heads.yaml": b"model:\n  network:\n    num_heads: 0\n",
    "glove_empty.txt": b"",
    "glove_header.txt": f"2 24\nw1 {GLOVE_ROW}\nw2 {GLOVE_ROW}\n".encode(),
    "glove_bad_header.txt": f"2 50\nw1 {GLOVE_ROW}\n".encode(),
    "glove_dim3.txt": b"w1 0.1 0.2 0.3\n",
    "glove_text_value.txt": f"w1 {' '.join(['0.5'] * 23)} x\n".encode(),
    "glove_inf.txt": f"w1 {' '.join(['0.5'] * 23)} inf\n".encode(),
    "glove_blank_line.txt": f"w1 {GLOVE_ROW}\n\nw2 {GLOVE_ROW}\n".encode(),
    "glove_low_coverage.txt": f"w1 {GLOVE_ROW}\n".encode(),
    "glove_broken.gz": b"\x1f\x8b\x08\x00garbage",
    "glove_broken.zip": b"PK\x03\x04garbage",
    "labels_not_json.json": b"no_relation, per:title",
    "labels_object.json": b'{"no_relation": 0}',
    "labels_repeated.json": b'["no_relation", "per:title", "per:title"]',
    "labels_empty.json": b"[]",
    "gold.jsonl": b'{"id": "a", "relation": "per:title"}\n{"id": "b", "relation": "no_relation"}\n',
    "pred_typo.jsonl": b'{"id": "a", "relation": "per:titel"}\n{"id": "b", "relation": "no_relation"}\n',
    "pred_missing_id.jsonl": b'{"id": "a", "relation": "per:title"}\n',
    "pred_extra_id.jsonl": b'{"id": "a", "relation": "per:title"}\n{"id": "b", "relation": "no_relation"}\n'
                           b'{"id": "c", "relation": "no_relation"}\n',
    "pred_duplicate_id.jsonl": b'{"id": "a", "relation": "per:title"}\n{"id": "a", "relation": "no_relation"}\n',
    "pred_blank_relation.jsonl": b'{"id": "a", "relation": " "}\n{"id": "b", "relation": "no_relation"}\n',
    "pred_no_relation_key.jsonl": b'{"id": "a", "label": "per:title"}\n{"id": "b", "relation": "no_relation"}\n',
    "pred_broken.jsonl": b'{"id": "a", "relation": "per:title"}\n{"id": "b", \n',
    "pred_latin1.txt": "per:title\nno_relation caf\u00e9\n".encode("latin-1"),
    "pred_deep.json": b"[" * 50_000 + b"]" * 50_000,
    "pred_empty.txt": b"\n",
    "pred_three.txt": b"per:title\nno_relation\nno_relation\n",
    "pred_two_columns.txt": b"per:title 0.9\nno_relation 0.1\n",
    "pred_mixed_ids.jsonl": b'{"id": "a", "relation": "per:title"}\n{"relation": "no_relation"}\n',
    "patch_tacrev.json": b'[{"id": "ex101", "relation": "no_relation"}]',
    "patch_retacred.json": b'{"ex101": "per:identity"}',
    "patch_duplicate_key.json": b'{"ex101": "no_relation", "ex101": "per:title"}',
    "patch_not_json.json": b"ex101 no_relation",
    "patch_latin1.json": '{"ex101": "caf\u00e9"}'.encode("latin-1"),
    "patch_deep.json": b"[" * 50_000 + b"]" * 50_000,
    "patch_unknown_label.json": b'[{"id": "ex101", "relation": "per:titel"}]',
    "patch_unknown_id.json": b'[{"id": "nobody", "relation": "per:title"}]',
    "patch_repeated_id.json": b'[{"id": "ex101", "relation": "per:title"}, {"id": "ex101", "relation": "no_relation"}]',
    "split_object.json": b'{"id": "ex101"}',
    "sentences_latin1.txt": "<subj>Jos\u00e9</subj> founded <obj>Acme</obj> .\n".encode("latin-1"),
    "plain.txt": b"Maria Lopez works for Acme Holdings in Boston.\n",
    "dup_test.json": json.dumps(corpus(3) + [make_example(0)]).encode(),
    "test_typo.json": data_bytes(set_field(1, relation="per:titel")),
    "vocab_not_json.json": b"{words",
    "vocab_wrong.json": b'{"words": []}',
    "threshold_not_json.json": b"0.5 maybe",
}

SEMEVAL_GOOD = ('1\t"The <e1>author</e1> wrote a <e2>book</e2> ."\nProduct-Producer(e2,e1)\nComment:\n\n'
                '2\t"The <e1>wind</e1> caused <e2>damage</e2> ."\nCause-Effect(e1,e2)\nComment:\n\n')
SEMEVAL: dict[str, dict[str, bytes]] = {
    "latin1": {"TRAIN_FILE.TXT": SEMEVAL_GOOD.replace("author", "aut\u00f6r").encode("latin-1"),
               "TEST_FILE_FULL.TXT": SEMEVAL_GOOD.encode()},
    "no_test": {"TRAIN_FILE.TXT": SEMEVAL_GOOD.encode()},
    "bad_line": {"TRAIN_FILE.TXT": b"1 The author wrote a book\nOther\n\n", "TEST_FILE_FULL.TXT": SEMEVAL_GOOD.encode()},
    "bad_label": {"TRAIN_FILE.TXT": SEMEVAL_GOOD.replace("Cause-Effect(e1,e2)", "Cause-Effekt(e1,e2)").encode(),
                  "TEST_FILE_FULL.TXT": SEMEVAL_GOOD.encode()},
    "nested": {"TRAIN_FILE.TXT": SEMEVAL_GOOD.replace("<e1>wind</e1>", "<e1>wi<e2>nd</e1>").encode(),
               "TEST_FILE_FULL.TXT": SEMEVAL_GOOD.encode()},
    "no_object": {"TRAIN_FILE.TXT": SEMEVAL_GOOD.replace("<e2>book</e2>", "book").encode(),
                  "TEST_FILE_FULL.TXT": SEMEVAL_GOOD.encode()},
    "repeated_id": {"TRAIN_FILE.TXT": (SEMEVAL_GOOD + SEMEVAL_GOOD.split("\n\n")[0] + "\n\n").encode(),
                    "TEST_FILE_FULL.TXT": SEMEVAL_GOOD.encode()},
    "empty": {"TRAIN_FILE.TXT": b"", "TEST_FILE_FULL.TXT": SEMEVAL_GOOD.encode()},
    "good": {"TRAIN_FILE.TXT": SEMEVAL_GOOD.encode(), "TEST_FILE_FULL.TXT": SEMEVAL_GOOD.encode()},
}


class Workspace:
    """Paths of a case: good data, bad files and data folders written when first asked for, fresh run folders."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.good = root / "good"
        self.good.mkdir(parents=True, exist_ok=True)
        for name, examples in (("train", corpus(12)), ("dev", corpus(4, 100)), ("test", corpus(4, 200))):
            (self.good / f"{name}.json").write_text(json.dumps(examples), encoding="utf-8")
        self.checkpoint: Path | None = None  # a trained checkpoint, set by the module fixture
        self.other_labels = self._folder("other_labels", {
            f"{s}.json": json.dumps([dict(e, relation="rel_a" if e["relation"] != "no_relation" else "no_relation")
                                     for e in corpus(8)]).encode() for s in ("train", "dev", "test")})

    def _folder(self, name: str, files: dict[str, bytes]) -> Path:
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        for file, content in files.items():
            (folder / file).write_bytes(content)
        return folder

    def fill(self, token: str, case: str) -> str:
        def one(match: re.Match) -> str:
            kind, _, name = match.group(1).partition(":")
            if kind == "good":
                return str(self.good)
            if kind == "run":
                return str(self.root / "runs" / case)
            if kind == "tmp":
                return str(self.root)
            if kind == "ckpt":
                assert self.checkpoint is not None
                return str(self.checkpoint)
            if kind == "other":
                return str(self.other_labels)
            if kind == "file":
                path = self.root / "files" / name
                path.parent.mkdir(exist_ok=True)
                path.write_bytes(FILES[name])
                return str(path)
            if kind == "data":
                files = {f"{s}.json": (self.good / f"{s}.json").read_bytes() for s in ("dev", "test")}
                return str(self._folder(f"data_{name}", {**files, "train.json": DATA[name][0]}))
            if kind == "semeval":
                return str(self._folder(f"semeval_{name}", SEMEVAL[name]))
            if kind == "badckpt":
                return str(BAD_CHECKPOINTS[name](self.root / "checkpoints" / f"{name}.ckpt", self))
            raise KeyError(kind)

        return re.sub(r"\{([a-z]+(?::[^}]*)?)\}", one, token)


def _write_ckpt(path: Path, obj: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(obj, path)
    return path


def _truncated(path: Path, ws: Workspace) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert ws.checkpoint is not None
    path.write_bytes(ws.checkpoint.read_bytes()[:2000])
    return path


def _raw(content: bytes) -> Callable[[Path, Workspace], Path]:
    def write(path: Path, ws: Workspace) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        return path

    return write


class RunsCode:
    """Unpickling this calls ``open(path, "w")``: a stand-in for a checkpoint that runs a stranger's code."""

    def __init__(self, target: Path) -> None:
        self.target = str(target)

    def __reduce__(self) -> tuple:
        return (open, (self.target, "w"))


BAD_CHECKPOINTS: dict[str, Callable[[Path, Workspace], Path]] = {
    "empty": _raw(b""),
    "text": _raw(b"this is not a checkpoint\n"),
    "pickle_bytes": _raw(pickle.dumps({"state_dict": {}})),
    "truncated": _truncated,
    "a_list": lambda p, ws: _write_ckpt(p, [1, 2, 3]),
    "no_state_dict": lambda p, ws: _write_ckpt(p, {"epoch": 3}),
    "no_vocab": lambda p, ws: _write_ckpt(p, {"state_dict": {}, "epoch": 0}),
    "runs_code": lambda p, ws: _write_ckpt(p, {"state_dict": {}, "payload": RunsCode(p.with_suffix(".pwned"))}),
}


# Lightning commands build their whole parser (about a second per case): most run in `make test-slow`, these few in
# the quick `make test`
FAST = {"num_heads_0", "resume_typo", "yaml_syntax", "yaml_duplicate_key", "glove_empty", "data_subj_start_string_once",
        "data_duplicate_id", "data_typo_relation", "test_ckpt_runs_code", "fit_ckpt_other_labels", "run_dir_is_file"}


def case(case_id: str, *argv: str, expect: tuple[str, ...] | str = ()) -> pytest.param:
    slow = argv[0] in ("fit", "validate", "test", "predict") and case_id not in FAST
    return pytest.param(argv, (expect,) if isinstance(expect, str) else expect, id=case_id,
                        marks=(pytest.mark.slow,) if slow else ())


def fit(*extra: str) -> tuple[str, ...]:
    return (*FIT, *extra)


OPTION_CASES = [
    case("num_heads_0", *fit("--model.network.num_heads", "0"), expect="--model.network.num_heads 0"),
    case("num_heads_negative", *fit("--model.network.num_heads", "-2"), expect="--model.network.num_heads -2"),
    case("num_heads_not_dividing", *fit("--model.network.num_heads", "5"), expect=("--model.network.num_heads 5", "84")),
    case("num_heads_text", *fit("--model.network.num_heads", "three"), expect=("--model.network.num_heads", "'three'")),
    case("word_dim_0", *fit("--model.network.word_dim", "0"), expect="--model.network.word_dim 0"),
    case("pos_dim_negative", *fit("--model.network.pos_dim", "-1"), expect="--model.network.pos_dim -1"),
    case("ffn_dim_0", *fit("--model.network.ffn_dim", "0"), expect="--model.network.ffn_dim 0"),
    case("attention_dim_0", *fit("--model.network.attention_dim", "0"), expect="--model.network.attention_dim 0"),
    case("position_dim_0", *fit("--model.network.position_dim", "0"), expect="--model.network.position_dim 0"),
    case("max_relative_distance_0", *fit("--model.network.max_relative_distance", "0"),
         expect="--model.network.max_relative_distance 0"),
    case("num_layers_0", *fit("--model.network.num_layers", "0"), expect="--model.network.num_layers 0"),
    case("lstm_hidden_0", *fit("--model.network.lstm_hidden", "0"), expect="--model.network.lstm_hidden 0"),
    case("shaw_clip_0", *fit("--model.network.shaw_clip", "0"), expect="--model.network.shaw_clip 0"),
    case("gaussian_heads_too_many", *fit("--model.network.gaussian_heads", "4"), expect="--model.network.gaussian_heads 4"),
    case("gaussian_heads_negative", *fit("--model.network.gaussian_heads", "-1"), expect="--model.network.gaussian_heads -1"),
    case("dropout_1", *fit("--model.network.dropout", "1.0"), expect="--model.network.dropout 1.0"),
    case("dropout_above_1", *fit("--model.network.dropout", "1.5"), expect="--model.network.dropout 1.5"),
    case("dropout_negative", *fit("--model.network.dropout", "-0.1"), expect="--model.network.dropout -0.1"),
    case("attention_dropout_1", *fit("--model.network.attention_dropout", "1"), expect="--model.network.attention_dropout"),
    case("word_dropout_above_1", *fit("--model.network.word_dropout", "1.5"), expect="--model.network.word_dropout 1.5"),
    case("word_dropout_negative", *fit("--model.network.word_dropout", "-0.5"), expect="--model.network.word_dropout -0.5"),
    case("norm_unknown", *fit("--model.network.norm", "batchy"),
         expect=("--model.network.norm", "'batchy'", "must be one of batch, layer")),
    case("activation_unknown", *fit("--model.network.activation", "gelu"), expect=("--model.network.activation", "'gelu'")),
    case("encoder_unknown", *fit("--model.network.encoder", "gru"), expect="--model.network.encoder"),
    case("optimizer_unknown", *fit("--model.optimizer", "adam"), expect=("--model.optimizer", "'adam'")),
    case("warmup_ratio_above_1", *fit("--model.warmup_ratio", "1.5"), expect="--model.warmup_ratio 1.5"),
    case("attention_bias_unknown", *fit("--model.network.attention_bias", "[alibi]"), expect="--model.network"),
    case("lr_0", *fit("--model.lr", "0"), expect="--model.lr 0"),
    case("lr_negative", *fit("--model.lr", "-0.1"), expect="--model.lr -0.1"),
    case("lr_nan", *fit("--model.lr", "nan"), expect=("--model.lr", "nan")),
    case("lr_inf", *fit("--model.lr", "inf"), expect=("--model.lr", "inf")),
    case("lr_text", *fit("--model.lr", "fast"), expect=("--model.lr", "'fast'", "float")),
    case("momentum_above_1", *fit("--model.momentum", "1.5"), expect="--model.momentum 1.5"),
    case("weight_decay_negative", *fit("--model.weight_decay", "-1"), expect="--model.weight_decay -1"),
    case("decay_start_negative", *fit("--model.decay_start_epoch", "-1"), expect="--model.decay_start_epoch -1"),
    case("decay_factor_0", *fit("--model.decay_factor", "0"), expect="--model.decay_factor 0"),
    case("decay_factor_above_1", *fit("--model.decay_factor", "1.5"), expect="--model.decay_factor 1.5"),
    case("decay_compare_unknown", *fit("--model.decay_compare", "worst"), expect=("--model.decay_compare", "'worst'")),
    case("decay_patience_0", *fit("--model.decay_patience", "0"), expect="--model.decay_patience 0"),
    case("lr_schedule_unknown", *fit("--model.lr_schedule", "exponential"), expect=("--model.lr_schedule", "'exponential'")),
    case("no_relation_weight_negative", *fit("--model.no_relation_weight", "-1"), expect="--model.no_relation_weight -1"),
    case("threshold_missing_file", *fit("--model.no_relation_threshold", "{tmp}/nothere.json"), expect="nothere.json"),
    case("threshold_not_json", *fit("--model.no_relation_threshold", "{file:threshold_not_json.json}"),
         expect="threshold_not_json.json"),
    case("batch_size_0", *fit("--data.batch_size", "0"), expect="--data.batch_size 0"),
    case("batch_size_negative", *fit("--data.batch_size", "-5"), expect="--data.batch_size -5"),
    case("batch_size_text", *fit("--data.batch_size", "many"), expect=("--data.batch_size", "'many'")),
    case("eval_batch_size_0", *fit("--data.eval_batch_size", "0"), expect="--data.eval_batch_size 0"),
    case("eval_batch_size_negative", *fit("--data.eval_batch_size", "-1"), expect="--data.eval_batch_size -1"),
    case("num_workers_negative", *fit("--data.num_workers", "-1"), expect="--data.num_workers -1"),
    case("min_count_0", *fit("--data.min_count", "0"), expect="--data.min_count 0"),
    case("min_count_negative", *fit("--data.min_count", "-2"), expect="--data.min_count -2"),
    case("min_glove_coverage_above_1", *fit("--data.min_glove_coverage", "1.5"), expect="--data.min_glove_coverage 1.5"),
    case("labels_unknown_name", *fit("--data.labels", "tacrev"), expect=("--data.labels", "'tacrev'")),
    case("labels_empty_list", *fit("--data.labels", "[]"), expect="--data.labels"),
    case("labels_without_no_relation", *fit("--data.labels", "[per:title, org:founded_by]"),
         expect=("--data.labels", "no_relation")),
    case("labels_repeated", *fit("--data.labels", "[no_relation, per:title, per:title]"), expect=("--data.labels", "per:title")),
    case("labels_file_not_json", *fit("--data.labels", "{file:labels_not_json.json}"), expect="labels_not_json.json"),
    case("labels_file_object", *fit("--data.labels", "{file:labels_object.json}"), expect="labels_object.json"),
    case("labels_file_repeated", *fit("--data.labels", "{file:labels_repeated.json}"), expect="labels_repeated.json"),
    case("labels_file_empty", *fit("--data.labels", "{file:labels_empty.json}"), expect="labels_empty.json"),
    case("no_relation_blank", *fit("--data.no_relation", " "), expect="--data.no_relation"),
    case("no_relation_absent", *fit("--data.no_relation", "NA"), expect=("--data.no_relation", "'NA'")),
    case("no_relation_not_in_tacred_labels", *fit("--data.labels", "tacred", "--data.no_relation", "NA"),
         expect=("--data.no_relation", "'NA'")),
    case("strict_not_bool", *fit("--data.strict", "perhaps"), expect=("--data.strict", "'perhaps'")),
    case("data_dir_missing", *fit("--data.data_dir", "{tmp}/nowhere"), expect="nowhere"),
    case("vocab_path_missing", *fit("--data.vocab_path", "{tmp}/vocab.json"), expect="vocab.json"),
    case("vocab_path_not_json", *fit("--data.vocab_path", "{file:vocab_not_json.json}"), expect="vocab_not_json.json"),
    case("vocab_path_wrong", *fit("--data.vocab_path", "{file:vocab_wrong.json}"), expect="vocab_wrong.json"),
    case("max_epochs_negative", *fit("--trainer.max_epochs", "-3"), expect="--trainer.max_epochs -3"),
    case("max_epochs_0", *fit("--trainer.max_epochs", "0"), expect="--trainer.max_epochs 0"),
    case("max_epochs_text", *fit("--trainer.max_epochs", "ten"), expect=("--trainer.max_epochs", "'ten'")),
    case("min_epochs_negative", *fit("--trainer.min_epochs", "-1"), expect="--trainer.min_epochs -1"),
    case("gradient_clip_negative", *fit("--trainer.gradient_clip_val", "-1"), expect="--trainer.gradient_clip_val -1"),
    case("accumulate_0", *fit("--trainer.accumulate_grad_batches", "0"), expect="--trainer.accumulate_grad_batches 0"),
    case("val_every_0", *fit("--trainer.check_val_every_n_epoch", "0"), expect="--trainer.check_val_every_n_epoch 0"),
    case("log_every_0", *fit("--trainer.log_every_n_steps", "0"), expect="--trainer.log_every_n_steps 0"),
    case("num_threads_0", *fit("--num_threads", "0"), expect="--num_threads 0"),
    case("num_threads_negative", *fit("--num_threads", "-1"), expect="--num_threads -1"),
    case("resume_typo", *fit("--resume", "atuo"), expect=("--resume", "'atuo'", "'never'")),
    case("resume_sometimes", *fit("--resume", "sometimes"), expect=("--resume", "'sometimes'")),
    case("resume_empty", *fit("--resume", ""), expect="--resume"),
    case("unknown_option", *fit("--model.learning_rate", "0.1"), expect="model.learning_rate"),
    case("run_dir_is_file", *fit("--run_dir", "{file:gold.jsonl}"), expect=("--run_dir", "gold.jsonl", "not a folder")),
    case("run_dir_under_file", *fit("--run_dir", "{file:gold.jsonl}/run"), expect=("--run_dir", "gold.jsonl")),
    # the word vectors' size is the network's word_dim (a linked option): the data module's copy cannot be set
    case("embedding_dim_is_linked", *fit("--data.glove_path", "{file:glove_header.txt}", "--data.embedding_dim", "30"),
         expect=("data.embedding_dim", "model.network.word_dim")),
]

CONFIG_CASES = [
    case("yaml_syntax", *fit("--config", "{file:syntax.yaml}"), expect=("--config", "syntax.yaml", "line 3")),
    case("yaml_duplicate_key", *fit("--config", "{file:duplicate.yaml}"), expect=("duplicate.yaml", "'lr'", "twice")),
    case("yaml_not_utf8", *fit("--config", "{file:latin1.yaml}"), expect=("latin1.yaml", "not UTF-8", "line 2")),
    case("yaml_list", *fit("--config", "{file:list.yaml}"), expect=("list.yaml", "mapping")),
    case("yaml_tabs", *fit("--config", "{file:tabs.yaml}"), expect=("tabs.yaml", "line 2")),
    case("yaml_missing", *fit("--config", "{tmp}/nothere.yaml"), expect=("--config", "nothere.yaml", "not found")),
    case("yaml_folder", *fit("--config", "{tmp}"), expect=("--config", "folder")),
    case("yaml_unknown_key", *fit("--config", "{file:unknown_key.yaml}"), expect="learning_rate"),
    case("yaml_wrong_type", *fit("--config", "{file:wrong_type.yaml}"), expect=("--model.lr", "'fast'")),
    case("yaml_bad_heads", *fit("--config", "{file:bad_heads.yaml}"), expect="--model.network.num_heads 0"),
]

GLOVE_CASES = [
    case("glove_missing", *fit("--data.glove_path", "{tmp}/glove.840B.300d.zip"), expect="glove.840B.300d.zip"),
    case("glove_empty", *fit("--data.glove_path", "{file:glove_empty.txt}"), expect=("glove_empty.txt", "0.0%", "min_glove_coverage")),
    case("glove_low_coverage", *fit("--data.glove_path", "{file:glove_low_coverage.txt}"),
         expect=("glove_low_coverage.txt", "min_glove_coverage")),
    case("glove_bad_header", *fit("--data.glove_path", "{file:glove_bad_header.txt}"), expect=("glove_bad_header.txt", "line 1", "50")),
    case("glove_wrong_dim", *fit("--data.glove_path", "{file:glove_dim3.txt}"), expect=("glove_dim3.txt", "line 1", "expected 24")),
    case("glove_text_value", *fit("--data.glove_path", "{file:glove_text_value.txt}"), expect=("glove_text_value.txt", "'x'")),
    case("glove_inf", *fit("--data.glove_path", "{file:glove_inf.txt}"), expect=("glove_inf.txt", "'inf'")),
    case("glove_blank_line", *fit("--data.glove_path", "{file:glove_blank_line.txt}"), expect=("glove_blank_line.txt", "line 2")),
    case("glove_broken_gz", *fit("--data.glove_path", "{file:glove_broken.gz}"), expect="glove_broken.gz"),
    case("glove_broken_zip", *fit("--data.glove_path", "{file:glove_broken.zip}"), expect="glove_broken.zip"),
    case("glove_is_folder", *fit("--data.glove_path", "{tmp}"), expect="GloVe"),
]

DATA_CASES = [case(f"data_{name}", *fit("--data.data_dir", f"{{data:{name}}}"), expect=fragments)
              for name, (_, fragments) in DATA.items()]

CHECKPOINT_CASES = [
    case("test_ckpt_missing", "test", "--ckpt_path", "{tmp}/nothere.ckpt", expect="nothere.ckpt"),
    case("test_ckpt_folder", "test", "--ckpt_path", "{tmp}", expect="folder"),
    *[case(f"test_ckpt_{name}", "test", "--ckpt_path", f"{{badckpt:{name}}}", expect=f"{name}.ckpt")
      for name in BAD_CHECKPOINTS],
    case("predict_ckpt_runs_code", "predict", "--ckpt_path", "{badckpt:runs_code}", expect=("runs_code.ckpt", "refused")),
    case("validate_ckpt_truncated", "validate", "--ckpt_path", "{badckpt:truncated}", expect="truncated.ckpt"),
    case("fit_ckpt_missing", *fit("--ckpt_path", "{tmp}/nothere.ckpt"), expect="nothere.ckpt"),
    case("fit_ckpt_runs_code", *fit("--ckpt_path", "{badckpt:runs_code}"), expect=("runs_code.ckpt", "refused")),
    case("fit_ckpt_other_labels", *fit("--data.data_dir", "{other}", "--ckpt_path", "{ckpt}"), expect=("labels", ".ckpt")),
    case("test_duplicate_ids", "test", "--ckpt_path", "{ckpt}", "--data.test_file", "{file:dup_test.json}",
         expect=("dup_test.json", "repeats")),
    case("test_unknown_label", "test", "--ckpt_path", "{ckpt}", "--data.test_file", "{file:test_typo.json}",
         expect=("test_typo.json", "per:titel")),
    case("test_data_not_utf8", "test", "--ckpt_path", "{ckpt}", "--data.test_file", "{file:pred_latin1.txt}",
         expect=("pred_latin1.txt", "not UTF-8")),
    case("predict_file_missing", "predict", "--ckpt_path", "{ckpt}", "--data.predict_file", "{tmp}/new.json", expect="new.json"),
    case("test_bad_threshold", "test", "--ckpt_path", "{ckpt}", "--model.no_relation_threshold", "2e400",
         expect="--model.no_relation_threshold"),
    case("predict_sentences_not_utf8", "predict", "--ckpt_path", "{ckpt}", "--sentences", "{file:sentences_latin1.txt}",
         expect=("sentences_latin1.txt", "not UTF-8")),
    case("threshold_ckpt_missing", "threshold", "tune", "--ckpt_path", "{tmp}/nothere.ckpt", expect="nothere.ckpt"),
    case("plot_ckpt_runs_code", "plot", "confusion", "--ckpt_path", "{badckpt:runs_code}", expect="runs_code.ckpt"),
]

SCORE_CASES = [
    case("score_label_outside_set", "score", "{file:gold.jsonl}", "{file:pred_typo.jsonl}",
         expect=("pred_typo.jsonl", "'per:titel'", "label set")),
    case("score_labels_file_excludes", "score", "{file:gold.jsonl}", "{file:gold.jsonl}", "--labels", "{file:labels_repeated.json}",
         expect="labels_repeated.json"),
    case("score_missing_id", "score", "{file:gold.jsonl}", "{file:pred_missing_id.jsonl}", expect=("pred_missing_id.jsonl", "missing")),
    case("score_extra_id", "score", "{file:gold.jsonl}", "{file:pred_extra_id.jsonl}", expect=("pred_extra_id.jsonl", "extra")),
    case("score_duplicate_id", "score", "{file:gold.jsonl}", "{file:pred_duplicate_id.jsonl}",
         expect=("pred_duplicate_id.jsonl", "repeats")),
    case("score_blank_relation", "score", "{file:gold.jsonl}", "{file:pred_blank_relation.jsonl}",
         expect=("pred_blank_relation.jsonl", "line 1")),
    case("score_no_relation_key", "score", "{file:gold.jsonl}", "{file:pred_no_relation_key.jsonl}",
         expect=("pred_no_relation_key.jsonl", "line 1")),
    case("score_broken_jsonl", "score", "{file:gold.jsonl}", "{file:pred_broken.jsonl}", expect=("pred_broken.jsonl", "line 2")),
    case("score_not_utf8", "score", "{file:gold.jsonl}", "{file:pred_latin1.txt}", expect=("pred_latin1.txt", "not UTF-8")),
    case("score_deep", "score", "{file:gold.jsonl}", "{file:pred_deep.json}", expect=("pred_deep.json", "nested")),
    case("score_empty", "score", "{file:gold.jsonl}", "{file:pred_empty.txt}", expect=("pred_empty.txt", "no labels")),
    case("score_length", "score", "{file:pred_three.txt}", "{file:pred_two_columns.txt}", expect="pred_two_columns.txt"),
    case("score_count", "score", "{file:pred_three.txt}", "{file:gold.jsonl}", expect=("gold.jsonl", "pred_three.txt")),
    case("score_mixed_ids", "score", "{file:gold.jsonl}", "{file:pred_mixed_ids.jsonl}", expect=("pred_mixed_ids.jsonl", "line 2")),
    case("score_missing_file", "score", "{file:gold.jsonl}", "{tmp}/pred.jsonl", expect="pred.jsonl"),
    case("score_folder", "score", "{file:gold.jsonl}", "{tmp}", expect="{tmp}"),
    case("score_gold_not_utf8", "score", "{file:pred_latin1.txt}", "{file:gold.jsonl}", expect="pred_latin1.txt"),
]

PATCH_CASES = [
    case("patch_mode_contradicts_list", "patch", "{good}/dev.json", "{file:patch_tacrev.json}", "{tmp}/out.json",
         "--mode", "retacred", expect=("--mode retacred", "patch_tacrev.json")),
    case("patch_mode_contradicts_object", "patch", "{good}/dev.json", "{file:patch_retacred.json}", "{tmp}/out.json",
         "--mode", "tacrev", expect=("--mode tacrev", "patch_retacred.json")),
    case("patch_duplicate_key", "patch", "{good}/dev.json", "{file:patch_duplicate_key.json}", "{tmp}/out.json",
         expect=("patch_duplicate_key.json", "'ex101'")),
    case("patch_not_json", "patch", "{good}/dev.json", "{file:patch_not_json.json}", "{tmp}/out.json", expect="patch_not_json.json"),
    case("patch_not_utf8", "patch", "{good}/dev.json", "{file:patch_latin1.json}", "{tmp}/out.json",
         expect=("patch_latin1.json", "UTF-8")),
    case("patch_deep", "patch", "{good}/dev.json", "{file:patch_deep.json}", "{tmp}/out.json", expect=("patch_deep.json", "nested")),
    case("patch_unknown_label", "patch", "{good}/dev.json", "{file:patch_unknown_label.json}", "{tmp}/out.json",
         expect="per:titel"),
    case("patch_unknown_id", "patch", "{good}/dev.json", "{file:patch_unknown_id.json}", "{tmp}/out.json", expect="nobody"),
    case("patch_repeated_id", "patch", "{good}/dev.json", "{file:patch_repeated_id.json}", "{tmp}/out.json", expect="ex101"),
    case("patch_split_object", "patch", "{file:split_object.json}", "{file:patch_tacrev.json}", "{tmp}/out.json",
         expect="split_object.json"),
    case("patch_split_missing", "patch", "{tmp}/dev.json", "{file:patch_tacrev.json}", "{tmp}/out.json", expect="dev.json"),
    case("patch_out_is_data", "patch", "{good}/dev.json", "{file:patch_tacrev.json}", "{good}/dev.json", expect="must differ"),
]

TOOL_CASES = [
    case("ensemble_one_checkpoint", "ensemble", "--checkpoints", "{ckpt}", "--out", "{tmp}/ens", expect=("--checkpoints", "at least 2")),
    case("ensemble_same_twice", "ensemble", "--checkpoints", "{ckpt}", "{ckpt}", "--out", "{tmp}/ens", expect=("twice",)),
    case("ensemble_device_quantum", "ensemble", "--checkpoints", "{ckpt}", "{badckpt:truncated}", "--device", "quantum",
         "--out", "{tmp}/ens", expect=("--device", "'quantum'")),
    case("ensemble_device_cuda_absent", "ensemble", "--checkpoints", "{ckpt}", "{badckpt:truncated}", "--device", "cuda:7",
         "--out", "{tmp}/ens", expect=("--device", "cuda:7")),
    case("ensemble_one_seed", "ensemble", "--config", DEMO, "--seeds", "1", "--out", "{tmp}/ens", expect="--seeds 1"),
    case("ensemble_repeated_seed", "ensemble", "--config", DEMO, "--seeds", "1", "1", "--out", "{tmp}/ens", expect="--seeds 1 1"),
    case("ensemble_batch_size_0", "ensemble", "--checkpoints", "{ckpt}", "{badckpt:truncated}", "--batch_size", "0",
         "--out", "{tmp}/ens", expect="--batch_size 0"),
    case("ensemble_truncated_member", "ensemble", "--checkpoints", "{ckpt}", "{badckpt:truncated}", "--out", "{tmp}/ens",
         expect="truncated.ckpt"),
    case("ensemble_device_unknown", "ensemble", "--checkpoints", "{ckpt}", "{badckpt:truncated}", "--device", "tpu",
         "--out", "{tmp}/ens", expect=("--device 'tpu': expected one of auto",)),
    case("extract_missing", "extract", "{tmp}/texts.txt", "--ckpt_path", "{ckpt}", expect="texts.txt"),
    case("extract_output_is_a_file", "extract", "{file:plain.txt}", "--ckpt_path", "{ckpt}", "--output",
         "{file:plain.txt}", expect=("plain.txt: not a folder",)),
    case("extract_workers_0", "extract", "{file:plain.txt}", "--ckpt_path", "{ckpt}", "--workers", "0",
         expect="--workers must be at least 1"),
    case("extract_max_pairs_0", "extract", "{file:plain.txt}", "--ckpt_path", "{ckpt}", "--max_pairs", "0",
         expect="--max_pairs must be at least 1"),
    case("extract_not_a_checkpoint", "extract", "{file:plain.txt}", "--ckpt_path", "{file:plain.txt}",
         expect=("plain.txt: not a tacred checkpoint",)),
    case("extract_device_absent", "extract", "{file:plain.txt}", "--ckpt_path", "{ckpt}", "--device", "cuda:9",
         expect=("device 'cuda:9'",)),
    case("extract_address_without_ray", "extract", "{file:plain.txt}", "--ckpt_path", "{ckpt}", "--address",
         "127.0.0.1:6379", expect=("--address", "--engine ray")),
    case("kb_missing", "kb", "{tmp}/mentions.jsonl", "--db", "{tmp}/kb.duckdb", expect="mentions.jsonl"),
    case("kb_not_a_mention_file", "kb", "{file:plain.txt}", "--db", "{tmp}/kb.duckdb",
         expect=("plain.txt", "not a mention file")),
    case("kb_not_mentions", "kb", "{file:pred_broken.jsonl}", "--db", "{tmp}/kb.duckdb",
         expect=("pred_broken.jsonl", "line 1", "doc_id")),
    case("kb_query_without_database", "kb", "--db", "{tmp}/nothere.duckdb", "--query", "SELECT 1",
         expect="nothere.duckdb"),
    case("annotate_not_utf8", "annotate", "{file:sentences_latin1.txt}", expect=("sentences_latin1.txt", "not UTF-8", "line 1")),
    case("annotate_missing", "annotate", "{tmp}/sentences.txt", expect="sentences.txt"),
    case("annotate_folder", "annotate", "{tmp}", expect="{tmp}"),
    *[case(f"convert_semeval_{name}", "convert", "semeval2010", f"{{semeval:{name}}}", "{tmp}/semeval_out", "--dev_size", "1",
           expect=fragment)
      for name, fragment in (("latin1", ("TRAIN_FILE.TXT", "not UTF-8", "line 1")), ("no_test", "TEST_FILE_FULL.TXT"),
                             ("bad_line", ("TRAIN_FILE.TXT", "line 1")), ("bad_label", ("TRAIN_FILE.TXT", "Cause-Effekt")),
                             ("nested", ("TRAIN_FILE.TXT", "id 2", "nested")), ("no_object", ("TRAIN_FILE.TXT", "id 1")),
                             ("repeated_id", ("TRAIN_FILE.TXT", "id 1")), ("empty", ("TRAIN_FILE.TXT", "no examples")))],
    case("convert_semeval_missing_folder", "convert", "semeval2010", "{tmp}/semeval_nowhere", "{tmp}/semeval_out",
         expect="semeval_nowhere"),
    case("convert_semeval_dev_size", "convert", "semeval2010", "{semeval:good}", "{tmp}/semeval_out", "--dev_size", "5",
         expect="dev size"),
    case("convert_semeval_batch_size", "convert", "semeval2010", "{semeval:good}", "{tmp}/semeval_out", "--batch_size", "0",
         expect="--batch_size"),
    case("unknown_command", "trian", expect="trian"),
]

ALL_CASES = [*OPTION_CASES, *CONFIG_CASES, *GLOVE_CASES, *DATA_CASES, *CHECKPOINT_CASES, *SCORE_CASES, *PATCH_CASES,
             *TOOL_CASES]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """The good corpus and a checkpoint trained on it for one epoch (in-process)."""
    ws = Workspace(tmp_path_factory.mktemp("bad_inputs"))
    run = ws.root / "trained"
    argv = [ws.fill(a, "trained") for a in FIT]
    argv[argv.index(str(ws.root / "runs" / "trained"))] = str(run)
    run_in_process(*argv)
    ws.checkpoint = run / "checkpoints" / "last.ckpt"
    return ws


@pytest.fixture(autouse=True)
def _keep_threads(keep_torch_threads):
    """Every test here may run `tacred fit` in this process."""


def test_the_table_covers_at_least_150_cases():
    assert len(ALL_CASES) >= 150
    assert len({c.id for c in ALL_CASES}) == len(ALL_CASES)


@pytest.mark.parametrize(("argv", "expect"), ALL_CASES)
def test_bad_input_is_one_line_and_exit_status_2(request, workspace: Workspace, capsys, argv, expect):
    name = request.node.callspec.id
    args = [workspace.fill(a, name) for a in argv]
    run_dir = workspace.root / "runs" / name
    status = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "usage:" not in err, err  # no usage dump for a bad value
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert status == 2, err
    assert len(errors) == 1, err
    command = args[0] if args[0] not in ("threshold", "plot") else f"{args[0]} {args[1]}"
    prefix = "tacred: error: " if name == "unknown_command" else f"tacred {command}: error: "
    assert errors[0].startswith(prefix), errors[0]
    for fragment in expect:
        assert workspace.fill(fragment, name) in errors[0], errors[0]
    assert not run_dir.exists(), f"a failed run left {sorted(p.name for p in run_dir.rglob('*'))}"


def test_a_checkpoint_that_would_run_code_is_refused(tmp_path, capsys):
    marker = tmp_path / "created_by_unpickling"
    path = tmp_path / "stranger.ckpt"
    torch.save({"state_dict": {}, "payload": RunsCode(marker)}, path)
    # the file really runs code when unpickled without restrictions ...
    control = tmp_path / "control.ckpt"
    torch.save({"state_dict": {}, "payload": RunsCode(tmp_path / "control_marker")}, control)
    torch.load(control, weights_only=False)
    assert (tmp_path / "control_marker").exists()
    # ... and tacred refuses it without running it
    from tacred.checkpoints import CheckpointError, read_checkpoint

    with pytest.raises(CheckpointError, match="refused"):
        read_checkpoint(path)
    assert main(["test", "--ckpt_path", str(path)]) == 2
    assert "refused" in capsys.readouterr().err
    assert not marker.exists()


def test_a_checkpoint_of_an_earlier_version_holding_its_network_config_object_loads(workspace: Workspace, tmp_path):
    """Earlier tacred versions pickled the NetworkConfig object among the hyperparameters: read by value, as the
    dict of its fields that today's checkpoints hold, and the model rebuilds from it."""
    from dataclasses import asdict

    from tacred.checkpoints import read_checkpoint
    from tacred.models.config import NetworkConfig
    from tacred.training.module import RelationExtractor

    ckpt = torch.load(workspace.checkpoint, weights_only=False)
    network = NetworkConfig(**ckpt["hyper_parameters"]["network"])
    ckpt["hyper_parameters"]["network"] = network
    old = tmp_path / "earlier.ckpt"
    torch.save(ckpt, old)
    assert read_checkpoint(old)["hyper_parameters"]["network"] == asdict(network)
    assert RelationExtractor.from_checkpoint(old).network_config == network


def test_a_real_checkpoint_loads_with_weights_only(workspace: Workspace):
    from tacred.checkpoints import read_checkpoint
    from tacred.training.module import RelationExtractor

    ckpt = read_checkpoint(workspace.checkpoint)
    assert ckpt["tacred_vocab"]["labels"][0] == "no_relation"
    model = RelationExtractor.from_checkpoint(workspace.checkpoint)
    assert len(model.vocab.labels) == 42


def test_debug_shows_the_traceback(workspace: Workspace, monkeypatch):
    args = [workspace.fill(a, "debug") for a in fit("--model.lr", "-1")]
    from tacred.errors import ConfigError

    with pytest.raises(ConfigError, match="--model.lr -1"):
        main([*args, "--debug"])
    monkeypatch.setenv("TACRED_DEBUG", "1")
    with pytest.raises(ConfigError):
        main(args)


def test_an_internal_error_is_one_line_with_status_1(monkeypatch, capsys):
    import tacred.commands.score as score_command

    def broken(argv):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(score_command, "main", broken)
    assert main(["score", "a", "b"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (ZeroDivisionError)" in err and "--debug" in err


@pytest.mark.filterwarnings("ignore:The dirpath has changed")  # the run folder is a copy: Lightning says so
def test_resume_never_says_it_starts_over_and_auto_says_where_it_resumes(workspace: Workspace, capsys, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(workspace.checkpoint.parent.parent, run)
    args = [workspace.fill(a, "resume") for a in FIT]
    args[args.index(str(workspace.root / "runs" / "resume"))] = str(run)
    before = (run / "checkpoints" / "last.ckpt").read_bytes()
    assert main(args) == 0  # max_epochs 1 reached: nothing left to train
    err = capsys.readouterr().err
    assert "resuming from" in err and "after 1 finished epoch(s)" in err
    assert (run / "checkpoints" / "last.ckpt").read_bytes() == before
    assert main([*args, "--resume", "never"]) == 0
    err = capsys.readouterr().err
    assert "starting over" in err and "last.ckpt" in err


def test_a_folder_with_checkpoints_but_no_last_ckpt_is_refused(workspace: Workspace, capsys, tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    best = run / "checkpoints" / "best.ckpt"
    best.write_bytes(workspace.checkpoint.read_bytes())
    args = [workspace.fill(a, "refuse") for a in FIT]
    args[args.index(str(workspace.root / "runs" / "refuse"))] = str(run)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "best.ckpt" in err and "--resume never" in err
    assert best.read_bytes() == workspace.checkpoint.read_bytes()
    assert sorted(p.name for p in run.rglob("*")) == ["best.ckpt", "checkpoints"]  # nothing added


def test_a_word2vec_header_line_loads(tmp_path):
    from tacred.data.glove import read_glove_vectors

    path = tmp_path / "vectors.txt"
    path.write_text("2 3\nalice 1 2 3\nacme 4 5 6\n", encoding="utf-8")
    vectors = read_glove_vectors(path, ["alice", "acme"], dim=3)
    assert vectors["acme"].tolist() == [4.0, 5.0, 6.0]


def test_edge_inputs_that_are_fine_still_load(tmp_path):
    from tacred.data.examples import load_examples

    long = make_example(0, length=10_000)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps([long, make_example(1)]).encode())
    loaded = load_examples(bom).examples
    assert len(loaded) == 2 and len(loaded[0]) == 10_000
    gz = tmp_path / "plain.jsonl"
    gz.write_text("\n".join(json.dumps(e) for e in corpus(3)) + "\n\n", encoding="utf-8")
    assert [e.id for e in load_examples(gz).examples] == ["ex0", "ex1", "ex2"]


def test_a_bad_metrics_csv_names_the_file_line_and_column_for_every_reader(tmp_path):
    """metrics.csv has one reader (tacred.io.read_epoch_metrics): the ablation's dev F1 and the training curves
    report its errors alike, each in its own error type."""
    from tacred.analysis.inspection import InspectionError, read_training_curves
    from tacred.experiments.ablation import AblationError, dev_f1_by_epoch
    from tacred.io import MetricsFileError, read_epoch_metrics

    path = tmp_path / "metrics.csv"
    path.write_text("epoch,step,train/loss,val/f1\n0,9,2.0,0.5\n1,19,1.5,high\n", encoding="utf-8")
    message = f"{path}, line 3: val/f1='high' is not a number"
    for read, error in ((read_epoch_metrics, MetricsFileError), (dev_f1_by_epoch, AblationError),
                        (read_training_curves, InspectionError)):
        with pytest.raises(error) as err:
            read(path)
        assert str(err.value) == message
    path.write_text("step,val/f1\n9,0.5\n", encoding="utf-8")
    with pytest.raises(InspectionError, match="expected a CSV with an 'epoch' column"):
        read_training_curves(path)


def test_a_bad_mention_shard_names_the_file_and_line_for_every_reader(tmp_path):
    """Mention files have one reader (tacred.extraction.mention_files): an output folder read back
    (read_mentions) and the knowledge base's loader report a bad record alike."""
    from tacred.extraction.mention_files import MentionFileError, read_mention_file
    from tacred.extraction.output import read_mentions

    parts = tmp_path / "out" / "parts"
    parts.mkdir(parents=True)
    good = {"doc_id": "d1", "sentence": 0, "sentence_text": "A works for B.", "relation": "org:employees",
            "subject": {"text": "A", "start": 0, "end": 1, "type": "PERSON"}, "probability": 0.9, "evidence": None,
            "object": {"text": "B", "start": 12, "end": 13, "type": "ORGANIZATION"}}
    shard = parts / "part-00000.jsonl"
    shard.write_text(json.dumps(good) + "\n" + json.dumps({**good, "probability": 1.5}) + "\n", encoding="utf-8")
    for read in (lambda: list(read_mentions(tmp_path / "out")), lambda: list(read_mention_file(shard))):
        with pytest.raises(MentionFileError, match=re.escape(f"{shard}, line 2: 'probability' must lie in [0, 1]")):
            read()
    shard.write_text(json.dumps(good) + "\n", encoding="utf-8")
    assert list(read_mentions(tmp_path / "out")) == [good]


# ---- every command and option of `tacred --help`, generated from the parsers ---------------------------------------
# Each option that takes a number or one of fixed choices gets a value it cannot take; each (sub)command with a
# required input gets missing files for every input and fresh paths for its outputs. Every case must be refused
# with exit status 2 and one line naming the option or one of the files, before torch, Lightning or spaCy loads
# (the slow twin runs each command's cases in a fresh process to see that), and leave the folder it ran in as it was.
OUTPUTS = ("out", "output", "db")  # destinations a command writes: given fresh paths, never created
HEAVY = ("torch", "lightning", "spacy", "transformers")


def command_parsers() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command of ``tacred``'s tools with its parser (``tacred predict --sentences`` among them)."""
    import importlib

    from tacred.commands import COMMANDS
    from tacred.commands.predict_raw import build_parser as predict_parser

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> list:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [(path, parser)]
        return [found for name, sub in subs[0].choices.items() for found in walk(sub, (*path, name))]

    found = []
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(f"tacred.commands.{module_name}")
        found += walk((module.build_parser if hasattr(module, "build_parser") else module._parser)(), (name,))
    return [*found, (("predict",), predict_parser())]


def _fill(action: argparse.Action, missing: str) -> list[str]:
    """A value for a required argument: a number, a choice, a fresh output path or a missing input file."""
    if action.choices:
        value = str(next(iter(action.choices)))
    elif action.type in (int, float):
        value = "1"
    else:
        value = f"{{tmp}}/{'new' if action.dest in OUTPUTS else 'missing'}/{action.dest}"
    values = [value] if action.nargs in (None, "?", "+", "*") or isinstance(action.nargs, str) else [value] * action.nargs
    return [*action.option_strings[:1], *values]


def _required(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a command line must hold: positionals, required options, one of each required group."""
    actions = [a for a in parser._actions
               if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
               and (a.required or not a.option_strings)]
    for group in parser._mutually_exclusive_groups:
        if group.required:
            actions.append(group._group_actions[0])
    return actions


def generated_cases() -> list[pytest.param]:
    from tacred.cli import LIGHTNING_COMMANDS

    cases = []
    for path, parser in command_parsers():
        base, name = list(path), "-".join(path)
        required = _required(parser)
        filled = [value for action in required for value in _fill(action, name)]
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction) or action.nargs == 0:
                continue
            flag = action.option_strings[0]
            if action.choices:
                bad = "no_such_choice"
            elif action.type in (int, float):
                bad = "many"
            else:
                continue
            rest = [v for a in required if a is not action for v in _fill(a, name)]
            cases.append(pytest.param((*base, *rest, flag, bad), (flag,), id=f"{name}{flag}"))
        for action in required:
            if not action.option_strings and action.choices:  # a positional of fixed choices
                rest = [v for a in required for v in (["no_such_choice"] if a is action else _fill(a, name))]
                cases.append(pytest.param((*base, *rest), ("no_such_choice",), id=f"{name}-{action.dest}"))
        inputs = [v for v in filled if "{tmp}/missing/" in v]
        if inputs:
            cases.append(pytest.param((*base, *filled), tuple(inputs), id=f"{name}-missing-inputs"))
    for command in LIGHTNING_COMMANDS:  # their options are Lightning's; what is checked before Lightning loads
        cases.append(pytest.param((command, "--ckpt_path", "{tmp}/missing/model.ckpt"), ("{tmp}/missing/model.ckpt",),
                                  id=f"{command}--ckpt_path-missing"))
        cases.append(pytest.param((command, "--config", "{tmp}/missing/config.yaml"), ("{tmp}/missing/config.yaml",),
                                  id=f"{command}--config-missing"))
    return cases


GENERATED = generated_cases()


def snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size if p.is_file() else -1 for p in folder.rglob("*")}


def run_generated(argv: tuple[str, ...], folder: Path) -> tuple[int, str, float]:
    """One generated case in this process, in ``folder``: exit status, standard error, seconds."""
    import contextlib
    import io
    import os
    import time

    args = [a.replace("{tmp}", str(folder)) for a in argv]
    err = io.StringIO()
    here = os.getcwd()
    os.chdir(folder)
    started = time.perf_counter()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                status = main(args)
            except SystemExit as exit_:
                status = exit_.code
    finally:
        os.chdir(here)
    return status, err.getvalue(), time.perf_counter() - started


def check_refusal(argv: tuple[str, ...], expect: tuple[str, ...], folder: Path, status: int, err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, f"tacred {' '.join(argv)}: exit {status}\n{err}"
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(lines) == 1 and lines[0].startswith("tacred") and ": error: " in lines[0], err
    assert any(e.replace("{tmp}", str(folder)) in lines[0] for e in expect), (expect, lines[0])


def test_every_command_has_generated_cases():
    from tacred.commands import COMMANDS

    ids = {c.id for c in GENERATED}
    assert len(ids) == len(GENERATED) and len(GENERATED) >= 100
    for name in COMMANDS:  # a new command is covered the day it lands
        assert any(i.startswith(name) for i in ids), name


@pytest.mark.parametrize(("argv", "expect"), GENERATED)
def test_a_bad_option_or_missing_input_of_any_command_is_one_line_and_leaves_the_folder_as_it_was(
        tmp_path: Path, argv, expect):
    (tmp_path / "mine.txt").write_text("a file of the user's", encoding="utf-8")
    before = snapshot(tmp_path)
    status, err, seconds = run_generated(argv, tmp_path)
    check_refusal(argv, expect, tmp_path, status, err)
    assert snapshot(tmp_path) == before, f"tacred {' '.join(argv)} changed the folder it ran in"
    assert seconds < 30, f"{seconds:.1f} s"  # no work started; the slow twin checks the time in a fresh process


PROBE_GENERATED = """
import contextlib, io, json, os, sys, time
from pathlib import Path
from tacred.cli import main
found = []
for argv in json.loads(sys.argv[1]):
    folder = Path(sys.argv[2]) / str(len(found))
    folder.mkdir()
    os.chdir(folder)
    err = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main([a.replace("{{tmp}}", str(folder)) for a in argv])
        except SystemExit as exit_:
            status = exit_.code
    found.append([status, err.getvalue(), time.perf_counter() - started, [m for m in {heavy!r} if m in sys.modules]])
print(json.dumps(found))
"""


@pytest.mark.slow
def test_every_generated_case_is_refused_before_anything_heavy_loads_in_a_fresh_process(tmp_path: Path):
    """Each command's cases in a process of their own: none loads torch, Lightning or spaCy, and each takes < 2 s."""
    import os
    import subprocess
    import sys
    from itertools import groupby

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for k, (command, group) in enumerate(groupby(GENERATED, key=lambda c: c.values[0][0])):
        cases = list(group)
        work = tmp_path / f"{k}-{command}"
        work.mkdir()
        proc = subprocess.run([sys.executable, "-c", PROBE_GENERATED.format(heavy=HEAVY),
                               json.dumps([c.values[0] for c in cases]), str(work)],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        for case_, (status, err, seconds, heavy) in zip(cases, json.loads(proc.stdout.splitlines()[-1]), strict=True):
            argv, expect = case_.values
            folder = work / str(cases.index(case_))
            check_refusal(argv, expect, folder, status, err)
            assert heavy == [], f"{case_.id}: {heavy} loaded before the refusal"
            assert seconds < 2, f"{case_.id}: {seconds:.1f} s"
