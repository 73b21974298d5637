"""What a checkpoint of the train-and-dev MPNet NER costs, on its real config (the arguments `tacred end-to-end`
passes for `mpnet_with_dev`): the first checkpoint after 2 minutes is timed and sized, the run stopped there, then
resumed and stopped again after the checkpoint of its first step. One JSON line each. Run from the repository root:
`python -m benchmarks.studies.conll04_ner.mpnet_checkpoint OUT [DATA]` (needs `tacred pretrained install mpnet`;
DATA: the CoNLL04 release, ../shared/data/conll04)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tacred.ner import loop as ner_loop
from tacred.ner.training import train_ner

ARGS = {"seed": 4, "max_epochs": 14, "eval_frequency": 58, "encoder": "transformer", "pretrained": "mpnet",
        "bf16": True, "learn_rate": 1e-4, "head_rate": 1e-3, "shape_width": 64, "with_dev": True}


class Stopped(Exception):
    """Stands for a kill right after a checkpoint."""


def main() -> None:
    out = Path(sys.argv[1])
    data = sys.argv[2] if len(sys.argv) > 2 else "../shared/data/conll04"
    write = ner_loop._write_checkpoint

    def timed(out_dir: Path, nlp: object, state: dict) -> None:
        began = time.perf_counter()
        write(out_dir, nlp, state)
        folder = out_dir / ner_loop.CHECKPOINT
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        print(json.dumps({"step": state["step"], "write_seconds": round(time.perf_counter() - began, 1),
                          "bytes": size, "state_pkl_bytes": (folder / ner_loop.STATE).stat().st_size}), flush=True)
        raise Stopped

    ner_loop._write_checkpoint = timed
    for leg, minutes in (("first", 2.0), ("resumed", 0.0)):
        began = time.perf_counter()
        try:
            train_ner(data, out, checkpoint_minutes=minutes, **ARGS)
        except Stopped:
            print(json.dumps({"leg": leg, "seconds": round(time.perf_counter() - began, 1)}), flush=True)


if __name__ == "__main__":
    main()
