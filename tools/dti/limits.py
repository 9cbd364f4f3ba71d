"""Bounds of the DTI family, set through `RESEARCH_MCP_DTI__<NAME>`."""

from pydantic import BaseModel, Field

from tools.limits import register_limits


@register_limits("dti")
class DTILimits(BaseModel):
    max_batch: int = Field(200_000, description="Most molecules or pairs one call scores.")
    max_protein_length: int = Field(
        40_000, description="Longest protein sequence accepted (titin, the longest human protein, has 34,350)."
    )
    min_protein_length: int = Field(10, description="Shortest protein sequence accepted.")
    max_smiles_length: int = Field(1000, description="Longest SMILES string accepted.")
    max_heavy_atoms: int = Field(150, description="Most heavy atoms in the kept fragment of a molecule.")
    max_file_rows: int = Field(200_000, description="Most rows (molecules or pairs) read from one file.")
    max_file_mb: float = Field(500.0, description="Largest input file in megabytes.")
    max_screen_rows: int = Field(50_000_000, description="Most library records one dti_screen streams.")
    screen_partition_rows: int = Field(2048, description="Library records per dti_screen partition (one Dask task).")
    max_top_k: int = Field(10_000, description="Most ranked hits a screen returns in its file.")
    max_inline_rows: int = Field(200, description="Most per-item rows returned inline in a tool result.")
    max_train_pairs: int = Field(300_000, description="Most pairs one training run uses.")
    max_train_epochs: int = Field(100, description="Most fine-tuning epochs of one training run.")
    threads: int = Field(2, description="Torch threads used for scoring and training.")
