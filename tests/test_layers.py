"""The package's layering, read from its source: every module of dmlpy is parsed and its
imports (module level, inside functions and under TYPE_CHECKING alike: a type a module
names is a dependency) checked against the layers docs/architecture.md describes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dmlpy

PACKAGE = Path(dmlpy.__file__).resolve().parent

# Lowest first; a module may import its own layer and the ones before it. The modules at the
# package's top (its __init__ and dmlpy.graph: the public surface) sit above them all, and the
# command-line programs (dmlpy/cli, and dmlpy/__main__ that runs one) above the surface they use.
LAYERS = ("base", "ir", "kernels", "ops", "runtime", "frontends")
TOP, CLI = len(LAYERS), len(LAYERS) + 1
MAX_MODULE_LINES = 600


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    parts = module.split(".")
    if module == "dmlpy.__main__" or parts[1:2] == ["cli"]:
        return CLI
    if parts[-1] == "shaders" or MODULES[module].parent == PACKAGE:
        return TOP
    return LAYERS.index(parts[1])


def resolve(importer: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = importer.split(".") if MODULES[importer].name == "__init__.py" else importer.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str) -> list[tuple[str, ast.AST]]:
    """Every dmlpy module `module` imports, with the node that imports it."""
    tree = ast.parse(MODULES[module].read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node) for alias in node.names if alias.name.startswith("dmlpy")]
        elif isinstance(node, ast.ImportFrom):
            target = resolve(module, node)
            if not target.startswith("dmlpy"):
                continue
            submodules = [f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in MODULES]
            found += [(name, node) for name in submodules] or [(target, node)]
    return [(name, node) for name, node in found if name != module]


GRAPH = {module: imports_of(module) for module in MODULES}


def test_every_module_lies_in_a_layer():
    for module, path in MODULES.items():
        assert path.parent == PACKAGE or module.split(".")[1] in (*LAYERS, "cli"), module


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_layer_above_its_own(module):
    for target, node in GRAPH[module]:
        assert target in MODULES or target == "dmlpy", f"{module}:{node.lineno} imports {target}, which is not a module"
        assert layer_of(target) <= layer_of(module), (
            f"{module}:{node.lineno} imports {target}: {LAYERS[layer_of(module)]} may not import "
            f"{LAYERS[layer_of(target)] if layer_of(target) < len(LAYERS) else 'the package'}")


def test_no_import_cycle():
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target, _ in GRAPH[module]:
            if state.get(target) == "open":
                cycle = path[path.index(target):] + [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target in GRAPH and target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in MODULES:
        if module not in state:
            visit(module, [module])


def own_private_names(tree: ast.AST) -> set[str]:
    """Names starting with _ that the module defines itself: functions, classes, methods,
    assigned attributes and module variables."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)  # object.__setattr__(self, "_name", ...) in a frozen class
    return {name for name in names if name.startswith("_")}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_reads_another_modules_private_names(module):
    tree = ast.parse(MODULES[module].read_text())
    own = own_private_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and resolve(module, node).startswith("dmlpy"):
            for alias in node.names:
                assert not alias.name.startswith("_"), f"{module}:{node.lineno} imports {alias.name}"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            assert node.attr in own, f"{module}:{node.lineno} reads .{node.attr}, which another module defines"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_long(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module} has {lines} lines"


def test_kernels_name_no_operator():
    """Kernels plan over tensor descs and expressions: no operator's name appears in them."""
    names = {schema.name for schema in dmlpy.OPERATORS.values()} | {
        schema.dml_name for schema in dmlpy.OPERATORS.values()}
    for module, path in MODULES.items():
        if layer_of(module) != LAYERS.index("kernels"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value not in names, f"{module}:{node.lineno} names the operator {node.value!r}"
