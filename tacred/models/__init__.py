"""The relation extraction networks as plain ``nn.Module``s (Bilan & Roth, 2018, its attention variants, PA-LSTM and a
pretrained transformer) and their configuration; the LightningModule around them is in :mod:`tacred.training`."""
