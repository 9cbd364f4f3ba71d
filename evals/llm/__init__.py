"""Benchmarks of the embedded model's runtimes (`python -m evals.llm`)."""
