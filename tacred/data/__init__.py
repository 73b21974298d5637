"""The data path: TACRED-format examples → vocabularies → features and batches, and their word vectors; no Lightning."""
