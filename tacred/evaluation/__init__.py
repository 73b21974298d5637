"""Scoring predictions: the official TACRED and SemEval-2010 Task 8 scorers, their torchmetrics form, the
no-relation decision and its tuned threshold, and paired significance tests. No Lightning, no training."""
