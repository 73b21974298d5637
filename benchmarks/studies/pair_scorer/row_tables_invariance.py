"""How two versions of tacred/models/pair_scoring.py move with the thread count and with the batch a sentence is
scored in, on the batches recorded by :mod:`benchmarks.studies.pair_scorer.time_pair_scorer` (``WORK record``).

    git show 1486f59:tacred/models/pair_scoring.py > before.py
    git show 25a0464:tacred/models/pair_scoring.py > after.py
    python -m benchmarks.studies.pair_scorer.row_tables_invariance WORK before.py after.py

For each version and document set: the largest logit difference between 1 and 2 torch threads, and, with one thread,
how many pairs' logits are not bitwise the same when their sentence is scored alone (padded to the same length) as
in its recorded batch (the first 150 batches)."""

import importlib.util
import pickle
import sys
from pathlib import Path

import torch

from tacred.inference.trained import TrainedNetwork
from tacred.models.pair_scoring import SentencePairs


def scorer_module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def alone(batch: SentencePairs, s: int) -> tuple[SentencePairs, torch.Tensor]:
    mine = batch.sentence == s
    return SentencePairs(words=batch.words[s:s + 1], pos=batch.pos[s:s + 1], ner=batch.ner[s:s + 1],
                         pad_mask=batch.pad_mask[s:s + 1], sentence=torch.zeros(int(mine.sum()), dtype=torch.long),
                         pair_words=batch.pair_words[mine], subj_positions=batch.subj_positions[mine],
                         obj_positions=batch.obj_positions[mine]), mine


def main(work: Path, versions: list[str]) -> None:
    net = TrainedNetwork.from_checkpoint(work / "paper" / "checkpoints" / "best.ckpt").net.eval()
    for name in ("kbp37", "demo"):
        recorded = pickle.loads((work / f"{name}_batches.pkl").read_bytes())
        batches = [SentencePairs(**{k: torch.as_tensor(v) for k, v in b.items()}) for b in recorded]
        for path in versions:
            scorer = scorer_module(path).PairScorer(net).eval()
            with torch.inference_mode():
                logits = {}
                for threads in (1, 2):
                    torch.set_num_threads(threads)
                    logits[threads] = [scorer(b) for b in batches]
                torch.set_num_threads(1)
                moved = total = 0
                for b, whole in zip(batches[:150], logits[1], strict=False):
                    for s in range(b.words.shape[0]):
                        part, mine = alone(b, s)
                        if int(mine.sum()):
                            moved += int((scorer(part) != whole[mine]).any(-1).sum())
                            total += int(mine.sum())
            threads_diff = max((a - b).abs().max().item() for a, b in zip(logits[1], logits[2], strict=True))
            print(f"{name} {Path(path).name}: 1 vs 2 threads, largest logit difference {threads_diff:.2e}; "
                  f"alone vs in its batch, pairs not bitwise the same {moved} of {total}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
