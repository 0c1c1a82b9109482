"""The layering is a test: every import points down, and no runtime import cycle exists.

The order of the layers is written once, here (``docs/design/layers.md`` explains it). A
module belongs to the layer of its longest listed prefix. An import counts wherever it is
written (module level, inside a function, under ``TYPE_CHECKING``): each is a dependency
a reader must hold in their head. Cycles are checked on the imports that run when a
module is imported (module level, not under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: tuple[tuple[str, ...], ...] = (
    # lowest first; a layer may import its own layer and any layer listed before it
    (
        "assay._version",
        "assay.errors",
        "assay._sqlite",
        "assay._safety",
        "assay._schema",
        "assay._scores",
        "assay._messages",
        "assay._traces",
        "assay._samples",
        "assay.parsing",
        "assay.retrieval._measures",  # pure IR measures over arrays: no judge anywhere below them
    ),
    ("assay.models", "assay.testing"),  # judge backends, their plumbing, encoders; public test doubles
    ("assay.prompts",),
    ("assay.grounding",),  # statements and their checking
    ("assay.metrics", "assay.retrieval"),  # what is judged
    ("assay.analysis",),
    ("assay.run",),  # datasets, the runner, the store, calibration
    ("assay",),  # the package's front door (exactly the root module)
    ("assay.report", "assay.integrations", "assay.pytest_plugin", "assay.cli", "assay.__main__"),  # shells
)


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module
    line: int
    runtime: bool  # runs when the importing module is imported


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            exact = prefix == "assay"
            if (module == prefix or (not exact and module.startswith(prefix + "."))) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best < 0:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return best


def _resolve(source: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = source if MODULES[source].name == "__init__.py" else source.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def imports(source: str) -> Iterator[Import]:
    tree = ast.parse(MODULES[source].read_text(encoding="utf-8"))

    def walk(node: ast.AST, runtime: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "assay":
                        yield Import(source, alias.name, child.lineno, runtime)
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(source, child)
                if target.split(".")[0] == "assay":
                    for alias in child.names:  # `from assay.x import y` may import the module assay.x.y
                        sub = f"{target}.{alias.name}"
                        yield Import(source, sub if sub in MODULES else target, child.lineno, runtime)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, False)
            elif isinstance(child, ast.If) and _type_checking(child.test):
                for statement in child.body:
                    yield from walk(ast.Module(body=[statement], type_ignores=[]), False)
                for statement in child.orelse:
                    yield from walk(ast.Module(body=[statement], type_ignores=[]), runtime)
            else:
                yield from walk(child, runtime)

    yield from walk(tree, True)


@functools.cache
def all_imports() -> tuple[Import, ...]:
    """Every import of every module: read when a test asks, not at collection (each worker collects)."""
    return tuple(i for m in sorted(MODULES) for i in imports(m))


def test_every_module_has_a_layer_and_every_import_a_module() -> None:
    for module in MODULES:
        layer_of(module)
    unknown = [f"{i.source}:{i.line} imports {i.target}" for i in all_imports() if i.target not in MODULES]
    assert not unknown, unknown


def test_no_import_runs_up_a_layer() -> None:
    upward = [
        f"{MODULES[i.source].relative_to(SRC)}:{i.line}: {i.source} (layer {layer_of(i.source)}) imports "
        f"{i.target} (layer {layer_of(i.target)})"
        for i in all_imports()
        if layer_of(i.target) > layer_of(i.source)
    ]
    assert not upward, "imports that run up a layer:\n" + "\n".join(upward)


def _packages_of(module: str) -> list[str]:
    """Importing ``a.b.c`` first runs ``a`` and ``a.b``."""
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


def runtime_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in all_imports():
        if i.runtime and i.target != i.source:
            graph[i.source].add(i.target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of runtime imports (an import of a package's own submodule from its __init__ is not one)."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = GREY
        stack.append(node)
        for nxt in sorted(graph[node]):
            # a submodule importing a name from its own package while the package imports it is
            # the usual __init__ re-export, and Python resolves it: only a module-to-module loop counts
            if node.startswith(nxt + ".") or nxt.startswith(node + "."):
                continue
            if colour[nxt] == GREY:
                return [*stack[stack.index(nxt) :], nxt]
            if colour[nxt] == WHITE and (found := visit(nxt)) is not None:
                return found
        stack.pop()
        colour[node] = BLACK
        return None

    for node in sorted(graph):
        if colour[node] == WHITE and (found := visit(node)) is not None:
            return found
    return None


def test_no_runtime_import_cycle() -> None:
    cycle = find_cycle(runtime_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def package_of(module: str) -> str:
    """The top-level part a module belongs to: ``assay.metrics``, ``assay._traces``, ``assay.errors``..."""
    return ".".join(module.split(".")[:2])


def test_no_cycle_between_packages_counting_every_import() -> None:
    # Inside one package a lazy import may close a loop (a registry that builds its own metrics);
    # between packages no import of any kind may: metrics -> retrieval -> run -> metrics was one.
    graph: dict[str, set[str]] = {package_of(m): set() for m in MODULES}
    for i in all_imports():
        if package_of(i.source) != package_of(i.target):
            graph[package_of(i.source)].add(package_of(i.target))
    cycle = find_cycle(graph)
    assert cycle is None, "packages import each other: " + " -> ".join(cycle or [])


def module_graph() -> dict[str, set[str]]:
    """Every import between modules, of any kind (module level, in a function, for the type checker)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in all_imports():
        if i.target != i.source:
            graph[i.source].add(i.target)
    return graph


