"""A module imported on first use, so that importing a tool module (and so building the server) stays fast.

    nx = LazyModule("networkx")     # nothing imported yet
    nx.Graph()                      # networkx is imported here, once
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module `name`; the first attribute read imports it, later reads go straight to it."""

    def __init__(self, name: str) -> None:
        self.__dict__["_name"] = name
        self.__dict__["_module"] = None

    def _load(self) -> ModuleType:
        module = self.__dict__["_module"]
        if module is None:
            module = self.__dict__["_module"] = importlib.import_module(self.__dict__["_name"])
        return module

    def __getattr__(self, attr: str) -> Any:  # only reached for names not yet read
        value = getattr(self._load(), attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        state = "loaded" if self.__dict__["_module"] is not None else "not loaded yet"
        return f"<lazy module {self.__dict__['_name']!r}, {state}>"
