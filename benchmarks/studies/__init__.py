"""Studies: the scripts behind the measurements under docs/results/ (each study's README there names its scripts and
the commit its figures were measured at). Run from the repository root as modules, e.g.
``python -m benchmarks.studies.pair_scorer.time_pair_scorer WORK record``; each has a small-input mode (``--quick``
or small arguments) that tests/test_studies.py runs in the slow tier. Unlike ``make bench``, no study runs by itself."""
