"""A spaCy NER trained on a dataset's own entities (`tacred ner train`, resumable), and used where extraction tags text."""
