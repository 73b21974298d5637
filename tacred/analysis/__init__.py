"""Looking at trained models: per-example predictions and attention weights of a checkpoint over a split
(``inspection``) and the figures drawn from them (``plots``)."""
