"""Where DTI models live: the shipped checkpoint in the package, user-trained ones under the output folder."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from tools.errors import InvalidInput, NotFound, unknown_name
from tools.paths import output_dir

WEIGHTS_DIR = Path(__file__).resolve().parent  # gram_dti.pt and model_card.json ship beside the code
DEFAULT_MODEL = "default"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def user_models_dir() -> Path:
    d = output_dir() / "dti_models"
    d.mkdir(parents=True, exist_ok=True)
    return d


def check_model_name(name: str) -> str:
    if not _NAME.match(name or "") or name == DEFAULT_MODEL:
        raise InvalidInput(
            f"Model name {name!r} is not allowed.",
            hint="Use 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit, other than 'default'.",
        )
    return name


def model_names() -> list[str]:
    """'default' (shipped) and every user-trained model."""
    names = [DEFAULT_MODEL]
    d = output_dir() / "dti_models"
    if d.is_dir():
        names += sorted(p.stem for p in d.glob("*.pt"))
    return names


def model_path(name: str) -> Path:
    if name == DEFAULT_MODEL:
        p = WEIGHTS_DIR / "gram_dti.pt"
        if not p.exists():
            raise NotFound(
                "The shipped DTI model file is missing from the package.",
                hint="Reinstall the package, or train one with dti_train.",
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
