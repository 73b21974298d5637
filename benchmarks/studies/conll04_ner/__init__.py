"""A NER trained on CoNLL04's entities (docs/ner.md; docs/results/conll04/ner_resume/ and ner_variants/)."""
