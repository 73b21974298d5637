"""The pair scorer's inference path for `tacred extract` (docs/results/extraction/): batches recorded from real
extraction runs (:mod:`.time_pair_scorer`), then versions of tacred/models/pair_scoring.py timed, profiled and
compared on them."""
