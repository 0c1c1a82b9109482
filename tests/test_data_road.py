"""The data has one road: every door enters the reading package by its front, and a record passes each room once.

``benchmarks/data_road.py`` follows the data of ``assay run`` from the command to the row
handed to a metric; these tests hold what it measures: every module entered once (no
return to a module already left), the rooms in the order source -> mapping -> validation.
A source imports neither the mapping nor the validation, and the mapping not the
validation, so none can call a later room back.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOORS = ("cli/_run.py", "run/_evaluate.py", "run/_ray.py", "pytest_plugin.py", "run/_calibrate.py", "run/_session.py")


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


@pytest.mark.parametrize("door", DOORS)
def test_every_door_enters_the_reading_package_by_its_front(door: str) -> None:
    imported = _imported(ROOT / "src" / "assay" / door)
    inside = sorted(name for name in imported if name.startswith("assay.run._data."))
    assert not inside, f"{door} reaches past the package's front door: {inside}"
    assert "assay.run._data" in imported, f"{door} reads data without the reading package"


def test_no_door_builds_rows_but_through_read_rows() -> None:
    for door in DOORS:
        text = (ROOT / "src" / "assay" / door).read_text(encoding="utf-8")
        for private in ("rows_from_items", "from_dataframe(", "read_dataset(", "read_csv("):
            assert private not in text, f"{door} calls {private} instead of read_rows"


def test_assay_run_walks_the_data_through_the_package_without_going_back_and_forth(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    spec = importlib.util.spec_from_file_location("data_road", ROOT / "benchmarks" / "data_road.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    walk = module.walk_run(tmp_path)
    modules = walk.modules
    assert not [m for m in modules if m in ("assay.run._dataset", "assay.run._readers")]
    reading = [m for m in modules if m.startswith("assay.run._data")]
    sources = [m for m in reading if m.startswith("assay.run._data._sources.") and not m.endswith(".files")]
    assert sources == ["assay.run._data._sources.jsonl"], sources  # one source for one file
    functions = [name for _, name in walk.stops]
    road = ("read_rows", "checked_jsonl_records", "ColumnMapping.fields", "row_from_fields")
    assert [functions.index(name) for name in road] == sorted(functions.index(name) for name in road), functions
    rooms = ["assay.run._data._read", *sources, "assay.run._data._mapping", "assay.run._data._validate"]
    assert [m for m in modules if m in rooms] == rooms, modules
    assert walk.returns == 0, walk.summary()
    assert set(walk.per_module().values()) == {1}, walk.summary()


ROOMS = ROOT / "src" / "assay" / "run" / "_data"


@pytest.mark.parametrize(
    "room", [*sorted(str(p.relative_to(ROOMS)) for p in (ROOMS / "_sources").glob("*.py")), "_mapping.py"]
)
def test_no_room_imports_a_room_after_it(room: str) -> None:
    """A source knows nothing of the mapping and the validation; the mapping nothing of the validation."""
    later = ("assay.run._data._validate", "assay.run._data._read")
    if room.startswith("_sources"):
        later += ("assay.run._data._mapping",)
    imported = _imported(ROOMS / room)
    assert not [name for name in imported if name.startswith(later)], f"{room} imports {sorted(imported)}"
