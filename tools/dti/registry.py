"""Where DTI models live: the shipped checkpoints in the package, user-trained ones under the output folder.

Shipped: `default` (trained on the union of every training file the project evaluates with) and one
model per published protocol, trained on that protocol's training file only, so it can be evaluated
on the protocol's held-out files without having seen their pairs (see each model's card).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from tools.errors import InvalidInput, NotFound, unknown_name
from tools.paths import output_dir

WEIGHTS_DIR = Path(__file__).resolve().parent  # gram_dti.pt and model_card.json ship beside the code
DEFAULT_MODEL = "default"
SHIPPED = {
    "default": "gram_dti.pt",
    "human_cold": "gram_dti_human_cold.pt",
    "human_random": "gram_dti_human_random.pt",
    "biosnap_cluster": "gram_dti_biosnap_cluster.pt",
}
SHIPPED_HELP = "default (all training files), human_cold, human_random, biosnap_cluster (DrugBAN splits)"


def card_path(name: str) -> Path:
    """The JSON card shipped beside a shipped model."""
    return WEIGHTS_DIR / ("model_card.json" if name == DEFAULT_MODEL else f"model_card_{name}.json")


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def user_models_dir() -> Path:
    d = output_dir() / "dti_models"
    d.mkdir(parents=True, exist_ok=True)
    return d


def check_model_name(name: str) -> str:
    if not _NAME.match(name or "") or name in SHIPPED:
        raise InvalidInput(
            f"Model name {name!r} is not allowed.",
            hint="Use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit, other than the "
            f"shipped models' names ({', '.join(SHIPPED)}).",
        )
    return name


def model_names() -> list[str]:
    """The shipped models present in the package and every user-trained model."""
    names = [n for n, f in SHIPPED.items() if n == DEFAULT_MODEL or (WEIGHTS_DIR / f).exists()]
    d = output_dir() / "dti_models"
    if d.is_dir():
        names += sorted(p.stem for p in d.glob("*.pt"))
    return names


def model_path(name: str) -> Path:
    if name in SHIPPED:
        p = WEIGHTS_DIR / SHIPPED[name]
        if not p.exists():
            raise NotFound(
                f"The shipped DTI model file {SHIPPED[name]} is missing from the package.",
                hint="Reinstall the package, build it with python -m evals.dti.ship, or train one with dti_train.",
            )
        return p
    if _NAME.match(name or ""):
        p = output_dir() / "dti_models" / f"{name}.pt"
        if p.exists():
            return p
    raise unknown_name("DTI model", name, model_names())


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> tuple[Any, dict[str, Any]]:
    from tools.dti.train import load_checkpoint

    return load_checkpoint(Path(path))


def load_model(name: str) -> tuple[Any, dict[str, Any]]:
    """The model (eval mode) and its card."""
    p = model_path(name)
    return _load(str(p), p.stat().st_mtime)
