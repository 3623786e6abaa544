"""The real-server harness: private database servers and the load against them, shared by
the tests (``tests/fixtures``), the benchmarks and the dataset builder. See docs/lab.md."""
