"""The notebooks are stored without outputs and run top to bottom (small settings) in this environment's Python."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

NOTEBOOKS = REPO / "notebooks"
NAMES = ("01_quickstart.ipynb", "02_attention.ipynb", "03_error_analysis.ipynb")


def test_notebooks_are_stored_without_outputs():
    nbformat = pytest.importorskip("nbformat")
    for name in NAMES:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code, name
        for i, cell in enumerate(code):
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: code cell {i} has stored output"
            assert "def " not in cell.source and "class " not in cell.source, f"{name}: cell {i} defines logic"


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A kernel spec that runs this interpreter, so the kernel sees the same installed packages as the tests
    (the stock ``python3`` spec launches whichever ``python`` is first on PATH)."""
    folder = tmp_path_factory.mktemp("jupyter") / "kernels" / "tacred-tests"
    folder.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "tacred tests", "language": "python"}
    (folder / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(folder.parent.parent))
        yield "tacred-tests"


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared by the three notebooks, as when a user runs them in order: 02 and 03 reuse 01's model."""
    return tmp_path_factory.mktemp("notebook_work")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_top_to_bottom(name, kernel_name, work_dir, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("TACRED_NOTEBOOK_DIR", str(work_dir))
    monkeypatch.setenv("TACRED_NOTEBOOK_EPOCHS", "2")
    monkeypatch.setenv("TACRED_NOTEBOOK_EXAMPLES", "150")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name=kernel_name, timeout=300,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError naming the cell and the traceback
    seconds = time.perf_counter() - start
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors
    assert seconds < 180, f"{name} took {seconds:.0f} s"
    if name == "01_quickstart.ipynb":
        assert (work_dir / "run" / "checkpoints" / "best.ckpt").is_file()
        assert (work_dir / "run" / "test_score.txt").is_file()
