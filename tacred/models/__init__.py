"""The relation extraction network (Bilan & Roth, 2018) and its LightningModule."""
