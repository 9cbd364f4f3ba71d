"""End-to-end NID audit experiment: train, score, DP audit, dataset inference, figures, benchmark."""
