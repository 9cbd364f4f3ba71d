"""Evaluations of chunked long-context QA: key-value retrieval, QA in books, single-shot against chunked."""
