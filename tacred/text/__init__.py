"""spaCy in place of CoreNLP: pipelines loaded once, tokens, tags, lemmas, a trained NER's transformer vectors."""
