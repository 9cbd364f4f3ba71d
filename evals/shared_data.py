"""The folder of data sets that do not ship with the project (DrugBAN and DTIAM files, the full long-context sets).

It is `RESEARCH_MCP_SHARED_DATA` when set, else `shared/data` beside the repository; the evals' `--data`
options default to it. It is looked up at each call, never kept in a module constant, so the tests that do not
declare it (the `shared_data` marker) run as in a fresh clone, with none.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "RESEARCH_MCP_SHARED_DATA"
REPO = Path(__file__).resolve().parents[1]


def shared_data_root() -> Path:
    """The folder holding `dti/`, `longctx/`... (it may be absent: a fresh clone has none beside it)."""
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser().resolve() if value else REPO.parent / "shared" / "data"


def shared_data_path(*parts: str) -> Path:
    """A path inside the shared data folder, read from the environment at each call."""
    return shared_data_root().joinpath(*parts)
