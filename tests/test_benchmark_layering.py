"""The measurement lab's layering is a test: scripts stand on ``benchmarks/_lib``, never on each other.

``benchmarks/*.py`` are scripts run as ``python benchmarks/<name>.py`` (their folder is
``sys.path[0]``); what several of them share lives below them in ``benchmarks/_lib``. A
script imports from ``_lib``, from ``assay`` and from third parties, never another script:
a script that imports another drags in its command line and its globals, and two that
import each other were the circles issue 65 found (``grouped_cv`` <-> ``judge_agreement``,
``hidden_states`` <-> ``rag_speed``). ``_lib`` imports no script, and its own modules form
no cycle. An import counts wherever it is written (inside a function too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
LIB = BENCHMARKS / "_lib"
SCRIPTS = {p.stem for p in BENCHMARKS.glob("*.py")}
LIB_MODULES = {p.stem for p in LIB.glob("*.py")} - {"__init__"}


def imported(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, as written from the benchmarks folder, with its line.

    Relative imports inside ``_lib`` are spelled ``_lib.<module>``.
    """
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # only _lib has relative imports: one level, within _lib
                assert node.level == 1 and path.parent == LIB, f"{path}:{node.lineno}: a relative import outside _lib"
                names = [node.module] if node.module else [alias.name for alias in node.names]
                out += [(f"_lib.{name}", node.lineno) for name in names]
            elif node.module:
                out.append((node.module, node.lineno))
                if node.module == "_lib":  # from _lib import grouped_cv
                    out += [(f"_lib.{alias.name}", node.lineno) for alias in node.names]
    return out


def test_the_scan_sees_the_lab() -> None:
    # the checks below would pass on an empty folder: make sure they look at the real one
    assert {"judge_agreement", "hidden_states", "rag_speed", "verifier_head"} <= SCRIPTS
    assert {"devsets", "grouped_cv", "judging"} <= LIB_MODULES
    assert "_lib.grouped_cv" in {m for m, _ in imported(BENCHMARKS / "judge_agreement.py")}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_no_script_imports_another_script(script: str) -> None:
    wrong = [
        f"benchmarks/{script}.py:{line} imports {module}"
        for module, line in imported(BENCHMARKS / f"{script}.py")
        if module.split(".")[0] in SCRIPTS | LIB_MODULES  # grouped_cv is _lib.grouped_cv: bare, it is not found
    ]
    assert not wrong, "a script imports another script: move what they share into benchmarks/_lib\n" + "\n".join(wrong)


def test_lib_imports_no_script_and_has_no_cycle() -> None:
    edges: dict[str, set[str]] = {}
    wrong = []
    for path in sorted(LIB.glob("*.py")):
        for module, line in imported(path):
            top = module.split(".")[0]
            if top in SCRIPTS:
                wrong.append(f"benchmarks/_lib/{path.name}:{line} imports the script {module}")
            elif top == "_lib" and module != "_lib":
                target = module.split(".")[1]
                assert target in LIB_MODULES, f"benchmarks/_lib/{path.name}:{line}: no module _lib/{target}.py"
                edges.setdefault(path.stem, set()).add(target)
    assert not wrong, "\n".join(wrong)

    def cycle_from(start: str, node: str, trail: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                return (*trail, nxt)
            if nxt not in trail:
                found = cycle_from(start, nxt, (*trail, nxt))
                if found:
                    return found
        return None

    cycles = [" -> ".join(c) for m in sorted(edges) if (c := cycle_from(m, m, (m,)))]
    assert not cycles, "import cycles in benchmarks/_lib: " + "; ".join(cycles)


def test_the_check_catches_a_script_importing_a_script(tmp_path: Path) -> None:
    # the scan itself, on a file written here: a lazy import inside a function counts too
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from judge_agreement import CACHE\n    return CACHE\n")
    assert [m for m, _ in imported(fake) if m.split(".")[0] in SCRIPTS] == ["judge_agreement"]
