"""The DTI family's MCP tools."""

from tools.dti.scoring import (
    dti_explain,
    dti_featurize,
    dti_score,
    dti_screen,
    dti_validate,
    no_row_scored,
    no_valid_item,
)
from tools.dti.training import dti_model_card, dti_train
from tools.spec import ToolSpec

TOOLS: list[ToolSpec] = [
    ToolSpec(dti_validate, title="Validate molecules and protein sequences", read_only=True, unusable=no_valid_item),
    ToolSpec(dti_featurize, title="Fingerprints, descriptors and protein features", read_only=False, heavy=True),
    ToolSpec(dti_score, title="Score drug-target pairs", read_only=False, heavy=True, unusable=no_row_scored),
    ToolSpec(dti_screen, title="Screen a molecule library against a target", read_only=False, heavy=True,
             unusable=no_row_scored),
    ToolSpec(dti_explain, title="Explain a drug-target score", read_only=False, heavy=True),
    ToolSpec(dti_train, title="Train a DTI model on your pairs", read_only=False, idempotent=False, heavy=True),
    ToolSpec(dti_model_card, title="DTI model card", read_only=True),
]
