"""A tiny BERT written by the tests themselves (no download): a ``BertConfig`` of two small layers, random weights,
and a WordPiece tokenizer over the words of a corpus, saved as a Hugging Face model folder."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def corpus_words(folder: Path) -> set[str]:
    """The lowercased tokens and entity-type words of the TACRED-format files in ``folder``."""
    words: set[str] = set()
    for name in ("train.json", "dev.json", "test.json"):
        path = folder / name
        if path.is_file():
            for ex in json.loads(path.read_text(encoding="utf-8")):
                words.update(t.lower() for t in ex["token"])
                for key in ("subj_type", "obj_type"):
                    words.update(ex[key].replace("_", " ").lower().split())
    return words


def write_tiny_bert(folder: Path, words: Iterable[str], *, hidden: int = 32, layers: int = 2, seed: int = 0,
                    architecture: str = "bert") -> Path:
    """A BERT (or, with ``architecture="mpnet"``, an MPNet: all-mpnet-base-v2's architecture) of ``layers`` layers
    of width ``hidden`` whose WordPiece vocabulary is ``words`` (plus the specials, the marker characters and single
    letters), saved with its fast tokenizer to ``folder``."""
    import torch
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece
    from transformers import BertConfig, BertModel, MPNetConfig, MPNetModel, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = SPECIALS + sorted(set(words) | set("@*#^.,'\"()-") | set(letters) | {f"##{c}" for c in letters})
    ids = {token: i for i, token in enumerate(vocab)}
    backend = Tokenizer(WordPiece(ids, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", model_max_length=128)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    sizes = {"vocab_size": len(vocab), "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": 2,
             "intermediate_size": 2 * hidden}
    if architecture == "mpnet":  # positions start after the padding id, as in MPNet's 514 = 512 + 2
        MPNetModel(MPNetConfig(**sizes, max_position_embeddings=130, pad_token_id=0)).save_pretrained(folder)
    else:
        BertModel(BertConfig(**sizes, max_position_embeddings=128)).save_pretrained(folder)
    return folder
