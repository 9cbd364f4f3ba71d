"""Benchmarks and task suites that measure the tools and the agents."""
