"""Chunked long-context QA: split a long text, let worker models read the chunks, aggregate, and model the noise."""
