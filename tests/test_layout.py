"""The package keeps the layout that docs/architecture.md draws: every import points down the layers (or stays in its
own layer), the few that point up are listed with their reason, and the page names every module of the package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "tacred"

# Lower numbers are lower layers; a module may import its own layer and the ones below it.
LAYERS = {
    "tacred": 0, "errors": 0, "io": 0, "constants": 0, "devices": 0, "checkpoints": 0,  # basics
    "text": 1, "relation_types": 1,
    "datasets": 2,
    "data": 3,
    "options": 4,
    "models": 5,
    "evaluation": 6,
    "training": 7, "inference": 7, "ner": 7,
    "serving": 8, "experiments": 8, "analysis": 8, "extraction": 8,
    "commands": 9, "cli": 9, "__main__": 9,
}

# Imports against the direction, each made inside a function or for type hints only (never at import time), with the
# reason. Such an import is also the one way back between two packages that it allows.
UPWARD: set[tuple[str, str]] = set()


# Modules that import each other, each circle with the reason it stays; any other is an error (farm-studio look
# draws the same circles from the same imports).
CIRCLES: dict[frozenset[str], str] = {}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else "tacred"]


def imported(path: Path) -> set[str]:
    """The tacred modules ``path`` imports, at module level or inside functions (``from tacred import x`` names the
    module ``tacred.x`` when there is one)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == "tacred"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "tacred":
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                names.add(child if child in MODULES else node.module)
    return names


def test_every_package_and_top_level_module_has_a_layer():
    tops = {m.split(".")[1] for m in MODULES if "." in m} | {"tacred"}
    assert not tops - LAYERS.keys(), f"place these in LAYERS and in docs/architecture.md: {sorted(tops - LAYERS.keys())}"


def test_imports_point_down_the_layers():
    upward = {(source, target) for source, path in MODULES.items() if source != "tacred"  # the lazy load_model
              for target in imported(path) if layer(target) > layer(source)}
    assert not upward - UPWARD, (
        f"imports from a lower layer to a higher one (docs/architecture.md): {sorted(upward - UPWARD)}")
    assert not UPWARD - upward, f"listed in UPWARD but no longer imported (remove them here and in the docs): " \
                                f"{sorted(UPWARD - upward)}"


def package(module: str) -> str:
    """The package a module belongs to (``tacred.data``), or the top-level module itself (``tacred.errors``)."""
    return ".".join(module.split(".")[:2])


def test_no_two_packages_import_each_other():
    """Also within one layer (training and inference): one of the two must give way, apart from an import listed in
    UPWARD."""
    edges = {(package(source), package(target)) for source, path in MODULES.items() if source != "tacred"
             for target in imported(path) if package(source) != package(target) and (source, target) not in UPWARD}
    both = sorted((a, b) for a, b in edges if (b, a) in edges and a < b)
    assert not both, f"packages that import each other: {both}"


def circles() -> set[frozenset[str]]:
    """The strongly connected components of more than one module in the import graph (Tarjan's algorithm)."""
    graph = {m: sorted(t for t in imported(p) if t in MODULES and t != m) for m, p in MODULES.items() if m != "tacred"}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_but_the_listed_circles():
    found = circles()
    assert not found - CIRCLES.keys(), f"modules that import each other: {[sorted(c) for c in found - CIRCLES.keys()]}"
    assert not CIRCLES.keys() - found, f"CIRCLES lists circles that are gone: {[sorted(c) for c in CIRCLES.keys() - found]}"


def test_the_architecture_page_names_every_module():
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = re.search(r"```text\n(tacred/.*?)```", page, re.S)
    assert tree, "docs/architecture.md: no ```text block with the package tree"
    named, stack = set(), []
    for line in tree.group(1).splitlines():
        match = re.match(r"^(?P<indent>[│├└─ ]*)(?P<name>[\w.]+/?)", line)
        if not match or not match.group("name").strip():
            continue
        depth = len(match.group("indent")) // 4
        stack[depth:] = [match.group("name").rstrip("/")]
        named.add(".".join(n.removesuffix(".py") for n in stack).removesuffix(".__init__"))
    missing = sorted(MODULES.keys() - named)
    assert not missing, f"docs/architecture.md does not show these modules in its tree: {missing}"
    stale = sorted(named - MODULES.keys())
    assert not stale, f"docs/architecture.md shows modules that do not exist: {stale}"
