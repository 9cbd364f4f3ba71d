"""The `shared_data` marker: tests that read data from outside the repository say which, and skip without it.

`@pytest.mark.shared_data("dti/dtiam")` names paths under the shared data folder (`RESEARCH_MCP_SHARED_DATA`,
else `shared/data` beside the repository); the test is skipped, with the reason, when one is missing.
`@pytest.mark.shared_data(optional=True)` marks a test that reads the folder when it is there and passes
without it. Every other test runs as in a fresh clone: it sees `RESEARCH_MCP_SHARED_DATA` pointing at a folder
that does not exist, and it fails if it opens a file in the real one all the same (a path kept from import time).
So `RESEARCH_MCP_SHARED_DATA=/absent pytest -m shared_data` shows the whole suite passes with no folder beside it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals.shared_data import ENV_VAR, shared_data_root

ROOT = shared_data_root()
_ROOT_TEXT = os.path.join(str(ROOT), "")
WATCHED = {"open", "os.listdir", "os.scandir", "glob.glob"}
_reads: list[str] = []
_watching = False


def _audit(event: str, args: tuple) -> None:
    if not _watching or event not in WATCHED or not args:
        return
    path = args[0]
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if isinstance(path, str | os.PathLike):
        text = os.path.abspath(os.fspath(path))
        if text.startswith(_ROOT_TEXT) or text == _ROOT_TEXT[:-1]:
            _reads.append(text)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "shared_data(*paths, optional=False): the test reads these paths of the shared data folder "
        f"({ENV_VAR}, else shared/data beside the repository) and is skipped when one is missing; "
        "optional=True: it reads the folder when present and passes without it",
    )
    sys.addaudithook(_audit)


def missing_paths(item: pytest.Item) -> list[Path]:
    """The paths a `shared_data` marker of `item` requires that are not there."""
    missing = []
    for mark in item.iter_markers("shared_data"):
        if mark.kwargs.get("optional"):
            continue
        missing += [ROOT / p for p in mark.args or ("",) if not (ROOT / p).exists()]
    return missing


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        missing = missing_paths(item)
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"needs {', '.join(map(str, missing))}: data from outside the "
                                             f"repository (set {ENV_VAR} to the folder that holds it)"))


@pytest.fixture(autouse=True)
def _shared_data_only_where_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """An unmarked test sees no shared data folder, as in a fresh clone."""
    if request.node.get_closest_marker("shared_data") is None:
        monkeypatch.setenv(ENV_VAR, str(tmp_path_factory.getbasetemp() / "no-shared-data"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    _reads.clear()
    with _watch(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    with _watch(item):
        result = yield
    if _reads:
        pytest.fail(f"{item.nodeid} read {_reads[0]} (outside the repository) without "
                    "@pytest.mark.shared_data(...): mark it, so that it skips where the folder is absent",
                    pytrace=False)
    return result


@contextlib.contextmanager
def _watch(item: pytest.Item) -> Iterator[None]:
    """Record reads of the shared folder while an unmarked test (or its fixtures) runs."""
    global _watching
    _watching = item.get_closest_marker("shared_data") is None
    try:
        yield
    finally:
        _watching = False
