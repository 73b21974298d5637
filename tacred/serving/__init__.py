"""``tacred serve``: an HTTP prediction server on LitServe, its batching loop and lifecycle, and a helper that runs
it as a child process for tests and benchmarks."""
