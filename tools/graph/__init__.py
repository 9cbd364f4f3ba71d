"""Graph reasoning (GraphOmni and beyond): graphs, formats, exact tasks, answer checks, prompts, factor search."""
