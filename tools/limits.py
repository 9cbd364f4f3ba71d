"""Each family's bounds, which the family registers: the settings read them from here, so the shared ground of
`tools/` imports no family.

A family declares its bounds in `tools/<family>/limits.py` as a pydantic model decorated with
`@register_limits("<family>")`; they are set through `RESEARCH_MCP_<FAMILY>__<NAME>`. `family_limits()` finds
every family's `limits` module the way the server finds catalogues (each `tools/<family>/` package that has
one) and imports it, which registers the model.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=type[BaseModel])
_REGISTERED: dict[str, type[BaseModel]] = {}


def register_limits(family: str) -> Callable[[M], M]:
    """Class decorator: the model holds `family`'s bounds (`get_settings().<family>`)."""

    def register(model: M) -> M:
        known = _REGISTERED.get(family)
        if known is not None and known.__qualname__ != model.__qualname__:
            raise ValueError(f"Family {family!r} registers two limits models: {known.__qualname__} and "
                             f"{model.__qualname__}.")
        _REGISTERED[family] = model
        return model

    return register


def family_limits() -> dict[str, type[BaseModel]]:
    """Every family's limits model by family name, sorted: each `tools/<family>/limits.py` is imported."""
    import tools

    for root in tools.__path__:
        for info in pkgutil.iter_modules([root]):
            if info.ispkg and any(m.name == "limits" for m in pkgutil.iter_modules([str(Path(root) / info.name)])):
                importlib.import_module(f"tools.{info.name}.limits")
    return dict(sorted(_REGISTERED.items()))
