"""How much entity information a packaged encoder's frozen token vectors hold: a linear BIO tagger over the last
layer (each CoNLL04 token the mean of its sub-words), trained on CoNLL04 train, scored on dev by exact span and type.

``python -m benchmarks.studies.conll04_ner.frozen_probe minilm`` or ``... mpnet`` (the packaged models, ``tacred
pretrained install``) ``[DATA]`` (the CoNLL04 release, ../shared/data/conll04); prints the seconds the features took
and the dev span F1 every 10 epochs of 100. A probe of the encoders, not a NER: no
fine-tuning, no context beyond the encoder's own, no transition constraints."""

import sys
import time

import torch
from transformers import AutoModel, AutoTokenizer

from tacred.data.pretrained_packages import resolve_pretrained
from tacred.datasets.conll04 import read_conll04

torch.manual_seed(1)
torch.set_num_threads(2)
DATA = (sys.argv[2] if len(sys.argv) > 2 else "../shared/data/conll04") + "/conll04_{}.json"
TYPES = ["Loc", "Org", "Other", "Peop"]
TAGS = ["O"] + [f"{prefix}-{t}" for t in TYPES for prefix in "BI"]


def load(split):
    """(tokens, tag ids, gold spans) of each sentence."""
    out = []
    for s in read_conll04(DATA.format(split)):
        tags = ["O"] * len(s.tokens)
        for e in s.entities:
            tags[e.start] = "B-" + e.type
            for k in range(e.start + 1, e.end):
                tags[k] = "I-" + e.type
        out.append((list(s.tokens), [TAGS.index(t) for t in tags], {(e.start, e.end, e.type) for e in s.entities}))
    return out


@torch.no_grad()
def features(tokenizer, model, data):
    """Each sentence's (tokens, hidden) last-layer vectors, a token the mean of its sub-words."""
    out = []
    for i in range(0, len(data), 32):
        batch = [d[0] for d in data[i:i + 32]]
        enc = tokenizer(batch, is_split_into_words=True, return_tensors="pt", padding=True, truncation=False)
        hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        for b, words in enumerate(batch):
            vectors, counts = torch.zeros(len(words), hidden.shape[-1]), torch.zeros(len(words), 1)
            for piece, word in enumerate(enc.word_ids(b)):
                if word is not None:
                    vectors[word] += hidden[b, piece]
                    counts[word] += 1
            out.append(vectors / counts.clamp(min=1))
    return out


def spans(tags):
    """The (start, end, type) spans of a BIO tag-id sequence (an I- without its B- opens a span)."""
    out, current = set(), None
    for i, tag in enumerate([TAGS[t] for t in tags] + ["O"]):
        if current and not (tag.startswith("I-") and tag[2:] == current[1]):
            out.add((current[0], i, current[1]))
            current = None
        if tag.startswith("B-") or (tag.startswith("I-") and current is None):
            current = (i, tag[2:])
    return out


def main(name):
    folder = resolve_pretrained(name)
    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    train, dev = load("train"), load("dev")
    start = time.time()
    x_train, x_dev = features(tokenizer, model, train), features(tokenizer, model, dev)
    print(f"{name}: features of {len(train)} + {len(dev)} sentences in {time.time() - start:.1f} s")
    head = torch.nn.Linear(x_train[0].shape[1], len(TAGS))
    optimiser = torch.optim.Adam(head.parameters(), 5e-3)
    x, y = torch.cat(x_train), torch.tensor([t for d in train for t in d[1]])
    for epoch in range(1, 101):
        order = torch.randperm(len(x))
        for i in range(0, len(x), 256):
            rows = order[i:i + 256]
            loss = torch.nn.functional.cross_entropy(head(x[rows]), y[rows])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        if epoch % 10:
            continue
        tp = fp = fn = 0
        with torch.no_grad():
            for vectors, (_, _, gold) in zip(x_dev, dev, strict=True):
                predicted = spans(head(vectors).argmax(-1).tolist())
                tp, fp, fn = tp + len(predicted & gold), fp + len(predicted - gold), fn + len(gold - predicted)
        print(f"{name}: linear tagger, epoch {epoch}: dev span F1 {100 * 2 * tp / (2 * tp + fp + fn):.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
