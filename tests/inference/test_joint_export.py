"""A joint entity-and-relation model exported by ``tacred export``: two ONNX graphs run by ONNX Runtime give the
checkpoint's entities and relations (probabilities to float32's precision), through ``load_model``, ``tacred
extract`` and without torch; a failed check leaves nothing behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")

from tests.conftest import NO_TORCH_PROBE, REPO, run_in_process  # noqa: E402

pytestmark = pytest.mark.slow  # a tiny joint training (shared with tests/training/test_joint_module.py), exports

TEXTS = ["Omar works for Globex in Oslo. Ana lives in Lyon.", "Sara Kim killed Tom Baker last year in Boston.",
         "Oslo", "The weather in Cape Town was fine."]


@pytest.fixture(scope="module")
def exported(joint_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    from tacred.inference.export import export_folder

    out = tmp_path_factory.mktemp("joint_export") / "folder"
    return out, export_folder(joint_run, out)


def records(found: list) -> list[list[tuple]]:
    """Each text's relations without their probabilities, and the probabilities apart."""
    return [[(r.relation, r.subject.text, r.subject.start, r.subject.type, r.object.text, r.object.start,
              r.object.type, r.sentence) for r in text] for text in found]


def probabilities(found: list) -> list[float]:
    return [r.probability for text in found for r in text]


def test_the_folder_extracts_what_the_checkpoint_extracts(joint_run: Path, joint_corpus: Path,
                                                          exported: tuple[Path, dict]) -> None:
    from tacred import load_model
    from tacred.inference.onnx_joint import OnnxJointPredictor

    folder, summary = exported
    assert summary["kind"] == "joint" and summary["onnx_max_abs_diff"] < 1e-5 and summary["same_results"] == 1.0
    assert "test.json" in summary["checked_on"] and summary["examples"] == 12 + 6
    assert {"model.onnx", "relations.onnx", "predictor.json", "tokenizer.json", "weights.pt", "README.md",
            "export.json"} <= set(summary["files"])
    meta = json.loads((folder / "predictor.json").read_text())
    assert meta["kind"] == "joint" and meta["allowed"]["Work_For"] == [["Peop", "Org"]] and meta["max_width"] == 3
    assert "ONNX Runtime vs PyTorch" in (folder / "README.md").read_text()

    texts = TEXTS + [" ".join(s["tokens"]) for s in json.loads((joint_corpus / "test.json").read_text())]
    torch_model, onnx_model = load_model(joint_run, device="cpu"), load_model(folder, device="cpu")
    assert isinstance(onnx_model.predictor, OnnxJointPredictor) and onnx_model.kind == "joint"
    assert onnx_model.threshold == torch_model.threshold and onnx_model.labels == torch_model.labels
    expected, got = torch_model.extract(texts), onnx_model.extract(texts)
    assert records(got) == records(expected) and sum(map(len, got)) > 10
    assert [round(p, 4) for p in probabilities(got)] == [round(p, 4) for p in probabilities(expected)]
    assert probabilities(got) == pytest.approx(probabilities(expected), abs=1e-5)
    # the relation step alone, on given entities, and a threshold given for one run
    words = [["Ana", "works", "for", "Globex", "."]]
    given = [[(0, 1, "Peop"), (3, 4, "Org")]]
    (ents_t, cands_t), = torch_model.read_candidates(words, given)
    (ents_o, cands_o), = onnx_model.read_candidates(words, given)
    assert ents_o == ents_t and [c[:3] for c in cands_o] == [c[:3] for c in cands_t]
    assert [c[3] for c in cands_o] == pytest.approx([c[3] for c in cands_t], abs=1e-5)
    assert load_model(folder, threshold=0.5).threshold_source == "given"


def test_bf16_runs_the_joint_model_under_autocast_and_the_export_refuses_it(joint_run: Path, joint_corpus: Path,
                                                                            exported: tuple[Path, dict]) -> None:
    """The joint model at ``precision="bf16"`` (as ``tacred extract --precision bf16``): probabilities near the
    float32 ones but not equal to them; the exported folder refuses bf16, naming itself."""
    from tacred import load_model
    from tacred.devices import DeviceError

    words = [s["tokens"] for s in json.loads((joint_corpus / "test.json").read_text())]
    m32, m16 = load_model(joint_run, device="cpu"), load_model(joint_run, device="cpu", precision="bf16")
    assert (m32.precision, m16.precision) == (None, "bf16")
    given = [[(e["start"], e["end"], e["type"]) for e in s["entities"]]
             for s in json.loads((joint_corpus / "test.json").read_text())]
    c32, c16 = m32.read_candidates(words, given), m16.read_candidates(words, given)
    p32 = [p for _, cands in c32 for *_, p in cands]
    p16 = [p for _, cands in c16 for *_, p in cands]
    assert len(p32) == len(p16) > 10 and p16 != p32 and p16 == pytest.approx(p32, abs=0.05)
    assert len(m16.extract(TEXTS)) == len(TEXTS)
    folder, _ = exported
    with pytest.raises(DeviceError, match=f"precision bf16: {folder}.* ONNX export"):
        load_model(folder, precision="bf16")


def test_tacred_export_then_extract_from_the_folder(joint_run: Path, joint_corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "exported"
    ran = run_in_process("export", "--ckpt_path", str(joint_run), "--out", str(folder), "--check_file",
                         str(joint_corpus / "dev.json"))
    assert "span probabilities" in ran.stdout and "dev.json" in ran.stdout, ran.stdout
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    lines = {}
    for name, model in (("torch", joint_run), ("onnx", folder)):
        out = run_in_process("extract", str(docs), "--ckpt_path", str(model)).stdout
        lines[name] = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(lines["onnx"]) == len(lines["torch"]) > 2
    for a, b in zip(lines["torch"], lines["onnx"], strict=True):
        assert round(a.pop("probability"), 4) == round(b.pop("probability"), 4) and a == b


def test_onnx_extraction_needs_no_torch(joint_run: Path, exported: tuple[Path, dict]) -> None:
    from tacred import load_model

    probe = NO_TORCH_PROBE + f"""
from tacred import load_model
m = load_model({str(exported[0])!r})
print(json.dumps([[[r.relation, r.subject.text, r.object.text, r.probability] for r in t]
                  for t in m.extract({TEXTS!r})]))
"""
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    expected = load_model(joint_run, device="cpu").extract(TEXTS)
    assert [[g[:3] for g in t] for t in got] == [[[r.relation, r.subject.text, r.object.text] for r in t]
                                                 for t in expected]
    assert [g[3] for t in got for g in t] == pytest.approx(probabilities(expected), abs=1e-5)


def test_torch_format_refusals_and_a_failed_check(joint_run: Path, exported: tuple[Path, dict],
                                                  tmp_path: Path) -> None:
    from tacred.errors import ExportError
    from tacred.inference.export import export_folder

    summary = export_folder(joint_run, tmp_path / "torch", fmt="torch")
    assert "weights.pt" in summary["files"] and "model.onnx" not in summary["files"]
    assert json.loads((tmp_path / "torch" / "predictor.json").read_text())["kind"] == "joint"
    with pytest.raises(ExportError, match="float32 only"):
        export_folder(joint_run, tmp_path / "int8", quantize="int8")
    with pytest.raises(ExportError, match="differs from PyTorch"):
        export_folder(joint_run, tmp_path / "strict", tolerance=1e-12)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["torch"]  # nothing half-written