def test_no_cycle_between_modules_counting_every_import() -> None:
    # A lazy or type-only import still makes two files that a reader must hold in mind
    # together: the metrics registry (each metric -> _spec -> _spec_v1 -> the registry ->
    # each metric), models/_local <-> _amx <-> _weights and grounding's _names <-> _reading
    # were such circles. A package's __init__ re-exporting its submodules is not one.
    cycle = find_cycle(module_graph())
    assert cycle is None, "modules import each other (any kind of import): " + " -> ".join(cycle or [])


# --- the checks themselves catch what they are for ----------------------------------------------


def test_the_cycle_finder_finds_a_cycle_and_ignores_package_reexports() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"p": {"p.x"}, "p.x": {"p"}}) is None
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("assay.retrieval._measures", 0),
        ("assay.retrieval._judges", 4),
        ("assay.grounding._details._numbers", 3),
        ("assay", 7),
        ("assay.cli._run", 8),
    ],
)
def test_a_module_takes_the_layer_of_its_longest_prefix(module: str, expected: int) -> None:
    assert layer_of(module) == expected


def test_an_upward_import_inside_a_function_or_for_the_type_checker_is_seen(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from assay.run import EvalResult\n"
        "def f():\n    from assay.report import write_report\n"
        "from assay.errors import ConfigError\n"
    )
    name = "assay.grounding._probe"
    MODULES[name] = tmp_path / "_probe.py"
    MODULES[name].write_text(source)
    try:
        found = {(i.target, i.runtime) for i in imports(name)}
    finally:
        del MODULES[name]
    assert found == {("assay.run", False), ("assay.report", False), ("assay.errors", True)}
    assert layer_of("assay.run") > layer_of(name) and layer_of("assay.report") > layer_of(name)


def test_the_runner_store_and_summary_form_no_import_circle_counting_every_import() -> None:
    # Issue 33: SampleResult lived in the runner, so the store and the summary imported the
    # runner for a type while the runner imported them. The result types now sit below all four.
    members = {"assay.run._evaluate", "assay.run._store", "assay.run._summary", "assay.run._ray"}
    below = {"assay.run._results", "assay.run._outcome"}
    graph: dict[str, set[str]] = {m: set() for m in members | below}
    for i in all_imports():
        if i.source in graph and i.target in graph and i.target != i.source:
            graph[i.source].add(i.target)
    cycle = find_cycle(graph)
    assert cycle is None, "import circle (any kind of import): " + " -> ".join(cycle or [])
    users = graph["assay.run._store"] | graph["assay.run._summary"] | graph["assay.run._ray"]
    assert "assay.run._evaluate" not in users
