"""Reading, validating and batching TACRED-format relation extraction data."""
