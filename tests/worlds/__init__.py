"""Generated worlds for integration tests and benchmarks: local git repositories shaped like upstream."""
