"""``tacred extract`` end to end on corpora written here: bad documents skipped and reported without ending the run,
an empty input, shards equal to standard output in either format, Parquet input, and an output folder that resumes
after a crash (in this process) and after a SIGKILL at a random point (a subprocess) with the uninterrupted output."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tacred.extraction.output import read_mentions
from tests.conftest import REPO, run_in_process


def corpus_lines(checkpoint, n: int) -> list[str]:
    """``n`` sentences of the tiny model's generated corpus as plain text (they hold its entities and relations)."""
    data = json.loads((checkpoint.parents[2] / "data" / "test.json").read_text(encoding="utf-8"))
    texts = [" ".join(ex["token"]) for ex in data]
    return [texts[i % len(texts)] for i in range(n)]


def folder_state(folder) -> dict[str, object]:
    return {"mentions": list(read_mentions(folder)),
            "bad": (folder / "bad.jsonl").read_text(encoding="utf-8"),
            "summary": json.loads((folder / "summary.json").read_text(encoding="utf-8"))}


def test_bad_documents_are_skipped_and_reported_and_the_run_goes_on(checkpoint, tmp_path, nlp):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    good = corpus_lines(checkpoint, 3)
    (corpus / "a.txt").write_bytes("\n".join([good[0], "word " * 400_000]).encode() + b"\nbad \xff byte\n\n"
                                   + good[1].encode() + b"\n")
    (corpus / "b.bin").write_bytes(bytes(random.Random(0).choice(range(11, 256)) for _ in range(2000)) + b"\x00")
    (corpus / "c.txt").write_bytes(b"")
    (corpus / "d.jsonl").write_text(json.dumps({"id": "empty", "text": ""}) + "\n"
                                    + json.dumps({"id": "last", "text": good[2]}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    ran = run_in_process("extract", str(corpus), "--lines", "--ckpt_path", str(checkpoint), "--output", str(out),
                         "--chunk_size", "2", "--threshold", "-50", "--no_signatures")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    bad = [json.loads(line) for line in (out / "bad.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(b["id"], b["reason"].split(" (")[0]) for b in bad] == [
        (f"{corpus / 'a.txt'}:2", "2,000,000 characters, more than the limit of 1,000,000"),
        (f"{corpus / 'a.txt'}:3", "not UTF-8 text"), (f"{corpus / 'b.bin'}:1", "binary data")]
    assert summary["documents"] == 4 and summary["skipped"] == 3  # the empty text counts as extracted from
    mentions = list(read_mentions(out))
    assert {m["doc_id"] for m in mentions} == {f"{corpus / 'a.txt'}:1", f"{corpus / 'a.txt'}:5", "last"}
    assert summary["relations"] == len(mentions) and "4 document(s)" in ran.stderr and "3 document(s) skipped" in ran.stderr
    for m in mentions:
        text = {f"{corpus / 'a.txt'}:1": good[0], f"{corpus / 'a.txt'}:5": good[1], "last": good[2]}[m["doc_id"]]
        assert text[m["subject"]["start"]:m["subject"]["end"]] == m["subject"]["text"]
        assert text[m["object"]["start"]:m["object"]["end"]] == m["object"]["text"]
        assert m["sentence_text"] in text and m["sentence"] >= 0


def test_an_empty_input_gives_no_relations_and_succeeds(checkpoint, tmp_path, nlp):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"\n\n")
    ran = run_in_process("extract", str(empty), "--lines", "--ckpt_path", str(checkpoint))
    assert ran.stdout == "" and "0 document(s), 0 sentence(s), 0 candidate pair(s), 0 relation(s)" in ran.stderr
    assert run_in_process("extract", "-", "--ckpt_path", str(checkpoint), stdin="").stdout == ""
    missing = run_in_process("extract", str(tmp_path / "nowhere"), "--ckpt_path", str(checkpoint), check=False)
    assert missing.status == 2 and f"{tmp_path / 'nowhere'}: no such file or folder" in missing.stderr


def test_shards_parquet_and_standard_output_hold_the_same_mentions(checkpoint, tmp_path, nlp):
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = corpus_lines(checkpoint, 12)
    source = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"key": [f"doc{i}" for i in range(12)], "body": lines}), source)
    common = ["--ckpt_path", str(checkpoint), "--text_column", "body", "--id_column", "key", "--chunk_size", "5"]
    printed = [json.loads(line) for line in run_in_process("extract", str(source), *common).stdout.splitlines()]
    assert printed and [m["doc_id"] for m in printed] == sorted((m["doc_id"] for m in printed),
                                                                key=lambda d: int(d[3:]))
    for fmt in ("jsonl", "parquet"):
        run_in_process("extract", str(source), *common, "--output", str(tmp_path / fmt), "--format", fmt)
        assert list(read_mentions(tmp_path / fmt)) == printed
    assert sorted(p.name for p in (tmp_path / "parquet" / "done").iterdir()) == [
        "part-00000000.json", "part-00000001.json", "part-00000002.json"]
    other = run_in_process("extract", str(source), *common, "--output", str(tmp_path / "jsonl"), "--max_pairs", "3",
                           check=False)
    assert other.status == 2 and "holds the output of another extract command (it differs in max_pairs)" in other.stderr


