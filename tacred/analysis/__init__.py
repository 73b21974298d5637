"""Looking at trained models and their results, without training: per-example predictions and attention
(``inspection``), ensembles over seeds (``ensemble``), paired significance tests (``significance``), the ablation
sweep and its tables (``ablation``), results stored as data (``results``) and the pictures (``plots``)."""
