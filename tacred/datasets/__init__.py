"""Public datasets' release files read and converted to TACRED dicts (SemEval-2010, KBP37, CoNLL04, TACREV, demo)."""
