"""Benchmarks of the DTI family: DTIAM-protocol cross-validation, baselines, ablations, screening speed."""
