"""The layers of DESIGN.md hold in the code: no import circles, and the shared ground of tools/ imports no family.

Imports are read with `ast` from every module of the project, at any depth (a function's deferred import is an
edge too): a circle there is one a refactoring or a new module-level import turns into an import-time failure.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

from tests.conftest import REPO

PACKAGES = ("server", "tools", "agents", "evals", "tests")
FAMILIES = sorted(p.parent.name for p in (REPO / "tools").glob("*/catalog.py"))


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the project's packages."""
    out = {}
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*.py"):
            parts = list(f.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `name` imports anywhere in its code (the nearest module of each dotted target)."""
    targets: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else []))
            targets += [base] + [f"{base}.{a.name}" for a in node.names]
    out = set()
    for t in targets:
        while t and t not in known:
            t = t.rpartition(".")[0]
        if t and t != name:
            out.add(t)
    return out


@functools.cache
def import_graph() -> nx.DiGraph:
    known = modules()
    g = nx.DiGraph()
    g.add_nodes_from(known)
    g.add_edges_from((m, t) for m, f in known.items() for t in imported(m, f, known))
    return g


def test_the_import_graph_is_read_from_the_code() -> None:
    g = import_graph()
    assert g.number_of_nodes() > 150
    assert g.has_edge("tools.eo.stac", "tools.eo.scenes")  # a module-level import
    assert g.has_edge("server.cli", "server.registry")  # an import inside a function
    assert g.has_edge("tools.graph.limits", "tools.limits")


def test_no_module_imports_itself_through_others() -> None:
    g = import_graph()
    circles = [" -> ".join(a for a, _ in nx.find_cycle(g.subgraph(c)))
               for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert circles == []


@pytest.mark.parametrize("module", sorted(p.stem for p in (REPO / "tools").glob("*.py")))
def test_the_shared_ground_imports_no_family(module: str) -> None:
    name = f"tools.{module}" if module != "__init__" else "tools"
    reached = nx.descendants(import_graph(), name)
    families = {m for m in reached if m.split(".")[0] == "tools" and m.split(".")[1:2] and m.split(".")[1] in FAMILIES}
    assert families == set(), f"{name} imports family modules {sorted(families)}"


def test_every_family_registers_its_limits_and_the_environment_sets_them(monkeypatch) -> None:
    from tools.limits import family_limits
    from tools.settings import get_settings, reload_settings

    limits = family_limits()
    assert sorted(limits) == sorted(p.parent.name for p in (REPO / "tools").glob("*/limits.py"))
    assert {"dti", "eo", "graph", "longctx", "nid"} <= set(limits)
    assert all(model.__module__ == f"tools.{f}.limits" for f, model in limits.items())
    monkeypatch.setenv("RESEARCH_MCP_GRAPH__MAX_NODES", "5000")
    monkeypatch.setenv("RESEARCH_MCP_DTI__MAX_BATCH", "7")
    s = reload_settings()
    assert s.graph.max_nodes == 5000 and s.dti.max_batch == 7
    assert s.eo.max_pixels == limits["eo"]().max_pixels  # the registered default
    for family, model in limits.items():
        assert isinstance(getattr(get_settings(), family), model)
