"""Experiments made of many training runs: ablation sweeps, multi-seed ensembles, hyperparameter studies, and the
results they leave as data (``result.json``, summaries, tables)."""
