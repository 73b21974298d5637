"""Training with Lightning: the LightningModule and data module around the plain networks of :mod:`tacred.models`,
the LightningCLI behind ``tacred fit/validate/test/predict``, and what a run folder holds (checkpoints, resuming,
per-epoch rows, progress lines, experiment tracking, test reports)."""