def test_a_rerun_after_a_crash_finishes_with_the_uninterrupted_output(checkpoint, tmp_path, nlp):
    source = tmp_path / "news.txt"
    source.write_bytes("\n".join(corpus_lines(checkpoint, 30)).encode() + b"\n\xff\n")
    command = ["extract", str(source), "--lines", "--ckpt_path", str(checkpoint), "--chunk_size", "4"]
    run_in_process(*command, "--output", str(tmp_path / "whole"))
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "whole", crashed)
    for name in ("summary.json", "bad.jsonl", "done/part-00000003.json", "done/part-00000005.json"):
        (crashed / name).unlink()  # chunks 3 and 5 never recorded as done (their shards may be there or not)
    (crashed / "parts" / "part-00000005.jsonl").unlink(missing_ok=True)
    (crashed / "parts" / ".part-00000006.jsonl.0123.tmp").write_text("half a shard", encoding="utf-8")
    again = run_in_process(*command, "--output", str(crashed))
    assert folder_state(crashed) == folder_state(tmp_path / "whole")
    assert "31 document(s)" not in again.stderr and "30 document(s)" in again.stderr  # 30 read, 1 skipped


def test_one_sentence_takes_each_document_as_one_sentence_and_pairs_across_its_full_stops(checkpoint, tmp_path, nlp):
    """Text already split (a sentence a line): --one_sentence splits no document, so entities on either side of a
    full stop inside it pair up; without it the sentencizer splits and they do not."""
    lines = corpus_lines(checkpoint, 6)
    source = tmp_path / "joined.txt"
    source.write_text("\n".join(f"{a} {b}" for a, b in zip(lines[::2], lines[1::2], strict=True)) + "\n",
                      encoding="utf-8")
    runs = {}
    for flag in ((), ("--one_sentence",)):
        out = tmp_path / ("one" if flag else "split")
        run_in_process("extract", str(source), "--lines", "--ckpt_path", str(checkpoint), "--output", str(out),
                       "--threshold", "-50", "--no_signatures", *flag)
        runs[bool(flag)] = (json.loads((out / "summary.json").read_text(encoding="utf-8")), list(read_mentions(out)))
    (split, split_mentions), (whole, whole_mentions) = runs[False], runs[True]
    assert split["sentences"] == 6 and whole["sentences"] == 3
    assert whole["pairs"] > split["pairs"]
    texts = source.read_text(encoding="utf-8").splitlines()
    assert all(m["sentence"] == 0 and m["sentence_text"] == texts[int(m["doc_id"].rsplit(":", 1)[1]) - 1]
               for m in whole_mentions)
    key = ("doc_id", "subject", "object")
    assert {tuple(str(m[k]) for k in key) for m in split_mentions} < {tuple(str(m[k]) for k in key)
                                                                      for m in whole_mentions}
    # the option decides the output: a folder written without it is not resumed with it
    again = run_in_process("extract", str(source), "--lines", "--ckpt_path", str(checkpoint), "--output",
                           str(tmp_path / "split"), "--threshold", "-50", "--no_signatures", "--one_sentence",
                           check=False)
    assert again.status != 0 and "one_sentence" in again.stderr


@pytest.mark.slow
def test_sigkill_at_a_random_point_then_the_same_command_gives_the_uninterrupted_output(checkpoint, tmp_path, nlp):
    source = tmp_path / "news.txt"
    source.write_text("\n".join(corpus_lines(checkpoint, 400)) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def command(out):
        return [sys.executable, "-m", "tacred", "extract", str(source), "--lines", "--ckpt_path", str(checkpoint),
                "--chunk_size", "2", "--output", str(out), "--num_threads", "1"]

    subprocess.run(command(tmp_path / "whole"), env=env, check=True, capture_output=True, timeout=300)
    chunks = len(list((tmp_path / "whole" / "done").iterdir()))
    kill_after = random.Random(41).randrange(1, chunks // 2)  # chunks done when the process is killed
    killed = tmp_path / "killed"
    process = subprocess.Popen(command(killed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not (killed / "done").is_dir() or len(list((killed / "done").iterdir())) < kill_after:
            assert process.poll() is None, "the run ended before it could be killed"
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        process.kill()
    assert not (killed / "summary.json").exists()  # it was killed mid-run
    subprocess.run(command(killed), env=env, check=True, capture_output=True, timeout=300)
    assert folder_state(killed) == folder_state(tmp_path / "whole")
    assert folder_state(killed)["summary"]["documents"] == 400


@pytest.mark.slow
def test_two_workers_give_the_output_of_one(checkpoint, tmp_path, nlp, keep_torch_threads):
    source = tmp_path / "news.txt"
    source.write_text("\n".join(corpus_lines(checkpoint, 40)) + "\n", encoding="utf-8")
    command = ["extract", str(source), "--lines", "--ckpt_path", str(checkpoint), "--chunk_size", "3",
               "--num_threads", "1"]
    one = run_in_process(*command).stdout
    two = run_in_process(*command, "--workers", "2").stdout
    assert one and two == one
    run_in_process(*command, "--workers", "2", "--output", str(tmp_path / "two"))
    assert list(read_mentions(tmp_path / "two")) == [json.loads(line) for line in one.splitlines()]


def test_extraction_keeps_freed_memory_for_the_next_batch_where_malloc_is_glibc() -> None:
    """glibc accepts the thresholds (a bigger buffer than the relation model's largest keeps its pages); elsewhere
    the call says it did nothing."""
    import platform

    from tacred.devices import keep_freed_memory

    expected = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert keep_freed_memory() is expected


def test_a_run_that_fails_after_the_manifest_leaves_no_output_folder_and_the_corrected_one_runs(checkpoint, tmp_path,
                                                                                              nlp):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(corpus_lines(checkpoint, 2)) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    ran = run_in_process("extract", str(docs), "--lines", "--ckpt_path", str(checkpoint), "--output", str(out),
                         "--spacy_model", "no_such_spacy_model", check=False)  # fails once the model has loaded
    assert ran.status == 2 and not out.exists()
    run_in_process("extract", str(docs), "--lines", "--ckpt_path", str(checkpoint), "--output", str(out))
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["documents"] == 2
