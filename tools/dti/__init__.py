"""Drug-target interaction scoring: multimodal GRAM-aligned encoders, scoring, screening, training."""
